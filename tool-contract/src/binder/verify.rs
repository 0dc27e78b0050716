//! Verification: every digest recomputed from trusted inputs (or taken from what sealing
//! computed from the very same inputs), every claim checked against the registry and the
//! catalog. Nothing the audit record says is taken on trust.

use std::borrow::Cow;

use super::{Binder, CallResult};
use crate::contract::ToolSpec;
use crate::json::encoding::infallible;
use crate::results::audit::{
    ContractRevisions, PROTECTED_AUDIT_SCHEMA_VERSION, PROTECTED_AUDIT_SCHEMA_VERSION_V1,
};
use crate::results::digest::digests_equal;
use crate::results::error::CatalogMismatch;
use crate::results::execution::ProvenanceFault;
use crate::results::model::ModelResult;
use crate::vocabulary::call::{CallContext, Principal};

/// A result that passed [`Binder::verify`] for one call: the only thing provider adapters
/// write.
#[derive(Debug, Clone)]
pub struct Verified<'a> {
    context: &'a CallContext,
    result: &'a CallResult,
    model_json: Cow<'a, [u8]>,
}

impl<'a> Verified<'a> {
    /// The call it answers.
    #[must_use]
    pub fn context(&self) -> &'a CallContext {
        self.context
    }

    /// The model half.
    #[must_use]
    pub fn model(&self) -> &'a ModelResult {
        &self.result.model
    }

    /// The model half's canonical JSON: exactly the bytes `result_sha256` covers.
    #[must_use]
    pub fn model_json(&self) -> &[u8] {
        &self.model_json
    }

    /// The model half's canonical JSON as text.
    #[must_use]
    pub fn model_json_str(&self) -> &str {
        infallible(
            std::str::from_utf8(&self.model_json),
            "canonical JSON is written from `str`s and ASCII only",
        )
    }
}

/// Why a result does not verify for a call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// The audit is of a schema version this binder does not read (it reads
    /// [`PROTECTED_AUDIT_SCHEMA_VERSION`] and [`PROTECTED_AUDIT_SCHEMA_VERSION_V1`]).
    #[error(
        "the audit's schema_version is neither {PROTECTED_AUDIT_SCHEMA_VERSION} nor {PROTECTED_AUDIT_SCHEMA_VERSION_V1}"
    )]
    SchemaVersion,
    /// The audit names another provider turn or call.
    #[error("the audit's provider context is not this call's")]
    ProviderContext,
    /// The audit names another operation or idempotency key.
    #[error("the audit's operation id or idempotency key is not this call's")]
    Operation,
    /// The audit's principal reference is not this principal's.
    #[error("the audit's principal_ref is not this principal's")]
    Principal,
    /// The audit's contract revisions are not the registry's for this tool.
    #[error("the audit's contract revisions are not the registry's")]
    ContractRevisions,
    /// The provenance does not hold: the wrong source label or producer revision for its
    /// trust, a malformed resource revision, or `observed_at` not RFC 3339 in UTC.
    #[error("the provenance does not hold")]
    Provenance(#[source] ProvenanceFault),
    /// The error is not the catalog's.
    #[error("the error is not the catalog's: {0}")]
    Catalog(#[from] CatalogMismatch),
    /// The audit's digests are of another algorithm than the verifier's keys.
    #[error("the binding's algorithm is not the verifier's")]
    Algorithm,
    /// `request_sha256` does not match the recomputed one.
    #[error("request_sha256 does not match the call's request")]
    RequestDigest,
    /// `result_sha256` does not match the model result.
    #[error("result_sha256 does not match the model result")]
    ResultDigest,
    /// `call_binding_sha256` does not match the call.
    #[error("call_binding_sha256 does not match the call")]
    CallBinding,
}

impl Binder<'_> {
    /// Verifies `result` as the answer to the call `context` made for `principal`.
    ///
    /// Recomputes `request_sha256` from the principal, the call's arguments and the
    /// registry's spec, `result_sha256` from the model result's canonical JSON, and
    /// `call_binding_sha256` from the call context and those two, then compares each with the
    /// audit's; checks provenance against the registry and any error against the catalog.
    ///
    /// # Errors
    ///
    /// The first [`VerifyError`] found.
    pub fn verify<'a>(
        &self,
        principal: &Principal,
        context: &'a CallContext,
        result: &'a CallResult,
    ) -> Result<Verified<'a>, VerifyError> {
        let audit = &result.audit;
        let call = &context.call;
        let schema = match &*audit.schema_version {
            PROTECTED_AUDIT_SCHEMA_VERSION => CallBindingSchema::Contract,
            PROTECTED_AUDIT_SCHEMA_VERSION_V1 => CallBindingSchema::EachRevision,
            _ => return Err(VerifyError::SchemaVersion),
        };
        if !audit.provider_context.is_of(call) {
            return Err(VerifyError::ProviderContext);
        }
        if audit.operation_id != context.operation_id
            || audit.idempotency_key != context.idempotency_key
        {
            return Err(VerifyError::Operation);
        }
        if !digests_equal(&audit.principal_ref, &self.keys.principal_ref(principal)) {
            return Err(VerifyError::Principal);
        }
        let spec = self.registry.get(&call.name);
        // Borrowed from the spec: built without a copy.
        if audit.tool_contract != spec.map(ContractRevisions::of) {
            return Err(VerifyError::ContractRevisions);
        }
        if let Some(fault) = result.model.provenance().faults(spec).first() {
            return Err(VerifyError::Provenance(*fault));
        }
        if let Some(error) = result.model.error() {
            error.check()?;
            // A redirect may only point at a tool the model is offered.
            if error
                .next_tool()
                .is_some_and(|name| self.registry.get(name).is_none())
            {
                return Err(CatalogMismatch::NextTool.into());
            }
        }
        let model_json = self.check_digests(principal, context, spec, result, schema)?;
        Ok(Verified {
            context,
            result,
            model_json,
        })
    }
}

/// How an audit's call binding names the contract, by its schema version.
#[derive(Debug, Clone, Copy)]
enum CallBindingSchema {
    /// By the contract's digest ([`PROTECTED_AUDIT_SCHEMA_VERSION`]).
    Contract,
    /// By each revision ([`PROTECTED_AUDIT_SCHEMA_VERSION_V1`]).
    EachRevision,
}

impl Binder<'_> {
    /// The three digests of `result` as the answer to `context`, each compared with its
    /// audit's: those sealing computed where every input is the one they came from,
    /// recomputed otherwise. Returns the model half's canonical JSON, which the result digest
    /// covers.
    fn check_digests<'a>(
        &self,
        principal: &Principal,
        context: &CallContext,
        spec: Option<&ToolSpec>,
        result: &'a CallResult,
        schema: CallBindingSchema,
    ) -> Result<Cow<'a, [u8]>, VerifyError> {
        let binding = &result.audit.binding;
        let call = &context.call;
        if binding.algorithm != self.keys.algorithm() {
            return Err(VerifyError::Algorithm);
        }
        // What sealing computed from these very inputs is what recomputing would give.
        if let CallBindingSchema::Contract = schema
            && let Some(sealed) = result.sealed.as_deref()
            && sealed.hold_for(self.keys.id(), principal, context, spec, &result.model)
        {
            let checks = [
                (
                    &binding.request_sha256,
                    &sealed.request_sha256,
                    VerifyError::RequestDigest,
                ),
                (
                    &binding.result_sha256,
                    &sealed.result_sha256,
                    VerifyError::ResultDigest,
                ),
                (
                    &binding.call_binding_sha256,
                    &sealed.call_binding_sha256,
                    VerifyError::CallBinding,
                ),
            ];
            for (recorded, computed, error) in checks {
                if !digests_equal(recorded, computed) {
                    return Err(error);
                }
            }
            return Ok(Cow::Borrowed(&sealed.model_json));
        }
        let request_sha256 = self
            .keys
            .request_digest(principal, &call.name, spec, &call.arguments);
        if !digests_equal(&binding.request_sha256, &request_sha256) {
            return Err(VerifyError::RequestDigest);
        }
        let model_json = result.model.to_canonical_json();
        let result_sha256 = self.keys.result_digest(&model_json);
        if !digests_equal(&binding.result_sha256, &result_sha256) {
            return Err(VerifyError::ResultDigest);
        }
        let call_binding_sha256 = match schema {
            CallBindingSchema::Contract => {
                self.keys
                    .call_binding_digest(context, spec, &request_sha256, &result_sha256)
            }
            CallBindingSchema::EachRevision => {
                self.keys
                    .call_binding_v1_digest(context, spec, &request_sha256, &result_sha256)
            }
        };
        if !digests_equal(&binding.call_binding_sha256, &call_binding_sha256) {
            return Err(VerifyError::CallBinding);
        }
        Ok(Cow::Owned(model_json))
    }
}
