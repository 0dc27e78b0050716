//! The in-process store: two maps under one lock.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};

use futures_util::FutureExt;

use super::decide::{approval_expired, is_stale, record_expired, window_ended};
use super::rows::{self, Fence, Rows};
use crate::control::{
    Advance, Advanced, Claim, Claimed, ControlStore, Purged, Record, Release, RowSeal, StoreError,
    StoreFuture,
};
use crate::control::{
    ApprovalAsk, ApprovalCheck, ApprovalEntry, ApprovalError, ApprovalLook, ApproveStep, Approved,
    PendingApproval, RejectStep,
};
use crate::control::{Approver, DirectoryWrite, EnrollError, SignCount, SignCountCheck};
use crate::control::{
    Changed, Changes, StaleTasks, TaskCreation, TaskMove, TaskMoveError, TaskRow, TaskStatus,
    WorkerRenewal,
};

/// A store in this process's memory. Clones share one state, so a dispatcher built again over
/// a clone sees what the first one left (which is how tests stand for a restart); a real
/// restart loses it all: use `SqliteStore` (feature `sqlite`) or `PostgresStore` (feature
/// `postgres`) where that matters.
#[derive(Debug, Clone, Default)]
pub struct MemoryStore {
    state: Arc<Mutex<State>>,
    changes: Arc<Changes>,
}

#[derive(Debug, Default)]
struct State {
    records: HashMap<String, Record>,
    /// Each approval entry with the seal it was written with.
    approvals: HashMap<String, (ApprovalEntry, String)>,
    /// Each approver's stored JSON with the seal it was written with.
    approvers: HashMap<String, (String, String)>,
    /// Each task's row, by id.
    tasks: HashMap<String, StoredTask>,
    /// Each worker's lease: until when, and its seal.
    workers: HashMap<String, (u64, String)>,
}

/// A task as the memory store keeps it: what a SQL store's columns hold.
#[derive(Debug)]
struct StoredTask {
    /// Its JSON.
    body: String,
    /// The seal it was written with.
    seal: String,
    /// Its owner, to select by before a row is opened (as the SQL stores' column is).
    owner: String,
    /// The worker holding it, whose lease a stale scan reads beside it.
    worker: Option<String>,
    /// When it expires.
    expires_at_ms: Option<u64>,
    /// Whether it has not ended (as a SQL store's status column says).
    open: bool,
}

impl MemoryStore {
    /// An empty store.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave a half-written row: every write is one
        // `insert` or `remove`, and a step checks before it writes.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Runs a step whose rows never wait: it completes on its first poll.
pub(crate) fn at_once<T>(
    step: impl Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    step.now_or_never().unwrap_or_else(|| {
        Err(StoreError::Corrupt(
            "a synchronous store step waited".into(),
        ))
    })
}

fn answered<'a, T: Send + 'a>(answer: Result<T, StoreError>) -> StoreFuture<'a, T> {
    Box::pin(std::future::ready(answer))
}

struct MemoryRows<'a>(&'a mut State);

impl Rows for MemoryRows<'_> {
    async fn lock_key(&mut self, _key: &str) -> Result<(), StoreError> {
        Ok(())
    }

    async fn record(&mut self, key: &str) -> Result<Option<Record>, StoreError> {
        Ok(self.0.records.get(key).cloned())
    }

    async fn put_record(
        &mut self,
        record: &Record,
        fence: Option<&Fence>,
    ) -> Result<bool, StoreError> {
        let holds = match (self.0.records.get(&record.key), fence) {
            (None, None) => true,
            (Some(existing), Some(fence)) => Fence::of(existing) == *fence,
            _ => false,
        };
        if holds {
            self.0.records.insert(record.key.clone(), record.clone());
        }
        Ok(holds)
    }

    async fn delete_record(&mut self, key: &str, fence: &Fence) -> Result<bool, StoreError> {
        let holds = self
            .0
            .records
            .get(key)
            .is_some_and(|existing| Fence::of(existing) == *fence);
        if holds {
            self.0.records.remove(key);
        }
        Ok(holds)
    }

    async fn approval(
        &mut self,
        key: &str,
    ) -> Result<Option<(ApprovalEntry, Option<String>)>, StoreError> {
        Ok(self
            .0
            .approvals
            .get(key)
            .map(|(entry, seal)| (entry.clone(), Some(seal.clone()))))
    }

    async fn approval_key(&mut self, approval_id: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .0
            .approvals
            .iter()
            .find(|(_, (entry, _))| entry.approval_id() == approval_id)
            .map(|(key, _)| key.clone()))
    }

    async fn put_approval(
        &mut self,
        key: &str,
        entry: &ApprovalEntry,
        seal: &str,
    ) -> Result<(), StoreError> {
        self.0
            .approvals
            .insert(key.to_owned(), (entry.clone(), seal.to_owned()));
        Ok(())
    }

    async fn approver_row(
        &mut self,
        approver_id: &str,
    ) -> Result<Option<(String, Option<String>)>, StoreError> {
        Ok(self
            .0
            .approvers
            .get(approver_id)
            .map(|(body, seal)| (body.clone(), Some(seal.clone()))))
    }

    async fn approver_rows(&mut self) -> Result<Vec<(String, String, Option<String>)>, StoreError> {
        Ok(self
            .0
            .approvers
            .iter()
            .map(|(id, (body, seal))| (id.clone(), body.clone(), Some(seal.clone())))
            .collect())
    }

    async fn put_approver_row(
        &mut self,
        approver_id: &str,
        body: &str,
        seal: &str,
    ) -> Result<(), StoreError> {
        self.0
            .approvers
            .insert(approver_id.to_owned(), (body.to_owned(), seal.to_owned()));
        Ok(())
    }

    async fn task_row(
        &mut self,
        task_id: &str,
    ) -> Result<Option<(String, Option<String>)>, StoreError> {
        Ok(self
            .0
            .tasks
            .get(task_id)
            .map(|stored| (stored.body.clone(), Some(stored.seal.clone()))))
    }

    async fn pending_approvals_of(
        &mut self,
        principal_ref: &str,
        except_key: &str,
        now_ms: u64,
    ) -> Result<usize, StoreError> {
        Ok(self
            .0
            .approvals
            .iter()
            .filter(|(key, (entry, _))| {
                *key != except_key
                    && matches!(entry, ApprovalEntry::Pending { pending, expires_at_ms }
                        if pending.principal_ref == principal_ref && *expires_at_ms > now_ms)
            })
            .count())
    }

    async fn worker_lease(&mut self, worker: &str) -> Result<Option<(u64, String)>, StoreError> {
        Ok(self.0.workers.get(worker).cloned())
    }

    async fn put_worker_lease(
        &mut self,
        worker: &str,
        until_ms: u64,
        seal: &str,
    ) -> Result<(), StoreError> {
        self.0
            .workers
            .insert(worker.to_owned(), (until_ms, seal.to_owned()));
        Ok(())
    }

    async fn open_tasks_of(&mut self, owner: &str, now_ms: u64) -> Result<usize, StoreError> {
        Ok(self
            .0
            .tasks
            .values()
            .filter(|task| {
                task.owner == owner
                    && task.open
                    && task.expires_at_ms.is_none_or(|expires| expires > now_ms)
            })
            .count())
    }

    async fn put_task_row(
        &mut self,
        task: &TaskRow,
        body: &str,
        seal: &str,
        new: bool,
    ) -> Result<bool, StoreError> {
        if new && self.0.tasks.contains_key(&task.task_id) {
            return Ok(false);
        }
        self.0.tasks.insert(
            task.task_id.clone(),
            StoredTask {
                body: body.to_owned(),
                seal: seal.to_owned(),
                owner: task.owner.clone(),
                worker: task.worker.clone(),
                expires_at_ms: task.expires_at_ms(),
                open: !task.status.is_terminal(),
            },
        );
        Ok(true)
    }
}

impl ControlStore for MemoryStore {
    fn claim<'a>(&'a self, claim: &'a Claim) -> StoreFuture<'a, Claimed> {
        answered(at_once(rows::claim(
            &mut MemoryRows(&mut self.state()),
            claim,
        )))
    }

    fn advance<'a>(&'a self, step: &'a Advance) -> StoreFuture<'a, Advanced> {
        answered(at_once(rows::advance(
            &mut MemoryRows(&mut self.state()),
            step,
        )))
    }

    fn release<'a>(&'a self, release: &'a Release) -> StoreFuture<'a, bool> {
        answered(at_once(rows::release(
            &mut MemoryRows(&mut self.state()),
            release,
        )))
    }

    fn get<'a>(&'a self, key: &'a str) -> StoreFuture<'a, Option<Record>> {
        answered(Ok(self.state().records.get(key).cloned()))
    }

    fn stale(&self, now_ms: u64) -> StoreFuture<'_, Vec<Record>> {
        let state = self.state();
        let mut stale: Vec<Record> = state
            .records
            .values()
            .filter(|record| is_stale(record, now_ms))
            .cloned()
            .collect();
        stale.sort_by(|a, b| a.key.cmp(&b.key));
        answered(Ok(stale))
    }

    fn purge_expired(&self, now_ms: u64) -> StoreFuture<'_, Purged> {
        let mut state = self.state();
        let (records, approvals, tasks) = (
            state.records.len(),
            state.approvals.len(),
            state.tasks.len(),
        );
        state
            .records
            .retain(|_, record| !record_expired(record, now_ms));
        state
            .approvals
            .retain(|_, (entry, _)| !approval_expired(entry, now_ms));
        state
            .tasks
            .retain(|_, stored| stored.expires_at_ms.is_none_or(|at| at > now_ms));
        // A lapsed lease holds nothing: its worker, if it lives, writes it again.
        state.workers.retain(|_, (until_ms, _)| *until_ms > now_ms);
        answered(Ok(Purged {
            records: (records - state.records.len()) as u64,
            approvals: (approvals - state.approvals.len()) as u64,
            tasks: (tasks - state.tasks.len()) as u64,
        }))
    }

    fn purge_operations(&self, window_ended_by_ms: u64) -> StoreFuture<'_, u64> {
        let mut state = self.state();
        let before = state.records.len();
        state
            .records
            .retain(|_, record| !window_ended(record, window_ended_by_ms));
        answered(Ok((before - state.records.len()) as u64))
    }

    fn look_for_approval<'a>(&'a self, ask: &'a ApprovalAsk) -> StoreFuture<'a, ApprovalLook> {
        answered(at_once(rows::look_for_approval(
            &mut MemoryRows(&mut self.state()),
            ask,
        )))
    }

    fn check_approval<'a>(&'a self, ask: &'a ApprovalAsk) -> StoreFuture<'a, ApprovalCheck> {
        answered(at_once(rows::check_approval(
            &mut MemoryRows(&mut self.state()),
            ask,
        )))
    }

    fn approve<'a>(
        &'a self,
        step: &'a ApproveStep,
    ) -> StoreFuture<'a, Result<Approved, ApprovalError>> {
        let approved = at_once(rows::approve(&mut MemoryRows(&mut self.state()), step));
        if matches!(approved, Ok(Ok(_))) {
            self.changes
                .changed(&Changed::Approval(step.approval_id.clone()));
        }
        answered(approved)
    }

    fn reject<'a>(&'a self, step: &'a RejectStep) -> StoreFuture<'a, Result<(), ApprovalError>> {
        let rejected = at_once(rows::reject(&mut MemoryRows(&mut self.state()), step));
        if matches!(rejected, Ok(Ok(()))) {
            self.changes
                .changed(&Changed::Approval(step.approval_id.clone()));
        }
        answered(rejected)
    }

    fn pending_approvals<'a>(
        &'a self,
        now_ms: u64,
        seal: &'a RowSeal,
    ) -> StoreFuture<'a, Vec<PendingApproval>> {
        let state = self.state();
        let entries = state
            .approvals
            .iter()
            .map(|(key, (entry, sealed))| (key.clone(), entry.clone(), Some(sealed.clone())));
        answered(rows::opened_pending(entries, now_ms, seal))
    }

    fn pending_approval<'a>(
        &'a self,
        approval_id: &'a str,
        now_ms: u64,
        seal: &'a RowSeal,
    ) -> StoreFuture<'a, Option<PendingApproval>> {
        answered(at_once(rows::pending_approval(
            &mut MemoryRows(&mut self.state()),
            approval_id,
            now_ms,
            seal,
        )))
    }

    fn write_directory<'a>(
        &'a self,
        write: &'a DirectoryWrite,
    ) -> StoreFuture<'a, Result<Approver, EnrollError>> {
        answered(at_once(rows::write_directory(
            &mut MemoryRows(&mut self.state()),
            write,
        )))
    }

    fn approvers<'a>(&'a self, seal: &'a RowSeal) -> StoreFuture<'a, Vec<Approver>> {
        answered(at_once(rows::approvers(
            &mut MemoryRows(&mut self.state()),
            seal,
        )))
    }

    fn approver<'a>(
        &'a self,
        approver_id: &'a str,
        seal: &'a RowSeal,
    ) -> StoreFuture<'a, Option<Approver>> {
        answered(at_once(rows::read_approver(
            &mut MemoryRows(&mut self.state()),
            approver_id,
            seal,
        )))
    }

    fn create_task<'a>(&'a self, task: &'a TaskRow, seal: &'a RowSeal) -> StoreFuture<'a, bool> {
        answered(at_once(rows::create_task(
            &mut MemoryRows(&mut self.state()),
            task,
            seal,
        )))
    }

    fn create_task_within<'a>(
        &'a self,
        task: &'a TaskRow,
        open_limit: usize,
        seal: &'a RowSeal,
    ) -> StoreFuture<'a, TaskCreation> {
        answered(at_once(rows::create_task_within(
            &mut MemoryRows(&mut self.state()),
            task,
            open_limit,
            seal,
        )))
    }

    fn task<'a>(
        &'a self,
        task_id: &'a str,
        owner: Option<&'a str>,
        now_ms: u64,
        seal: &'a RowSeal,
    ) -> StoreFuture<'a, Option<TaskRow>> {
        answered(at_once(rows::read_task(
            &mut MemoryRows(&mut self.state()),
            task_id,
            owner,
            now_ms,
            seal,
        )))
    }

    fn move_task<'a>(
        &'a self,
        step: &'a TaskMove,
    ) -> StoreFuture<'a, Result<TaskRow, TaskMoveError>> {
        let moved = at_once(rows::move_task(&mut MemoryRows(&mut self.state()), step));
        if matches!(moved, Ok(Ok(_))) && rows::announced(step) {
            self.changes.changed(&Changed::Task(step.task_id.clone()));
        }
        answered(moved)
    }

    fn renew_worker<'a>(
        &'a self,
        renewal: &'a WorkerRenewal,
    ) -> StoreFuture<'a, Vec<Option<TaskStatus>>> {
        answered(at_once(rows::renew_worker(
            &mut MemoryRows(&mut self.state()),
            renewal,
        )))
    }

    fn still_pending<'a>(
        &'a self,
        approval_ids: &'a [String],
        now_ms: u64,
        seal: &'a RowSeal,
    ) -> StoreFuture<'a, Vec<String>> {
        answered(at_once(rows::still_pending(
            &mut MemoryRows(&mut self.state()),
            approval_ids,
            now_ms,
            seal,
        )))
    }

    fn changes(&self) -> Option<Arc<Changes>> {
        Some(Arc::clone(&self.changes))
    }

    fn stale_tasks<'a>(&'a self, now_ms: u64, seal: &'a RowSeal) -> StoreFuture<'a, StaleTasks> {
        let state = self.state();
        let found = state.tasks.iter().map(|(task_id, stored)| {
            let lease = stored
                .worker
                .as_ref()
                .and_then(|worker| state.workers.get(worker).cloned());
            (
                task_id.clone(),
                stored.body.clone(),
                Some(stored.seal.clone()),
                lease,
            )
        });
        answered(Ok(rows::stale_tasks_of(found, now_ms, seal)))
    }

    fn tasks_of<'a>(
        &'a self,
        owner: &'a str,
        after: Option<&'a str>,
        limit: usize,
        now_ms: u64,
        seal: &'a RowSeal,
    ) -> StoreFuture<'a, Vec<TaskRow>> {
        let state = self.state();
        let mut ids: Vec<&String> = state
            .tasks
            .iter()
            .filter(|(task_id, stored)| {
                stored.owner == owner && after.is_none_or(|after| task_id.as_str() > after)
            })
            .map(|(task_id, _)| task_id)
            .collect();
        ids.sort_unstable();
        let mut page = Vec::new();
        for task_id in ids {
            if page.len() == limit {
                break;
            }
            let stored = &state.tasks[task_id];
            let opened = rows::task_from_row(
                task_id,
                &stored.body,
                Some(&stored.seal),
                Some(owner),
                now_ms,
                seal,
            );
            match opened {
                Ok(Some(task)) => page.push(task),
                Ok(None) => {}
                Err(error) => return answered(Err(error)),
            }
        }
        answered(Ok(page))
    }

    fn sign_count<'a>(&'a self, count: &'a SignCount) -> StoreFuture<'a, SignCountCheck> {
        answered(at_once(rows::sign_count(
            &mut MemoryRows(&mut self.state()),
            count,
        )))
    }
}
