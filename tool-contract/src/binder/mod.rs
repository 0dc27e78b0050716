//! The binder, the fifth layer: what handlers return, turned into sealed results (the model
//! half and the audit half, bound by three digests), and verified again before they are sent.
//!
//! It imports the layers below: results, the contract model, the vocabulary, the JSON core.

mod outcome;
mod project;
mod seal;
mod sealed;
mod verify;

use std::fmt;
use std::sync::Arc;

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

pub use outcome::{FailureKind, RawOutput, RawProvenance, RawResult, ToolFailure};
pub(crate) use seal::Seal;
use sealed::SealedDigests;
pub use verify::{Verified, VerifyError};

use crate::contract::registry::Registry;
use crate::json::encoding::infallible;
use crate::results::audit::ProtectedAudit;
use crate::results::digest::AuditKeys;
use crate::results::execution::Provenance;
use crate::results::model::ModelResult;

/// Both halves of one call: what the model sees, and what only auditors see.
///
/// A result the binder sealed also keeps what sealing computed, which [`Binder::verify`]
/// reuses where every input is unchanged; one made with [`CallResult::new`] keeps nothing.
/// Two results are equal when their halves are.
#[derive(Clone)]
pub struct CallResult {
    /// The model half.
    pub model: ModelResult,
    /// The audit half.
    pub audit: ProtectedAudit,
    /// What sealing computed, and from what, when a binder sealed this result.
    sealed: Option<Arc<SealedDigests>>,
}

impl CallResult {
    /// A result of two halves read back from a store or the wire: [`Binder::verify`]
    /// recomputes every digest of it.
    #[must_use]
    pub fn new(model: ModelResult, audit: ProtectedAudit) -> Self {
        CallResult {
            model,
            audit,
            sealed: None,
        }
    }
}

impl PartialEq for CallResult {
    fn eq(&self, other: &Self) -> bool {
        self.model == other.model && self.audit == other.audit
    }
}

impl fmt::Debug for CallResult {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("CallResult")
            .field("model", &self.model)
            .field("audit", &self.audit)
            .finish_non_exhaustive()
    }
}

/// Projects each call's outcome into a [`CallResult`] and verifies results later, under one
/// registry and one set of keys.
///
/// ```
/// # use tool_contract::{ToolContract, ToolOutput};
/// use tool_contract::providers::{Api, Correlation, ToolCall};
/// use tool_contract::{AuditKeys, Binder, CallContext, Principal, RawProvenance, RawResult,
///                     SecretKey, Status};
///
/// /// Echo a word.
/// #[derive(serde::Deserialize, ToolContract)]
/// #[tool_contract(output = Echoed, effect = pure, source_label = "echo", producer_revision = "echo-1")]
/// struct Echo { word: String }
///
/// #[derive(serde::Serialize, ToolOutput)]
/// struct Echoed { word: String }
///
/// let registry = tool_contract::registry![Echo];
/// let binder = Binder::new(&registry, AuditKeys::new(SecretKey::new([1; 32])?));
/// let principal = Principal::new("acme", "alice");
/// let call = ToolCall {
///     api: Api::OpenAiResponses,
///     adapter_revision: tool_contract::providers::openai::ADAPTER.revision.to_owned(),
///     response_id: Some("resp_1".into()),
///     call_id: "call_1".into(),
///     correlation: Correlation::Id,
///     name: "echo".into(),
///     arguments: br#"{"word":"hi"}"#.to_vec(),
/// };
/// let context = CallContext::new(call, "op-1");
/// let input = Echo::parse_arguments(&context.call.arguments).unwrap();
///
/// let raw = RawResult::new(r#"{"word":"hi"}"#, RawProvenance::new("echo-1", "2026-08-22T10:00:00Z"));
/// let result = binder.project_output(&principal, &context, &input, raw);
/// assert_eq!(result.model.status(), Status::Succeeded);
/// assert_eq!(result.model.provenance().source_label, "echo");
///
/// let verified = binder.verify(&principal, &context, &result)?;
/// assert!(verified.model_json().starts_with(br#"{"data":{"word":"hi"}"#));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Binder<'r> {
    pub(crate) registry: &'r Registry,
    pub(crate) keys: AuditKeys,
    clock: fn() -> OffsetDateTime,
}

impl<'r> Binder<'r> {
    /// A binder for `registry`'s tools, sealing with `keys`.
    #[must_use]
    pub fn new(registry: &'r Registry, keys: AuditKeys) -> Self {
        Binder {
            registry,
            keys,
            clock: OffsetDateTime::now_utc,
        }
    }

    /// The same binder with another clock, for `observed_at` of results the dispatcher and
    /// failures make (tests and replays want a fixed one).
    #[must_use]
    pub fn with_clock(mut self, clock: fn() -> OffsetDateTime) -> Self {
        self.clock = clock;
        self
    }

    /// The registry.
    #[must_use]
    pub fn registry(&self) -> &'r Registry {
        self.registry
    }

    /// The keys.
    #[must_use]
    pub fn keys(&self) -> &AuditKeys {
        &self.keys
    }

    /// The provenance of a result the dispatcher makes itself, observed now.
    pub(crate) fn control_provenance(&self) -> Provenance {
        Provenance::control(self.now())
    }

    /// Now by the binder's clock, to the second, as RFC 3339 in UTC.
    pub(crate) fn now(&self) -> String {
        let now = infallible((self.clock)().replace_nanosecond(0), "0 is a nanosecond");
        infallible(
            now.format(&Rfc3339),
            "the clock reads a year from 0000 to 9999",
        )
    }
}
