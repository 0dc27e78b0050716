//! A store whose panics are errors: the store is the application's code (or a database
//! driver's), and a panic in it must end as a structured answer, never unwind through
//! `dispatch`.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use futures_util::FutureExt;

use crate::control::RowSeal;
use crate::control::{
    Advance, Advanced, Claim, Claimed, ControlStore, IfAbsent, Purged, Record, Release, StoreError,
    StoreFuture,
};
use crate::control::{
    ApprovalAsk, ApprovalCheck, ApprovalError, ApprovalGrant, ApprovalLook, ApproveStep, Approved,
    PendingApproval, RejectStep,
};
use crate::control::{Approver, DirectoryWrite, EnrollError, SignCount, SignCountCheck};
use crate::control::{
    Changes, StaleTasks, TaskCreation, TaskMove, TaskMoveError, TaskRow, TaskStatus, WorkerRenewal,
};

/// The store the dispatcher holds: `inner`, its panics turned into
/// [`StoreError::Panicked`].
pub(crate) struct Guarded(pub(crate) Arc<dyn ControlStore>);

/// Runs one step of the inner store: a panic building the future or polling it is an error.
fn guarded<'a, T: Send + 'a>(step: impl FnOnce() -> StoreFuture<'a, T>) -> StoreFuture<'a, T> {
    match catch_unwind(AssertUnwindSafe(step)) {
        Ok(future) => Box::pin(
            AssertUnwindSafe(future)
                .catch_unwind()
                .map(|answer| answer.unwrap_or(Err(StoreError::Panicked))),
        ),
        Err(_) => Box::pin(std::future::ready(Err(StoreError::Panicked))),
    }
}

impl ControlStore for Guarded {
    fn claim<'a>(&'a self, claim: &'a Claim) -> StoreFuture<'a, Claimed> {
        guarded(|| self.0.claim(claim))
    }

    fn claim_if_absent<'a>(&'a self, claim: &'a Claim) -> StoreFuture<'a, IfAbsent> {
        guarded(|| self.0.claim_if_absent(claim))
    }

    fn claim_redeeming<'a>(
        &'a self,
        claim: &'a Claim,
        grant: &'a ApprovalGrant,
    ) -> StoreFuture<'a, Claimed> {
        guarded(|| self.0.claim_redeeming(claim, grant))
    }

    fn advance<'a>(&'a self, step: &'a Advance) -> StoreFuture<'a, Advanced> {
        guarded(|| self.0.advance(step))
    }

    fn release<'a>(&'a self, release: &'a Release) -> StoreFuture<'a, bool> {
        guarded(|| self.0.release(release))
    }

    fn get<'a>(&'a self, key: &'a str) -> StoreFuture<'a, Option<Record>> {
        guarded(|| self.0.get(key))
    }

    fn stale(&self, now_ms: u64) -> StoreFuture<'_, Vec<Record>> {
        guarded(|| self.0.stale(now_ms))
    }

    fn purge_expired(&self, now_ms: u64) -> StoreFuture<'_, Purged> {
        guarded(|| self.0.purge_expired(now_ms))
    }

    fn purge_operations(&self, window_ended_by_ms: u64) -> StoreFuture<'_, u64> {
        guarded(|| self.0.purge_operations(window_ended_by_ms))
    }

    fn look_for_approval<'a>(&'a self, ask: &'a ApprovalAsk) -> StoreFuture<'a, ApprovalLook> {
        guarded(|| self.0.look_for_approval(ask))
    }

    fn approval_hint(&self, ask: &ApprovalAsk) -> Option<ApprovalGrant> {
        // A hint that panics is no hint: the look reads instead.
        catch_unwind(AssertUnwindSafe(|| self.0.approval_hint(ask))).unwrap_or(None)
    }

    fn check_approval<'a>(&'a self, ask: &'a ApprovalAsk) -> StoreFuture<'a, ApprovalCheck> {
        guarded(|| self.0.check_approval(ask))
    }

    fn approve<'a>(
        &'a self,
        step: &'a ApproveStep,
    ) -> StoreFuture<'a, Result<Approved, ApprovalError>> {
        guarded(|| self.0.approve(step))
    }

    fn reject<'a>(&'a self, step: &'a RejectStep) -> StoreFuture<'a, Result<(), ApprovalError>> {
        guarded(|| self.0.reject(step))
    }

    fn pending_approvals<'a>(
        &'a self,
        now_ms: u64,
        seal: &'a RowSeal,
    ) -> StoreFuture<'a, Vec<PendingApproval>> {
        guarded(|| self.0.pending_approvals(now_ms, seal))
    }

    fn pending_approval<'a>(
        &'a self,
        approval_id: &'a str,
        now_ms: u64,
        seal: &'a RowSeal,
    ) -> StoreFuture<'a, Option<PendingApproval>> {
        guarded(|| self.0.pending_approval(approval_id, now_ms, seal))
    }

    fn write_directory<'a>(
        &'a self,
        write: &'a DirectoryWrite,
    ) -> StoreFuture<'a, Result<Approver, EnrollError>> {
        guarded(|| self.0.write_directory(write))
    }

    fn approvers<'a>(&'a self, seal: &'a RowSeal) -> StoreFuture<'a, Vec<Approver>> {
        guarded(|| self.0.approvers(seal))
    }

    fn approver<'a>(
        &'a self,
        approver_id: &'a str,
        seal: &'a RowSeal,
    ) -> StoreFuture<'a, Option<Approver>> {
        guarded(|| self.0.approver(approver_id, seal))
    }

    fn create_task<'a>(&'a self, task: &'a TaskRow, seal: &'a RowSeal) -> StoreFuture<'a, bool> {
        guarded(|| self.0.create_task(task, seal))
    }

    fn task<'a>(
        &'a self,
        task_id: &'a str,
        owner: Option<&'a str>,
        now_ms: u64,
        seal: &'a RowSeal,
    ) -> StoreFuture<'a, Option<TaskRow>> {
        guarded(|| self.0.task(task_id, owner, now_ms, seal))
    }

    fn move_task<'a>(
        &'a self,
        step: &'a TaskMove,
    ) -> StoreFuture<'a, Result<TaskRow, TaskMoveError>> {
        guarded(|| self.0.move_task(step))
    }

    fn stale_tasks<'a>(&'a self, now_ms: u64, seal: &'a RowSeal) -> StoreFuture<'a, StaleTasks> {
        guarded(|| self.0.stale_tasks(now_ms, seal))
    }

    fn tasks_of<'a>(
        &'a self,
        owner: &'a str,
        after: Option<&'a str>,
        limit: usize,
        now_ms: u64,
        seal: &'a RowSeal,
    ) -> StoreFuture<'a, Vec<TaskRow>> {
        guarded(|| self.0.tasks_of(owner, after, limit, now_ms, seal))
    }

    fn sign_count<'a>(&'a self, count: &'a SignCount) -> StoreFuture<'a, SignCountCheck> {
        guarded(|| self.0.sign_count(count))
    }

    fn create_task_within<'a>(
        &'a self,
        task: &'a TaskRow,
        open_limit: usize,
        seal: &'a RowSeal,
    ) -> StoreFuture<'a, TaskCreation> {
        guarded(|| self.0.create_task_within(task, open_limit, seal))
    }

    fn renew_worker<'a>(
        &'a self,
        renewal: &'a WorkerRenewal,
    ) -> StoreFuture<'a, Vec<Option<TaskStatus>>> {
        guarded(|| self.0.renew_worker(renewal))
    }

    fn still_pending<'a>(
        &'a self,
        approval_ids: &'a [String],
        now_ms: u64,
        seal: &'a RowSeal,
    ) -> StoreFuture<'a, Vec<String>> {
        guarded(|| self.0.still_pending(approval_ids, now_ms, seal))
    }

    fn changes(&self) -> Option<Arc<Changes>> {
        // A store that panics telling its waiters has none: they read it on a timer.
        catch_unwind(AssertUnwindSafe(|| self.0.changes())).unwrap_or(None)
    }
}
