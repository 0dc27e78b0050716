//! Sealing: the three digests of one result, and the audit that records them.

use std::sync::Arc;

use super::sealed::SealedDigests;
use super::{Binder, CallResult};
use crate::contract::spec::ToolSpec;
use crate::results::audit::{
    Binding, ContractRevisions, Downstream, PROTECTED_AUDIT_SCHEMA_VERSION, ProtectedAudit,
    ProviderContext, Redaction,
};
use crate::results::execution::Delivery;
use crate::results::model::ModelResult;
use crate::vocabulary::call::{CallContext, Principal};

/// What sealing one result takes besides the call: its model half, and what its audit records.
#[derive(Debug)]
pub(crate) struct Seal {
    spec: Option<&'static ToolSpec>,
    model: ModelResult,
    downstream: Downstream,
    redactions: Vec<Redaction>,
    detail: Option<String>,
}

impl Seal {
    /// The model half of a call of the tool `spec` (`None`: a tool the registry lacks), with
    /// nothing more for the audit.
    pub(crate) fn new(spec: Option<&'static ToolSpec>, model: ModelResult) -> Self {
        Seal {
            spec,
            model,
            downstream: Downstream::default(),
            redactions: Vec::new(),
            detail: None,
        }
    }

    /// With what the handler reported of its downstream system.
    pub(crate) fn downstream(mut self, downstream: Downstream) -> Self {
        self.downstream = downstream;
        self
    }

    /// With what was kept from the model.
    pub(crate) fn redactions(mut self, redactions: Vec<Redaction>) -> Self {
        self.redactions = redactions;
        self
    }

    /// With internal failure text for operators.
    pub(crate) fn detail(mut self, detail: Option<String>) -> Self {
        self.detail = detail;
        self
    }
}

impl Binder<'_> {
    /// Computes the three digests of `seal`'s model half for the call `context` made for
    /// `principal`, and builds the audit that records them.
    pub(crate) fn seal(
        &self,
        principal: &Principal,
        context: &CallContext,
        seal: Seal,
    ) -> CallResult {
        let Seal {
            spec,
            model,
            downstream,
            redactions,
            detail,
        } = seal;
        let call = &context.call;
        let model_json = model.to_canonical_json();
        let request_sha256 = self
            .keys
            .request_digest(principal, &call.name, spec, &call.arguments);
        let result_sha256 = self.keys.result_digest(&model_json);
        let call_binding_sha256 =
            self.keys
                .call_binding_digest(context, spec, &request_sha256, &result_sha256);
        let sealed = SealedDigests::worth_keeping(&call.arguments, &model_json).then(|| {
            Arc::new(SealedDigests {
                keys: self.keys.id(),
                principal: principal.clone(),
                context: context.clone(),
                spec,
                model: model.clone(),
                model_json,
                request_sha256: request_sha256.clone(),
                result_sha256: result_sha256.clone(),
                call_binding_sha256: call_binding_sha256.clone(),
            })
        });
        let audit = ProtectedAudit {
            schema_version: PROTECTED_AUDIT_SCHEMA_VERSION.into(),
            principal_ref: self.keys.principal_ref(principal),
            provider_context: ProviderContext::of(call),
            tool_contract: spec.map(ContractRevisions::of),
            operation_id: context.operation_id.clone(),
            idempotency_key: context.idempotency_key.clone(),
            downstream,
            binding: Binding {
                algorithm: self.keys.algorithm(),
                request_sha256,
                result_sha256,
                call_binding_sha256,
            },
            redactions,
            detail,
            approval: None,
            policies: Vec::new(),
        };
        CallResult {
            model,
            audit,
            sealed,
        }
    }

    /// `result` again, delivered as `delivery` (a stored result replayed, one learned from a
    /// status query), sealed anew for the call `context`: what its audit recorded of the
    /// downstream system and of what was kept from the model stays, and `note` leads its
    /// detail.
    pub(crate) fn redeliver(
        &self,
        principal: &Principal,
        context: &CallContext,
        result: CallResult,
        delivery: Delivery,
        note: &str,
    ) -> CallResult {
        let CallResult { model, audit, .. } = result;
        let detail = match audit.detail {
            Some(detail) => format!("{note}; {detail}"),
            None => note.to_owned(),
        };
        let spec = self.registry.get(&context.call.name);
        let seal = Seal::new(spec, model.delivered_as(delivery))
            .downstream(audit.downstream)
            .redactions(audit.redactions)
            .detail(Some(detail));
        self.seal(principal, context, seal)
    }
}
