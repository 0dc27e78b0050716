//! What a handler returns: its raw, untrusted output with the provenance it claims, or a
//! failure of a fixed kind.

use serde_json::Value;

use crate::results::audit::Downstream;
use crate::results::catalog::ErrorCode;
use crate::results::error::ModelError;
use crate::vocabulary::effect::Effect;

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
    pub(crate) fn model_error(self, effect: Effect, alternate_source: bool) -> ModelError {
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
