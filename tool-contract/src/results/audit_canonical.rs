//! A `ProtectedAudit`'s canonical JSON written in one pass from its members, as every audit
//! record is: serializing it into a `serde_json::Value` first cost each call about a tenth of
//! its request path under load (a map per object, a string per key).

use super::audit::{
    ApprovalRecord, Binding, ContractRevisions, Downstream, ProtectedAudit, ProviderContext,
    Redaction,
};
use super::digest::DigestAlgorithm;
use crate::json::canonical::{
    self,
    object::{Field, member_name as name, write_object},
};
use crate::json::encoding::infallible;

impl ProtectedAudit {
    /// The audit's canonical JSON (RFC 8785): the bytes `canonical::to_vec` gives of its
    /// serialization, without building that value.
    pub(crate) fn to_canonical_json(&self) -> Vec<u8> {
        // Destructured, so that a member added to the audit is a compile error here.
        let ProtectedAudit {
            schema_version,
            principal_ref,
            provider_context,
            tool_contract,
            operation_id,
            idempotency_key,
            downstream,
            binding,
            redactions,
            detail,
            approval,
            policies,
        } = self;
        let binding = binding_json(binding);
        let downstream = downstream_json(downstream);
        let provider_context = provider_context_json(provider_context);
        let redactions = redactions_json(redactions);
        let tool_contract = tool_contract.as_ref().map(contract_json);
        let tool_contract = tool_contract.as_deref().map_or(Field::NULL, Field::Json);
        let mut out = Vec::with_capacity(1024);
        let mut members = Vec::with_capacity(12);
        let approval = approval.as_ref().map(approval_json);
        if let Some(approval) = &approval {
            members.push((name!("approval"), Field::Json(approval)));
        }
        members.extend([
            (name!("binding"), Field::Json(&binding)),
            (name!("detail"), Field::OptStr(detail.as_deref())),
            (name!("downstream"), Field::Json(&downstream)),
            (
                name!("idempotency_key"),
                Field::OptStr(idempotency_key.as_deref()),
            ),
            (name!("operation_id"), Field::Str(operation_id)),
        ]);
        let policies = (!policies.is_empty()).then(|| strings_json(policies));
        if let Some(policies) = &policies {
            members.push((name!("policies"), Field::Json(policies)));
        }
        members.extend([
            (name!("principal_ref"), Field::Str(principal_ref)),
            (name!("provider_context"), Field::Json(&provider_context)),
            (name!("redactions"), Field::Json(&redactions)),
            (name!("schema_version"), Field::Str(schema_version)),
            (name!("tool_contract"), tool_contract),
        ]);
        write_object(&mut |bytes| out.extend_from_slice(bytes), &members);
        out
    }
}

/// The canonical object of `members`.
fn object(members: &[(&[u8], Field<'_>)]) -> Vec<u8> {
    let mut out = Vec::new();
    write_object(&mut |bytes| out.extend_from_slice(bytes), members);
    out
}

fn binding_json(binding: &Binding) -> Vec<u8> {
    let Binding {
        algorithm,
        request_sha256,
        result_sha256,
        call_binding_sha256,
    } = binding;
    let algorithm = match algorithm {
        DigestAlgorithm::Sha256 => "sha256",
        DigestAlgorithm::HmacSha256 => "hmac-sha256",
    };
    object(&[
        (name!("algorithm"), Field::Plain(algorithm)),
        (
            name!("call_binding_sha256"),
            Field::Str(call_binding_sha256),
        ),
        (name!("request_sha256"), Field::Str(request_sha256)),
        (name!("result_sha256"), Field::Str(result_sha256)),
    ])
}

fn downstream_json(downstream: &Downstream) -> Vec<u8> {
    let Downstream {
        request,
        receipt,
        status_ref,
    } = downstream;
    object(&[
        (name!("receipt"), Field::OptStr(receipt.as_deref())),
        (name!("request"), Field::OptStr(request.as_deref())),
        (name!("status_ref"), Field::OptStr(status_ref.as_deref())),
    ])
}

fn provider_context_json(context: &ProviderContext) -> Vec<u8> {
    let ProviderContext {
        provider,
        api,
        response_id,
        call_id,
        adapter_revision,
    } = context;
    object(&[
        (name!("adapter_revision"), Field::Str(adapter_revision)),
        (name!("api"), Field::Plain(api.as_str())),
        (name!("call_id"), Field::Str(call_id)),
        (name!("provider"), Field::Plain(provider.as_str())),
        (name!("response_id"), Field::OptStr(response_id.as_deref())),
    ])
}

fn redactions_json(redactions: &[Redaction]) -> Vec<u8> {
    let mut out = vec![b'['];
    for (index, Redaction { path, reason }) in redactions.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        write_object(
            &mut |bytes| out.extend_from_slice(bytes),
            &[
                (name!("path"), Field::Str(path)),
                (name!("reason"), Field::Str(reason)),
            ],
        );
    }
    out.push(b']');
    out
}

fn contract_json(contract: &ContractRevisions) -> Vec<u8> {
    let ContractRevisions {
        tool,
        input,
        output,
        effect,
        producer,
        handler,
        policy,
    } = contract;
    object(&[
        (name!("effect"), Field::Str(effect)),
        (name!("handler"), Field::OptStr(handler.as_deref())),
        (name!("input"), Field::Str(input)),
        (name!("output"), Field::Str(output)),
        (name!("policy"), Field::OptStr(policy.as_deref())),
        (name!("producer"), Field::Str(producer)),
        (name!("tool"), Field::Str(tool)),
    ])
}

/// A list of strings, as canonical JSON.
fn strings_json(strings: &[String]) -> Vec<u8> {
    infallible(
        canonical::to_vec(&serde_json::json!(strings)),
        "strings are canonical JSON",
    )
}

/// An approval, rare beside the calls that have none, through its serialization: it holds a
/// signed receipt of many parts.
fn approval_json(approval: &ApprovalRecord) -> Vec<u8> {
    let value = infallible(
        serde_json::to_value(approval),
        "an approval serializes to strings, booleans and nulls",
    );
    infallible(canonical::to_vec(&value), "an approval holds no number")
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;
    use crate::vocabulary::call::{Api, Provider};

    /// The canonical JSON of `audit`'s serialization: what the one-pass writer must equal.
    fn through_a_value(audit: &ProtectedAudit) -> Vec<u8> {
        canonical::to_vec(&serde_json::to_value(audit).unwrap()).unwrap()
    }

    fn bare() -> ProtectedAudit {
        ProtectedAudit {
            schema_version: Cow::Borrowed("tool-protected-audit-v2"),
            principal_ref: "a".repeat(64),
            provider_context: ProviderContext {
                provider: Provider::OpenAi,
                api: Api::OpenAiResponses,
                response_id: None,
                call_id: "call_1".to_owned(),
                adapter_revision: "openai-responses-v1".to_owned(),
            },
            tool_contract: None,
            operation_id: "op".to_owned(),
            idempotency_key: None,
            downstream: Downstream::default(),
            binding: Binding {
                algorithm: DigestAlgorithm::Sha256,
                request_sha256: "1".repeat(64),
                result_sha256: "2".repeat(64),
                call_binding_sha256: "3".repeat(64),
            },
            redactions: Vec::new(),
            detail: None,
            approval: None,
            policies: Vec::new(),
        }
    }

    /// Every member present, in text that needs escaping and text past the BMP.
    fn full() -> ProtectedAudit {
        let text = |label: &str| format!("{label} \"quoted\" \\ \n\u{1} é 𝄞 \u{7f}");
        ProtectedAudit {
            schema_version: Cow::Owned(text("version")),
            principal_ref: text("principal"),
            provider_context: ProviderContext {
                provider: Provider::Anthropic,
                api: Api::AnthropicMessages,
                response_id: Some(text("response")),
                call_id: text("call"),
                adapter_revision: text("adapter"),
            },
            tool_contract: Some(ContractRevisions {
                tool: Cow::Owned(text("tool")),
                input: Cow::Borrowed("input"),
                output: Cow::Borrowed("output"),
                effect: Cow::Borrowed("effect"),
                producer: Cow::Owned(text("producer")),
                handler: Some(Cow::Borrowed("handler")),
                policy: Some(Cow::Owned(text("policy"))),
            }),
            operation_id: text("operation"),
            idempotency_key: Some(text("key")),
            downstream: Downstream {
                request: Some(text("request")),
                receipt: Some(text("receipt")),
                status_ref: Some(text("status")),
            },
            binding: Binding {
                algorithm: DigestAlgorithm::HmacSha256,
                request_sha256: text("request digest"),
                result_sha256: "2".repeat(64),
                call_binding_sha256: "3".repeat(64),
            },
            redactions: vec![
                Redaction {
                    path: "/secret".to_owned(),
                    reason: "forbidden_key".to_owned(),
                },
                Redaction {
                    path: text("/path"),
                    reason: text("reason"),
                },
            ],
            detail: Some(text("detail")),
            approval: Some(ApprovalRecord {
                approval_id: text("approval"),
                approvers: vec!["sam".to_owned(), text("zoë")],
                request_sha256: "4".repeat(64),
                preview_sha256: "5".repeat(64),
                expires_at: "2026-12-06T00:00:00Z".to_owned(),
                edited_arguments: Some(text("edited")),
                receipt: None,
                redeemed: Some(true),
            }),
            policies: vec![text("permit"), "agents-read".to_owned()],
        }
    }

    #[test]
    fn an_audit_with_no_optional_member_is_written_as_its_serialization() {
        let audit = bare();
        assert_eq!(audit.to_canonical_json(), through_a_value(&audit));
    }

    #[test]
    fn an_audit_with_every_member_is_written_as_its_serialization() {
        let audit = full();
        assert_eq!(
            String::from_utf8(audit.to_canonical_json()).unwrap(),
            String::from_utf8(through_a_value(&audit)).unwrap()
        );
    }

    #[test]
    fn each_optional_member_alone_is_written_as_its_serialization() {
        let full = full();
        let mut audits = Vec::new();
        let mut with = |change: &dyn Fn(&mut ProtectedAudit)| {
            let mut audit = bare();
            change(&mut audit);
            audits.push(audit);
        };
        with(&|audit| audit.provider_context = full.provider_context.clone());
        with(&|audit| audit.tool_contract = full.tool_contract.clone());
        with(&|audit| audit.idempotency_key = full.idempotency_key.clone());
        with(&|audit| audit.downstream = full.downstream.clone());
        with(&|audit| audit.binding = full.binding.clone());
        with(&|audit| audit.redactions = full.redactions[..1].to_vec());
        with(&|audit| audit.detail = full.detail.clone());
        with(&|audit| audit.approval = full.approval.clone());
        with(&|audit| audit.policies = full.policies.clone());
        for audit in audits {
            assert_eq!(
                audit.to_canonical_json(),
                through_a_value(&audit),
                "{audit:?}"
            );
        }
    }
}
