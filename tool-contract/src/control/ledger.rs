//! The idempotency ledger's rows and steps: one record per logical write, leased to the
//! execution that claimed it, and the requests a store answers about it.

use super::state::WriteState;

/// Who holds an in-flight record: the dispatcher (`owner`, one per process) and which of its
/// claims (`generation`, never reused by that owner).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Lease {
    /// The dispatcher's owner id.
    pub owner: String,
    /// The claim's number, unique for the owner.
    pub generation: u64,
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
    /// When a finished record's operation stops being one (ms since the epoch): a claim after
    /// it starts a new execution; a record not [`kept`](Self::kept) may be purged then.
    pub expires_at_ms: u64,
    /// Whether the record outlives `expires_at_ms` until an operator purges it
    /// ([`ControlStore::purge_operations`](crate::control::ControlStore::purge_operations)):
    /// an operation named by its fields or the application's key, so that a repeat after its
    /// window is never silently a first time.
    pub kept: bool,
    /// The result to replay, once there is one: opaque to the store. The dispatcher writes
    /// a keyed seal, a newline and the model result's canonical JSON, and replays only what
    /// its seal still covers.
    pub result: Option<String>,
    /// The call that claimed it, as the claimant wrote it (opaque to the store): what a
    /// reconcile pass needs to ask the write's status query when nobody calls again. Its
    /// request digest and ledger key bind it: another call written here reconciles nothing.
    pub call: Option<String>,
}

/// The answer to a [`Claim`](crate::control::Claim).
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

/// The answer to [`ControlStore::claim_if_absent`](crate::control::ControlStore::claim_if_absent):
/// the ledger's look at a key and, where it found nothing, the claim, in one step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IfAbsent {
    /// No record was there when the step began: the claim's answer, as
    /// [`claim`](crate::control::ControlStore::claim) gives it (`Fresh` unless another step
    /// wrote the key first).
    Claimed(Claimed),
    /// A record is there, as it stands: nothing was written.
    Present(Record),
}

/// The answer to an [`Advance`](crate::control::Advance).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Advanced {
    /// Done; the record as it now stands.
    Applied(Record),
    /// Someone else moved it first (or the record is gone); it stands as given.
    Stale(Option<Record>),
}

/// What [`ControlStore::purge_expired`](crate::control::ControlStore::purge_expired) removed
/// (and [`purge_operations`](crate::control::ControlStore::purge_operations), its `records`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Purged {
    /// Finished ledger records.
    pub records: u64,
    /// Approvals (pending, granted or rejected) past their expiry.
    pub approvals: u64,
    /// Tasks past their TTL.
    pub tasks: u64,
}
