//! The tasks of long calls, kept in the dispatcher's control store: created with an id of
//! the system's randomness at the dispatcher's time, read and moved by the store's steps, so
//! that every replica sharing the store answers for every task.

use std::time::Duration;

use super::Dispatcher;
use crate::control::{
    StoreError, TaskChange, TaskMove, TaskMoveError, TaskRow, TaskStatus, new_task_id,
};

impl Dispatcher {
    /// Creates a `working` task of `tool` for `owner`, kept `ttl` after its creation (`None`:
    /// until purged by hand), polled every `poll_interval`; durably, before it returns, so
    /// that its id may be told.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails, or the system gives no randomness for its id.
    pub async fn create_task(
        &self,
        owner: &str,
        tool: &str,
        ttl: Option<Duration>,
        poll_interval: Duration,
    ) -> Result<TaskRow, StoreError> {
        let now_ms = self.now_ms();
        let millis = |duration: Duration| u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
        loop {
            let task_id = new_task_id().ok_or_else(|| {
                StoreError::Corrupt("the system gave no randomness for a task id".to_owned())
            })?;
            let task = TaskRow {
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
                awaiting: None,
                outcome: None,
            };
            // 128 random bits do not collide; were they to, another id is drawn.
            if self.store.create_task(&task).await? {
                return Ok(task);
            }
        }
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
        self.store.task(task_id, owner, self.now_ms()).await
    }

    /// Changes the task `task_id` by `change`, for `owner` (`None`: the server's own work),
    /// as [`decide_task_move`](crate::control::decide_task_move) allows.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails; the inner [`TaskMoveError`] when the task's state
    /// does not allow the change.
    pub async fn move_task(
        &self,
        task_id: &str,
        owner: Option<&str>,
        change: TaskChange,
    ) -> Result<Result<TaskRow, TaskMoveError>, StoreError> {
        let step = TaskMove {
            task_id: task_id.to_owned(),
            owner: owner.map(str::to_owned),
            change,
            now_ms: self.now_ms(),
        };
        self.store.move_task(&step).await
    }
}
