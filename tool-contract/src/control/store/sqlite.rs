//! The durable store on one host: one SQLite file, each step one `IMMEDIATE` transaction, run
//! on tokio's blocking pool so the runtime's threads never wait on the file.

use std::collections::HashMap;
use std::future::{Future, ready};
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, Weak};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, Row, Transaction, TransactionBehavior, params};

use super::memory::at_once;
use super::rows::{self, Fence, Rows};
use super::stored::{
    ApprovalRow, PENDING, ReadApprovalRow, approval_row, from_sql_u64, sealed_entry, to_sql_u64,
    worker_lease_columns,
};
use crate::control::WriteState;
use crate::control::{
    Advance, Advanced, Claim, Claimed, ControlStore, Lease, Purged, Record, Release, RowSeal,
    SCHEMA_VERSION, StoreError, StoreFuture,
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

/// Version 1: the ledger with lease generations, and the approvals. A file from before
/// versioning (`user_version` 0) may hold the ledger without generations: they are added.
const SCHEMA_V1: &str = "
CREATE TABLE IF NOT EXISTS tool_contract_ledger (
    key              TEXT PRIMARY KEY NOT NULL,
    request_sha256   TEXT NOT NULL,
    tool             TEXT NOT NULL,
    state            TEXT NOT NULL,
    owner            TEXT NOT NULL,
    lease_generation INTEGER NOT NULL DEFAULT 0,
    lease_until_ms   INTEGER NOT NULL,
    expires_at_ms    INTEGER NOT NULL,
    result           TEXT
) STRICT;
CREATE INDEX IF NOT EXISTS tool_contract_ledger_expiry ON tool_contract_ledger (expires_at_ms);
CREATE TABLE IF NOT EXISTS tool_contract_approvals (
    key                 TEXT PRIMARY KEY NOT NULL,
    approval_id         TEXT NOT NULL UNIQUE,
    state               TEXT NOT NULL,
    expires_at_ms       INTEGER NOT NULL,
    body                TEXT NOT NULL,
    redeemed_owner      TEXT,
    redeemed_generation INTEGER
) STRICT;
CREATE INDEX IF NOT EXISTS tool_contract_approvals_expiry ON tool_contract_approvals (expires_at_ms);
";

/// Version 2: each approval row carries its seal ([`RowSeal`]). Rows written before have
/// none, and are refused when read.
const SCHEMA_V2: &str = "ALTER TABLE tool_contract_approvals ADD COLUMN seal TEXT;";

/// Version 3: each ledger record keeps the call that claimed it, for a reconcile pass.
const SCHEMA_V3: &str = "ALTER TABLE tool_contract_ledger ADD COLUMN call TEXT;";

/// Version 4: the approver directory, one sealed row per enrolled approver.
const SCHEMA_V4: &str = "
CREATE TABLE IF NOT EXISTS tool_contract_approvers (
    approver_id TEXT PRIMARY KEY NOT NULL,
    body        TEXT NOT NULL,
    seal        TEXT NOT NULL
) STRICT;
";

/// Version 6: the tasks of long calls, each row its JSON, with its owner and expiry to purge
/// by.
const SCHEMA_V6: &str = "
CREATE TABLE IF NOT EXISTS tool_contract_tasks (
    task_id       TEXT PRIMARY KEY NOT NULL,
    owner          TEXT NOT NULL,
    status         TEXT NOT NULL,
    lease_until_ms INTEGER NOT NULL,
    expires_at_ms  INTEGER,
    body           TEXT NOT NULL,
    seal           TEXT NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS tool_contract_tasks_lease ON tool_contract_tasks (lease_until_ms);
CREATE INDEX IF NOT EXISTS tool_contract_tasks_expiry ON tool_contract_tasks (expires_at_ms);
";

/// Version 7: an owner's tasks read a page at a time by index (2025-11-25's `tasks/list`).
const SCHEMA_V7: &str = "
CREATE INDEX IF NOT EXISTS tool_contract_tasks_owner ON tool_contract_tasks (owner, task_id);
";

/// Version 8: a record kept past its window until an operator purges it (an operation named
/// by its fields or the application's key).
const SCHEMA_V8: &str =
    "ALTER TABLE tool_contract_ledger ADD COLUMN kept INTEGER NOT NULL DEFAULT 0;";

/// A page of an owner's tasks: `?1` the owner, after the id `?2`, not expired by `?3`, at
/// most `?4` of them.
const TASKS_OF: &str = "SELECT task_id, body, seal FROM tool_contract_tasks \
                        WHERE owner = ?1 AND task_id > ?2 \
                        AND (expires_at_ms IS NULL OR expires_at_ms > ?3) \
                        ORDER BY task_id LIMIT ?4";

const COLUMNS: &str = "key, request_sha256, tool, state, owner, lease_generation, \
                       lease_until_ms, expires_at_ms, result, call, kept";

/// The waiters of the stores this process opened on the file at `path`: every store on one
/// file tells the same waiters, so replicas in one process wake each other.
fn waiters_of(path: &Path) -> Arc<Changes> {
    static FILES: LazyLock<Mutex<HashMap<PathBuf, Weak<Changes>>>> = LazyLock::new(Mutex::default);
    let file = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    let mut files = FILES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(changes) = files.get(&file).and_then(Weak::upgrade) {
        return changes;
    }
    files.retain(|_, changes| changes.strong_count() > 0);
    let changes = Changes::new();
    files.insert(file, Arc::downgrade(&changes));
    changes
}

/// A control-plane store in an SQLite database file: it survives a process restart, and
/// several processes on one machine may share the file (each step that writes takes SQLite's
/// write lock first, so two steps on one key never interleave; a step that only reads, `get`,
/// `stale`, `pending_approvals`, `pending_approval`, `approvers`, reads a snapshot without it).
///
/// Every store this process opens on one file tells the same waiters when it decides an
/// approval or moves a task ([`ControlStore::changes`]); a change made by another process
/// reaches them when they next look (every held task's is looked at every 10 s).
///
/// The connection is opened with WAL journaling and `synchronous = FULL`, so an answered
/// claim is on disk before the handler runs. Inside a tokio runtime each step runs on the
/// blocking pool (`spawn_blocking`); outside one, on the calling thread.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    connection: Arc<Mutex<Connection>>,
    /// This process's waiters: another process sharing the file tells them nothing, so
    /// they learn its changes when they look again.
    changes: Arc<Changes>,
}

impl SqliteStore {
    /// Opens (or creates) the store at `path`, migrating its schema to [`SCHEMA_VERSION`].
    ///
    /// # Errors
    ///
    /// [`StoreError::Store`] when the file cannot be opened or the tables created;
    /// [`StoreError::SchemaTooNew`] when a newer build wrote it.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref();
        let mut opened = Self::with_connection(Connection::open(path).map_err(store)?)?;
        opened.changes = waiters_of(path);
        Ok(opened)
    }

    /// A store in a private in-memory database (for tests; it does not survive a restart).
    ///
    /// # Errors
    ///
    /// [`StoreError::Store`] when SQLite cannot set it up.
    pub fn open_in_memory() -> Result<Self, StoreError> {
        Self::with_connection(Connection::open_in_memory().map_err(store)?)
    }

    fn with_connection(mut connection: Connection) -> Result<Self, StoreError> {
        connection
            .busy_timeout(Duration::from_secs(10))
            .map_err(store)?;
        connection
            .pragma_update(None, "journal_mode", "WAL")
            .map_err(store)?;
        connection
            .pragma_update(None, "synchronous", "FULL")
            .map_err(store)?;
        migrate(&mut connection)?;
        Ok(SqliteStore {
            connection: Arc::new(Mutex::new(connection)),
            changes: Changes::new(),
        })
    }

    /// `step`, whose answer, once it committed, tells this process's waiters of `changed`
    /// when `told` says it changed something.
    fn telling<'a, T: Send + 'a>(
        &'a self,
        step: StoreFuture<'a, T>,
        changed: Changed,
        told: impl FnOnce(&T) -> bool + Send + 'a,
    ) -> StoreFuture<'a, T> {
        Box::pin(async move {
            let answer = step.await?;
            if told(&answer) {
                self.changes.changed(&changed);
            }
            Ok(answer)
        })
    }

    /// Runs `step` in one `IMMEDIATE` transaction, off the runtime's threads.
    fn run<'a, T: Send + 'static>(
        &'a self,
        step: impl FnOnce(&Transaction<'_>) -> Result<T, StoreError> + Send + 'static,
    ) -> StoreFuture<'a, T> {
        self.run_as(TransactionBehavior::Immediate, step)
    }

    /// Runs `step`, which only reads, in one `DEFERRED` transaction: under WAL it reads a
    /// snapshot and never takes the database's write lock, so it neither waits for a writer
    /// in another process nor holds one up.
    fn read<'a, T: Send + 'static>(
        &'a self,
        step: impl FnOnce(&Transaction<'_>) -> Result<T, StoreError> + Send + 'static,
    ) -> StoreFuture<'a, T> {
        self.run_as(TransactionBehavior::Deferred, step)
    }

    fn run_as<'a, T: Send + 'static>(
        &'a self,
        behavior: TransactionBehavior,
        step: impl FnOnce(&Transaction<'_>) -> Result<T, StoreError> + Send + 'static,
    ) -> StoreFuture<'a, T> {
        let connection = Arc::clone(&self.connection);
        let work = move || {
            // Every step is one transaction: a panic inside one rolls it back when dropped.
            let mut connection = connection
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let transaction = connection
                .transaction_with_behavior(behavior)
                .map_err(store)?;
            let answer = step(&transaction)?;
            transaction.commit().map_err(store)?;
            Ok(answer)
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                let task = runtime.spawn_blocking(work);
                Box::pin(async move { task.await.unwrap_or(Err(StoreError::Panicked)) })
            }
            Err(_) => Box::pin(ready(work())),
        }
    }
}

/// Version 9: whose request each approval is, to count a principal's pending approvals by
/// index; the pending rows written before get theirs from their JSON.
const SCHEMA_V9: &str = "
ALTER TABLE tool_contract_approvals ADD COLUMN principal_ref TEXT;
UPDATE tool_contract_approvals SET principal_ref = json_extract(body, '$.principal_ref')
    WHERE state = 'pending';
CREATE INDEX IF NOT EXISTS tool_contract_approvals_pending_of
    ON tool_contract_approvals (principal_ref, state);
";

/// Version 11: a worker's lease, one sealed row per worker renewed for all the tasks it
/// holds, and beside each task the worker named in its JSON, to join it with.
const SCHEMA_V11: &str = "
CREATE TABLE IF NOT EXISTS tool_contract_workers (
    worker         TEXT PRIMARY KEY NOT NULL,
    lease_until_ms INTEGER NOT NULL,
    seal           TEXT NOT NULL
) STRICT;
ALTER TABLE tool_contract_tasks ADD COLUMN worker TEXT;
UPDATE tool_contract_tasks SET worker = json_extract(body, '$.worker')
    WHERE status IN ('working', 'input_required');
";

fn migrate(connection: &mut Connection) -> Result<(), StoreError> {
    let transaction = connection
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(store)?;
    let found: u32 = transaction
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .map_err(store)?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::SchemaTooNew {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    if found < 1 {
        transaction.execute_batch(SCHEMA_V1).map_err(store)?;
        let has_generation: bool = transaction
            .query_row(
                "SELECT count(*) FROM pragma_table_info('tool_contract_ledger') WHERE name = 'lease_generation'",
                [],
                |row| row.get::<_, i64>(0),
            )
            .map_err(store)?
            > 0;
        if !has_generation {
            transaction
                .execute_batch("ALTER TABLE tool_contract_ledger ADD COLUMN lease_generation INTEGER NOT NULL DEFAULT 0")
                .map_err(store)?;
        }
    }
    if found < 2 {
        transaction.execute_batch(SCHEMA_V2).map_err(store)?;
    }
    if found < 3 {
        transaction.execute_batch(SCHEMA_V3).map_err(store)?;
    }
    if found < 4 {
        transaction.execute_batch(SCHEMA_V4).map_err(store)?;
    }
    // Version 5 added a PostgreSQL function only; a SQLite file has nothing to change.
    if found < 6 {
        transaction.execute_batch(SCHEMA_V6).map_err(store)?;
    }
    if found < 7 {
        transaction.execute_batch(SCHEMA_V7).map_err(store)?;
    }
    if found < 8 {
        transaction.execute_batch(SCHEMA_V8).map_err(store)?;
    }
    if found < 9 {
        transaction.execute_batch(SCHEMA_V9).map_err(store)?;
    }
    // Version 10 added the PostgreSQL audit log's counts only; a SQLite file has nothing to
    // change.
    if found < 11 {
        transaction.execute_batch(SCHEMA_V11).map_err(store)?;
    }
    if found < SCHEMA_VERSION {
        transaction
            .pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(store)?;
    }
    transaction.commit().map_err(store)
}

struct SqliteRows<'a, 'conn>(&'a Transaction<'conn>);

impl SqliteRows<'_, '_> {
    fn read_record(&self, key: &str) -> Result<Option<Record>, StoreError> {
        read_record(self.0, key)
    }

    fn write_record(&self, record: &Record, fence: Option<&Fence>) -> Result<bool, StoreError> {
        let changed = match fence {
            None => self.0.execute(
                &format!(
                    "INSERT INTO tool_contract_ledger ({COLUMNS}) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) \
                     ON CONFLICT (key) DO NOTHING"
                ),
                params![
                    record.key,
                    record.request_sha256,
                    record.tool,
                    record.state.as_str(),
                    record.lease.owner,
                    to_sql_u64(record.lease.generation),
                    to_sql_u64(record.lease_until_ms),
                    to_sql_u64(record.expires_at_ms),
                    record.result,
                    record.call,
                    record.kept,
                ],
            ),
            // The fence is checked in the statement that writes.
            Some(fence) => self.0.execute(
                "UPDATE tool_contract_ledger SET request_sha256 = ?2, tool = ?3, state = ?4, \
                 owner = ?5, lease_generation = ?6, lease_until_ms = ?7, expires_at_ms = ?8, \
                 result = ?9, call = ?10, kept = ?14 \
                 WHERE key = ?1 AND state = ?11 AND owner = ?12 AND lease_generation = ?13",
                params![
                    record.key,
                    record.request_sha256,
                    record.tool,
                    record.state.as_str(),
                    record.lease.owner,
                    to_sql_u64(record.lease.generation),
                    to_sql_u64(record.lease_until_ms),
                    to_sql_u64(record.expires_at_ms),
                    record.result,
                    record.call,
                    fence.state.as_str(),
                    fence.lease.owner,
                    to_sql_u64(fence.lease.generation),
                    record.kept,
                ],
            ),
        };
        Ok(changed.map_err(store)? == 1)
    }

    fn remove_record(&self, key: &str, fence: &Fence) -> Result<bool, StoreError> {
        let removed = self
            .0
            .execute(
                "DELETE FROM tool_contract_ledger \
                 WHERE key = ?1 AND state = ?2 AND owner = ?3 AND lease_generation = ?4",
                params![
                    key,
                    fence.state.as_str(),
                    fence.lease.owner,
                    to_sql_u64(fence.lease.generation)
                ],
            )
            .map_err(store)?;
        Ok(removed == 1)
    }

    fn read_approval(
        &self,
        key: &str,
    ) -> Result<Option<(ApprovalEntry, Option<String>)>, StoreError> {
        self.0
            .query_row(
                "SELECT state, approval_id, expires_at_ms, body, redeemed_owner, \
                 redeemed_generation, seal FROM tool_contract_approvals WHERE key = ?1",
                params![key],
                read_approval_row,
            )
            .optional()
            .map_err(store)?
            .map(sealed_entry)
            .transpose()
    }

    fn read_approval_key(&self, approval_id: &str) -> Result<Option<String>, StoreError> {
        self.0
            .query_row(
                "SELECT key FROM tool_contract_approvals WHERE approval_id = ?1",
                params![approval_id],
                |row| row.get(0),
            )
            .optional()
            .map_err(store)
    }

    fn write_approval(
        &self,
        key: &str,
        entry: &ApprovalEntry,
        seal: &str,
    ) -> Result<(), StoreError> {
        let ApprovalRow {
            approval_id,
            principal_ref,
            state,
            expires_at_ms,
            body,
            redeemed_by,
        } = approval_row(entry)?;
        self.0
            .execute(
                "INSERT OR REPLACE INTO tool_contract_approvals (key, approval_id, state, \
                 expires_at_ms, body, redeemed_owner, redeemed_generation, seal, principal_ref) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![
                    key,
                    approval_id,
                    state,
                    to_sql_u64(expires_at_ms),
                    body,
                    redeemed_by.as_ref().map(|lease| lease.owner.as_str()),
                    redeemed_by
                        .as_ref()
                        .map(|lease| to_sql_u64(lease.generation)),
                    seal,
                    principal_ref,
                ],
            )
            .map_err(store)?;
        Ok(())
    }
}

// Each row operation runs at once, on the step's thread; the future only hands it over.
impl Rows for SqliteRows<'_, '_> {
    fn lock_key(&mut self, _key: &str) -> impl Future<Output = Result<(), StoreError>> + Send {
        // The `IMMEDIATE` transaction holds the database's write lock already.
        ready(Ok(()))
    }

    fn record(
        &mut self,
        key: &str,
    ) -> impl Future<Output = Result<Option<Record>, StoreError>> + Send {
        ready(self.read_record(key))
    }

    fn put_record(
        &mut self,
        record: &Record,
        fence: Option<&Fence>,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        ready(self.write_record(record, fence))
    }

    fn delete_record(
        &mut self,
        key: &str,
        fence: &Fence,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        ready(self.remove_record(key, fence))
    }

    fn approval(
        &mut self,
        key: &str,
    ) -> impl Future<Output = Result<Option<(ApprovalEntry, Option<String>)>, StoreError>> + Send
    {
        ready(self.read_approval(key))
    }

    fn approval_key(
        &mut self,
        approval_id: &str,
    ) -> impl Future<Output = Result<Option<String>, StoreError>> + Send {
        ready(self.read_approval_key(approval_id))
    }

    fn put_approval(
        &mut self,
        key: &str,
        entry: &ApprovalEntry,
        seal: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        ready(self.write_approval(key, entry, seal))
    }

    fn approver_row(
        &mut self,
        approver_id: &str,
    ) -> impl Future<Output = Result<Option<(String, Option<String>)>, StoreError>> + Send {
        ready(
            self.0
                .query_row(
                    "SELECT body, seal FROM tool_contract_approvers WHERE approver_id = ?1",
                    params![approver_id],
                    |row| Ok((row.get(0)?, row.get(1)?)),
                )
                .optional()
                .map_err(store),
        )
    }

    fn approver_rows(
        &mut self,
    ) -> impl Future<Output = Result<Vec<(String, String, Option<String>)>, StoreError>> + Send
    {
        ready(read_approver_rows(self.0))
    }

    fn put_approver_row(
        &mut self,
        approver_id: &str,
        body: &str,
        seal: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        ready(
            self.0
                .execute(
                    "INSERT OR REPLACE INTO tool_contract_approvers (approver_id, body, seal) \
                     VALUES (?1, ?2, ?3)",
                    params![approver_id, body, seal],
                )
                .map(|_| ())
                .map_err(store),
        )
    }

    fn task_row(
        &mut self,
        task_id: &str,
    ) -> impl Future<Output = Result<Option<(String, Option<String>)>, StoreError>> + Send {
        ready(read_task_row(self.0, task_id))
    }

    fn pending_approvals_of(
        &mut self,
        principal_ref: &str,
        except_key: &str,
        now_ms: u64,
    ) -> impl Future<Output = Result<usize, StoreError>> + Send {
        let counted = self
            .0
            .query_row(
                "SELECT count(*) FROM tool_contract_approvals WHERE principal_ref = ?1 \
                 AND state = 'pending' AND expires_at_ms > ?2 AND key <> ?3",
                params![principal_ref, to_sql_u64(now_ms), except_key],
                |row| row.get::<_, i64>(0),
            )
            .map_err(store);
        ready(counted.map(|count| usize::try_from(count).unwrap_or(usize::MAX)))
    }

    fn worker_lease(
        &mut self,
        worker: &str,
    ) -> impl Future<Output = Result<Option<(u64, String)>, StoreError>> + Send {
        let found = self
            .0
            .query_row(
                "SELECT lease_until_ms, seal FROM tool_contract_workers WHERE worker = ?1",
                params![worker],
                |row| Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?)),
            )
            .optional()
            .map_err(store)
            .and_then(|found| {
                let (until, seal) = found.unzip();
                worker_lease_columns(until, seal)
            });
        ready(found)
    }

    fn put_worker_lease(
        &mut self,
        worker: &str,
        until_ms: u64,
        seal: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        let written = self
            .0
            .execute(
                "INSERT INTO tool_contract_workers (worker, lease_until_ms, seal) \
                 VALUES (?1, ?2, ?3) ON CONFLICT (worker) DO UPDATE SET \
                 lease_until_ms = excluded.lease_until_ms, seal = excluded.seal",
                params![worker, to_sql_u64(until_ms), seal],
            )
            .map(|_| ())
            .map_err(store);
        ready(written)
    }

    fn open_tasks_of(
        &mut self,
        owner: &str,
        now_ms: u64,
    ) -> impl Future<Output = Result<usize, StoreError>> + Send {
        let counted = self
            .0
            .query_row(
                "SELECT count(*) FROM tool_contract_tasks WHERE owner = ?1 \
                 AND status IN ('working', 'input_required') \
                 AND (expires_at_ms IS NULL OR expires_at_ms > ?2)",
                params![owner, to_sql_u64(now_ms)],
                |row| row.get::<_, i64>(0),
            )
            .map_err(store);
        ready(counted.map(|count| usize::try_from(count).unwrap_or(usize::MAX)))
    }

    fn put_task_row(
        &mut self,
        task: &TaskRow,
        body: &str,
        seal: &str,
        new: bool,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        let statement = if new {
            "INSERT OR IGNORE INTO tool_contract_tasks \
             (task_id, owner, status, lease_until_ms, expires_at_ms, body, seal, worker) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
        } else {
            "UPDATE tool_contract_tasks SET owner = ?2, status = ?3, lease_until_ms = ?4, \
             expires_at_ms = ?5, body = ?6, seal = ?7, worker = ?8 WHERE task_id = ?1"
        };
        let expires_at = task.expires_at_ms().map(to_sql_u64);
        let lease_until = to_sql_u64(task.lease_until_ms);
        ready(
            self.0
                .execute(
                    statement,
                    params![
                        task.task_id,
                        task.owner,
                        task.status.as_str(),
                        lease_until,
                        expires_at,
                        body,
                        seal,
                        task.worker
                    ],
                )
                .map(|written| written == 1)
                .map_err(store),
        )
    }
}

fn read_task_row(
    tx: &Transaction<'_>,
    task_id: &str,
) -> Result<Option<(String, Option<String>)>, StoreError> {
    tx.query_row(
        "SELECT body, seal FROM tool_contract_tasks WHERE task_id = ?1",
        params![task_id],
        |row| Ok((row.get(0)?, row.get(1)?)),
    )
    .optional()
    .map_err(store)
}

fn read_approver_rows(
    tx: &Transaction<'_>,
) -> Result<Vec<(String, String, Option<String>)>, StoreError> {
    let mut statement = tx
        .prepare("SELECT approver_id, body, seal FROM tool_contract_approvers")
        .map_err(store)?;
    let rows = statement
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .map_err(store)?;
    rows.collect::<rusqlite::Result<Vec<_>>>().map_err(store)
}

impl ControlStore for SqliteStore {
    fn claim<'a>(&'a self, claim: &'a Claim) -> StoreFuture<'a, Claimed> {
        let claim = claim.clone();
        self.run(move |tx| at_once(rows::claim(&mut SqliteRows(tx), &claim)))
    }

    fn advance<'a>(&'a self, step: &'a Advance) -> StoreFuture<'a, Advanced> {
        let step = step.clone();
        self.run(move |tx| at_once(rows::advance(&mut SqliteRows(tx), &step)))
    }

    fn release<'a>(&'a self, release: &'a Release) -> StoreFuture<'a, bool> {
        let release = release.clone();
        self.run(move |tx| at_once(rows::release(&mut SqliteRows(tx), &release)))
    }

    fn get<'a>(&'a self, key: &'a str) -> StoreFuture<'a, Option<Record>> {
        let key = key.to_owned();
        self.read(move |tx| read_record(tx, &key))
    }

    fn stale(&self, now_ms: u64) -> StoreFuture<'_, Vec<Record>> {
        self.read(move |tx| {
            let mut statement = tx
                .prepare(&format!(
                    "SELECT {COLUMNS} FROM tool_contract_ledger \
                     WHERE (state IN (?1, ?2) AND lease_until_ms <= ?3) OR state = ?4 ORDER BY key"
                ))
                .map_err(store)?;
            let rows = statement
                .query_map(
                    params![
                        WriteState::Executing.as_str(),
                        WriteState::CancelRequested.as_str(),
                        to_sql_u64(now_ms),
                        WriteState::Unknown.as_str(),
                    ],
                    raw_record,
                )
                .map_err(store)?;
            let mut stale = Vec::new();
            for row in rows {
                stale.push(row.map_err(store)?.into_record()?);
            }
            Ok(stale)
        })
    }

    fn purge_expired(&self, now_ms: u64) -> StoreFuture<'_, Purged> {
        self.run(move |tx| {
            let records = tx
                .execute(
                    "DELETE FROM tool_contract_ledger \
                     WHERE expires_at_ms <= ?1 AND state IN (?2, ?3, ?4, ?5) AND kept = 0",
                    params![
                        to_sql_u64(now_ms),
                        WriteState::Succeeded.as_str(),
                        WriteState::Failed.as_str(),
                        WriteState::Rejected.as_str(),
                        WriteState::Cancelled.as_str(),
                    ],
                )
                .map_err(store)?;
            let approvals = tx
                .execute(
                    "DELETE FROM tool_contract_approvals WHERE expires_at_ms <= ?1",
                    params![to_sql_u64(now_ms)],
                )
                .map_err(store)?;
            let tasks = tx
                .execute(
                    "DELETE FROM tool_contract_tasks WHERE expires_at_ms <= ?1",
                    params![to_sql_u64(now_ms)],
                )
                .map_err(store)?;
            // A lapsed lease holds nothing: its worker, if it lives, writes it again.
            tx.execute(
                "DELETE FROM tool_contract_workers WHERE lease_until_ms <= ?1",
                params![to_sql_u64(now_ms)],
            )
            .map_err(store)?;
            Ok(Purged {
                records: records as u64,
                approvals: approvals as u64,
                tasks: tasks as u64,
            })
        })
    }

    fn purge_operations(&self, window_ended_by_ms: u64) -> StoreFuture<'_, u64> {
        self.run(move |tx| {
            let records = tx
                .execute(
                    "DELETE FROM tool_contract_ledger \
                     WHERE expires_at_ms <= ?1 AND state IN (?2, ?3, ?4, ?5)",
                    params![
                        to_sql_u64(window_ended_by_ms),
                        WriteState::Succeeded.as_str(),
                        WriteState::Failed.as_str(),
                        WriteState::Rejected.as_str(),
                        WriteState::Cancelled.as_str(),
                    ],
                )
                .map_err(store)?;
            Ok(records as u64)
        })
    }

    fn look_for_approval<'a>(&'a self, ask: &'a ApprovalAsk) -> StoreFuture<'a, ApprovalLook> {
        let ask = ask.clone();
        self.read(move |tx| at_once(rows::look_for_approval(&mut SqliteRows(tx), &ask)))
    }

    fn check_approval<'a>(&'a self, ask: &'a ApprovalAsk) -> StoreFuture<'a, ApprovalCheck> {
        let ask = ask.clone();
        self.run(move |tx| at_once(rows::check_approval(&mut SqliteRows(tx), &ask)))
    }

    fn approve<'a>(
        &'a self,
        step: &'a ApproveStep,
    ) -> StoreFuture<'a, Result<Approved, ApprovalError>> {
        let changed = Changed::Approval(step.approval_id.clone());
        let step = step.clone();
        let approved = self.run(move |tx| at_once(rows::approve(&mut SqliteRows(tx), &step)));
        self.telling(approved, changed, |approved| approved.is_ok())
    }

    fn reject<'a>(&'a self, step: &'a RejectStep) -> StoreFuture<'a, Result<(), ApprovalError>> {
        let changed = Changed::Approval(step.approval_id.clone());
        let step = step.clone();
        let rejected = self.run(move |tx| at_once(rows::reject(&mut SqliteRows(tx), &step)));
        self.telling(rejected, changed, |rejected| rejected.is_ok())
    }

    fn pending_approvals<'a>(
        &'a self,
        now_ms: u64,
        seal: &'a RowSeal,
    ) -> StoreFuture<'a, Vec<PendingApproval>> {
        let seal = seal.clone();
        self.read(move |tx| {
            let mut statement = tx
                .prepare(
                    "SELECT state, approval_id, expires_at_ms, body, redeemed_owner, \
                     redeemed_generation, seal, key FROM tool_contract_approvals \
                     WHERE state = ?1 AND expires_at_ms > ?2 ORDER BY expires_at_ms, approval_id",
                )
                .map_err(store)?;
            let rows = statement
                .query_map(params![PENDING, to_sql_u64(now_ms)], |row| {
                    Ok((row.get::<_, String>(7)?, read_approval_row(row)?))
                })
                .map_err(store)?;
            let mut entries = Vec::new();
            for row in rows {
                let (key, row) = row.map_err(store)?;
                let (entry, sealed) = sealed_entry(row)?;
                entries.push((key, entry, sealed));
            }
            rows::opened_pending(entries, now_ms, &seal)
        })
    }

    fn pending_approval<'a>(
        &'a self,
        approval_id: &'a str,
        now_ms: u64,
        seal: &'a RowSeal,
    ) -> StoreFuture<'a, Option<PendingApproval>> {
        let (approval_id, seal) = (approval_id.to_owned(), seal.clone());
        self.read(move |tx| {
            at_once(rows::pending_approval(
                &mut SqliteRows(tx),
                &approval_id,
                now_ms,
                &seal,
            ))
        })
    }

    fn write_directory<'a>(
        &'a self,
        write: &'a DirectoryWrite,
    ) -> StoreFuture<'a, Result<Approver, EnrollError>> {
        let write = write.clone();
        self.run(move |tx| at_once(rows::write_directory(&mut SqliteRows(tx), &write)))
    }

    fn approvers<'a>(&'a self, seal: &'a RowSeal) -> StoreFuture<'a, Vec<Approver>> {
        let seal = seal.clone();
        self.read(move |tx| at_once(rows::approvers(&mut SqliteRows(tx), &seal)))
    }

    fn approver<'a>(
        &'a self,
        approver_id: &'a str,
        seal: &'a RowSeal,
    ) -> StoreFuture<'a, Option<Approver>> {
        let (approver_id, seal) = (approver_id.to_owned(), seal.clone());
        self.read(move |tx| {
            at_once(rows::read_approver(
                &mut SqliteRows(tx),
                &approver_id,
                &seal,
            ))
        })
    }

    fn create_task<'a>(&'a self, task: &'a TaskRow, seal: &'a RowSeal) -> StoreFuture<'a, bool> {
        let (task, seal) = (task.clone(), seal.clone());
        self.run(move |tx| at_once(rows::create_task(&mut SqliteRows(tx), &task, &seal)))
    }

    fn task<'a>(
        &'a self,
        task_id: &'a str,
        owner: Option<&'a str>,
        now_ms: u64,
        seal: &'a RowSeal,
    ) -> StoreFuture<'a, Option<TaskRow>> {
        let (task_id, owner, seal) = (task_id.to_owned(), owner.map(str::to_owned), seal.clone());
        self.read(move |tx| {
            at_once(rows::read_task(
                &mut SqliteRows(tx),
                &task_id,
                owner.as_deref(),
                now_ms,
                &seal,
            ))
        })
    }

    fn create_task_within<'a>(
        &'a self,
        task: &'a TaskRow,
        open_limit: usize,
        seal: &'a RowSeal,
    ) -> StoreFuture<'a, TaskCreation> {
        let (task, seal) = (task.clone(), seal.clone());
        self.run(move |tx| {
            at_once(rows::create_task_within(
                &mut SqliteRows(tx),
                &task,
                open_limit,
                &seal,
            ))
        })
    }

    fn move_task<'a>(
        &'a self,
        step: &'a TaskMove,
    ) -> StoreFuture<'a, Result<TaskRow, TaskMoveError>> {
        let changed = Changed::Task(step.task_id.clone());
        let announced = rows::announced(step);
        let step = step.clone();
        let moved = self.run(move |tx| at_once(rows::move_task(&mut SqliteRows(tx), &step)));
        self.telling(moved, changed, move |moved| announced && moved.is_ok())
    }

    fn renew_worker<'a>(
        &'a self,
        renewal: &'a WorkerRenewal,
    ) -> StoreFuture<'a, Vec<Option<TaskStatus>>> {
        let renewal = renewal.clone();
        self.run(move |tx| at_once(rows::renew_worker(&mut SqliteRows(tx), &renewal)))
    }

    fn still_pending<'a>(
        &'a self,
        approval_ids: &'a [String],
        now_ms: u64,
        seal: &'a RowSeal,
    ) -> StoreFuture<'a, Vec<String>> {
        let (approval_ids, seal) = (approval_ids.to_vec(), seal.clone());
        self.read(move |tx| {
            at_once(rows::still_pending(
                &mut SqliteRows(tx),
                &approval_ids,
                now_ms,
                &seal,
            ))
        })
    }

    fn changes(&self) -> Option<Arc<Changes>> {
        Some(Arc::clone(&self.changes))
    }

    fn stale_tasks<'a>(&'a self, now_ms: u64, seal: &'a RowSeal) -> StoreFuture<'a, StaleTasks> {
        let seal = seal.clone();
        self.read(move |tx| {
            // The columns narrow the search; the sealed rows decide.
            let mut statement = tx
                .prepare(
                    "SELECT t.task_id, t.body, t.seal, w.lease_until_ms, w.seal \
                     FROM tool_contract_tasks AS t \
                     LEFT JOIN tool_contract_workers AS w ON w.worker = t.worker \
                     WHERE t.status IN ('working', 'input_required') \
                     AND t.lease_until_ms <= ?1 \
                     AND (w.lease_until_ms IS NULL OR w.lease_until_ms <= ?1)",
                )
                .map_err(store)?;
            let found = statement
                .query_map(params![to_sql_u64(now_ms)], |row| {
                    Ok((
                        row.get(0)?,
                        row.get(1)?,
                        row.get(2)?,
                        row.get(3)?,
                        row.get(4)?,
                    ))
                })
                .map_err(store)?
                .collect::<Result<Vec<_>, _>>()
                .map_err(store)?
                .into_iter()
                .map(|(task_id, body, stored_seal, until, lease_seal)| {
                    Ok((
                        task_id,
                        body,
                        stored_seal,
                        worker_lease_columns(until, lease_seal)?,
                    ))
                })
                .collect::<Result<Vec<_>, StoreError>>()?;
            Ok(rows::stale_tasks_of(found, now_ms, &seal))
        })
    }

    fn tasks_of<'a>(
        &'a self,
        owner: &'a str,
        after: Option<&'a str>,
        limit: usize,
        now_ms: u64,
        seal: &'a RowSeal,
    ) -> StoreFuture<'a, Vec<TaskRow>> {
        let (owner, after, seal) = (
            owner.to_owned(),
            after.unwrap_or_default().to_owned(),
            seal.clone(),
        );
        self.read(move |tx| {
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            read_tasks(
                tx,
                TASKS_OF,
                params![owner, after, to_sql_u64(now_ms), limit],
                Some(&owner),
                now_ms,
                &seal,
            )
        })
    }

    fn sign_count<'a>(&'a self, count: &'a SignCount) -> StoreFuture<'a, SignCountCheck> {
        let count = count.clone();
        self.run(move |tx| at_once(rows::sign_count(&mut SqliteRows(tx), &count)))
    }
}

/// The task rows `sql` selects: id, body and seal, each as stored.
fn task_rows(
    tx: &Transaction<'_>,
    sql: &str,
    params: impl rusqlite::Params,
) -> Result<Vec<(String, String, Option<String>)>, StoreError> {
    let mut statement = tx.prepare(sql).map_err(store)?;
    let found = statement
        .query_map(params, |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, Option<String>>(2)?,
            ))
        })
        .map_err(store)?;
    found.collect::<Result<_, _>>().map_err(store)
}

/// The tasks `sql` selects, each opened with `seal`, those of `owner` (or everyone's) not
/// expired by `now_ms`: a row that does not open fails the step.
fn read_tasks(
    tx: &Transaction<'_>,
    sql: &str,
    params: impl rusqlite::Params,
    owner: Option<&str>,
    now_ms: u64,
    seal: &RowSeal,
) -> Result<Vec<TaskRow>, StoreError> {
    let mut tasks = Vec::new();
    for (task_id, body, stored_seal) in task_rows(tx, sql, params)? {
        let task =
            rows::task_from_row(&task_id, &body, stored_seal.as_deref(), owner, now_ms, seal)?;
        tasks.extend(task);
    }
    Ok(tasks)
}

fn read_record(tx: &Transaction<'_>, key: &str) -> Result<Option<Record>, StoreError> {
    let row = tx
        .query_row(
            &format!("SELECT {COLUMNS} FROM tool_contract_ledger WHERE key = ?1"),
            params![key],
            raw_record,
        )
        .optional()
        .map_err(store)?;
    row.map(RawRecord::into_record).transpose()
}

fn read_approval_row(row: &Row<'_>) -> rusqlite::Result<ReadApprovalRow> {
    Ok(ReadApprovalRow {
        state: row.get(0)?,
        approval_id: row.get(1)?,
        expires_at_ms: row.get(2)?,
        body: row.get(3)?,
        redeemed_owner: row.get(4)?,
        redeemed_generation: row.get(5)?,
        seal: row.get(6)?,
    })
}

/// A row as SQLite gives it, before its state and times are checked.
struct RawRecord {
    key: String,
    request_sha256: String,
    tool: String,
    state: String,
    owner: String,
    lease_generation: i64,
    lease_until_ms: i64,
    expires_at_ms: i64,
    result: Option<String>,
    call: Option<String>,
    kept: bool,
}

fn raw_record(row: &Row<'_>) -> rusqlite::Result<RawRecord> {
    Ok(RawRecord {
        key: row.get(0)?,
        request_sha256: row.get(1)?,
        tool: row.get(2)?,
        state: row.get(3)?,
        owner: row.get(4)?,
        lease_generation: row.get(5)?,
        lease_until_ms: row.get(6)?,
        expires_at_ms: row.get(7)?,
        result: row.get(8)?,
        call: row.get(9)?,
        kept: row.get(10)?,
    })
}

impl RawRecord {
    fn into_record(self) -> Result<Record, StoreError> {
        let state = self
            .state
            .parse::<WriteState>()
            .map_err(|error| StoreError::Corrupt(error.to_string()))?;
        Ok(Record {
            key: self.key,
            request_sha256: self.request_sha256,
            tool: self.tool,
            state,
            lease: Lease {
                owner: self.owner,
                generation: from_sql_u64(self.lease_generation, "lease generation")?,
            },
            lease_until_ms: from_sql_u64(self.lease_until_ms, "time")?,
            expires_at_ms: from_sql_u64(self.expires_at_ms, "time")?,
            result: self.result,
            call: self.call,
            kept: self.kept,
        })
    }
}

fn store(error: rusqlite::Error) -> StoreError {
    StoreError::store(error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_of_an_owners_tasks_is_read_by_the_owners_index() {
        let mut connection = Connection::open_in_memory().unwrap();
        migrate(&mut connection).unwrap();
        let plan: Vec<String> = connection
            .prepare(&format!("EXPLAIN QUERY PLAN {TASKS_OF}"))
            .unwrap()
            .query_map(params!["acme", "", 0_i64, 50_i64], |row| row.get(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(
            plan.iter()
                .any(|step| step.contains("USING INDEX tool_contract_tasks_owner")),
            "{plan:?}"
        );
        assert!(
            !plan.iter().any(|step| step.contains("TEMP B-TREE")),
            "read in order, never sorted: {plan:?}"
        );
    }
}
