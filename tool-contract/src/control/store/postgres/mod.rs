//! The store replicas share: PostgreSQL through `tokio-postgres`, with a small pool. Each
//! step is one transaction that first takes a transaction-scoped advisory lock on its key,
//! so two steps on one key never interleave (a missing row cannot be locked with
//! `FOR UPDATE`), and every write to an in-flight record repeats its fence in the statement.
//!
//! The steps of a write's common path are one statement each, without the advisory lock
//! (`one_statement.rs` says why that is safe), prepared once on each pooled connection
//! (`prepared.rs`); anything off that path runs as the general step.

mod listener;
mod one_statement;
mod prepared;
mod sql;
mod waiting;

use std::sync::Arc;
use std::time::Duration;

use bb8::Pool;
use bb8_postgres::PostgresConnectionManager;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Config, NoTls, Row, Transaction};

use super::grant_hints::GrantHints;
use super::look_then_claim;
use super::rows::{self, Fence, Rows};
use super::stored::{
    ApprovalRow, PENDING, ReadApprovalRow, approval_row, from_sql_u64, sealed_entry, to_sql_u64,
    worker_lease_columns,
};
use crate::control::WriteState;
use crate::control::{
    Advance, Advanced, Claim, Claimed, ControlStore, IfAbsent, Lease, Purged, Record, Release,
    RowSeal, SCHEMA_VERSION, StoreError, StoreFuture,
};
use crate::control::{
    ApprovalAsk, ApprovalCheck, ApprovalEntry, ApprovalError, ApprovalGrant, ApprovalLook,
    ApproveStep, Approved, PendingApproval, RejectStep,
};
use crate::control::{Approver, DirectoryWrite, EnrollError, SignCount, SignCountCheck};
use crate::control::{
    Changed, Changes, StaleTasks, TaskCreation, TaskMove, TaskMoveError, TaskRow, TaskStatus,
    WorkerRenewal,
};

use prepared::{Common, Manager};
use sql::{COLUMNS, RECORD_TYPES, Sql};

/// How a [`PostgresStore`] connects: `PostgresOptions::default()`, changed by the `with_*`
/// methods, so that a field added later breaks no one.
///
/// ```
/// use std::time::Duration;
/// use tool_contract::control::PostgresOptions;
///
/// let options = PostgresOptions::default()
///     .with_schema("desk")
///     .with_pool_size(8)
///     .with_connect_timeout(Duration::from_secs(2));
/// assert!(options.prepare_statements);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PostgresOptions {
    /// The schema its tables live in, created if missing: a lowercase SQL identifier
    /// (`[a-z_][a-z0-9_]*`, at most 63 bytes). Default `tool_contract`.
    pub schema: String,
    /// Connections kept open at most. Default 4.
    pub pool_size: u32,
    /// How long a step waits for a connection before it fails (and the write does not
    /// run). Default 5 s.
    pub connect_timeout: Duration,
    /// Whether each connection prepares the common path's statements once (named
    /// statements), so the server parses and plans them once per connection rather than
    /// on every write. Default `true`. Turn it off behind a pooler in transaction mode that
    /// does not carry prepared statements across server connections (PgBouncer before
    /// 1.21, or later without `max_prepared_statements`): every statement is then sent
    /// unnamed.
    pub prepare_statements: bool,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        PostgresOptions {
            schema: "tool_contract".to_owned(),
            pool_size: 4,
            connect_timeout: Duration::from_secs(5),
            prepare_statements: true,
        }
    }
}

impl PostgresOptions {
    /// These options with the tables in `schema` (a lowercase SQL identifier).
    #[must_use]
    pub fn with_schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }

    /// These options with at most `pool_size` connections open.
    #[must_use]
    pub fn with_pool_size(mut self, pool_size: u32) -> Self {
        self.pool_size = pool_size;
        self
    }

    /// These options with steps waiting at most `connect_timeout` for a connection.
    #[must_use]
    pub fn with_connect_timeout(mut self, connect_timeout: Duration) -> Self {
        self.connect_timeout = connect_timeout;
        self
    }

    /// These options with the common statements prepared on each connection, or not (behind a
    /// pooler in transaction mode that cannot carry them).
    #[must_use]
    pub fn with_prepare_statements(mut self, prepare_statements: bool) -> Self {
        self.prepare_statements = prepare_statements;
        self
    }
}

/// A control-plane store in PostgreSQL, shared by every replica that connects to it.
///
/// [`connect`](Self::connect) migrates the schema to [`SCHEMA_VERSION`] (under an advisory
/// lock, so replicas starting together migrate once) and refuses a newer one. Nothing is
/// checked against the database at compile time.
///
/// A write's common path is one statement per state change, each prepared once on every
/// pooled connection ([`PostgresOptions::prepare_statements`]): a write nobody approves is
/// two round trips (the claim, the outcome), and so is a write whose grant this store's
/// [`approve`](ControlStore::approve) wrote, since the store keeps its own grants as
/// [hints](ControlStore::approval_hint) until a claim redeems them. A grant another replica
/// wrote is read first: three round trips.
#[derive(Clone)]
pub struct PostgresStore {
    pool: Pool<Manager>,
    sql: Arc<Sql>,
    hints: Arc<GrantHints>,
    listening: Arc<listener::Listening>,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("schema", &self.sql.schema)
            .finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// Connects to `url` (`postgres://user@host:port/database`, or the `key=value` form) with
    /// [`PostgresOptions::default`].
    ///
    /// # Errors
    ///
    /// As [`connect_with`](Self::connect_with).
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        Self::connect_with(url, PostgresOptions::default()).await
    }

    /// Connects to `url` with `options`, and migrates the schema.
    ///
    /// # Errors
    ///
    /// [`StoreError::Store`] when the URL or schema name is invalid or the database cannot
    /// be reached; [`StoreError::SchemaTooNew`] when a newer build migrated it.
    pub async fn connect_with(url: &str, options: PostgresOptions) -> Result<Self, StoreError> {
        if !is_identifier(&options.schema) {
            return Err(StoreError::store(InvalidSchema(options.schema)));
        }
        let mut config: Config = url.parse().map_err(StoreError::store)?;
        config.connect_timeout(options.connect_timeout);
        // Every statement here reads or writes a few rows by key; PostgreSQL's JIT, which it
        // turns on by estimated cost, compiled the console's page query for 120 ms to run it
        // in one. Off for these connections, unless the URL's own `options` say otherwise.
        let startup = match config.get_options() {
            Some(given) => format!("-c jit=off {given}"),
            None => "-c jit=off".to_owned(),
        };
        config.options(startup);
        // No round trip to test a connection at checkout: a closed one is seen locally
        // (`connection`), and a connection that fails mid-step fails that step only.
        let listening = Arc::new(listener::Listening::new(config.clone(), &options.schema));
        let pool = Pool::builder()
            .max_size(options.pool_size.max(1))
            .test_on_check_out(false)
            .connection_timeout(options.connect_timeout)
            .build(Manager::new(
                PostgresConnectionManager::new(config, NoTls),
                options.prepare_statements,
            ))
            .await
            .map_err(StoreError::store)?;
        let store = PostgresStore {
            pool,
            sql: Arc::new(Sql::new(&options.schema)),
            hints: Arc::default(),
            listening,
        };
        store.migrate().await?;
        // The connection that migrated opened before the tables existed: it prepares the
        // common path's statements now, so no write pays for them.
        store.connection().await?.prepare(&store.sql).await?;
        Ok(store)
    }

    /// The schema the store's tables are in.
    #[must_use]
    pub fn schema(&self) -> &str {
        &self.sql.schema
    }

    /// A pooled connection that is still open (closed ones are dropped from the pool).
    pub(crate) async fn connection(&self) -> Result<PooledConnection<'_>, StoreError> {
        let mut tries = self.pool.state().connections + 1;
        loop {
            let connection = self.pool.get().await.map_err(StoreError::store)?;
            if !connection.is_closed() || tries == 0 {
                return Ok(connection);
            }
            tries -= 1;
        }
    }

    async fn migrate(&self) -> Result<(), StoreError> {
        let mut connection = self.connection().await?;
        let tx = connection.transaction().await.map_err(store)?;
        let migrated = self.migrate_in(&tx).await;
        finish(tx, migrated).await
    }

    async fn migrate_in(&self, tx: &Transaction<'_>) -> Result<(), StoreError> {
        let schema = &self.sql.schema;
        tx.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
            &[&format!("tool-contract schema {schema}")],
        )
        .await
        .map_err(store)?;
        tx.batch_execute(&format!(
            "CREATE SCHEMA IF NOT EXISTS {schema};
             CREATE TABLE IF NOT EXISTS {schema}.tool_contract_schema (
                 singleton BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (singleton),
                 version   INTEGER NOT NULL
             );"
        ))
        .await
        .map_err(store)?;
        let found = tx
            .query_opt(
                &format!("SELECT version FROM {schema}.tool_contract_schema"),
                &[],
            )
            .await
            .map_err(store)?
            .map(|row| row.get::<_, i32>(0))
            .unwrap_or(0);
        let found = u32::try_from(found)
            .map_err(|_| StoreError::Corrupt(format!("schema version {found}")))?;
        if found > SCHEMA_VERSION {
            return Err(StoreError::SchemaTooNew {
                found,
                supported: SCHEMA_VERSION,
            });
        }
        if found < 1 {
            tx.batch_execute(&schema_v1(schema)).await.map_err(store)?;
        }
        if found < 2 {
            // Version 2: each approval row carries its seal ([`RowSeal`]); rows written
            // before have none, and are refused when read.
            tx.batch_execute(&format!(
                "ALTER TABLE {schema}.tool_contract_approvals ADD COLUMN seal TEXT"
            ))
            .await
            .map_err(store)?;
        }
        if found < 3 {
            // Version 3: each ledger record keeps the call that claimed it, for a reconcile
            // pass.
            tx.batch_execute(&format!(
                "ALTER TABLE {schema}.tool_contract_ledger ADD COLUMN call TEXT"
            ))
            .await
            .map_err(store)?;
        }
        if found < 4 {
            // Version 4: the approver directory, one sealed row per enrolled approver; the
            // audit streams' signed tree heads, append-only like the records.
            tx.batch_execute(&format!(
                "CREATE TABLE {schema}.tool_contract_approvers (
                     approver_id TEXT PRIMARY KEY,
                     body        TEXT NOT NULL,
                     seal        TEXT NOT NULL
                 );
                 CREATE TABLE {schema}.tool_contract_audit_tree_heads (
                     stream    TEXT NOT NULL,
                     tree_size BIGINT NOT NULL,
                     body      TEXT NOT NULL,
                     PRIMARY KEY (stream, tree_size)
                 );
                 CREATE TRIGGER tool_contract_audit_tree_heads_append_only
                     BEFORE UPDATE OR DELETE OR TRUNCATE ON {schema}.tool_contract_audit_tree_heads
                     FOR EACH STATEMENT EXECUTE FUNCTION {schema}.tool_contract_audit_append_only();"
            ))
            .await
            .map_err(store)?;
        }
        // Version 5 added the redeeming claim's function, which version 8 replaces: a
        // schema below 8 gets version 8's, below.
        if found < 6 {
            // Version 6: the tasks of long calls, each row its JSON, with its owner and its
            // expiry to purge by.
            tx.batch_execute(&format!(
                "CREATE TABLE {schema}.tool_contract_tasks (
                     task_id        TEXT PRIMARY KEY,
                     owner          TEXT NOT NULL,
                     status         TEXT NOT NULL,
                     lease_until_ms BIGINT NOT NULL,
                     expires_at_ms  BIGINT,
                     body           TEXT NOT NULL,
                     seal           TEXT NOT NULL
                 );
                 CREATE INDEX tool_contract_tasks_expiry
                     ON {schema}.tool_contract_tasks (expires_at_ms);
                 CREATE INDEX tool_contract_tasks_lease
                     ON {schema}.tool_contract_tasks (lease_until_ms);"
            ))
            .await
            .map_err(store)?;
        }
        if found < 7 {
            // Version 7: an owner's tasks read a page at a time by index, in the byte order
            // of their ids (2025-11-25's `tasks/list`).
            tx.batch_execute(&format!(
                "CREATE INDEX tool_contract_tasks_owner
                     ON {schema}.tool_contract_tasks (owner, task_id COLLATE \"C\");"
            ))
            .await
            .map_err(store)?;
        }
        if found < 8 {
            // Version 8: a record kept past its window until an operator purges it, and the
            // redeeming claim that writes it.
            tx.batch_execute(&format!(
                "ALTER TABLE {schema}.tool_contract_ledger
                     ADD COLUMN kept BOOLEAN NOT NULL DEFAULT false;
                 DROP FUNCTION IF EXISTS {schema}.tool_contract_claim_redeeming(
                     TEXT, TEXT, TEXT, TEXT, TEXT, BIGINT, BIGINT, BIGINT, TEXT, TEXT, TEXT,
                     TEXT, BIGINT, TEXT, TEXT, TEXT, BIGINT, TEXT, TEXT, BIGINT, TEXT);"
            ))
            .await
            .map_err(store)?;
            tx.batch_execute(&claim_redeeming_v8(schema))
                .await
                .map_err(store)?;
        }
        if found < 9 {
            // Version 9: whose request each approval is, to count a principal's pending
            // approvals by index; the pending rows written before get theirs from their JSON.
            tx.batch_execute(&format!(
                "ALTER TABLE {schema}.tool_contract_approvals ADD COLUMN principal_ref TEXT;
                 UPDATE {schema}.tool_contract_approvals
                     SET principal_ref = body::jsonb ->> 'principal_ref' WHERE state = 'pending';
                 CREATE INDEX tool_contract_approvals_pending_of
                     ON {schema}.tool_contract_approvals (principal_ref, state);"
            ))
            .await
            .map_err(store)?;
        }
        if found < 10 {
            // Version 10: per stream, minute (of when each result was observed) and tool,
            // the calls each audit stream appended, counted in the transaction that appends
            // them (`PostgresAuditLog`); and per stream the first record so counted: a
            // stream's records from before this version are not.
            tx.batch_execute(&format!(
                "CREATE TABLE {schema}.tool_contract_audit_counts (
                     minute     BIGINT NOT NULL,
                     stream     TEXT NOT NULL,
                     tool       TEXT NOT NULL,
                     calls      BIGINT NOT NULL,
                     granted    BIGINT NOT NULL,
                     rejected   BIGINT NOT NULL,
                     reconciled BIGINT NOT NULL,
                     PRIMARY KEY (minute, stream, tool)
                 );
                 ALTER TABLE {schema}.tool_contract_audit_heads ADD COLUMN counted_from BIGINT;
                 UPDATE {schema}.tool_contract_audit_heads SET counted_from = records + 1;
                 ALTER TABLE {schema}.tool_contract_audit_heads
                     ALTER COLUMN counted_from SET DEFAULT 1,
                     ALTER COLUMN counted_from SET NOT NULL;"
            ))
            .await
            .map_err(store)?;
        }
        if found < 11 {
            // Version 11: a worker's lease, one sealed row per worker renewed for all the
            // tasks it holds, and beside each task the worker named in its JSON, to join it
            // with.
            tx.batch_execute(&format!(
                "CREATE TABLE {schema}.tool_contract_workers (
                     worker         TEXT PRIMARY KEY,
                     lease_until_ms BIGINT NOT NULL,
                     seal           TEXT NOT NULL
                 );
                 ALTER TABLE {schema}.tool_contract_tasks ADD COLUMN worker TEXT;
                 UPDATE {schema}.tool_contract_tasks SET worker = body::jsonb ->> 'worker'
                     WHERE status IN ('working', 'input_required');"
            ))
            .await
            .map_err(store)?;
        }
        if found < SCHEMA_VERSION {
            tx.execute(
                &format!(
                    "INSERT INTO {schema}.tool_contract_schema (version) VALUES ($1)
                     ON CONFLICT (singleton) DO UPDATE SET version = EXCLUDED.version"
                ),
                &[&i32::try_from(SCHEMA_VERSION).unwrap_or(i32::MAX)],
            )
            .await
            .map_err(store)?;
        }
        Ok(())
    }
}

/// A connection of a store's pool, back in the pool once dropped.
pub(crate) type PooledConnection<'a> = bb8::PooledConnection<'a, Manager>;

/// Commits a step that succeeded; rolls back one that failed, at once, so its locks never
/// outlive it on a pooled connection.
async fn finish<T>(tx: Transaction<'_>, answer: Result<T, StoreError>) -> Result<T, StoreError> {
    match answer {
        Ok(answer) => {
            tx.commit().await.map_err(store)?;
            Ok(answer)
        }
        Err(error) => {
            // The step's own error is the one to report; a failed rollback ends the session.
            let _ = tx.rollback().await;
            Err(error)
        }
    }
}

/// Version 1: the ledger, the approvals, and the audit chains with their sealed heads.
fn schema_v1(schema: &str) -> String {
    format!(
        "CREATE TABLE {schema}.tool_contract_ledger (
             key              TEXT PRIMARY KEY,
             request_sha256   TEXT NOT NULL,
             tool             TEXT NOT NULL,
             state            TEXT NOT NULL,
             owner            TEXT NOT NULL,
             lease_generation BIGINT NOT NULL,
             lease_until_ms   BIGINT NOT NULL,
             expires_at_ms    BIGINT NOT NULL,
             result           TEXT
         );
         CREATE INDEX tool_contract_ledger_expiry ON {schema}.tool_contract_ledger (expires_at_ms);
         CREATE TABLE {schema}.tool_contract_approvals (
             key                 TEXT PRIMARY KEY,
             approval_id         TEXT NOT NULL UNIQUE,
             state               TEXT NOT NULL,
             expires_at_ms       BIGINT NOT NULL,
             body                TEXT NOT NULL,
             redeemed_owner      TEXT,
             redeemed_generation BIGINT
         );
         CREATE INDEX tool_contract_approvals_expiry ON {schema}.tool_contract_approvals (expires_at_ms);
         CREATE TABLE {schema}.tool_contract_audit (
             stream TEXT NOT NULL,
             seq    BIGINT NOT NULL,
             record TEXT NOT NULL,
             PRIMARY KEY (stream, seq)
         );
         CREATE FUNCTION {schema}.tool_contract_audit_append_only() RETURNS trigger
             LANGUAGE plpgsql AS $$ BEGIN
                 RAISE EXCEPTION 'the audit log is append-only';
             END $$;
         CREATE TRIGGER tool_contract_audit_append_only
             BEFORE UPDATE OR DELETE OR TRUNCATE ON {schema}.tool_contract_audit
             FOR EACH STATEMENT EXECUTE FUNCTION {schema}.tool_contract_audit_append_only();
         CREATE TABLE {schema}.tool_contract_audit_heads (
             stream      TEXT PRIMARY KEY,
             records     BIGINT NOT NULL,
             head_sha256 TEXT NOT NULL,
             seal        TEXT NOT NULL
         );"
    )
}

/// Version 8: the claim that redeems a grant, in one statement (see `one_statement.rs`).
/// Its arguments: the record's eleven columns ([`COLUMNS`]); the grant's approval id; the
/// granted row as the approval stage read it (state, expiry, body, seal); the redeemed row
/// (state, expiry, body, redeeming owner and generation, seal). It answers `claimed`, or
/// `changed` (the grant's row is not that row) or `taken` (the key holds a record), having
/// written nothing.
fn claim_redeeming_v8(schema: &str) -> String {
    let ledger = format!("{schema}.tool_contract_ledger");
    let approvals = format!("{schema}.tool_contract_approvals");
    format!(
        "CREATE OR REPLACE FUNCTION {schema}.tool_contract_claim_redeeming(
             claim_key TEXT, claim_request_sha256 TEXT, claim_tool TEXT, claim_state TEXT,
             claim_owner TEXT, claim_generation BIGINT, claim_lease_until_ms BIGINT,
             claim_expires_at_ms BIGINT, claim_result TEXT, claim_call TEXT, claim_kept BOOLEAN,
             grant_approval_id TEXT,
             granted_state TEXT, granted_expires_at_ms BIGINT, granted_body TEXT,
             granted_seal TEXT,
             redeemed_state TEXT, redeemed_expires_at_ms BIGINT, redeemed_body TEXT,
             redeemed_by_owner TEXT, redeemed_by_generation BIGINT, redeemed_seal TEXT
         ) RETURNS TEXT LANGUAGE plpgsql AS $$
         BEGIN
             PERFORM 1 FROM {approvals} AS a
              WHERE a.key = claim_key AND a.approval_id = grant_approval_id
                AND a.state = granted_state AND a.expires_at_ms = granted_expires_at_ms
                AND a.body = granted_body AND a.redeemed_owner IS NULL
                AND a.redeemed_generation IS NULL AND a.seal = granted_seal
                FOR UPDATE;
             IF NOT FOUND THEN
                 RETURN 'changed';
             END IF;
             INSERT INTO {ledger} ({COLUMNS})
                  VALUES (claim_key, claim_request_sha256, claim_tool, claim_state, claim_owner,
                          claim_generation, claim_lease_until_ms, claim_expires_at_ms,
                          claim_result, claim_call, claim_kept)
                  ON CONFLICT (key) DO NOTHING;
             IF NOT FOUND THEN
                 RETURN 'taken';
             END IF;
             UPDATE {approvals} AS a
                SET state = redeemed_state, expires_at_ms = redeemed_expires_at_ms,
                    body = redeemed_body, redeemed_owner = redeemed_by_owner,
                    redeemed_generation = redeemed_by_generation, seal = redeemed_seal
              WHERE a.key = claim_key;
             RETURN 'claimed';
         END $$;"
    )
}

/// A lowercase SQL identifier, safe to write into statements unquoted.
fn is_identifier(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b'a'..=b'z' | b'_'))
        && bytes.all(|byte| matches!(byte, b'a'..=b'z' | b'0'..=b'9' | b'_'))
        && name.len() <= 63
}

#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not a lowercase SQL identifier of at most 63 bytes")]
struct InvalidSchema(String);

struct PostgresRows<'a> {
    tx: &'a Transaction<'a>,
    sql: &'a Sql,
}

/// The row `statement` reads at `id`: its stored JSON and its seal.
async fn sealed_row(
    tx: &Transaction<'_>,
    statement: &str,
    id: &str,
) -> Result<Option<(String, Option<String>)>, StoreError> {
    let row = tx
        .query_typed_opt(statement, &[(&id, Type::TEXT)])
        .await
        .map_err(store)?;
    row.map(|row| {
        Ok((
            row.try_get(0).map_err(store)?,
            row.try_get(1).map_err(store)?,
        ))
    })
    .transpose()
}

impl Rows for PostgresRows<'_> {
    async fn announce(&mut self, change: &Changed) -> Result<(), StoreError> {
        let channel = listener::channel(&self.sql.schema);
        let payload = change.to_payload();
        self.tx
            .execute_typed(
                &self.sql.notify,
                &[(&channel, Type::TEXT), (&payload, Type::TEXT)],
            )
            .await
            .map_err(store)?;
        Ok(())
    }

    async fn lock_key(&mut self, key: &str) -> Result<(), StoreError> {
        // The schema is part of the lock: stores in other schemas never wait on this one.
        let lock = format!("{}\n{key}", self.sql.schema);
        self.tx
            .execute_typed(
                "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
                &[(&lock, Type::TEXT)],
            )
            .await
            .map_err(store)?;
        Ok(())
    }

    async fn record(&mut self, key: &str) -> Result<Option<Record>, StoreError> {
        let row = self
            .tx
            .query_typed_opt(&self.sql.record_for_update, &[(&key, Type::TEXT)])
            .await
            .map_err(store)?;
        row.as_ref().map(record_of).transpose()
    }

    async fn put_record(
        &mut self,
        record: &Record,
        fence: Option<&Fence>,
    ) -> Result<bool, StoreError> {
        let generation = to_sql_u64(record.lease.generation);
        let lease_until = to_sql_u64(record.lease_until_ms);
        let expires_at = to_sql_u64(record.expires_at_ms);
        let state = record.state.as_str();
        let changed = match fence {
            None => {
                let params = record_params(record, &state, &generation, &lease_until, &expires_at);
                self.tx
                    .execute_typed(&self.sql.insert_record, &params)
                    .await
            }
            Some(fence) => {
                let fence_generation = to_sql_u64(fence.lease.generation);
                let fence_state = fence.state.as_str();
                let mut params =
                    record_params(record, &state, &generation, &lease_until, &expires_at);
                params.extend([
                    (&fence_state as &(dyn ToSql + Sync), Type::TEXT),
                    (&fence.lease.owner, Type::TEXT),
                    (&fence_generation, Type::INT8),
                ]);
                self.tx
                    .execute_typed(&self.sql.update_record, &params)
                    .await
            }
        };
        Ok(changed.map_err(store)? == 1)
    }

    async fn delete_record(&mut self, key: &str, fence: &Fence) -> Result<bool, StoreError> {
        let removed = self
            .tx
            .execute_typed(
                &self.sql.delete_record,
                &[
                    (&key, Type::TEXT),
                    (&fence.state.as_str(), Type::TEXT),
                    (&fence.lease.owner, Type::TEXT),
                    (&to_sql_u64(fence.lease.generation), Type::INT8),
                ],
            )
            .await
            .map_err(store)?;
        Ok(removed == 1)
    }

    async fn approval(
        &mut self,
        key: &str,
    ) -> Result<Option<(ApprovalEntry, Option<String>)>, StoreError> {
        let row = self
            .tx
            .query_typed_opt(&self.sql.approval, &[(&key, Type::TEXT)])
            .await
            .map_err(store)?;
        row.as_ref()
            .map(|row| sealed_entry(approval_row_of(row)?))
            .transpose()
    }

    async fn approval_key(&mut self, approval_id: &str) -> Result<Option<String>, StoreError> {
        let row = self
            .tx
            .query_typed_opt(&self.sql.approval_key, &[(&approval_id, Type::TEXT)])
            .await
            .map_err(store)?;
        row.map(|row| row.try_get(0).map_err(store)).transpose()
    }

    async fn put_approval(
        &mut self,
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
        let redeemed_owner = redeemed_by.as_ref().map(|lease| lease.owner.as_str());
        let redeemed_generation = redeemed_by
            .as_ref()
            .map(|lease| to_sql_u64(lease.generation));
        self.tx
            .execute_typed(
                &self.sql.put_approval,
                &[
                    (&principal_ref, Type::TEXT),
                    (&key, Type::TEXT),
                    (&state, Type::TEXT),
                    (&approval_id, Type::TEXT),
                    (&to_sql_u64(expires_at_ms), Type::INT8),
                    (&body, Type::TEXT),
                    (&redeemed_owner, Type::TEXT),
                    (&redeemed_generation, Type::INT8),
                    (&seal, Type::TEXT),
                ],
            )
            .await
            .map_err(store)?;
        Ok(())
    }

    async fn approver_row(
        &mut self,
        approver_id: &str,
    ) -> Result<Option<(String, Option<String>)>, StoreError> {
        sealed_row(self.tx, &self.sql.approver, approver_id).await
    }

    async fn approver_rows(&mut self) -> Result<Vec<(String, String, Option<String>)>, StoreError> {
        let rows = self
            .tx
            .query_typed(&self.sql.approvers, &[])
            .await
            .map_err(store)?;
        rows.iter()
            .map(|row| {
                Ok((
                    row.try_get(0).map_err(store)?,
                    row.try_get(1).map_err(store)?,
                    row.try_get(2).map_err(store)?,
                ))
            })
            .collect()
    }

    async fn task_row(
        &mut self,
        task_id: &str,
    ) -> Result<Option<(String, Option<String>)>, StoreError> {
        sealed_row(self.tx, &self.sql.task, task_id).await
    }

    async fn pending_approvals_of(
        &mut self,
        principal_ref: &str,
        except_key: &str,
        now_ms: u64,
    ) -> Result<usize, StoreError> {
        let now = to_sql_u64(now_ms);
        let row = self
            .tx
            .query_typed_one(
                &self.sql.pending_approvals_of,
                &[
                    (&principal_ref, Type::TEXT),
                    (&now, Type::INT8),
                    (&except_key, Type::TEXT),
                ],
            )
            .await
            .map_err(store)?;
        let count: i64 = row.try_get(0).map_err(store)?;
        Ok(usize::try_from(count).unwrap_or(usize::MAX))
    }

    async fn worker_lease(&mut self, worker: &str) -> Result<Option<(u64, String)>, StoreError> {
        let found = self
            .tx
            .query_typed(&self.sql.worker_lease, &[(&worker, Type::TEXT)])
            .await
            .map_err(store)?;
        let Some(row) = found.first() else {
            return Ok(None);
        };
        worker_lease_columns(
            row.try_get(0).map_err(store)?,
            row.try_get(1).map_err(store)?,
        )
    }

    async fn put_worker_lease(
        &mut self,
        worker: &str,
        until_ms: u64,
        seal: &str,
    ) -> Result<(), StoreError> {
        let until = to_sql_u64(until_ms);
        self.tx
            .execute_typed(
                &self.sql.put_worker_lease,
                &[
                    (&worker, Type::TEXT),
                    (&until, Type::INT8),
                    (&seal, Type::TEXT),
                ],
            )
            .await
            .map_err(store)?;
        Ok(())
    }

    async fn open_tasks_of(&mut self, owner: &str, now_ms: u64) -> Result<usize, StoreError> {
        let now = to_sql_u64(now_ms);
        let row = self
            .tx
            .query_typed_one(
                &self.sql.open_tasks_of,
                &[(&owner, Type::TEXT), (&now, Type::INT8)],
            )
            .await
            .map_err(store)?;
        let count: i64 = row.try_get(0).map_err(store)?;
        Ok(usize::try_from(count).unwrap_or(usize::MAX))
    }

    async fn put_task_row(
        &mut self,
        task: &TaskRow,
        body: &str,
        seal: &str,
        new: bool,
    ) -> Result<bool, StoreError> {
        let statement = if new {
            &self.sql.insert_task
        } else {
            &self.sql.update_task
        };
        let expires_at = task.expires_at_ms().map(to_sql_u64);
        let lease_until = to_sql_u64(task.lease_until_ms);
        let status = task.status.as_str();
        let written = self
            .tx
            .execute_typed(
                statement,
                &[
                    (&task.task_id, Type::TEXT),
                    (&task.owner, Type::TEXT),
                    (&status, Type::TEXT),
                    (&lease_until, Type::INT8),
                    (&expires_at, Type::INT8),
                    (&body, Type::TEXT),
                    (&seal, Type::TEXT),
                    (&task.worker, Type::TEXT),
                ],
            )
            .await
            .map_err(store)?;
        Ok(written == 1)
    }

    async fn put_approver_row(
        &mut self,
        approver_id: &str,
        body: &str,
        seal: &str,
    ) -> Result<(), StoreError> {
        self.tx
            .execute_typed(
                &self.sql.put_approver,
                &[
                    (&approver_id, Type::TEXT),
                    (&body, Type::TEXT),
                    (&seal, Type::TEXT),
                ],
            )
            .await
            .map_err(store)?;
        Ok(())
    }
}

/// Runs one step in one transaction on a pooled connection.
macro_rules! in_transaction {
    ($store:expr, |$rows:ident| $step:expr) => {{
        let mut connection = $store.connection().await?;
        let tx = connection.transaction().await.map_err(store)?;
        let answer = {
            let mut $rows = PostgresRows {
                tx: &tx,
                sql: &$store.sql,
            };
            $step.await
        };
        finish(tx, answer).await
    }};
}

impl ControlStore for PostgresStore {
    fn claim<'a>(&'a self, claim: &'a Claim) -> StoreFuture<'a, Claimed> {
        Box::pin(async move { in_transaction!(self, |rows| rows::claim(&mut rows, claim)) })
    }

    fn claim_if_absent<'a>(&'a self, claim: &'a Claim) -> StoreFuture<'a, IfAbsent> {
        Box::pin(async move {
            // A grant is redeemed in the general claim, which reads and reseals its row.
            if claim.redeem.is_none()
                && let Some(looked) = self.claim_in_one_statement(claim).await?
            {
                return Ok(looked);
            }
            look_then_claim(self, claim).await
        })
    }

    fn claim_redeeming<'a>(
        &'a self,
        claim: &'a Claim,
        grant: &'a ApprovalGrant,
    ) -> StoreFuture<'a, Claimed> {
        Box::pin(async move {
            // Whatever this claim finds, the hint has served: the key's next look reads.
            self.hints.forget(&claim.key);
            if let Some(claimed) = self.claim_redeeming_in_one_statement(claim, grant).await? {
                return Ok(claimed);
            }
            in_transaction!(self, |rows| rows::claim(&mut rows, claim))
        })
    }

    fn advance<'a>(&'a self, step: &'a Advance) -> StoreFuture<'a, Advanced> {
        Box::pin(async move {
            if let Some(applied) = self.advance_in_one_statement(step).await? {
                return Ok(Advanced::Applied(applied));
            }
            in_transaction!(self, |rows| rows::advance(&mut rows, step))
        })
    }

    fn release<'a>(&'a self, release: &'a Release) -> StoreFuture<'a, bool> {
        Box::pin(async move { in_transaction!(self, |rows| rows::release(&mut rows, release)) })
    }

    fn get<'a>(&'a self, key: &'a str) -> StoreFuture<'a, Option<Record>> {
        Box::pin(async move {
            let mut connection = self.connection().await?;
            let row = connection
                .query_common(&self.sql, Common::Record, &[&key])
                .await?;
            row.as_ref().map(record_of).transpose()
        })
    }

    fn stale(&self, now_ms: u64) -> StoreFuture<'_, Vec<Record>> {
        Box::pin(async move {
            let connection = self.connection().await?;
            let in_flight = [
                WriteState::Executing.as_str(),
                WriteState::CancelRequested.as_str(),
            ];
            let unknown = WriteState::Unknown.as_str();
            let rows = connection
                .query_typed(
                    &self.sql.stale,
                    &[
                        (&in_flight[0], Type::TEXT),
                        (&in_flight[1], Type::TEXT),
                        (&to_sql_u64(now_ms), Type::INT8),
                        (&unknown, Type::TEXT),
                    ],
                )
                .await
                .map_err(store)?;
            rows.iter().map(record_of).collect()
        })
    }

    fn purge_operations(&self, window_ended_by_ms: u64) -> StoreFuture<'_, u64> {
        Box::pin(async move {
            let connection = self.connection().await?;
            purge_finished(&connection, &self.sql.purge_operations, window_ended_by_ms).await
        })
    }

    fn purge_expired(&self, now_ms: u64) -> StoreFuture<'_, Purged> {
        Box::pin(async move {
            let connection = self.connection().await?;
            let now = to_sql_u64(now_ms);
            let records = purge_finished(&connection, &self.sql.purge_records, now_ms).await?;
            let approvals = connection
                .execute_typed(&self.sql.purge_approvals, &[(&now, Type::INT8)])
                .await
                .map_err(store)?;
            let tasks = connection
                .execute_typed(&self.sql.purge_tasks, &[(&now, Type::INT8)])
                .await
                .map_err(store)?;
            // A lapsed lease holds nothing: its worker, if it lives, writes it again.
            connection
                .execute_typed(&self.sql.purge_workers, &[(&now, Type::INT8)])
                .await
                .map_err(store)?;
            Ok(Purged {
                records,
                approvals,
                tasks,
            })
        })
    }

    fn look_for_approval<'a>(&'a self, ask: &'a ApprovalAsk) -> StoreFuture<'a, ApprovalLook> {
        Box::pin(self.look_in_one_statement(ask))
    }

    fn approval_hint(&self, ask: &ApprovalAsk) -> Option<ApprovalGrant> {
        self.hints.proceed(ask)
    }

    fn check_approval<'a>(&'a self, ask: &'a ApprovalAsk) -> StoreFuture<'a, ApprovalCheck> {
        // The one-statement read is the write's look (`look_for_approval`): a stage asked
        // for is one that writes, or is asked again.
        Box::pin(async move { in_transaction!(self, |rows| rows::check_approval(&mut rows, ask)) })
    }

    fn approve<'a>(
        &'a self,
        step: &'a ApproveStep,
    ) -> StoreFuture<'a, Result<Approved, ApprovalError>> {
        Box::pin(async move {
            let approved = in_transaction!(self, |rows| rows::approve(&mut rows, step))?;
            if let Ok(Approved::Granted(grant)) = &approved {
                self.hints.keep(grant, step.now);
            }
            Ok(approved)
        })
    }

    fn reject<'a>(&'a self, step: &'a RejectStep) -> StoreFuture<'a, Result<(), ApprovalError>> {
        Box::pin(async move { in_transaction!(self, |rows| rows::reject(&mut rows, step)) })
    }

    fn pending_approvals<'a>(
        &'a self,
        now_ms: u64,
        seal: &'a RowSeal,
    ) -> StoreFuture<'a, Vec<PendingApproval>> {
        Box::pin(async move {
            let connection = self.connection().await?;
            let rows = connection
                .query_typed(
                    &self.sql.pending,
                    &[(&PENDING, Type::TEXT), (&to_sql_u64(now_ms), Type::INT8)],
                )
                .await
                .map_err(store)?;
            let mut entries = Vec::with_capacity(rows.len());
            for row in &rows {
                let key: String = row.try_get(7).map_err(store)?;
                let (entry, sealed) = sealed_entry(approval_row_of(row)?)?;
                entries.push((key, entry, sealed));
            }
            rows::opened_pending(entries, now_ms, seal)
        })
    }

    fn pending_approval<'a>(
        &'a self,
        approval_id: &'a str,
        now_ms: u64,
        seal: &'a RowSeal,
    ) -> StoreFuture<'a, Option<PendingApproval>> {
        Box::pin(async move {
            in_transaction!(self, |rows| rows::pending_approval(
                &mut rows,
                approval_id,
                now_ms,
                seal
            ))
        })
    }

    fn write_directory<'a>(
        &'a self,
        write: &'a DirectoryWrite,
    ) -> StoreFuture<'a, Result<Approver, EnrollError>> {
        Box::pin(
            async move { in_transaction!(self, |rows| rows::write_directory(&mut rows, write)) },
        )
    }

    fn approvers<'a>(&'a self, seal: &'a RowSeal) -> StoreFuture<'a, Vec<Approver>> {
        Box::pin(async move { in_transaction!(self, |rows| rows::approvers(&mut rows, seal)) })
    }

    fn approver<'a>(
        &'a self,
        approver_id: &'a str,
        seal: &'a RowSeal,
    ) -> StoreFuture<'a, Option<Approver>> {
        Box::pin(async move {
            in_transaction!(self, |rows| rows::read_approver(
                &mut rows,
                approver_id,
                seal
            ))
        })
    }

    fn create_task<'a>(&'a self, task: &'a TaskRow, seal: &'a RowSeal) -> StoreFuture<'a, bool> {
        Box::pin(
            async move { in_transaction!(self, |rows| rows::create_task(&mut rows, task, seal)) },
        )
    }

    /// One statement, one round trip: a poll of a task costs no transaction.
    fn task<'a>(
        &'a self,
        task_id: &'a str,
        owner: Option<&'a str>,
        now_ms: u64,
        seal: &'a RowSeal,
    ) -> StoreFuture<'a, Option<TaskRow>> {
        Box::pin(async move {
            let mut connection = self.connection().await?;
            let row = connection
                .query_common(&self.sql, Common::Task, &[&task_id])
                .await?;
            let Some(row) = row else {
                return Ok(None);
            };
            let body: String = row.try_get(0).map_err(store)?;
            let stored_seal: Option<String> = row.try_get(1).map_err(store)?;
            rows::task_from_row(task_id, &body, stored_seal.as_deref(), owner, now_ms, seal)
        })
    }

    fn move_task<'a>(
        &'a self,
        step: &'a TaskMove,
    ) -> StoreFuture<'a, Result<TaskRow, TaskMoveError>> {
        Box::pin(async move { in_transaction!(self, |rows| rows::move_task(&mut rows, step)) })
    }

    fn stale_tasks<'a>(&'a self, now_ms: u64, seal: &'a RowSeal) -> StoreFuture<'a, StaleTasks> {
        Box::pin(async move {
            let connection = self.connection().await?;
            let now = to_sql_u64(now_ms);
            let found = connection
                .query_typed(&self.sql.stale_tasks, &[(&now, Type::INT8)])
                .await
                .map_err(store)?;
            let found = found
                .iter()
                .map(|row| {
                    let (task_id, body, stored_seal) = task_columns(row)?;
                    let lease = worker_lease_columns(
                        row.try_get(3).map_err(store)?,
                        row.try_get(4).map_err(store)?,
                    )?;
                    Ok((task_id, body, stored_seal, lease))
                })
                .collect::<Result<Vec<_>, StoreError>>()?;
            Ok(rows::stale_tasks_of(found, now_ms, seal))
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
        Box::pin(async move {
            let connection = self.connection().await?;
            let after = after.unwrap_or_default();
            let now = to_sql_u64(now_ms);
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let found = connection
                .query_typed(
                    &self.sql.tasks_of,
                    &[
                        (&owner, Type::TEXT),
                        (&after, Type::TEXT),
                        (&now, Type::INT8),
                        (&limit, Type::INT8),
                    ],
                )
                .await
                .map_err(store)?;
            opened_tasks(&found, Some(owner), now_ms, seal)
        })
    }

    fn sign_count<'a>(&'a self, count: &'a SignCount) -> StoreFuture<'a, SignCountCheck> {
        Box::pin(async move { in_transaction!(self, |rows| rows::sign_count(&mut rows, count)) })
    }

    fn create_task_within<'a>(
        &'a self,
        task: &'a TaskRow,
        open_limit: usize,
        seal: &'a RowSeal,
    ) -> StoreFuture<'a, TaskCreation> {
        Box::pin(async move {
            in_transaction!(self, |rows| rows::create_task_within(
                &mut rows, task, open_limit, seal
            ))
        })
    }

    fn renew_worker<'a>(
        &'a self,
        renewal: &'a WorkerRenewal,
    ) -> StoreFuture<'a, Vec<Option<TaskStatus>>> {
        Box::pin(self.renew(renewal))
    }

    fn still_pending<'a>(
        &'a self,
        approval_ids: &'a [String],
        now_ms: u64,
        _seal: &'a RowSeal,
    ) -> StoreFuture<'a, Vec<String>> {
        Box::pin(self.pending_among(approval_ids, now_ms))
    }

    fn changes(&self) -> Option<Arc<Changes>> {
        Some(self.listening.changes())
    }
}

/// Runs `statement`, a purge of finished records whose `expires_at_ms` is at or before
/// `before_ms` (`$1`, the four finished states `$2` to `$5`): how many it removed.
async fn purge_finished(
    connection: &tokio_postgres::Client,
    statement: &str,
    before_ms: u64,
) -> Result<u64, StoreError> {
    let before = to_sql_u64(before_ms);
    let finished = [
        WriteState::Succeeded.as_str(),
        WriteState::Failed.as_str(),
        WriteState::Rejected.as_str(),
        WriteState::Cancelled.as_str(),
    ];
    connection
        .execute_typed(
            statement,
            &[
                (&before, Type::INT8),
                (&finished[0], Type::TEXT),
                (&finished[1], Type::TEXT),
                (&finished[2], Type::TEXT),
                (&finished[3], Type::TEXT),
            ],
        )
        .await
        .map_err(store)
}

/// The eleven columns of a ledger row, in the order of [`COLUMNS`] and [`RECORD_TYPES`].
fn record_values<'a>(
    record: &'a Record,
    state: &'a &'a str,
    generation: &'a i64,
    lease_until: &'a i64,
    expires_at: &'a i64,
) -> [&'a (dyn ToSql + Sync); 11] {
    [
        &record.key,
        &record.request_sha256,
        &record.tool,
        state,
        &record.lease.owner,
        generation,
        lease_until,
        expires_at,
        &record.result,
        &record.call,
        &record.kept,
    ]
}

/// The eleven columns of a ledger row, typed, for an unnamed statement.
fn record_params<'a>(
    record: &'a Record,
    state: &'a &'a str,
    generation: &'a i64,
    lease_until: &'a i64,
    expires_at: &'a i64,
) -> Vec<(&'a (dyn ToSql + Sync), Type)> {
    record_values(record, state, generation, lease_until, expires_at)
        .into_iter()
        .zip(RECORD_TYPES)
        .collect()
}

fn record_of(row: &Row) -> Result<Record, StoreError> {
    record_at(row, 0)
}

/// The record whose eleven columns ([`COLUMNS`]) begin at column `first` of `row`.
fn record_at(row: &Row, first: usize) -> Result<Record, StoreError> {
    let state: String = row.try_get(first + 3).map_err(store)?;
    Ok(Record {
        key: row.try_get(first).map_err(store)?,
        request_sha256: row.try_get(first + 1).map_err(store)?,
        tool: row.try_get(first + 2).map_err(store)?,
        state: state
            .parse::<WriteState>()
            .map_err(|error| StoreError::Corrupt(error.to_string()))?,
        lease: Lease {
            owner: row.try_get(first + 4).map_err(store)?,
            generation: from_sql_u64(row.try_get(first + 5).map_err(store)?, "lease generation")?,
        },
        lease_until_ms: from_sql_u64(row.try_get(first + 6).map_err(store)?, "time")?,
        expires_at_ms: from_sql_u64(row.try_get(first + 7).map_err(store)?, "time")?,
        result: row.try_get(first + 8).map_err(store)?,
        call: row.try_get(first + 9).map_err(store)?,
        kept: row.try_get(first + 10).map_err(store)?,
    })
}

fn approval_row_of(row: &Row) -> Result<ReadApprovalRow, StoreError> {
    Ok(ReadApprovalRow {
        state: row.try_get(0).map_err(store)?,
        approval_id: row.try_get(1).map_err(store)?,
        expires_at_ms: row.try_get(2).map_err(store)?,
        body: row.try_get(3).map_err(store)?,
        redeemed_owner: row.try_get(4).map_err(store)?,
        redeemed_generation: row.try_get(5).map_err(store)?,
        seal: row.try_get(6).map_err(store)?,
    })
}

pub(crate) fn store(error: tokio_postgres::Error) -> StoreError {
    StoreError::store(error)
}

/// The tasks of `found` (rows of `task_id, body, seal`), each opened with `seal`; those
/// `owner` (when named) does not own, or expired by `now_ms`, left out. The columns only
/// narrow the search: the sealed body says whose a task is.
/// A task row's id, body and seal, as stored.
fn task_columns(row: &Row) -> Result<(String, String, Option<String>), StoreError> {
    Ok((
        row.try_get(0).map_err(store)?,
        row.try_get(1).map_err(store)?,
        row.try_get(2).map_err(store)?,
    ))
}

fn opened_tasks(
    found: &[Row],
    owner: Option<&str>,
    now_ms: u64,
    seal: &RowSeal,
) -> Result<Vec<TaskRow>, StoreError> {
    let mut tasks = Vec::new();
    for row in found {
        let (task_id, body, stored_seal) = task_columns(row)?;
        let task =
            rows::task_from_row(&task_id, &body, stored_seal.as_deref(), owner, now_ms, seal)?;
        tasks.extend(task);
    }
    Ok(tasks)
}
