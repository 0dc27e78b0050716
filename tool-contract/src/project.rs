//! The projection step: one call's outcome in, a model result and its audit out, bound
//! together.

use serde_json::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::audit::{
    Binding, ContractRevisions, Downstream, PROTECTED_AUDIT_SCHEMA_VERSION, ProtectedAudit,
    ProviderContext, Redaction,
};
use crate::binding::AuditKeys;
use crate::call::{CallContext, Principal};
use crate::catalog::{ErrorCode, ModelError};
use crate::contract::{ToolContract, ToolOutput};
use crate::registry::Registry;
use crate::result::{
    CONTROL_PRODUCER_REVISION, CONTROL_SOURCE_LABEL, Delivery, ModelResult, Provenance, Trust,
};
use crate::spec::{Effect, ToolSpec};
use crate::validate::format;

/// What a handler returns on success: its output, untrusted, with its provenance.
#[derive(Debug, Clone, PartialEq)]
pub struct RawResult {
    /// The output, as JSON text or a value.
    pub output: RawOutput,
    /// Where it comes from.
    pub provenance: RawProvenance,
    /// Whether the source held more than the output shows.
    pub truncated: bool,
    /// What the handler knows of the downstream system (audit only).
    pub downstream: Downstream,
}

impl RawResult {
    /// A complete result from JSON text.
    #[must_use]
    pub fn new(output: impl Into<Vec<u8>>, provenance: RawProvenance) -> Self {
        RawResult {
            output: RawOutput::Bytes(output.into()),
            provenance,
            truncated: false,
            downstream: Downstream::default(),
        }
    }

    /// The same result, marked as holding less than the source has.
    #[must_use]
    pub fn truncated(mut self) -> Self {
        self.truncated = true;
        self
    }

    /// The same result with what the handler knows of the downstream system.
    #[must_use]
    pub fn with_downstream(mut self, downstream: Downstream) -> Self {
        self.downstream = downstream;
        self
    }
}

/// A handler's output before validation.
#[derive(Debug, Clone, PartialEq)]
pub enum RawOutput {
    /// JSON text (preferred: duplicate keys can still be seen).
    Bytes(Vec<u8>),
    /// A value already parsed.
    Value(Value),
}

/// A handler's claim of where its output comes from; checked, never taken on trust.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawProvenance {
    /// Must equal the contract's `producer_revision`.
    pub producer_revision: String,
    /// The resource's own revision (ETag, version): 1 to 128 of `A-Z a-z 0-9 . _ : / + = @ -`.
    pub resource_revision: Option<String>,
    /// When the output was observed: RFC 3339 in UTC (`Z`).
    pub observed_at: String,
}

impl RawProvenance {
    /// Provenance with no resource revision.
    #[must_use]
    pub fn new(producer_revision: impl Into<String>, observed_at: impl Into<String>) -> Self {
        RawProvenance {
            producer_revision: producer_revision.into(),
            resource_revision: None,
            observed_at: observed_at.into(),
        }
    }

    /// The same provenance with the resource's revision.
    #[must_use]
    pub fn with_resource_revision(mut self, revision: impl Into<String>) -> Self {
        self.resource_revision = Some(revision.into());
        self
    }
}

/// What a handler reports when it could not produce output.
///
/// A handler that cannot read its source says so with the [`FailureKind`] that fits, and
/// never makes up data in its place: an agent acts on what its tools report, and a fallback
/// or mock value dressed as a result would poison every later step. That is why nothing in
/// this crate turns a failure into a result. A source that was read and holds nothing is not
/// a failure: return the empty result, with its evidence (see [`GroundingSource`]).
///
/// ```
/// use tool_contract::{FailureKind, ToolFailure};
///
/// // The directory answered 403 behind an anti-bot wall; the registry may still have it.
/// let failure = ToolFailure::new(FailureKind::Blocked, "GET /staff: 403, challenge page")
///     .with_alternate_source(true);
/// assert!(failure.alternate_source);
/// ```
///
/// [`GroundingSource`]: crate::evidence::GroundingSource
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolFailure {
    /// What went wrong, as far as the model may know.
    pub kind: FailureKind,
    /// Internal text for operators; kept in the audit, never shown to the model.
    pub detail: String,
    /// Whether another source may be tried for what this call was after. The model reads it
    /// beside the recovery, for the kinds whose code tells it
    /// ([`ErrorCode::tells_alternate_source`]); an `Unauthorized` failure always reads `false`,
    /// exactly as a refusal of the authorizer does.
    pub alternate_source: bool,
    /// What the handler knows of the downstream system (audit only).
    pub downstream: Downstream,
}

impl ToolFailure {
    /// A failure of `kind` with internal `detail`.
    #[must_use]
    pub fn new(kind: FailureKind, detail: impl Into<String>) -> Self {
        ToolFailure {
            kind,
            detail: detail.into(),
            alternate_source: false,
            downstream: Downstream::default(),
        }
    }

    /// The same failure, saying whether another source may be tried.
    #[must_use]
    pub fn with_alternate_source(mut self, alternate_source: bool) -> Self {
        self.alternate_source = alternate_source;
        self
    }

    /// The same failure with what the handler knows of the downstream system.
    #[must_use]
    pub fn with_downstream(mut self, downstream: Downstream) -> Self {
        self.downstream = downstream;
        self
    }
}

/// The kinds of handler failure, each with one catalog code.
///
/// For a write, a failure that may have come after the request reached the service
/// (`Network`, `Timeout`, `ParseFailed`, `OutcomeUnknown`) reads `OUTCOME_UNKNOWN`: the write
/// may have happened, and only reconciliation can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FailureKind {
    /// The resource does not exist: the source was asked and answered "no such thing"
    /// (HTTP 404) (`NOT_FOUND`).
    NotFound,
    /// The principal may not see it (`NOT_FOUND` too, word for word).
    Unauthorized,
    /// Upstream rate limit, with its retry-after if it gave one (`RATE_LIMIT`).
    RateLimited {
        /// The upstream's hint, in milliseconds.
        retry_after_ms: Option<u64>,
    },
    /// The action may have happened; the handler cannot tell (`OUTCOME_UNKNOWN`).
    OutcomeUnknown,
    /// Failed, and nothing happened (`TOOL_ERROR`).
    Failed,
    /// The service could not be reached and nothing was sent (`TIMEOUT_BEFORE_EXECUTE`): safe
    /// to retry whatever the effect.
    NotSent,
    /// The call was cancelled and the handler confirms it never acted (`CANCELLED`).
    Cancelled,
    /// The source refused to serve the request: HTTP 401/403, an anti-bot challenge, a
    /// captcha (`SOURCE_BLOCKED`).
    Blocked,
    /// The source answered, but not in the form the handler reads: the page or the API
    /// changed (`SOURCE_UNREADABLE`).
    ParseFailed,
    /// The source could not be reached: connection refused or reset, DNS, TLS
    /// (`SOURCE_UNREACHABLE`).
    Network,
    /// The source did not answer within the handler's own time limit (`SOURCE_TIMEOUT`).
    Timeout,
}

impl FailureKind {
    /// Whether a write that failed so may still have taken effect.
    pub(crate) fn may_have_acted(self) -> bool {
        matches!(
            self,
            FailureKind::OutcomeUnknown
                | FailureKind::Network
                | FailureKind::Timeout
                | FailureKind::ParseFailed
        )
    }

    /// The catalog error the model reads for this kind, on a tool of `effect`.
    fn model_error(self, effect: Effect, alternate_source: bool) -> ModelError {
        if effect.is_write() && self.may_have_acted() {
            return ModelError::new(ErrorCode::OutcomeUnknown);
        }
        let source_failure = |code| ModelError::new(code).with_alternate_source(alternate_source);
        match self {
            FailureKind::NotFound => source_failure(ErrorCode::NotFound),
            FailureKind::Unauthorized => ModelError::new(ErrorCode::NotFound),
            FailureKind::Blocked => source_failure(ErrorCode::SourceBlocked),
            FailureKind::ParseFailed => source_failure(ErrorCode::SourceUnreadable),
            FailureKind::Network => source_failure(ErrorCode::SourceUnreachable),
            FailureKind::Timeout => source_failure(ErrorCode::SourceTimeout),
            FailureKind::RateLimited {
                retry_after_ms: Some(ms),
            } => ModelError::retry_after(ErrorCode::RateLimit, ms),
            FailureKind::RateLimited {
                retry_after_ms: None,
            } => ModelError::new(ErrorCode::RateLimit),
            FailureKind::OutcomeUnknown => ModelError::new(ErrorCode::OutcomeUnknown),
            FailureKind::Failed => ModelError::new(ErrorCode::ToolError),
            FailureKind::NotSent => ModelError::new(ErrorCode::TimeoutBeforeExecute),
            FailureKind::Cancelled => ModelError::new(ErrorCode::Cancelled),
        }
    }

    pub(crate) fn audit_reason(self) -> &'static str {
        match self {
            FailureKind::NotFound => "not_found",
            FailureKind::Unauthorized => "unauthorized",
            FailureKind::RateLimited { .. } => "rate_limited",
            FailureKind::OutcomeUnknown => "outcome_unknown",
            FailureKind::Failed => "failed",
            FailureKind::NotSent => "not_sent",
            FailureKind::Cancelled => "cancelled",
            FailureKind::Blocked => "blocked",
            FailureKind::ParseFailed => "parse_failed",
            FailureKind::Network => "network",
            FailureKind::Timeout => "timeout",
        }
    }
}

/// Both halves of one call: what the model sees, and what only auditors see.
#[derive(Debug, Clone, PartialEq)]
pub struct CallResult {
    /// The model half.
    pub model: ModelResult,
    /// The audit half.
    pub audit: ProtectedAudit,
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

/// A failure the projection itself found, before a result could be made.
struct Withheld {
    error: ModelError,
    redactions: Vec<Redaction>,
    detail: String,
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
        let spec = match self.spec_for::<C>(context) {
            Ok(spec) => spec,
            Err(withheld) => return self.withheld(principal, context, *withheld, raw.downstream),
        };
        match self.checked_output(spec, input, &raw) {
            Ok((data, provenance, stripped)) => {
                let model =
                    ModelResult::succeeded(data, Delivery::Fresh, raw.truncated, provenance);
                self.seal(
                    principal,
                    context,
                    Some(spec),
                    model,
                    raw.downstream,
                    stripped,
                    None,
                )
            }
            Err(withheld) => self.withheld(principal, context, *withheld, raw.downstream),
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
        let redactions = vec![Redaction {
            path: String::new(),
            reason: failure.kind.audit_reason().to_owned(),
        }];
        self.seal(
            principal,
            context,
            Some(spec),
            model,
            failure.downstream,
            redactions,
            Some(failure.detail),
        )
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
            Some(_) => vec![Redaction {
                path: String::new(),
                reason: "internal_detail".to_owned(),
            }],
            None => Vec::new(),
        };
        self.seal(
            principal,
            context,
            spec,
            model,
            Downstream::default(),
            redactions,
            detail,
        )
    }

    fn spec_for<C: ToolContract>(
        &self,
        context: &CallContext,
    ) -> Result<&'r ToolSpec, Box<Withheld>> {
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
        raw: &RawResult,
    ) -> Result<(String, Provenance, Vec<Redaction>), Box<Withheld>> {
        let mut redactions = Vec::new();
        let claimed = &raw.provenance;
        if claimed.producer_revision != spec.producer_revision() {
            redactions.push(redaction("", "producer_revision_mismatch"));
        }
        if !claimed
            .resource_revision
            .as_deref()
            .is_none_or(is_resource_revision)
        {
            redactions.push(redaction("", "resource_revision_malformed"));
        }
        if !format::is_rfc3339_utc(&claimed.observed_at) {
            redactions.push(redaction("", "observed_at_not_utc_rfc3339"));
        }
        let forbidden = self.registry.forbidden_keys();
        let validated = match &raw.output {
            RawOutput::Bytes(bytes) => input.validate_output_audited(bytes, forbidden),
            RawOutput::Value(value) => {
                let bytes = serde_json::to_vec(value).unwrap_or_default();
                input.validate_output_audited(&bytes, forbidden)
            }
        };
        let mut stripped = Vec::new();
        let output = match validated {
            Ok(validated) => {
                stripped = validated
                    .stripped
                    .iter()
                    .map(|value| Redaction {
                        path: value.path.clone(),
                        reason: format!("synthetic_stripped:{}", value.detector),
                    })
                    .collect();
                Some(validated.output)
            }
            Err(violations) => {
                for violation in &violations {
                    redactions.push(redaction(violation.path(), violation.kind().code()));
                }
                None
            }
        };
        // Written canonically straight from the typed output: no `Value` in between.
        let data = output.and_then(|output| String::from_utf8(output.to_canonical_json()).ok());
        match data {
            Some(data) if redactions.is_empty() => Ok((
                data,
                Provenance {
                    source_label: spec.source_label().to_owned(),
                    producer_revision: spec.producer_revision().to_owned(),
                    resource_revision: claimed.resource_revision.clone(),
                    observed_at: claimed.observed_at.clone(),
                    trust: Trust::UntrustedData,
                },
                stripped,
            )),
            _ => {
                redactions.push(redaction("", "withheld_output"));
                let detail = format!(
                    "output of {} withheld: {}",
                    spec.name(),
                    redactions
                        .iter()
                        .map(|r| format!("{} at {:?}", r.reason, r.path))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                Err(Box::new(Withheld {
                    error: ModelError::new(ErrorCode::OutputContractViolation),
                    redactions,
                    detail,
                }))
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
        self.seal(
            principal,
            context,
            spec,
            model,
            downstream,
            withheld.redactions,
            Some(withheld.detail),
        )
    }

    pub(crate) fn control_provenance(&self) -> Provenance {
        Provenance {
            source_label: CONTROL_SOURCE_LABEL.to_owned(),
            producer_revision: CONTROL_PRODUCER_REVISION.to_owned(),
            resource_revision: None,
            observed_at: self.now(),
            trust: Trust::TrustedControl,
        }
    }

    fn now(&self) -> String {
        let now = (self.clock)()
            .replace_nanosecond(0)
            .unwrap_or_else(|_| (self.clock)());
        now.format(&Rfc3339).unwrap_or_default()
    }

    /// Computes the three digests and builds the audit.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn seal(
        &self,
        principal: &Principal,
        context: &CallContext,
        spec: Option<&ToolSpec>,
        model: ModelResult,
        downstream: Downstream,
        redactions: Vec<Redaction>,
        detail: Option<String>,
    ) -> CallResult {
        let call = &context.call;
        let model_json = model.to_canonical_json();
        let request_sha256 = self
            .keys
            .request_digest(principal, &call.name, spec, &call.arguments);
        let result_sha256 = self.keys.result_digest(&model_json);
        let call_binding_sha256 =
            self.keys
                .call_binding_digest(context, spec, &request_sha256, &result_sha256);
        let audit = ProtectedAudit {
            schema_version: PROTECTED_AUDIT_SCHEMA_VERSION.to_owned(),
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
        };
        CallResult { model, audit }
    }
}

fn redaction(path: &str, reason: &str) -> Redaction {
    Redaction {
        path: path.to_owned(),
        reason: reason.to_owned(),
    }
}

/// 1 to 128 of `A-Z a-z 0-9 . _ : / + = @ -`: version strings, ETags without quotes, base64.
pub(crate) fn is_resource_revision(value: &str) -> bool {
    (1..=128).contains(&value.len())
        && value
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || b"._:/+=@-".contains(&byte))
}
