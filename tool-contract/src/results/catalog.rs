//! The error catalog: every failure the model can see, with its one fixed recovery.
//!
//! The model reads a code's safe message and follows its recovery; it never sees internal
//! error text, and nothing it or a handler writes can change what a code means. Verification
//! ([`Binder::verify`](crate::Binder::verify)) refuses an error that differs from its entry;
//! [`ModelError`](super::ModelError) is an entry as the model reads it: `code`, `category`,
//! `message`, `recovery` and `retry_after_ms` always; `paths` (empty but for
//! `INVALID_ARGUMENTS`); `violations` on `INVALID_ARGUMENTS` only (each path's broken rule);
//! `next_tool` where the recovery is `call_tool`; `alternate_source` on the codes that
//! [tell it](ErrorCode::tells_alternate_source).

use serde::{Deserialize, Serialize};

use super::execution::Outcome;
use crate::json::names::wire_names;

wire_names! {
    /// A failure the model may see. The wire form is the SCREAMING_SNAKE_CASE name.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[non_exhaustive]
    pub enum ErrorCode {
        /// The model named a tool the registry does not hold.
        UnknownTool = "UNKNOWN_TOOL",
        /// The arguments do not meet the tool's input contract. The error's `paths` name each
        /// argument at fault (JSON Pointers), and its `violations` the rule each one breaks:
        /// `{"path","constraint","expected"}`, a [`Constraint`](crate::vocabulary::Constraint)
        /// and the rule's value where the contract publishes one, never the refused value
        /// ([`ModelError::violations`](super::ModelError::violations)).
        InvalidArguments = "INVALID_ARGUMENTS",
        /// The resource does not exist, or the principal may not see it: the two read the same,
        /// so a caller cannot probe for existence.
        NotFound = "NOT_FOUND",
        /// A write needs a person's approval first.
        ApprovalRequired = "APPROVAL_REQUIRED",
        /// The approval given does not cover this exact action.
        ApprovalInvalid = "APPROVAL_INVALID",
        /// A deadline or budget ran out before the tool ran; nothing happened.
        TimeoutBeforeExecute = "TIMEOUT_BEFORE_EXECUTE",
        /// The tool or its upstream is rate limited; nothing happened.
        RateLimit = "RATE_LIMIT",
        /// The tool may or may not have acted; only a status query can tell.
        OutcomeUnknown = "OUTCOME_UNKNOWN",
        /// The idempotency key was already used for a different request.
        IdempotencyConflict = "IDEMPOTENCY_CONFLICT",
        /// The facts or states at hand conflict; a person decides.
        StatusConflict = "STATUS_CONFLICT",
        /// The tool returned something its contract does not allow; it was withheld.
        OutputContractViolation = "OUTPUT_CONTRACT_VIOLATION",
        /// The tool failed and reported that nothing happened.
        ToolError = "TOOL_ERROR",
        /// A gate of the application refused the call; nothing happened.
        Blocked = "BLOCKED",
        /// A gate found the call's context incomplete: another tool (`next_tool`) must run first.
        PrerequisiteRequired = "PREREQUISITE_REQUIRED",
        /// The task's budget (tool calls, model turns, cost units) is spent; nothing happened.
        BudgetExhausted = "BUDGET_EXHAUSTED",
        /// The same operation is already running; nothing new was started.
        OperationInProgress = "OPERATION_IN_PROGRESS",
        /// A write may have happened and no status query can tell: a person must check.
        OutcomeUnconfirmed = "OUTCOME_UNCONFIRMED",
        /// The call was cancelled and the tool confirmed it never acted.
        Cancelled = "CANCELLED",
        /// The source refused to serve the request (access denied, an anti-bot wall).
        SourceBlocked = "SOURCE_BLOCKED",
        /// The source answered in a form the tool cannot read (the page or API changed).
        SourceUnreadable = "SOURCE_UNREADABLE",
        /// The source could not be reached (connection, DNS or TLS failure).
        SourceUnreachable = "SOURCE_UNREACHABLE",
        /// The source did not answer in time.
        SourceTimeout = "SOURCE_TIMEOUT",
        /// A person rejected the write: it is not permitted.
        RejectedNotPermitted = "REJECTED_NOT_PERMITTED",
        /// A person rejected the write: its details are wrong.
        RejectedWrongDetails = "REJECTED_WRONG_DETAILS",
        /// A person rejected the write: it repeats one already done.
        RejectedDuplicate = "REJECTED_DUPLICATE",
        /// A person approved the write with changed arguments, and it ran as changed.
        ApprovedWithChanges = "APPROVED_WITH_CHANGES",
        /// The service's control-plane store could not answer; nothing happened.
        StoreUnavailable = "STORE_UNAVAILABLE",
        /// The caller holds as much open work (tasks, pending approvals) as the service allows
        /// one caller; nothing happened.
        CallerLimit = "CALLER_LIMIT",
    }
}

wire_names! {
    /// What kind of failure a code is.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[non_exhaustive]
    pub enum Category {
        /// The model's request cannot be run as written.
        InvalidRequest = "invalid_request",
        /// The resource is missing or hidden.
        NotFound = "not_found",
        /// A person's approval is missing or does not match.
        Approval = "approval",
        /// A passing condition; the same request may succeed later.
        Transient = "transient",
        /// Whether the action took place is not known.
        Outcome = "outcome",
        /// A conflict the model cannot resolve by retrying.
        Conflict = "conflict",
        /// The tool broke its output contract.
        Contract = "contract",
        /// The tool itself failed.
        Tool = "tool",
        /// The application's policy decided against the call.
        Policy = "policy",
        /// The task ran out of what it may spend.
        Budget = "budget",
        /// The tool's source could not be read.
        Source = "source",
    }
}

wire_names! {
    /// What the model should do next.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    pub enum Recovery {
        /// Fix the arguments (or the tool name) and call again.
        CorrectInput = "correct_input",
        /// Call again, not before `retry_after_ms`.
        RetryAfter = "retry_after",
        /// Ask the status-query tool what happened; do not repeat the action.
        QueryStatus = "query_status",
        /// Ask a person to approve the action shown.
        RequestApproval = "request_approval",
        /// Stop; a person reviews.
        HumanReview = "human_review",
        /// Call the tool named in `next_tool` first, then this one again.
        CallTool = "call_tool",
        /// Nothing to do with this tool for this request.
        None = "none",
    }
}

/// How long to wait, for codes whose recovery is [`Recovery::RetryAfter`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryAfter {
    /// Used when nobody gave a better figure.
    pub default_ms: u64,
    /// The most a result may ask for (a larger server hint is capped to it).
    pub max_ms: u64,
}

/// One code's fixed meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CatalogEntry {
    /// The code.
    pub code: ErrorCode,
    /// Its category.
    pub category: Category,
    /// What it says about the action: did it happen?
    pub outcome: Outcome,
    /// The message the model reads; the same for every occurrence.
    pub message: &'static str,
    /// What the model should do next.
    pub recovery: Recovery,
    /// For [`Recovery::RetryAfter`], how long to wait; `None` for every other recovery.
    pub retry_after: Option<RetryAfter>,
}

const fn entry(
    code: ErrorCode,
    category: Category,
    outcome: Outcome,
    recovery: Recovery,
    message: &'static str,
) -> CatalogEntry {
    CatalogEntry {
        code,
        category,
        outcome,
        message,
        recovery,
        retry_after: None,
    }
}

const fn retrying(mut entry: CatalogEntry, default_ms: u64, max_ms: u64) -> CatalogEntry {
    entry.retry_after = Some(RetryAfter { default_ms, max_ms });
    entry
}

/// Every code, in one place.
///
/// ```
/// use tool_contract::ErrorCode;
/// use tool_contract::results::{CATALOG, Recovery};
///
/// let entry = ErrorCode::OutcomeUnknown.entry();
/// assert_eq!(entry.recovery, Recovery::QueryStatus);
/// assert!(CATALOG.iter().all(|entry| entry.message.len() < 120));
/// ```
pub const CATALOG: [CatalogEntry; 28] = {
    use Category as C;
    use ErrorCode as E;
    use Outcome::{Committed, NotStarted, Unknown};
    use Recovery as R;
    [
        entry(
            E::UnknownTool,
            C::InvalidRequest,
            NotStarted,
            R::CorrectInput,
            "No tool by that name is available. Call one of the tools offered.",
        ),
        entry(
            E::InvalidArguments,
            C::InvalidRequest,
            NotStarted,
            R::CorrectInput,
            "The arguments do not match the tool's input schema. Correct the fields listed and call again.",
        ),
        entry(
            E::NotFound,
            C::NotFound,
            NotStarted,
            R::None,
            "The requested resource was not found.",
        ),
        entry(
            E::ApprovalRequired,
            C::Approval,
            NotStarted,
            R::RequestApproval,
            "This action needs a person's approval before it can run.",
        ),
        entry(
            E::ApprovalInvalid,
            C::Approval,
            NotStarted,
            R::RequestApproval,
            "The approval does not cover this exact action. A new approval is needed.",
        ),
        retrying(
            entry(
                E::TimeoutBeforeExecute,
                C::Transient,
                NotStarted,
                R::RetryAfter,
                "The call ran out of time before the tool ran. Nothing happened.",
            ),
            1_000,
            60_000,
        ),
        retrying(
            entry(
                E::RateLimit,
                C::Transient,
                NotStarted,
                R::RetryAfter,
                "The tool is rate limited. Nothing happened; call again after the wait.",
            ),
            1_000,
            300_000,
        ),
        entry(
            E::OutcomeUnknown,
            C::Outcome,
            Unknown,
            R::QueryStatus,
            "The action may or may not have happened. Call it again unchanged: that checks its status and never repeats it.",
        ),
        entry(
            E::IdempotencyConflict,
            C::Conflict,
            NotStarted,
            R::None,
            "This operation was already requested with different arguments.",
        ),
        entry(
            E::StatusConflict,
            C::Conflict,
            // What happened is itself in dispute: a write that committed after its record
            // was settled otherwise, or facts from sources that disagree.
            Unknown,
            R::HumanReview,
            "The available information conflicts. A person must decide.",
        ),
        entry(
            E::OutputContractViolation,
            C::Contract,
            Unknown,
            R::HumanReview,
            "The tool returned data its contract does not allow, so it was withheld. A person must review.",
        ),
        entry(
            E::ToolError,
            C::Tool,
            NotStarted,
            R::None,
            "The tool failed. Nothing happened.",
        ),
        entry(
            E::Blocked,
            C::Policy,
            NotStarted,
            R::None,
            "The application's policy does not allow this call. Nothing happened; do not call it again for this request.",
        ),
        entry(
            E::PrerequisiteRequired,
            C::Policy,
            NotStarted,
            R::CallTool,
            "This call needs information another step provides. Call the tool named in next_tool first.",
        ),
        entry(
            E::BudgetExhausted,
            C::Budget,
            NotStarted,
            R::None,
            "The task's budget is spent, so the call was not made. Nothing happened; finish with what you have.",
        ),
        retrying(
            entry(
                E::OperationInProgress,
                C::Conflict,
                NotStarted,
                R::RetryAfter,
                "This operation is already running. Nothing new was started; call again after the wait for its result.",
            ),
            1_000,
            60_000,
        ),
        entry(
            E::OutcomeUnconfirmed,
            C::Outcome,
            Unknown,
            R::HumanReview,
            "The action may have happened and cannot be confirmed. Do not repeat it; a person must check.",
        ),
        entry(
            E::Cancelled,
            C::Tool,
            NotStarted,
            R::None,
            "The call was cancelled before the tool acted. Nothing happened.",
        ),
        entry(
            E::SourceBlocked,
            C::Source,
            NotStarted,
            R::None,
            "The source refused this request. Nothing was read; do not call it again for this request.",
        ),
        entry(
            E::SourceUnreadable,
            C::Source,
            NotStarted,
            R::None,
            "The source answered in a form the tool cannot read. Nothing was read; a person must fix the tool.",
        ),
        retrying(
            entry(
                E::SourceUnreachable,
                C::Source,
                NotStarted,
                R::RetryAfter,
                "The source could not be reached. Nothing was read; call again after the wait.",
            ),
            1_000,
            300_000,
        ),
        retrying(
            entry(
                E::SourceTimeout,
                C::Source,
                NotStarted,
                R::RetryAfter,
                "The source did not answer in time. Nothing was read; call again after the wait.",
            ),
            1_000,
            300_000,
        ),
        entry(
            E::RejectedNotPermitted,
            C::Approval,
            NotStarted,
            R::None,
            "A person rejected this action as not permitted. Nothing happened; do not call it again.",
        ),
        entry(
            E::RejectedWrongDetails,
            C::Approval,
            NotStarted,
            R::CorrectInput,
            "A person rejected this action's details as wrong. Nothing happened; correct them with the user, then call again.",
        ),
        entry(
            E::RejectedDuplicate,
            C::Approval,
            NotStarted,
            R::None,
            "A person rejected this action as a repeat of one already done. Nothing happened; do not call it again.",
        ),
        entry(
            E::ApprovedWithChanges,
            C::Approval,
            Committed,
            R::None,
            "A person approved this action with changed arguments and it ran as changed. Do not call it again; tell the user.",
        ),
        retrying(
            entry(
                E::StoreUnavailable,
                C::Transient,
                NotStarted,
                R::RetryAfter,
                "The service's state store could not be reached. Nothing happened; call again after the wait.",
            ),
            1_000,
            60_000,
        ),
        retrying(
            entry(
                E::CallerLimit,
                C::Transient,
                NotStarted,
                R::RetryAfter,
                "You hold as much open work as one caller may. Nothing happened; call again once some of it ended.",
            ),
            30_000,
            600_000,
        ),
    ]
};

impl ErrorCode {
    /// Every code.
    pub const ALL: [ErrorCode; CATALOG.len()] = {
        let mut all = [ErrorCode::UnknownTool; CATALOG.len()];
        let mut index = 0;
        while index < CATALOG.len() {
            all[index] = CATALOG[index].code;
            index += 1;
        }
        all
    };

    /// The code's catalog entry.
    #[must_use]
    pub const fn entry(self) -> &'static CatalogEntry {
        &CATALOG[self as usize]
    }
}

impl ErrorCode {
    /// Whether a result with this code has status `unknown`: the action may have happened.
    #[must_use]
    pub const fn is_unknown_outcome(self) -> bool {
        matches!(
            self,
            ErrorCode::OutcomeUnknown | ErrorCode::OutcomeUnconfirmed
        )
    }

    /// Whether errors of this code say if another source may be tried
    /// ([`ModelError::alternate_source`](super::ModelError::alternate_source)): a source that was read and failed.
    #[must_use]
    pub const fn tells_alternate_source(self) -> bool {
        matches!(
            self,
            ErrorCode::NotFound
                | ErrorCode::SourceBlocked
                | ErrorCode::SourceUnreadable
                | ErrorCode::SourceUnreachable
                | ErrorCode::SourceTimeout
        )
    }
}

// `entry` indexes CATALOG by discriminant; this keeps the two in step.
const _: () = {
    let mut index = 0;
    while index < CATALOG.len() {
        assert!(
            CATALOG[index].code as usize == index,
            "CATALOG is out of order"
        );
        index += 1;
    }
};
