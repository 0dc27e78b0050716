//! The control-plane store: everything that makes a write safe across processes, in one
//! place: the idempotency ledger (one record per logical write, claimed atomically), the
//! pending approvals, grants and rejections, and the redemption of each grant.
//!
//! A store implements atomic steps, each a read and a conditional write under one lock or
//! transaction, never a read followed by a separate write. What each step decides is
//! written once ([`decide_claim`], [`decide_advance`], [`decide_approval`],
//! [`decide_approve`], [`decide_reject`], [`decide_redeem`]), so every store decides alike;
//! a store only reads and writes rows. Three stores come with the crate:
//!
//! | store | shared by | survives a restart |
//! | --- | --- | --- |
//! | [`MemoryStore`] | one process | no |
//! | `SqliteStore` (feature `sqlite`) | the processes of one host | yes |
//! | `PostgresStore` (feature `postgres`) | every replica | yes |
//!
//! A record in flight is leased to one execution: its owner (one id per dispatcher) and a
//! lease generation (one per claim). Every write to an in-flight record names both, and the
//! store checks them in the same statement that writes, so an owner whose lease lapsed and
//! was settled by someone else never writes over the record when it wakes up.

mod decide;
pub(crate) mod guarded;
mod memory;
#[cfg(feature = "postgres")]
mod postgres;
mod rows;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod stored;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

pub use decide::{
    AdvanceDecision, ApprovalDecision, ClaimDecision, decide_advance, decide_approval,
    decide_approve, decide_claim, decide_redeem, decide_reject,
};
pub use memory::MemoryStore;
#[cfg(feature = "postgres")]
pub use postgres::{PostgresOptions, PostgresStore};
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteStore;

use crate::dispatch::approval::{
    ApprovalAsk, ApprovalCheck, ApprovalError, ApproveStep, Approved, PendingApproval, RejectStep,
};
use crate::dispatch::state::{IllegalTransition, WriteEvent, WriteState};

/// What a [`ControlStore`] step returns: boxed, so the trait stays object safe.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// The version of the schema this build of the crate writes. A database holding a newer
/// one is refused ([`StoreError::SchemaTooNew`]), never downgraded.
pub const SCHEMA_VERSION: u32 = 1;

/// The shared state of writes: ledger records and approvals, by the operation's ledger key.
///
/// Implementations must make each step atomic with respect to every other step on the same
/// key, across every process that shares the store.
pub trait ControlStore: Send + Sync {
    /// Claims `claim.key` for one execution: inserts an `executing` record leased to
    /// `claim.lease`, or says why not (see [`decide_claim`]). With `claim.redeem`, the grant
    /// of that approval is redeemed in the same step, or nothing is written
    /// ([`Claimed::GrantSpent`]).
    fn claim<'a>(&'a self, claim: &'a Claim) -> StoreFuture<'a, Claimed>;

    /// Moves the record at `step.key` by `step.event`, if it is still in `step.from` (and, for
    /// an in-flight record, still leased to `step.lease`).
    fn advance<'a>(&'a self, step: &'a Advance) -> StoreFuture<'a, Advanced>;

    /// Removes the `executing` record at `release.key` leased to `release.lease`: nothing
    /// was sent, so the operation may start again under the same key. With
    /// `release.return_grant`, a grant it redeemed may be redeemed again. Returns whether a
    /// record was removed.
    fn release<'a>(&'a self, release: &'a Release) -> StoreFuture<'a, bool>;

    /// The record at `key`, if any.
    fn get<'a>(&'a self, key: &'a str) -> StoreFuture<'a, Option<Record>>;

    /// Removes what no replica needs any more: terminal records whose retention ended at or
    /// before `now_ms`, and approvals (pending, granted, rejected) whose own expiry did.
    /// `unknown` and in-flight records are never purged: they wait for reconciliation.
    fn purge_expired(&self, now_ms: u64) -> StoreFuture<'_, Purged>;

    /// The approval stage of one request (see [`decide_approval`]).
    fn check_approval<'a>(&'a self, ask: &'a ApprovalAsk) -> StoreFuture<'a, ApprovalCheck>;

    /// A person's approval of a pending write (see [`decide_approve`]).
    fn approve<'a>(
        &'a self,
        step: &'a ApproveStep,
    ) -> StoreFuture<'a, Result<Approved, ApprovalError>>;

    /// A person's rejection of a pending write (see [`decide_reject`]).
    fn reject<'a>(&'a self, step: &'a RejectStep) -> StoreFuture<'a, Result<(), ApprovalError>>;

    /// The approvals still pending at `now_ms`, oldest first.
    fn pending_approvals(&self, now_ms: u64) -> StoreFuture<'_, Vec<PendingApproval>>;
}

/// Who holds an in-flight record: the dispatcher (`owner`, one per process) and which of its
/// claims (`generation`, never reused by that owner).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Lease {
    /// The dispatcher's owner id.
    pub owner: String,
    /// The claim's number, unique for the owner.
    pub generation: u64,
}

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
    /// How long a finished record is kept (and replayed) after its last change.
    pub retention_ms: u64,
    /// The approval whose grant this execution redeems, for a write that needs one.
    pub redeem: Option<String>,
}

/// One stored operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The ledger key.
    pub key: String,
    /// The request digest it was claimed with.
    pub request_sha256: String,
    /// The tool.
    pub tool: String,
    /// Where it stands.
    pub state: WriteState,
    /// Who claimed it last.
    pub lease: Lease,
    /// Until when the lease holds while in flight (ms since the epoch).
    pub lease_until_ms: u64,
    /// When a finished record may be purged (ms since the epoch).
    pub expires_at_ms: u64,
    /// The result to replay, once there is one: opaque to the store. The dispatcher writes
    /// a keyed seal, a newline and the model result's canonical JSON, and replays only what
    /// its seal still covers.
    pub result: Option<String>,
}

/// The answer to a [`Claim`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claimed {
    /// The caller owns a new `executing` record: it may run the operation once.
    Fresh,
    /// The operation finished with this request: replay its stored result.
    Replay(Record),
    /// The key is taken by a different request.
    Conflict(Record),
    /// Another execution holds the key and its lease is running.
    InFlight(Record),
    /// It may have happened: reconcile, never run it again.
    Unknown(Record),
    /// The claim would be fresh, but the grant it redeems is spent or gone (redeemed by
    /// another execution, or replaced by a newer request): nothing was written.
    GrantSpent,
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

/// The answer to an [`Advance`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Advanced {
    /// Done; the record as it now stands.
    Applied(Record),
    /// Someone else moved it first (or the record is gone); it stands as given.
    Stale(Option<Record>),
}

/// What [`ControlStore::purge_expired`] removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Purged {
    /// Finished ledger records.
    pub records: u64,
    /// Approvals (pending, granted or rejected) past their expiry.
    pub approvals: u64,
}

/// A store failed, or holds something it should not.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The backing store failed (I/O, database error, unreachable); its error is the source.
    #[error("the control-plane store failed")]
    Store(#[source] Arc<dyn std::error::Error + Send + Sync>),
    /// A stored row cannot be read back.
    #[error("the control-plane store holds a corrupt row: {0}")]
    Corrupt(String),
    /// The event has no move from the record's state.
    #[error(transparent)]
    Illegal(#[from] IllegalTransition),
    /// A fenced write found the row changed under the step (a store without the locking it
    /// promised): nothing was written.
    #[error("the row changed under a fenced write")]
    LostRace,
    /// The database holds a schema newer than this build of the crate writes: refused, so an
    /// older replica never writes rows a newer one cannot trust.
    #[error(
        "the store's schema is version {found}, newer than version {supported} this build knows"
    )]
    SchemaTooNew {
        /// The version the database holds.
        found: u32,
        /// [`SCHEMA_VERSION`].
        supported: u32,
    },
    /// The store panicked; the dispatcher caught it.
    #[error("the control-plane store panicked")]
    Panicked,
}

impl StoreError {
    /// The failure of a store's backing system (for stores of one's own).
    pub fn store(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        StoreError::Store(Arc::new(error))
    }
}
