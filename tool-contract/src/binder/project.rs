//! The projection step: one call's outcome in, a model result and its audit out, bound
//! together.

use super::outcome::{RawOutput, RawProvenance, RawResult, ToolFailure};
use super::seal::Seal;
use super::{Binder, CallResult};
use crate::contract::ContractField;
use crate::contract::spec::ToolSpec;
use crate::contract::traits::ToolContract;
use crate::json::encoding::infallible;
use crate::results::audit::{Downstream, Redaction};
use crate::results::catalog::ErrorCode;
use crate::results::error::ModelError;
use crate::results::execution::{Delivery, Provenance, Trust};
use crate::results::model::ModelResult;
use crate::vocabulary::call::{CallContext, Principal};

/// A failure the projection itself found, before a result could be made.
struct Withheld {
    error: ModelError,
    redactions: Vec<Redaction>,
    detail: String,
}

impl Withheld {
    /// An output of `spec`'s tool withheld for `redactions` (`withheld_output` is added).
    fn output(spec: &ToolSpec, mut redactions: Vec<Redaction>) -> Self {
        redactions.push(redaction("", "withheld_output"));
        let reasons: Vec<String> = redactions
            .iter()
            .map(|r| format!("{} at {:?}", r.reason, r.path))
            .collect();
        Withheld {
            error: ModelError::new(ErrorCode::OutputContractViolation),
            detail: format!("output of {} withheld: {}", spec.name(), reasons.join(", ")),
            redactions,
        }
    }
}

impl<'r> Binder<'r> {
    /// Projects a handler's output for the call `context`, whose validated input is `input`.
    ///
    /// The output is validated against `C`'s contract (with `input`'s `bound` values and the
    /// registry's forbidden keys) and the provenance checked against the registry: the
    /// producer revision must be the contract's, the resource revision well formed,
    /// `observed_at` RFC 3339 in UTC; the source label is the registry's. Anything wrong gives
    /// an `OUTPUT_CONTRACT_VIOLATION` result whose audit lists what was withheld. Values the
    /// output's `strip_synthetic` detectors removed are listed in the audit's redactions
    /// (`synthetic_stripped:<detector>` at their path); the rest of the output stands.
    pub fn project_output<C: ToolContract>(
        &self,
        principal: &Principal,
        context: &CallContext,
        input: &C,
        raw: RawResult,
    ) -> CallResult {
        let RawResult {
            output,
            provenance,
            truncated,
            downstream,
        } = raw;
        let spec = match self.spec_for::<C>(context) {
            Ok(spec) => spec,
            Err(withheld) => return self.withheld(principal, context, *withheld, downstream),
        };
        match self.checked_output(spec, input, &output, provenance) {
            Ok((data, provenance, stripped)) => {
                let model = ModelResult::succeeded(data, Delivery::Fresh, truncated, provenance);
                let seal = Seal::new(Some(spec), model)
                    .downstream(downstream)
                    .redactions(stripped);
                self.seal(principal, context, seal)
            }
            Err(withheld) => self.withheld(principal, context, *withheld, downstream),
        }
    }

    /// Projects a failure the handler reported. The model reads the kind's catalog entry; the
    /// detail stays in the audit. `NotFound` and `Unauthorized` give the same model result.
    pub fn project_failure(
        &self,
        principal: &Principal,
        context: &CallContext,
        failure: ToolFailure,
    ) -> CallResult {
        let Some(spec) = self.registry.get(&context.call.name) else {
            let error = ModelError::new(ErrorCode::UnknownTool);
            return self.control(principal, context, error, Some(failure.detail));
        };
        let provenance = Provenance {
            source_label: spec.source_label().to_owned(),
            producer_revision: spec.producer_revision().to_owned(),
            resource_revision: None,
            observed_at: self.now(),
            trust: Trust::UntrustedData,
        };
        let error = failure
            .kind
            .model_error(spec.effect(), failure.alternate_source);
        let model = ModelResult::failed(error, Delivery::Fresh, provenance);
        let seal = Seal::new(Some(spec), model)
            .downstream(failure.downstream)
            .redactions(vec![redaction("", failure.kind.audit_reason())])
            .detail(Some(failure.detail));
        self.seal(principal, context, seal)
    }

    /// A result the dispatcher makes itself (`trusted_control`): an error it decided, with
    /// internal `detail` for the audit only.
    pub fn control(
        &self,
        principal: &Principal,
        context: &CallContext,
        error: ModelError,
        detail: Option<String>,
    ) -> CallResult {
        let spec = self.registry.get(&context.call.name);
        let model = ModelResult::failed(error, Delivery::Fresh, self.control_provenance());
        let redactions = match &detail {
            Some(_) => vec![redaction("", "internal_detail")],
            None => Vec::new(),
        };
        let seal = Seal::new(spec, model).redactions(redactions).detail(detail);
        self.seal(principal, context, seal)
    }

    fn spec_for<C: ToolContract>(
        &self,
        context: &CallContext,
    ) -> Result<&'static ToolSpec, Box<Withheld>> {
        match self.registry.get(&context.call.name) {
            Some(spec) if spec.name() == C::NAME && std::ptr::eq(spec, C::spec()) => Ok(spec),
            _ => Err(Box::new(Withheld {
                error: ModelError::new(ErrorCode::UnknownTool),
                redactions: Vec::new(),
                detail: format!(
                    "the call names {:?}, which is not the registered tool {:?}",
                    context.call.name,
                    C::NAME
                ),
            })),
        }
    }

    fn checked_output<C: ToolContract>(
        &self,
        spec: &ToolSpec,
        input: &C,
        output: &RawOutput,
        claimed: RawProvenance,
    ) -> Result<(String, Provenance, Vec<Redaction>), Box<Withheld>> {
        // The source label is the registry's, never the handler's; the rest is its claim.
        let provenance = Provenance {
            source_label: spec.source_label().to_owned(),
            producer_revision: claimed.producer_revision,
            resource_revision: claimed.resource_revision,
            observed_at: claimed.observed_at,
            trust: Trust::UntrustedData,
        };
        let mut redactions: Vec<Redaction> = provenance
            .faults(Some(spec))
            .into_iter()
            .map(|fault| redaction("", fault.audit_reason()))
            .collect();
        let forbidden = self.registry.forbidden_keys();
        let encoded;
        let bytes = match output {
            RawOutput::Bytes(bytes) => bytes,
            RawOutput::Value(value) => {
                encoded = infallible(serde_json::to_vec(value), "a `Value` always encodes");
                &encoded
            }
        };
        let validated = input.validate_output_audited(bytes, forbidden);
        match validated {
            Ok(validated) if redactions.is_empty() => {
                let stripped = validated
                    .stripped
                    .iter()
                    .map(|value| {
                        redaction(
                            &value.path,
                            &format!("synthetic_stripped:{}", value.detector),
                        )
                    })
                    .collect();
                // Written canonically straight from the typed output: no `Value` in between,
                // into a buffer the size of what was read (the canonical form is rarely longer).
                let mut canonical = Vec::with_capacity(bytes.len());
                validated.output.__write_canonical(&mut canonical);
                let data = infallible(String::from_utf8(canonical), "canonical JSON is UTF-8");
                Ok((data, provenance, stripped))
            }
            Ok(_) => Err(Box::new(Withheld::output(spec, redactions))),
            Err(violations) => {
                let found = violations.iter();
                redactions.extend(found.map(|v| redaction(v.path(), v.kind().code())));
                Err(Box::new(Withheld::output(spec, redactions)))
            }
        }
    }

    fn withheld(
        &self,
        principal: &Principal,
        context: &CallContext,
        withheld: Withheld,
        downstream: Downstream,
    ) -> CallResult {
        let spec = self.registry.get(&context.call.name);
        let model = ModelResult::failed(withheld.error, Delivery::Fresh, self.control_provenance());
        let seal = Seal::new(spec, model)
            .downstream(downstream)
            .redactions(withheld.redactions)
            .detail(Some(withheld.detail));
        self.seal(principal, context, seal)
    }
}

fn redaction(path: &str, reason: &str) -> Redaction {
    Redaction {
        path: path.to_owned(),
        reason: reason.to_owned(),
    }
}
