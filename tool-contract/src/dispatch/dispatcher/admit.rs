//! Whether a call may run at all: lookup, exact arguments, gates, authorization.

use std::panic::{AssertUnwindSafe, catch_unwind};

use tracing::{debug, warn};

use super::{Call, Dispatcher, Exit, Valid};
use crate::binder::{FailureKind, ToolFailure};
use crate::contract::ToolSpec;
use crate::dispatch::gate::{GateCall, GateDecision};
use crate::dispatch::handler::ToolEntry;
use crate::dispatch::telemetry::Guardrail;
use crate::json::depth;
use crate::json::encoding::infallible;
use crate::results::{ErrorCode, ModelError};

impl Dispatcher {
    /// Whether the call may run at all: lookup, arguments, gates, authorization.
    pub(super) fn admit<'s>(&'s self, call: &Call<'_>) -> Result<Valid<'s>, Exit> {
        let mut valid = self.lookup_and_validate(call)?;
        Guardrail::Gates.check(call.context, || self.gates(call, &valid))?;
        valid.policies =
            Guardrail::Authorization.check(call.context, || self.authorize(call, &valid))?;
        Ok(valid)
    }

    /// Lookup and exact argument validation, the first two stages of every call.
    pub(super) fn lookup_and_validate<'s>(&'s self, call: &Call<'_>) -> Result<Valid<'s>, Exit> {
        let (spec, entry) = self.lookup(call)?;
        Guardrail::Arguments.check(call.context, || self.validate(call, spec, entry))
    }

    /// The tool, by the name the model gave (`UNKNOWN_TOOL` when the registry lacks it), for
    /// a call read by an adapter the registry accepts (`BLOCKED` otherwise: no result of it
    /// could be written, so nothing may run).
    fn lookup<'s>(&'s self, call: &Call<'_>) -> Result<(&'static ToolSpec, &'s ToolEntry), Exit> {
        let tool_call = &call.context.call;
        if !self
            .registry
            .accepts_adapter(tool_call.api, &tool_call.adapter_revision)
        {
            warn!(
                stage = "lookup",
                error_code = "BLOCKED",
                "adapter not accepted"
            );
            let error = ModelError::new(ErrorCode::Blocked);
            let detail = format!(
                "the registry does not accept calls read by {} adapter {:?}: nothing ran",
                tool_call.api.as_str(),
                tool_call.adapter_revision
            );
            return Err(Box::new(self.control(call, error, &detail)));
        }
        let name = &tool_call.name;
        match (self.registry.get(name), self.tools.get(name.as_str())) {
            (Some(spec), Some(entry)) => Ok((spec, entry)),
            _ => {
                debug!(stage = "lookup", error_code = "UNKNOWN_TOOL");
                let error = ModelError::new(ErrorCode::UnknownTool);
                Err(Box::new(self.control(
                    call,
                    error,
                    "no registered tool by that name",
                )))
            }
        }
    }

    /// The arguments, exactly, against the contract (`INVALID_ARGUMENTS` with every path).
    fn validate<'s>(
        &self,
        call: &Call<'_>,
        spec: &'static ToolSpec,
        entry: &'s ToolEntry,
    ) -> Result<Valid<'s>, Exit> {
        let arguments = &call.context.call.arguments;
        if let Err(violations) = entry
            .tool
            .validate(arguments, self.registry.forbidden_keys())
        {
            debug!(
                stage = "validate",
                error_code = "INVALID_ARGUMENTS",
                violations = violations.len()
            );
            let detail = violations.to_string();
            let error = ModelError::invalid_arguments(&violations);
            return Err(Box::new(self.control(call, error, &detail)));
        }
        let arguments = infallible(
            depth::from_slice::<serde_json::Value>(arguments),
            "validated arguments are JSON within their contract's depth",
        );
        debug!(stage = "validate", "arguments valid");
        Ok(Valid {
            spec,
            entry,
            arguments,
            policies: Vec::new(),
        })
    }

    /// Gates, in order; the first decision other than proceed wins.
    pub(super) fn gates(&self, call: &Call<'_>, valid: &Valid<'_>) -> Result<(), Exit> {
        let gate_call = GateCall {
            spec: valid.spec,
            principal: call.principal,
            context: call.context,
            arguments: &valid.arguments,
        };
        for (index, gate) in self.gates.iter().enumerate() {
            // A gate that panics blocks: the application's code fails closed, never open.
            let decision = catch_unwind(AssertUnwindSafe(|| gate.check(&gate_call)))
                .unwrap_or_else(|_| {
                    warn!(stage = "gate", gate = index, "gate panicked");
                    GateDecision::Block {
                        reason: "the gate panicked".to_owned(),
                    }
                });
            match decision {
                GateDecision::Proceed => {}
                GateDecision::Block { reason } => {
                    debug!(
                        stage = "gate",
                        gate = index,
                        decision = "block",
                        error_code = "BLOCKED"
                    );
                    let error = ModelError::new(ErrorCode::Blocked);
                    return Err(Box::new(self.control(
                        call,
                        error,
                        &format!("gate {index}: {reason}"),
                    )));
                }
                GateDecision::Redirect { target, reason } => {
                    debug!(stage = "gate", gate = index, decision = "redirect", target);
                    let detail = format!("gate {index}: {reason}");
                    let error = if self.registry.get(target).is_some() {
                        ModelError::prerequisite(target)
                    } else {
                        // A redirect to nowhere must not send the model looking for it.
                        warn!(
                            stage = "gate",
                            gate = index,
                            "redirect to an unregistered tool"
                        );
                        ModelError::new(ErrorCode::Blocked)
                    };
                    return Err(Box::new(self.control(call, error, &detail)));
                }
            }
        }
        Ok(())
    }

    /// Authorization: a refusal reads as `NOT_FOUND`, word for word. What it returns: the
    /// Cedar policies that let the call through (none without policies).
    pub(super) fn authorize(
        &self,
        call: &Call<'_>,
        valid: &Valid<'_>,
    ) -> Result<Vec<String>, Exit> {
        let allowed = self.authorizer.as_ref().is_none_or(|authorizer| {
            let asked = || authorizer.authorize(call.principal, valid.spec, &valid.arguments);
            // An authorizer that panics refuses.
            catch_unwind(AssertUnwindSafe(asked)).unwrap_or_else(|_| {
                warn!(stage = "authorize", "authorizer panicked");
                false
            })
        });
        if !allowed {
            return Err(self.unauthorized(call, "the authorizer refused"));
        }
        #[cfg(feature = "cedar")]
        if let Some(check) = &self.policy_check {
            use crate::policy::PolicyDecision;
            let decided = || {
                let caller = crate::policy::Caller {
                    principal: call.principal,
                    scopes: call.credentials.and_then(|credentials| credentials.scopes),
                };
                check.decide(caller, valid.spec.name(), &valid.arguments)
            };
            // Policies that panic refuse, as an authorizer that panics does.
            let decision = catch_unwind(AssertUnwindSafe(decided)).unwrap_or_else(|_| {
                warn!(stage = "policy", "policy evaluation panicked");
                PolicyDecision::Deny("the policies' evaluation panicked".to_owned())
            });
            return match decision {
                PolicyDecision::Allow(permits) => Ok(permits),
                PolicyDecision::Deny(why) => {
                    Err(self.unauthorized(call, &format!("the policies refused: {why}")))
                }
            };
        }
        Ok(Vec::new())
    }

    /// A refusal of authorization: `NOT_FOUND` to the model, `detail` to the audit.
    fn unauthorized(&self, call: &Call<'_>, detail: &str) -> Exit {
        debug!(
            stage = "authorize",
            error_code = "NOT_FOUND",
            "not authorized"
        );
        let failure = ToolFailure::new(FailureKind::Unauthorized, detail);
        Box::new(self.project_failure(call, failure))
    }
}
