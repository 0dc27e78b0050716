//! What waiting costs on PostgreSQL: a replica's holds renewed in one transaction, and the
//! approvals its work waits on read in one statement.

use std::collections::HashMap;

use tokio_postgres::Transaction;
use tokio_postgres::types::Type;

use super::super::rows::{sealed_task, task_from_row, task_lock};
use super::{PostgresStore, finish, store};
use crate::control::store::stored::{PENDING, to_sql_u64};
use crate::control::{RowSeal, StoreError, TaskMove, TaskMoveError, TaskRow, decide_task_move};

impl PostgresStore {
    /// Every hold of `holds` (of distinct tasks) decided as `move_task` decides it, in one
    /// transaction of five statements: their locks taken in one order, their rows read, and
    /// the renewed ones written.
    pub(super) async fn hold_all(
        &self,
        holds: &[TaskMove],
    ) -> Result<Vec<Result<TaskRow, TaskMoveError>>, StoreError> {
        if holds.is_empty() {
            return Ok(Vec::new());
        }
        let mut connection = self.connection().await?;
        let tx = connection.transaction().await.map_err(store)?;
        let held = self.hold_all_in(&tx, holds).await;
        finish(tx, held).await
    }

    async fn hold_all_in(
        &self,
        tx: &Transaction<'_>,
        holds: &[TaskMove],
    ) -> Result<Vec<Result<TaskRow, TaskMoveError>>, StoreError> {
        let mut locks: Vec<String> = holds
            .iter()
            .map(|hold| format!("{}\n{}", self.sql.schema, task_lock(&hold.task_id)))
            .collect();
        // One order for every locker: two replicas' renewals never wait on each other in a
        // circle (any other step takes one task's lock).
        locks.sort_unstable();
        tx.execute_typed(&self.sql.lock_all, &[(&locks, Type::TEXT_ARRAY)])
            .await
            .map_err(store)?;
        let ids: Vec<&str> = holds.iter().map(|hold| hold.task_id.as_str()).collect();
        let found = tx
            .query_typed(&self.sql.tasks_among, &[(&ids, Type::TEXT_ARRAY)])
            .await
            .map_err(store)?;
        let mut rows = HashMap::with_capacity(found.len());
        for row in &found {
            let task_id: String = row.try_get(0).map_err(store)?;
            let body: String = row.try_get(1).map_err(store)?;
            let stored_seal: Option<String> = row.try_get(2).map_err(store)?;
            rows.insert(task_id, (body, stored_seal));
        }
        let mut answers = Vec::with_capacity(holds.len());
        let mut written = Written::default();
        for hold in holds {
            let task = rows.get(&hold.task_id).and_then(|(body, stored_seal)| {
                let opened = task_from_row(
                    &hold.task_id,
                    body,
                    stored_seal.as_deref(),
                    hold.owner.as_deref(),
                    hold.now_ms,
                    &hold.seal,
                );
                // One row that does not open is that task's loss, not every other's.
                opened.unwrap_or_else(|error| {
                    tracing::error!(stage = "store", task_id = %hold.task_id, %error,
                        "a held task's row does not open");
                    None
                })
            });
            let Some(task) = task else {
                answers.push(Err(TaskMoveError::NotFound));
                continue;
            };
            answers.push(match decide_task_move(&task, hold) {
                Ok(next) => {
                    written.push(&next, &hold.seal)?;
                    Ok(next)
                }
                Err(refused) => Err(refused),
            });
        }
        if !written.task_ids.is_empty() {
            tx.execute_typed(
                &self.sql.write_tasks,
                &[
                    (&written.task_ids, Type::TEXT_ARRAY),
                    (&written.statuses, Type::TEXT_ARRAY),
                    (&written.leases, Type::INT8_ARRAY),
                    (&written.bodies, Type::TEXT_ARRAY),
                    (&written.seals, Type::TEXT_ARRAY),
                ],
            )
            .await
            .map_err(store)?;
        }
        Ok(answers)
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

/// The renewed rows one transaction writes, as the columns of one `UPDATE … FROM unnest`.
#[derive(Default)]
struct Written {
    task_ids: Vec<String>,
    statuses: Vec<&'static str>,
    leases: Vec<i64>,
    bodies: Vec<String>,
    seals: Vec<String>,
}

impl Written {
    fn push(&mut self, task: &TaskRow, seal: &RowSeal) -> Result<(), StoreError> {
        let (body, sealed) = sealed_task(task, seal)?;
        self.task_ids.push(task.task_id.clone());
        self.statuses.push(task.status.as_str());
        self.leases.push(to_sql_u64(task.lease_until_ms));
        self.bodies.push(body);
        self.seals.push(sealed);
        Ok(())
    }
}
