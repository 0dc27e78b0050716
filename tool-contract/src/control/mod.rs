//! The control plane: the state that makes a write safe across processes.
//!
//! Everything a replica must agree on with every other lives here, below the pipeline that
//! uses it: the idempotency ledger (one [`Record`] per logical write, claimed atomically and
//! leased to one execution), the life of a write ([`WriteState`]), the pending approvals,
//! grants and rejections, all kept by one [`ControlStore`] ([`MemoryStore`]; `SqliteStore`
//! with the `sqlite` feature; `PostgresStore` with the `postgres` feature), and the audit
//! logs, whose keyed chains show an edited, dropped or forged record
//! ([`JsonLinesAuditLog`], [`MemoryAuditLog`]; `PostgresAuditLog` with the `postgres`
//! feature).
//!
//! What each store step decides is a pure function written once (`decide_*`), so every
//! store decides alike; a store only reads and writes rows.

mod approval;
mod approver;
mod audit_log;
mod changes;
mod directory;
mod error;
mod ledger;
mod seal;
mod state;
mod step;
mod store;
mod task;

pub use crate::results::ApprovalBasis;
pub use approval::{
    ApprovalCheck, ApprovalEntry, ApprovalError, ApprovalGrant, ApprovalLook, Approved,
    GivenApproval, Invalidity, PendingApproval, Preview, RejectionReason, SignedDecisionRefusal,
};
pub(crate) use approval::{later_by, unix_ms};
pub use approver::ApproverIdentity;
#[cfg(feature = "console")]
pub(crate) use approver::same_approver;
#[cfg(feature = "console")]
pub(crate) use audit_log::observed_at;
pub use audit_log::{
    AuditFuture, AuditHistory, AuditLogError, AuditSink, BrokenLink, ChainHead, GENESIS_SHA256,
    HistoriesFuture, History, HistoryCalls, HistoryFuture, HistoryPage, JsonLinesAuditLog,
    LogEvent, MEMORY_LOG_RECORDS, MemoryAuditLog, MerkleTree, PageAgainstHead, PageEnds,
    PagesFuture, SegmentReason, SignedTreeHead, TREE_HEAD_DOMAIN, Tallies, TallyFuture, ToolTally,
    TreeHead, TreeHeadError, TreeHeadsHeld, last_day_minutes, minute_of, tally_calls, verify_chain,
    verify_tree_heads,
};
#[cfg(feature = "postgres")]
pub use audit_log::{PostgresAuditLog, StreamHead};
pub use changes::{Changed, Changes, Watch};
pub(crate) use directory::rfc3339;
pub use directory::{
    Approver, CounterRegression, DirectoryChange, EnrollError, EnrolledCredential, SignCount,
    SignCountCheck, decide_directory_write, decide_sign_count,
};
pub use error::StoreError;
pub use ledger::{Advanced, Claimed, IfAbsent, Lease, Purged, Record};
pub use seal::RowSeal;
pub use state::{IllegalTransition, UnknownWriteState, WriteEvent, WriteState};
pub use step::{Advance, ApprovalAsk, ApproveStep, Claim, DirectoryWrite, RejectStep, Release};
pub(crate) use store::Guarded;
#[cfg(feature = "sqlite")]
pub use store::SqliteStore;
pub use store::{
    AdvanceDecision, ApprovalDecision, ClaimDecision, ControlStore, MemoryStore, SCHEMA_VERSION,
    StoreFuture, decide_advance, decide_approval, decide_approve, decide_claim, decide_redeem,
    decide_reject,
};
#[cfg(feature = "postgres")]
pub use store::{PostgresOptions, PostgresStore};
pub use task::{
    StaleTasks, TaskChange, TaskCreation, TaskMove, TaskMoveError, TaskRow, TaskStatus,
    WorkerRenewal, decide_task_move, is_task_id, new_task_id,
};
