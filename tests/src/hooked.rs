//! A control-plane store with a hook before every step: to record the steps a dispatcher
//! takes, to make the store fail (fail-closed tests) or panic.

use std::sync::Arc;

use tool_contract::control::{
    Advance, Advanced, Claim, Claimed, Purged, Record, Release, RowSeal, StoreFuture,
};
use tool_contract::control::{
    ApprovalAsk, ApprovalCheck, ApprovalError, ApproveStep, Approved, ControlStore,
    PendingApproval, RejectStep, StoreError,
};
use tool_contract::control::{Approver, DirectoryWrite, EnrollError, SignCount, SignCountCheck};
use tool_contract::control::{
    StaleTasks, TaskMove, TaskMoveError, TaskRow, TaskStatus, WorkerRenewal,
};

/// The names the hook is called with, one per step.
pub const STEPS: [&str; 22] = [
    "claim",
    "advance",
    "release",
    "get",
    "stale",
    "purge_expired",
    "purge_operations",
    "check_approval",
    "approve",
    "reject",
    "pending_approvals",
    "pending_approval",
    "write_directory",
    "approvers",
    "approver",
    "create_task",
    "task",
    "move_task",
    "stale_tasks",
    "tasks_of",
    "sign_count",
    "renew_worker",
];

type Hook = dyn Fn(&'static str) -> Result<(), StoreError> + Send + Sync;

/// `inner`, with `hook(step)` called before each step: an `Err` is the step's answer.
pub struct Hooked {
    inner: Arc<dyn ControlStore>,
    hook: Box<Hook>,
}

impl Hooked {
    /// `inner` behind `hook`.
    pub fn new(
        inner: Arc<dyn ControlStore>,
        hook: impl Fn(&'static str) -> Result<(), StoreError> + Send + Sync + 'static,
    ) -> Self {
        Hooked {
            inner,
            hook: Box::new(hook),
        }
    }

    fn step<'a, T: Send + 'a>(
        &'a self,
        name: &'static str,
        step: impl FnOnce() -> StoreFuture<'a, T>,
    ) -> StoreFuture<'a, T> {
        match (self.hook)(name) {
            Ok(()) => step(),
            Err(error) => Box::pin(std::future::ready(Err(error))),
        }
    }
}

impl ControlStore for Hooked {
    fn claim<'a>(&'a self, claim: &'a Claim) -> StoreFuture<'a, Claimed> {
        self.step("claim", || self.inner.claim(claim))
    }
    fn advance<'a>(&'a self, step: &'a Advance) -> StoreFuture<'a, Advanced> {
        self.step("advance", || self.inner.advance(step))
    }
    fn release<'a>(&'a self, release: &'a Release) -> StoreFuture<'a, bool> {
        self.step("release", || self.inner.release(release))
    }
    fn get<'a>(&'a self, key: &'a str) -> StoreFuture<'a, Option<Record>> {
        self.step("get", || self.inner.get(key))
    }
    fn stale(&self, now_ms: u64) -> StoreFuture<'_, Vec<Record>> {
        self.step("stale", || self.inner.stale(now_ms))
    }
    fn purge_expired(&self, now_ms: u64) -> StoreFuture<'_, Purged> {
        self.step("purge_expired", || self.inner.purge_expired(now_ms))
    }
    fn purge_operations(&self, window_ended_by_ms: u64) -> StoreFuture<'_, u64> {
        self.step("purge_operations", || {
            self.inner.purge_operations(window_ended_by_ms)
        })
    }
    fn check_approval<'a>(&'a self, ask: &'a ApprovalAsk) -> StoreFuture<'a, ApprovalCheck> {
        self.step("check_approval", || self.inner.check_approval(ask))
    }
    fn approve<'a>(
        &'a self,
        step: &'a ApproveStep,
    ) -> StoreFuture<'a, Result<Approved, ApprovalError>> {
        self.step("approve", || self.inner.approve(step))
    }
    fn reject<'a>(&'a self, step: &'a RejectStep) -> StoreFuture<'a, Result<(), ApprovalError>> {
        self.step("reject", || self.inner.reject(step))
    }
    fn pending_approvals<'a>(
        &'a self,
        now_ms: u64,
        seal: &'a RowSeal,
    ) -> StoreFuture<'a, Vec<PendingApproval>> {
        self.step("pending_approvals", || {
            self.inner.pending_approvals(now_ms, seal)
        })
    }
    fn pending_approval<'a>(
        &'a self,
        approval_id: &'a str,
        now_ms: u64,
        seal: &'a RowSeal,
    ) -> StoreFuture<'a, Option<PendingApproval>> {
        self.step("pending_approval", || {
            self.inner.pending_approval(approval_id, now_ms, seal)
        })
    }
    fn write_directory<'a>(
        &'a self,
        write: &'a DirectoryWrite,
    ) -> StoreFuture<'a, Result<Approver, EnrollError>> {
        self.step("write_directory", || self.inner.write_directory(write))
    }
    fn approvers<'a>(&'a self, seal: &'a RowSeal) -> StoreFuture<'a, Vec<Approver>> {
        self.step("approvers", || self.inner.approvers(seal))
    }
    fn approver<'a>(
        &'a self,
        approver_id: &'a str,
        seal: &'a RowSeal,
    ) -> StoreFuture<'a, Option<Approver>> {
        self.step("approver", || self.inner.approver(approver_id, seal))
    }
    fn create_task<'a>(&'a self, task: &'a TaskRow, seal: &'a RowSeal) -> StoreFuture<'a, bool> {
        self.step("create_task", || self.inner.create_task(task, seal))
    }
    fn task<'a>(
        &'a self,
        task_id: &'a str,
        owner: Option<&'a str>,
        now_ms: u64,
        seal: &'a RowSeal,
    ) -> StoreFuture<'a, Option<TaskRow>> {
        self.step("task", || self.inner.task(task_id, owner, now_ms, seal))
    }
    fn move_task<'a>(
        &'a self,
        step: &'a TaskMove,
    ) -> StoreFuture<'a, Result<TaskRow, TaskMoveError>> {
        self.step("move_task", || self.inner.move_task(step))
    }
    fn stale_tasks<'a>(&'a self, now_ms: u64, seal: &'a RowSeal) -> StoreFuture<'a, StaleTasks> {
        self.step("stale_tasks", || self.inner.stale_tasks(now_ms, seal))
    }
    fn tasks_of<'a>(
        &'a self,
        owner: &'a str,
        after: Option<&'a str>,
        limit: usize,
        now_ms: u64,
        seal: &'a RowSeal,
    ) -> StoreFuture<'a, Vec<TaskRow>> {
        self.step("tasks_of", || {
            self.inner.tasks_of(owner, after, limit, now_ms, seal)
        })
    }
    fn sign_count<'a>(&'a self, count: &'a SignCount) -> StoreFuture<'a, SignCountCheck> {
        self.step("sign_count", || self.inner.sign_count(count))
    }
    fn renew_worker<'a>(
        &'a self,
        renewal: &'a WorkerRenewal,
    ) -> StoreFuture<'a, Vec<Option<TaskStatus>>> {
        self.step("renew_worker", || self.inner.renew_worker(renewal))
    }
}
