//! What waiting costs on PostgreSQL: a replica's lease renewed and its held tasks looked at
//! in one statement, and the approvals its work waits on read in one statement.

use std::collections::HashMap;

use tokio_postgres::types::Type;

use super::{PostgresStore, store};
use crate::control::store::stored::{PENDING, to_sql_u64};
use crate::control::{StoreError, TaskStatus, WorkerRenewal};

impl PostgresStore {
    /// A worker's lease renewed and its held tasks looked at, in one statement: one row
    /// written however many tasks wait.
    pub(super) async fn renew(
        &self,
        renewal: &WorkerRenewal,
    ) -> Result<Vec<Option<TaskStatus>>, StoreError> {
        let sealed = renewal
            .seal
            .seal_worker(&renewal.worker, renewal.until_ms)?;
        let (until, now) = (to_sql_u64(renewal.until_ms), to_sql_u64(renewal.now_ms));
        let connection = self.connection().await?;
        let found = connection
            .query_typed(
                &self.sql.renew_worker,
                &[
                    (&renewal.worker, Type::TEXT),
                    (&until, Type::INT8),
                    (&sealed, Type::TEXT),
                    (&renewal.task_ids, Type::TEXT_ARRAY),
                    (&now, Type::INT8),
                ],
            )
            .await
            .map_err(store)?;
        let mut statuses = HashMap::with_capacity(found.len());
        for row in &found {
            let task_id: String = row.try_get(0).map_err(store)?;
            let status: String = row.try_get(1).map_err(store)?;
            statuses.insert(task_id, status);
        }
        Ok(renewal
            .task_ids
            .iter()
            .map(|task_id| match statuses.get(task_id).map(String::as_str) {
                Some("working") => Some(TaskStatus::Working),
                Some("input_required") => Some(TaskStatus::InputRequired),
                _ => None,
            })
            .collect())
    }

    /// Which of `approval_ids` are pending at `now_ms`, in one statement.
    pub(super) async fn pending_among(
        &self,
        approval_ids: &[String],
        now_ms: u64,
    ) -> Result<Vec<String>, StoreError> {
        if approval_ids.is_empty() {
            return Ok(Vec::new());
        }
        let connection = self.connection().await?;
        let now = to_sql_u64(now_ms);
        let found = connection
            .query_typed(
                &self.sql.pending_among,
                &[
                    (&approval_ids, Type::TEXT_ARRAY),
                    (&PENDING, Type::TEXT),
                    (&now, Type::INT8),
                ],
            )
            .await
            .map_err(store)?;
        found
            .iter()
            .map(|row| row.try_get(0).map_err(store))
            .collect()
    }
}
