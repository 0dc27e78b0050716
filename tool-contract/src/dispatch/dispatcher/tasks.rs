//! The tasks of long calls, kept in the dispatcher's control store: created with an id of
//! the system's randomness at the dispatcher's time, read and moved by the store's steps, so
//! that every replica sharing the store answers for every task; worked on under a lease
//! this dispatcher renews, and taken over by another once it lapses.

use std::time::Duration;

use super::Dispatcher;
use crate::control::{
    StaleTasks, StoreError, TaskChange, TaskCreation, TaskMove, TaskMoveError, TaskRow, TaskStatus,
    is_task_id, new_task_id,
};
use crate::vocabulary::{CallContext, Principal};

/// How long a task's work holds the task without renewing the hold: once it lapses (its
/// replica died), another replica takes the task over ([`Dispatcher::stale_tasks`],
/// [`Dispatcher::hold_task`]). A task is held this long when it is created or taken over;
/// the dispatcher then renews its worker's lease, which holds every task its work holds,
/// three times as often.
pub const TASK_LEASE: Duration = Duration::from_secs(30);

pub(super) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

impl Dispatcher {
    /// Creates a `working` task of `tool` for `owner`, running `call` (as its creator writes
    /// it, for whoever takes the work over), kept `ttl` after its creation (`None`: until
    /// purged by hand), polled every `poll_interval`, held by this dispatcher's work for a
    /// [`TASK_LEASE`]; durably, before it returns, so that its id may be told.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails, or the system gives no randomness for its id.
    pub async fn create_task(
        &self,
        owner: &str,
        tool: &str,
        call: Option<String>,
        ttl: Option<Duration>,
        poll_interval: Duration,
    ) -> Result<TaskRow, StoreError> {
        self.create_task_within(owner, tool, call, ttl, poll_interval, usize::MAX)
            .await?
            .ok_or_else(|| StoreError::Corrupt("a task without a limit was refused".to_owned()))
    }

    /// Creates a task as [`create_task`](Self::create_task) does, unless `owner` holds
    /// `open_limit` open tasks already (neither ended nor expired): then `None`, and nothing
    /// is written.
    ///
    /// # Errors
    ///
    /// As [`create_task`](Self::create_task).
    pub async fn create_task_within(
        &self,
        owner: &str,
        tool: &str,
        call: Option<String>,
        ttl: Option<Duration>,
        poll_interval: Duration,
        open_limit: usize,
    ) -> Result<Option<TaskRow>, StoreError> {
        let now_ms = self.now_ms();
        loop {
            let task = self.new_task(owner, tool, call.clone(), ttl, poll_interval, now_ms)?;
            let created = if open_limit == usize::MAX {
                // Nothing to count.
                if self.store.create_task(&task, &self.row_seal).await? {
                    TaskCreation::Created
                } else {
                    TaskCreation::IdTaken
                }
            } else {
                self.store
                    .create_task_within(&task, open_limit, &self.row_seal)
                    .await?
            };
            match created {
                TaskCreation::Created => return Ok(Some(task)),
                TaskCreation::OwnerFull => return Ok(None),
                // 128 random bits do not collide; were they to, another id is drawn.
                _ => {}
            }
        }
    }

    /// A `working` task of `tool` for `owner`, held by this dispatcher, with a fresh id.
    fn new_task(
        &self,
        owner: &str,
        tool: &str,
        call: Option<String>,
        ttl: Option<Duration>,
        poll_interval: Duration,
        now_ms: u64,
    ) -> Result<TaskRow, StoreError> {
        let task_id = new_task_id().ok_or_else(|| {
            StoreError::Corrupt("the system gave no randomness for a task id".to_owned())
        })?;
        Ok(TaskRow {
            task_id,
            owner: owner.to_owned(),
            tool: tool.to_owned(),
            status: TaskStatus::Working,
            status_message: None,
            created_at_ms: now_ms,
            updated_at_ms: now_ms,
            ttl_ms: ttl.map(millis),
            poll_interval_ms: millis(poll_interval),
            began: false,
            call,
            worker: Some(self.owner.clone()),
            lease_until_ms: now_ms.saturating_add(millis(TASK_LEASE)),
            awaiting: None,
            outcome: None,
        })
    }

    /// The task `task_id` if `owner` owns it (`None`: whoever does) and it has not expired.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    pub async fn task(
        &self,
        task_id: &str,
        owner: Option<&str>,
    ) -> Result<Option<TaskRow>, StoreError> {
        if !is_task_id(task_id) {
            return Ok(None);
        }
        self.store
            .task(task_id, owner, self.now_ms(), &self.row_seal)
            .await
    }

    /// Changes the task `task_id` by `change` for `owner`, a client's request (a
    /// cancellation), as [`decide_task_move`](crate::control::decide_task_move) allows.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails; the inner [`TaskMoveError`] when the task's state
    /// does not allow the change.
    pub async fn move_task(
        &self,
        task_id: &str,
        owner: &str,
        change: TaskChange,
    ) -> Result<Result<TaskRow, TaskMoveError>, StoreError> {
        self.task_step(task_id, Some(owner), None, change).await
    }

    /// Changes the task `task_id` by `change` as this dispatcher's work on it: refused
    /// ([`TaskMoveError::Held`]) once another replica has taken the task over.
    ///
    /// # Errors
    ///
    /// As [`move_task`](Self::move_task).
    pub async fn work_on_task(
        &self,
        task_id: &str,
        change: TaskChange,
    ) -> Result<Result<TaskRow, TaskMoveError>, StoreError> {
        self.task_step(task_id, None, Some(self.owner.clone()), change)
            .await
    }

    /// Holds the task `task_id` for this dispatcher's work for another [`TASK_LEASE`]: its
    /// own hold renewed, or another's taken over once it lapsed.
    ///
    /// # Errors
    ///
    /// As [`move_task`](Self::move_task); [`TaskMoveError::Held`] while another's hold runs.
    pub async fn hold_task(
        &self,
        task_id: &str,
    ) -> Result<Result<TaskRow, TaskMoveError>, StoreError> {
        let hold = TaskChange::Hold {
            worker: self.owner.clone(),
            until_ms: self.now_ms().saturating_add(millis(TASK_LEASE)),
        };
        self.task_step(task_id, None, Some(self.owner.clone()), hold)
            .await
    }

    /// The tasks whose work needs a worker now: not ended, not expired, their worker's hold
    /// lapsed; and the stale rows that did not open, passed over.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    pub async fn stale_tasks(&self) -> Result<StaleTasks, StoreError> {
        self.store.stale_tasks(self.now_ms(), &self.row_seal).await
    }

    /// Up to `limit` of `owner`'s tasks not expired, in the order of their ids, after the
    /// id `after` when one is given: a page of `tasks/list`.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    pub async fn tasks_of(
        &self,
        owner: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<TaskRow>, StoreError> {
        self.store
            .tasks_of(owner, after, limit, self.now_ms(), &self.row_seal)
            .await
    }

    /// `principal`'s call `context` as a task keeps it for whoever takes its work over.
    #[must_use]
    pub fn task_call(principal: &Principal, context: &CallContext) -> Option<String> {
        super::stale::stored_call_of(principal, context)
    }

    /// The principal and call a task keeps ([`task_call`](Self::task_call)), if it reads.
    #[must_use]
    pub fn call_of_task(stored: &str) -> Option<(Principal, CallContext)> {
        super::stale::read_call(stored)
    }

    async fn task_step(
        &self,
        task_id: &str,
        owner: Option<&str>,
        worker: Option<String>,
        change: TaskChange,
    ) -> Result<Result<TaskRow, TaskMoveError>, StoreError> {
        if !is_task_id(task_id) {
            return Ok(Err(TaskMoveError::NotFound));
        }
        let step = TaskMove {
            task_id: task_id.to_owned(),
            owner: owner.map(str::to_owned),
            worker,
            change,
            now_ms: self.now_ms(),
            seal: self.row_seal.clone(),
        };
        self.store.move_task(&step).await
    }
}
