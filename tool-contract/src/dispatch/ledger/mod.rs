//! The idempotency ledger: one record per logical write operation, claimed atomically.
//!
//! A store implements four atomic steps, each a read and a conditional write under one lock
//! or transaction, never a read followed by a separate write: [`claim`](Ledger::claim),
//! [`advance`](Ledger::advance), [`release`](Ledger::release) and
//! [`purge_expired`](Ledger::purge_expired). What each step decides is written once, here
//! ([`decide_claim`], [`decide_advance`]), so every store decides alike; a store only reads
//! and writes rows. A shared database fits the same shape: in PostgreSQL, `claim` is a
//! `SELECT … FOR UPDATE` (or `INSERT … ON CONFLICT DO NOTHING`) and an `UPDATE` in one
//! transaction, `advance` an `UPDATE … WHERE state = $from AND owner = $owner`.

pub(crate) mod guarded;
mod memory;
#[cfg(feature = "sqlite")]
mod sqlite;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

pub use memory::MemoryLedger;
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteLedger;

use crate::dispatch::state::{IllegalTransition, WriteEvent, WriteState};

/// What a [`Ledger`] step returns: boxed, so the trait stays object safe.
pub type LedgerFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, LedgerError>> + Send + 'a>>;

/// A store of write operations by idempotency key.
///
/// Implementations must make each step atomic with respect to every other step on the same
/// key, across every process that shares the store. The [`MemoryLedger`] serves one
/// process; `SqliteLedger` (feature `sqlite`) survives a restart.
pub trait Ledger: Send + Sync {
    /// Claims `claim.key` for one execution: inserts an `executing` record leased to
    /// `claim.owner`, or says why not (see [`decide_claim`]).
    fn claim<'a>(&'a self, claim: &'a Claim) -> LedgerFuture<'a, Claimed>;

    /// Moves the record at `step.key` by `step.event`, if it is still in `step.from` (and, for
    /// an in-flight record, still leased to `step.owner`).
    fn advance<'a>(&'a self, step: &'a Advance) -> LedgerFuture<'a, Advanced>;

    /// Removes the `executing` record `key` leased to `owner`: nothing was sent, so the
    /// operation may start again under the same key. Returns whether a record was removed.
    fn release<'a>(&'a self, key: &'a str, owner: &'a str) -> LedgerFuture<'a, bool>;

    /// The record at `key`, if any.
    fn get<'a>(&'a self, key: &'a str) -> LedgerFuture<'a, Option<Record>>;

    /// Removes terminal records whose retention ended at or before `now_ms`; returns how many.
    /// `unknown` and in-flight records are never purged: they wait for reconciliation.
    fn purge_expired(&self, now_ms: u64) -> LedgerFuture<'_, u64>;
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
    /// Who runs it: one id per dispatcher process.
    pub owner: String,
    /// Now, in milliseconds since the Unix epoch.
    pub now_ms: u64,
    /// How long the owner holds the claim without an outcome.
    pub lease_ms: u64,
    /// How long a finished record is kept (and replayed) after its last change.
    pub retention_ms: u64,
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
    /// Who claimed it.
    pub owner: String,
    /// Until when the owner's claim holds while in flight (ms since the epoch).
    pub lease_until_ms: u64,
    /// When a finished record may be purged (ms since the epoch).
    pub expires_at_ms: u64,
    /// The result to replay, once there is one: opaque to the ledger. The dispatcher writes
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
}

/// A state change of one record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Advance {
    /// The ledger key.
    pub key: String,
    /// The owner making the change (checked for in-flight records).
    pub owner: String,
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

/// A store failed, or holds something it should not.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum LedgerError {
    /// The backing store failed (I/O, database error); its error is the source.
    #[error("the ledger store failed")]
    Store(#[source] Arc<dyn std::error::Error + Send + Sync>),
    /// A stored record cannot be read back.
    #[error("the ledger holds a corrupt record for one key: {0}")]
    Corrupt(String),
    /// The event has no move from the record's state.
    #[error(transparent)]
    Illegal(#[from] IllegalTransition),
    /// The store panicked; the dispatcher caught it.
    #[error("the ledger store panicked")]
    Panicked,
}

impl LedgerError {
    /// The failure of a store's backing system (for ledgers of one's own).
    pub fn store(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        LedgerError::Store(Arc::new(error))
    }
}

/// What a store does with a claim, given the record it holds at that key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimDecision {
    /// Write this record (insert, or replace an expired one) and answer `Fresh`.
    Write(Record),
    /// Write this record (the lease ran out: now `unknown`) and answer with the claim given.
    WriteAndAnswer(Record, Claimed),
    /// Change nothing; answer this.
    Answer(Claimed),
}

/// The one decision every store makes for a claim.
///
/// - no record, or a finished one past its retention: a new `executing` record → `Fresh`;
/// - in flight with its lease over (the owner crashed or vanished): now `unknown`, whoever
///   asks → `Unknown` for the same request, `Conflict` for another;
/// - a record of another request digest → `Conflict`, whatever its state;
/// - finished (`succeeded`, `failed`, `cancelled`, `rejected`) → `Replay`;
/// - in flight with its lease running → `InFlight`;
/// - `unknown` → `Unknown`.
#[must_use]
pub fn decide_claim(existing: Option<&Record>, claim: &Claim) -> ClaimDecision {
    let fresh = || Record {
        key: claim.key.clone(),
        request_sha256: claim.request_sha256.clone(),
        tool: claim.tool.clone(),
        // A claim hands the write to its handler: `draft` (or `approved`) then `execute`.
        state: WriteState::along(&[WriteEvent::Execute]),
        owner: claim.owner.clone(),
        lease_until_ms: claim.now_ms.saturating_add(claim.lease_ms),
        expires_at_ms: claim.now_ms.saturating_add(claim.retention_ms),
        result: None,
    };
    let Some(record) = existing else {
        return ClaimDecision::Write(fresh());
    };
    if record.state.is_terminal() && record.expires_at_ms <= claim.now_ms {
        return ClaimDecision::Write(fresh());
    }
    let same_request = record.request_sha256 == claim.request_sha256 && record.tool == claim.tool;
    // A lapsed lease is settled first, whoever asks: the record must not claim to be running.
    if record.state.is_in_flight() && record.lease_until_ms <= claim.now_ms {
        let mut lost = record.clone();
        lost.state = match record.state.next(WriteEvent::LoseTrack) {
            Ok(state) => state,
            Err(_) => WriteState::Unknown,
        };
        let answer = if same_request {
            Claimed::Unknown(lost.clone())
        } else {
            Claimed::Conflict(lost.clone())
        };
        return ClaimDecision::WriteAndAnswer(lost, answer);
    }
    if !same_request {
        return ClaimDecision::Answer(Claimed::Conflict(record.clone()));
    }
    match record.state {
        state if state.is_terminal() => ClaimDecision::Answer(Claimed::Replay(record.clone())),
        state if state.is_in_flight() => ClaimDecision::Answer(Claimed::InFlight(record.clone())),
        _ => ClaimDecision::Answer(Claimed::Unknown(record.clone())),
    }
}

/// What a store does with an advance, given the record it holds at that key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdvanceDecision {
    /// Write this record and answer [`Advanced::Applied`].
    Write(Record),
    /// Change nothing and answer [`Advanced::Stale`] with the record as it stands.
    Stale(Option<Record>),
}

/// The one decision every store makes for an advance: the record moves only if it is still
/// in `step.from` and, while in flight, still leased to `step.owner`.
///
/// # Errors
///
/// [`LedgerError::Illegal`] when the event has no move from that state.
pub fn decide_advance(
    existing: Option<&Record>,
    step: &Advance,
) -> Result<AdvanceDecision, LedgerError> {
    let Some(record) = existing else {
        return Ok(AdvanceDecision::Stale(None));
    };
    let owner_holds = !record.state.is_in_flight() || record.owner == step.owner;
    if record.state != step.from || !owner_holds {
        return Ok(AdvanceDecision::Stale(Some(record.clone())));
    }
    let mut next = record.clone();
    next.state = record.state.next(step.event)?;
    if step.result.is_some() {
        next.result.clone_from(&step.result);
    }
    next.expires_at_ms = step.now_ms.saturating_add(step.retention_ms);
    Ok(AdvanceDecision::Write(next))
}
