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
#[cfg(feature = "postgres")]
mod grant_hints;
mod guarded;
mod memory;
#[cfg(feature = "postgres")]
mod postgres;
mod rows;
#[cfg(feature = "sqlite")]
mod sqlite;
pub(crate) mod stored;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

pub use decide::{
    AdvanceDecision, ApprovalDecision, ClaimDecision, decide_advance, decide_approval,
    decide_approve, decide_claim, decide_redeem, decide_reject,
};
pub(crate) use guarded::Guarded;
pub use memory::MemoryStore;
#[cfg(feature = "postgres")]
pub(crate) use postgres::PooledConnection;
#[cfg(feature = "postgres")]
pub use postgres::{PostgresOptions, PostgresStore};
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteStore;

use super::approval::{
    ApprovalCheck, ApprovalError, ApprovalGrant, ApprovalLook, Approved, PendingApproval,
};
use super::changes::Changes;
use super::directory::{Approver, EnrollError, SignCount, SignCountCheck};
use super::error::StoreError;
use super::ledger::{Advanced, Claimed, IfAbsent, Purged, Record};
use super::seal::RowSeal;
use super::step::{Advance, ApprovalAsk, ApproveStep, Claim, DirectoryWrite, RejectStep, Release};
use super::task::{
    StaleTasks, TaskCreation, TaskMove, TaskMoveError, TaskRow, TaskStatus, WorkerRenewal,
};

/// What a [`ControlStore`] step returns: boxed, so the trait stays object safe.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// The version of the schema this build of the crate writes. A database holding a newer
/// one is refused ([`StoreError::SchemaTooNew`]), never downgraded.
pub const SCHEMA_VERSION: u32 = 11;

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

    /// The look a write begins with and, when it finds no record, the claim, in one step:
    /// [`IfAbsent::Present`] with the record at `claim.key` as it stands (nothing written),
    /// or [`IfAbsent::Claimed`] with what [`claim`](Self::claim) answers.
    ///
    /// The default is [`get`](Self::get), then `claim` when the key was empty: two steps. A
    /// store that can do it in one (PostgreSQL: one statement) overrides it.
    fn claim_if_absent<'a>(&'a self, claim: &'a Claim) -> StoreFuture<'a, IfAbsent> {
        Box::pin(look_then_claim(self, claim))
    }

    /// [`claim`](Self::claim) of a write that redeems `grant`, the grant the approval stage
    /// answered for it ([`ApprovalCheck::Proceed`]); `claim.redeem` names its approval. The
    /// answer is `claim`'s: the grant is redeemed in the same step, or nothing is written.
    ///
    /// The default is `claim`, which reads the grant's row again. A store that can redeem
    /// `grant` in one step while its row is still as the approval stage read it (PostgreSQL:
    /// one statement) overrides it, and runs `claim` when it is not.
    fn claim_redeeming<'a>(
        &'a self,
        claim: &'a Claim,
        grant: &'a ApprovalGrant,
    ) -> StoreFuture<'a, Claimed> {
        let _ = grant;
        self.claim(claim)
    }

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

    /// The records a reconcile pass settles: in flight with their lease over by `now_ms` (their
    /// owner never recorded an end), and `unknown`.
    fn stale(&self, now_ms: u64) -> StoreFuture<'_, Vec<Record>>;

    /// Removes what no replica needs any more: terminal records whose retention ended at or
    /// before `now_ms` and that are not [kept](Record::kept), and approvals (pending,
    /// granted, rejected) whose own expiry did, tasks past their TTL, and workers' leases
    /// that lapsed (each holds nothing; a worker that lives writes its own again).
    /// `unknown` and in-flight records are never purged: they wait for reconciliation.
    fn purge_expired(&self, now_ms: u64) -> StoreFuture<'_, Purged>;

    /// An operator's purge of operations by age: removes the terminal records, kept or not,
    /// whose window (or retention) ended at or before `window_ended_by_ms`, and answers how
    /// many. A record whose window has not ended by then is never touched, nor is one kept
    /// for good (its window never ends), nor an `unknown` or in-flight one.
    fn purge_operations(&self, window_ended_by_ms: u64) -> StoreFuture<'_, u64>;

    /// The look a write that needs approval begins with: the record at `ask.ledger_key`
    /// and, when the approval stage would write nothing, that stage's answer
    /// ([`ApprovalLook`]), each approval row opened with `ask.seal`.
    ///
    /// The default is [`get`](Self::get) alone, leaving the stage to
    /// [`check_approval`](Self::check_approval). The crate's stores read both in one step
    /// that only reads: PostgreSQL in one statement, SQLite in one read transaction (no
    /// write lock), the memory store under its lock.
    fn look_for_approval<'a>(&'a self, ask: &'a ApprovalAsk) -> StoreFuture<'a, ApprovalLook> {
        Box::pin(async move {
            let record = self.get(&ask.ledger_key).await?;
            Ok(ApprovalLook {
                record,
                check: None,
            })
        })
    }

    /// A grant for `ask` the store vouches for without a round trip: one it wrote itself,
    /// which the approval stage, finding it unredeemed and no record at the key, would
    /// answer [`ApprovalCheck::Proceed`] with. The dispatcher then skips
    /// [`look_for_approval`](Self::look_for_approval) and redeems the grant with
    /// [`claim_redeeming`](Self::claim_redeeming), so a store that gives hints must redeem
    /// only while the grant's row is still that grant, and otherwise run the general claim,
    /// which reads the record the look would have read.
    ///
    /// The default is `None`. `PostgresStore` keeps the grants its
    /// [`approve`](Self::approve) wrote until a claim redeems them: a write approved through
    /// the same store is two round trips (the redeeming claim, the outcome), one approved on
    /// another replica three (the look first).
    fn approval_hint(&self, ask: &ApprovalAsk) -> Option<ApprovalGrant> {
        let _ = ask;
        None
    }

    /// The approval stage of one request (see [`decide_approval`]).
    fn check_approval<'a>(&'a self, ask: &'a ApprovalAsk) -> StoreFuture<'a, ApprovalCheck>;

    /// A person's approval of a pending write (see [`decide_approve`]).
    fn approve<'a>(
        &'a self,
        step: &'a ApproveStep,
    ) -> StoreFuture<'a, Result<Approved, ApprovalError>>;

    /// A person's rejection of a pending write (see [`decide_reject`]).
    fn reject<'a>(&'a self, step: &'a RejectStep) -> StoreFuture<'a, Result<(), ApprovalError>>;

    /// The approvals still pending at `now_ms`, oldest first, each row opened with `seal`
    /// (one that does not open fails the step: [`StoreError::Unsealed`]).
    fn pending_approvals<'a>(
        &'a self,
        now_ms: u64,
        seal: &'a RowSeal,
    ) -> StoreFuture<'a, Vec<PendingApproval>>;

    /// The approval `approval_id` if it is still pending at `now_ms`, its row opened with
    /// `seal`.
    fn pending_approval<'a>(
        &'a self,
        approval_id: &'a str,
        now_ms: u64,
        seal: &'a RowSeal,
    ) -> StoreFuture<'a, Option<PendingApproval>>;

    /// Changes the approver directory (see
    /// [`decide_directory_write`](crate::control::decide_directory_write)), atomically with
    /// every other directory step.
    fn write_directory<'a>(
        &'a self,
        write: &'a DirectoryWrite,
    ) -> StoreFuture<'a, Result<Approver, EnrollError>>;

    /// Every enrolled approver, by id, each row opened with `seal`.
    fn approvers<'a>(&'a self, seal: &'a RowSeal) -> StoreFuture<'a, Vec<Approver>>;

    /// The approver `approver_id`, if enrolled, its row opened with `seal`: what a console
    /// page reads for the approver signed in, by key, however large the directory.
    ///
    /// The default reads [`approvers`](Self::approvers) and picks; the stores of this crate
    /// read the one row.
    fn approver<'a>(
        &'a self,
        approver_id: &'a str,
        seal: &'a RowSeal,
    ) -> StoreFuture<'a, Option<Approver>> {
        Box::pin(async move {
            Ok(self
                .approvers(seal)
                .await?
                .into_iter()
                .find(|approver| approver.approver_id == approver_id))
        })
    }

    /// Creates `task`, durably, before anyone is told its id, its row sealed with `seal`:
    /// `false` when a task with its id is stored already (nothing is written).
    fn create_task<'a>(&'a self, task: &'a TaskRow, seal: &'a RowSeal) -> StoreFuture<'a, bool>;

    /// Creates `task` as [`create_task`](Self::create_task) does, unless its owner holds
    /// `open_limit` open tasks already (neither ended nor expired at the task's creation):
    /// then nothing is written ([`TaskCreation::OwnerFull`]). The stores of this crate count
    /// and create under one lock of the owner's, so concurrent creations never pass the limit.
    ///
    /// The default counts with [`tasks_of`](Self::tasks_of), then creates: two creations at
    /// once may both pass.
    fn create_task_within<'a>(
        &'a self,
        task: &'a TaskRow,
        open_limit: usize,
        seal: &'a RowSeal,
    ) -> StoreFuture<'a, TaskCreation> {
        Box::pin(async move {
            let now_ms = task.created_at_ms;
            let mut open = 0;
            let mut after: Option<String> = None;
            loop {
                let page = self
                    .tasks_of(&task.owner, after.as_deref(), 100, now_ms, seal)
                    .await?;
                open += page
                    .iter()
                    .filter(|held| !held.status.is_terminal())
                    .count();
                if open >= open_limit {
                    return Ok(TaskCreation::OwnerFull);
                }
                match page.last() {
                    Some(last) if page.len() == 100 => after = Some(last.task_id.clone()),
                    _ => break,
                }
            }
            Ok(if self.create_task(task, seal).await? {
                TaskCreation::Created
            } else {
                TaskCreation::IdTaken
            })
        })
    }

    /// The task `task_id` if `owner` owns it (`None`: whoever does) and it has not expired
    /// by `now_ms`, its row opened with `seal` (one that does not open fails the step:
    /// [`StoreError::Unsealed`]): any other principal reads another's task as absent.
    fn task<'a>(
        &'a self,
        task_id: &'a str,
        owner: Option<&'a str>,
        now_ms: u64,
        seal: &'a RowSeal,
    ) -> StoreFuture<'a, Option<TaskRow>>;

    /// The tasks whose work needs a worker at `now_ms`: not ended, not expired, their
    /// worker's lease lapsed (its replica died, or stopped renewing). A replica takes each
    /// over with [`TaskChange::Hold`](crate::control::TaskChange::Hold). A row among them that
    /// does not open with `seal` is listed as unreadable, never failing the step.
    fn stale_tasks<'a>(&'a self, now_ms: u64, seal: &'a RowSeal) -> StoreFuture<'a, StaleTasks>;

    /// Up to `limit` of `owner`'s tasks not expired by `now_ms`, in the order of their ids,
    /// after the id `after` when one is given: a page of the owner's tasks, each opened with
    /// `seal`.
    fn tasks_of<'a>(
        &'a self,
        owner: &'a str,
        after: Option<&'a str>,
        limit: usize,
        now_ms: u64,
        seal: &'a RowSeal,
    ) -> StoreFuture<'a, Vec<TaskRow>>;

    /// Changes a task as [`decide_task_move`](crate::control::decide_task_move) decides,
    /// atomically with every other change of it, across every process sharing the store.
    fn move_task<'a>(
        &'a self,
        step: &'a TaskMove,
    ) -> StoreFuture<'a, Result<TaskRow, TaskMoveError>>;

    /// Renews `renewal.worker`'s lease until `renewal.until_ms`, which holds every task whose
    /// row names the worker (see [`TaskRow::lease_until_ms`]), and says where each of
    /// `renewal.task_ids` stands: its status while its row names the worker and it is open,
    /// `None` once it ended, expired or went to another worker. One step, writing one row,
    /// however many tasks wait: what a replica's waiting costs per third of a lease. The
    /// answers are in the order of `renewal.task_ids`.
    fn renew_worker<'a>(
        &'a self,
        renewal: &'a WorkerRenewal,
    ) -> StoreFuture<'a, Vec<Option<TaskStatus>>>;

    /// Which of `approval_ids` are still pending at `now_ms`, as their rows' columns say
    /// (no row opened: what a waiter then reads is opened): how a replica checks, in one
    /// step, every approval its work waits on.
    ///
    /// The default reads each with [`pending_approval`](Self::pending_approval).
    fn still_pending<'a>(
        &'a self,
        approval_ids: &'a [String],
        now_ms: u64,
        seal: &'a RowSeal,
    ) -> StoreFuture<'a, Vec<String>> {
        Box::pin(async move {
            let mut pending = Vec::new();
            for approval_id in approval_ids {
                if self
                    .pending_approval(approval_id, now_ms, seal)
                    .await?
                    .is_some()
                {
                    pending.push(approval_id.clone());
                }
            }
            Ok(pending)
        })
    }

    /// The waiters this store wakes when it decides an approval or moves a task, if it can
    /// tell them ([`Changes`]): whoever waits then reads the store only once something
    /// changed, and otherwise looks again only now and then. `None` (the default): a waiter
    /// reads the store every quarter of a second.
    fn changes(&self) -> Option<Arc<Changes>> {
        None
    }

    /// Takes a credential's presented signature counter (see
    /// [`decide_sign_count`](crate::control::decide_sign_count)), atomically with every other
    /// directory step: of two replicas shown one count, one accepts it.
    fn sign_count<'a>(&'a self, count: &'a SignCount) -> StoreFuture<'a, SignCountCheck>;
}

/// [`ControlStore::claim_if_absent`] in two steps: the look, then the claim if the key was
/// empty.
async fn look_then_claim<S: ControlStore + ?Sized>(
    store: &S,
    claim: &Claim,
) -> Result<IfAbsent, StoreError> {
    if let Some(record) = store.get(&claim.key).await? {
        return Ok(IfAbsent::Present(record));
    }
    store.claim(claim).await.map(IfAbsent::Claimed)
}
