//! The requests a control-plane store answers, one per step: each carries everything the step
//! decides on, so that every store decides alike.

use time::OffsetDateTime;

use super::approval::{PendingApproval, RejectionReason};
use super::directory::DirectoryChange;
use super::ledger::Lease;
use super::seal::RowSeal;
use super::state::{WriteEvent, WriteState};
use crate::results::ApprovalBasis;

/// A request to run one operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// The ledger key: scoped to the principal, so two tenants never share one.
    pub key: String,
    /// The request digest of the exact action.
    pub request_sha256: String,
    /// The tool.
    pub tool: String,
    /// Who runs it.
    pub lease: Lease,
    /// Now, in milliseconds since the Unix epoch.
    pub now_ms: u64,
    /// How long the owner holds the claim without an outcome.
    pub lease_ms: u64,
    /// How long a finished record is kept (and replayed) after its last change: the ledger's
    /// retention, the contract's `within`, or `u64::MAX` (for good).
    pub retention_ms: u64,
    /// Whether the record outlives its retention until an operator purges it
    /// ([`Record::kept`](crate::control::Record::kept)).
    pub kept: bool,
    /// The approval whose grant this execution redeems, for a write that needs one.
    pub redeem: Option<String>,
    /// The seal the grant's row is checked with, and rewritten with once redeemed.
    pub seal: RowSeal,
    /// The call, kept with a fresh record ([`Record::call`](crate::control::Record::call)).
    pub call: Option<String>,
}

/// The end of a claim under which nothing was done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Release {
    /// The ledger key.
    pub key: String,
    /// The lease that claimed it.
    pub lease: Lease,
    /// Whether the grant the claim redeemed stands again: only when no attempt was made
    /// (an attempt the service refused, such as a rate limit, still spent it).
    pub return_grant: bool,
    /// The seal the grant's row is checked with, and rewritten with once given back.
    pub seal: RowSeal,
}

/// A state change of one record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Advance {
    /// The ledger key.
    pub key: String,
    /// The lease making the change (checked for in-flight records).
    pub lease: Lease,
    /// The state the record must still be in.
    pub from: WriteState,
    /// What happened.
    pub event: WriteEvent,
    /// The model result's JSON to store, if the change brings one.
    pub result: Option<String>,
    /// Now, in milliseconds since the Unix epoch.
    pub now_ms: u64,
    /// How long the record is kept after this change.
    pub retention_ms: u64,
}

/// The facts of one request at the approval stage, and the pending approval to write
/// should it need a new one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalAsk {
    /// The operation's ledger key.
    pub ledger_key: String,
    /// The request digest of the exact action.
    pub request_sha256: String,
    /// The tool.
    pub tool: String,
    /// The keyed reference of the principal who asks.
    pub principal_ref: String,
    /// The logical operation.
    pub operation_id: String,
    /// Now.
    pub now: OffsetDateTime,
    /// The pending approval written when none covers the request.
    pub fresh: PendingApproval,
    /// How long a pending approval waits for a person.
    pub retention_ms: u64,
    /// How many pending approvals the asking principal may hold at once: a new one past
    /// them is not written ([`ApprovalCheck::CallerFull`](crate::control::ApprovalCheck::CallerFull)).
    pub pending_limit: usize,
    /// The seal every approval row read is checked with and every one written carries.
    pub seal: RowSeal,
}

/// A person's approval of the pending approval `approval_id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApproveStep {
    /// The pending approval.
    pub approval_id: String,
    /// The preview the person saw.
    pub preview_sha256: String,
    /// Who approves.
    pub approver: String,
    /// Until when.
    pub expires_at: OffsetDateTime,
    /// Now.
    pub now: OffsetDateTime,
    /// The arguments as the person changed them (canonical JSON), when they approved with
    /// edits: the grant then runs these, never the ones asked about.
    pub edited_arguments: Option<String>,
    /// How many different people the approved arguments need (0: as the pending approval
    /// says). An edit is asked of the approval policy again; what it needs can raise the
    /// pending approval's count, never lower it.
    pub approvals_required: u32,
    /// Whether the approved arguments need signed approvals (`false`: as the pending
    /// approval says). Like the count, an edit can raise it, never lower it.
    pub signatures_required: bool,
    /// The approval rules, by id, that ask of the approved arguments (empty: as the pending
    /// approval's preview names them). The grant names the preview's rules and these: an
    /// edit can add rules, never take one away.
    pub required_by: Vec<String>,
    /// What the approval rests on.
    pub basis: ApprovalBasis,
    /// Who the approver is as a principal of the caller's tenant, when known
    /// ([`GivenApproval::person_ref`](crate::control::GivenApproval::person_ref)).
    pub person_ref: Option<String>,
    /// The seal every approval row read is checked with and every one written carries.
    pub seal: RowSeal,
}

/// A person's rejection of the pending approval `approval_id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RejectStep {
    /// The pending approval.
    pub approval_id: String,
    /// Why, if the person said.
    pub reason: Option<RejectionReason>,
    /// Now.
    pub now: OffsetDateTime,
    /// How long the rejection is remembered.
    pub retention_ms: u64,
    /// The seal every approval row read is checked with and every one written carries.
    pub seal: RowSeal,
}

/// A change to the approver directory ([`decide_directory_write`](crate::control::decide_directory_write)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectoryWrite {
    /// What changes.
    pub change: DirectoryChange,
    /// The seal every directory row read is checked with and every one written carries.
    pub seal: RowSeal,
}
