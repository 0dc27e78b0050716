//! `ProtectedAudit`: what operators and auditors need of a call and the model must not see.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::digest::DigestAlgorithm;
use super::receipt::SignedReceipt;
use crate::contract::spec::{Revisions, ToolSpec, contract_sha256};
use crate::vocabulary::call::{Api, Provider, ToolCall};

/// The `schema_version` of every [`ProtectedAudit`] the binder makes: its
/// `call_binding_sha256` binds the contract by its
/// [`contract_sha256`](crate::ToolSpec::contract_sha256).
pub const PROTECTED_AUDIT_SCHEMA_VERSION: &str = "tool-protected-audit-v2";

/// The `schema_version` of audits made before [`PROTECTED_AUDIT_SCHEMA_VERSION`], whose
/// `call_binding_sha256` names each contract revision in a member of its own. They still
/// verify.
pub const PROTECTED_AUDIT_SCHEMA_VERSION_V1: &str = "tool-protected-audit-v1";

/// The audit half of a call: who, which provider turn, which contract, what happened
/// downstream, and the digests that bind them to the model half.
///
/// A record, not a proof: [`Binder::verify`](crate::Binder::verify) recomputes every digest
/// from trusted inputs and only compares them with the ones recorded here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProtectedAudit {
    /// [`PROTECTED_AUDIT_SCHEMA_VERSION`] (borrowed from it when the binder makes the audit;
    /// owned when one is read back), or [`PROTECTED_AUDIT_SCHEMA_VERSION_V1`] for an audit
    /// made before it.
    pub schema_version: Cow<'static, str>,
    /// A keyed digest of the principal (64 hex): stable for one principal, not reversible
    /// without the key.
    pub principal_ref: String,
    /// Which provider turn asked.
    pub provider_context: ProviderContext,
    /// Which contract the call ran under; `None` when the tool is not registered.
    pub tool_contract: Option<ContractRevisions>,
    /// The application's id of the logical operation.
    pub operation_id: String,
    /// The operation's idempotency key, if any.
    pub idempotency_key: Option<String>,
    /// What the handler reported of its downstream system.
    pub downstream: Downstream,
    /// The three digests.
    pub binding: Binding,
    /// What was kept from the model, and why.
    pub redactions: Vec<Redaction>,
    /// Internal failure text (a handler's message, a validation report) for operators.
    pub detail: Option<String>,
    /// For a write that ran on a person's approval: whose, of what.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalRecord>,
    /// The Cedar policies that let the call through, by id (feature `cedar`): kept beside the
    /// binding, as `approval` is, for auditors. Empty, and absent from the JSON, without
    /// policies or for a call they refused (whose `detail` names the `forbid`s).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policies: Vec<String>,
}

/// The approval a write ran on, as the audit keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalRecord {
    /// The approval's id.
    pub approval_id: String,
    /// Who approved (the application's names for the people), in the order they did: one,
    /// or as many as a policy required.
    pub approvers: Vec<String>,
    /// The request digest approved: the `request_sha256` of this very call.
    pub request_sha256: String,
    /// The digest of the preview the person saw.
    pub preview_sha256: String,
    /// When the approval would have lapsed, RFC 3339.
    pub expires_at: String,
    /// The arguments the person changed the request to, when they approved with edits
    /// (canonical JSON): what ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited_arguments: Option<String>,
    /// The signed receipt of the redemption, when the dispatcher signs receipts
    /// ([`DispatcherBuilder::approval_receipts`](crate::dispatch::DispatcherBuilder::approval_receipts)):
    /// on the audit of the execution that redeemed the grant only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt: Option<SignedReceipt>,
    /// Whether this execution spent the grant: it claimed the operation on it and made an
    /// attempt (a replay, or an execution stopped before any attempt, spends nothing). What
    /// [`HistoryCalls::redeemed_more_than_once`](crate::control::HistoryCalls::redeemed_more_than_once)
    /// counts, with or without receipts. `None` in an audit written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redeemed: Option<bool>,
}

/// The provider turn a call came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderContext {
    /// The provider.
    pub provider: Provider,
    /// Its API family.
    pub api: Api,
    /// The provider's response, message or interaction id.
    pub response_id: Option<String>,
    /// The call id the provider gave (or, for a Gemini call without one, its name).
    pub call_id: String,
    /// The revision of the adapter that read the call.
    pub adapter_revision: String,
}

impl ProviderContext {
    /// The context of `call`.
    #[must_use]
    pub fn of(call: &ToolCall) -> Self {
        ProviderContext {
            provider: call.api.provider(),
            api: call.api,
            response_id: call.response_id.clone(),
            call_id: call.call_id.clone(),
            adapter_revision: call.adapter_revision.clone(),
        }
    }

    /// Whether this is the context of `call`: [`of`](Self::of) compared, without building it.
    pub(crate) fn is_of(&self, call: &ToolCall) -> bool {
        self.provider == call.api.provider()
            && self.api == call.api
            && self.response_id == call.response_id
            && self.call_id == call.call_id
            && self.adapter_revision == call.adapter_revision
    }
}

/// Every revision of the contract a call ran under.
///
/// The binder borrows each from the registry's spec, which lives as long as the program, so an
/// audit costs no copy of them; one read back from storage owns its text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContractRevisions {
    /// The tool's name.
    pub tool: Cow<'static, str>,
    /// Of the arguments' schema.
    pub input: Cow<'static, str>,
    /// Of the output's schema.
    pub output: Cow<'static, str>,
    /// Of the effect declaration.
    pub effect: Cow<'static, str>,
    /// Of the code that produces results.
    pub producer: Cow<'static, str>,
    /// Of the handler, if declared.
    pub handler: Option<Cow<'static, str>>,
    /// Of the policy, if declared.
    pub policy: Option<Cow<'static, str>>,
}

impl ContractRevisions {
    /// The revisions a spec declares, borrowed from it.
    #[must_use]
    pub fn of(spec: &'static ToolSpec) -> Self {
        let revisions = spec.revisions();
        ContractRevisions {
            tool: Cow::Borrowed(spec.name()),
            input: Cow::Borrowed(&revisions.input),
            output: Cow::Borrowed(&revisions.output),
            effect: Cow::Borrowed(&revisions.effect),
            producer: Cow::Borrowed(&revisions.producer),
            handler: revisions.handler.as_deref().map(Cow::Borrowed),
            policy: revisions.policy.as_deref().map(Cow::Borrowed),
        }
    }

    /// The [`contract_sha256`](crate::ToolSpec::contract_sha256) these revisions give: what
    /// an auditor holding only the audit recomputes its call binding with.
    #[must_use]
    pub fn contract_sha256(&self) -> String {
        let owned = |text: &Cow<'static, str>| text.clone().into_owned();
        let revisions = Revisions {
            input: owned(&self.input),
            output: owned(&self.output),
            effect: owned(&self.effect),
            producer: owned(&self.producer),
            handler: self.handler.as_ref().map(owned),
            policy: self.policy.as_ref().map(owned),
        };
        contract_sha256(&self.tool, &revisions)
    }
}

/// What the handler reported of the downstream system it called.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Downstream {
    /// The downstream request id.
    pub request: Option<String>,
    /// The downstream receipt (confirmation) id.
    pub receipt: Option<String>,
    /// An opaque handle a status query can use later.
    pub status_ref: Option<String>,
}

/// The three digests that bind a call's request, result and call together (64 lowercase hex
/// each).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Binding {
    /// How they were computed.
    pub algorithm: DigestAlgorithm,
    /// Of the intent: principal, tool, arguments, input/output/effect revisions. No call id
    /// and no idempotency key, so a retry of the same intent has the same one.
    pub request_sha256: String,
    /// Of the model result exactly as the model sees it.
    pub result_sha256: String,
    /// Of the provider call, the operation, its key, the adapter revision, the contract (by
    /// its [`contract_sha256`](crate::ToolSpec::contract_sha256); by each revision in audits
    /// of [`PROTECTED_AUDIT_SCHEMA_VERSION_V1`]), and the two digests above.
    pub call_binding_sha256: String,
}

/// Something kept from the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Redaction {
    /// A JSON Pointer into the handler's output, or `""` for the whole of it.
    pub path: String,
    /// Why, as a stable code (a violation code, `withheld_output`, `internal_detail`, …).
    pub reason: String,
}
