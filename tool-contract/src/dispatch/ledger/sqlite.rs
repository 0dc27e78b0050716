//! The durable ledger: one SQLite file, each step one `IMMEDIATE` transaction.

use std::path::Path;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, Row, Transaction, TransactionBehavior, params};

use super::{
    Advance, AdvanceDecision, Advanced, Claim, ClaimDecision, Claimed, Ledger, LedgerError,
    LedgerFuture, Record, decide_advance, decide_claim,
};
use crate::dispatch::WriteState;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS tool_contract_ledger (
    key            TEXT PRIMARY KEY NOT NULL,
    request_sha256 TEXT NOT NULL,
    tool           TEXT NOT NULL,
    state          TEXT NOT NULL,
    owner          TEXT NOT NULL,
    lease_until_ms INTEGER NOT NULL,
    expires_at_ms  INTEGER NOT NULL,
    result         TEXT
) STRICT;
CREATE INDEX IF NOT EXISTS tool_contract_ledger_expiry ON tool_contract_ledger (expires_at_ms);
";

const COLUMNS: &str =
    "key, request_sha256, tool, state, owner, lease_until_ms, expires_at_ms, result";

/// A ledger in an SQLite database file: it survives a process restart, and several processes
/// on one machine may share the file (each step takes SQLite's write lock first, so claims
/// never race).
///
/// Steps run on the calling task (SQLite calls are short, local and synchronous); the
/// connection is opened with WAL journaling and `synchronous = FULL`, so an answered claim is
/// on disk before the handler runs.
#[derive(Debug)]
pub struct SqliteLedger {
    connection: Mutex<Connection>,
}

impl SqliteLedger {
    /// Opens (or creates) the ledger at `path`.
    ///
    /// # Errors
    ///
    /// [`LedgerError::Store`] when the file cannot be opened or the table created.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, LedgerError> {
        Self::with_connection(Connection::open(path).map_err(store)?)
    }

    /// A ledger in a private in-memory database (for tests; it does not survive a restart).
    ///
    /// # Errors
    ///
    /// [`LedgerError::Store`] when SQLite cannot set it up.
    pub fn open_in_memory() -> Result<Self, LedgerError> {
        Self::with_connection(Connection::open_in_memory().map_err(store)?)
    }

    fn with_connection(connection: Connection) -> Result<Self, LedgerError> {
        connection
            .busy_timeout(Duration::from_secs(5))
            .map_err(store)?;
        connection
            .pragma_update(None, "journal_mode", "WAL")
            .map_err(store)?;
        connection
            .pragma_update(None, "synchronous", "FULL")
            .map_err(store)?;
        connection.execute_batch(SCHEMA).map_err(store)?;
        Ok(SqliteLedger {
            connection: Mutex::new(connection),
        })
    }

    fn connection(&self) -> MutexGuard<'_, Connection> {
        // Every step is one transaction: a panic inside one rolls it back when it is dropped.
        self.connection
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn in_transaction<T>(
        &self,
        step: impl FnOnce(&Transaction<'_>) -> Result<T, LedgerError>,
    ) -> Result<T, LedgerError> {
        let mut connection = self.connection();
        let transaction = connection
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(store)?;
        let answer = step(&transaction)?;
        transaction.commit().map_err(store)?;
        Ok(answer)
    }
}

impl Ledger for SqliteLedger {
    fn claim<'a>(&'a self, claim: &'a Claim) -> LedgerFuture<'a, Claimed> {
        Box::pin(async move {
            self.in_transaction(|tx| {
                Ok(match decide_claim(read(tx, &claim.key)?.as_ref(), claim) {
                    ClaimDecision::Write(record) => {
                        write(tx, &record)?;
                        Claimed::Fresh
                    }
                    ClaimDecision::WriteAndAnswer(record, answer) => {
                        write(tx, &record)?;
                        answer
                    }
                    ClaimDecision::Answer(answer) => answer,
                })
            })
        })
    }

    fn advance<'a>(&'a self, step: &'a Advance) -> LedgerFuture<'a, Advanced> {
        Box::pin(async move {
            self.in_transaction(|tx| {
                Ok(match decide_advance(read(tx, &step.key)?.as_ref(), step)? {
                    AdvanceDecision::Write(record) => {
                        write(tx, &record)?;
                        Advanced::Applied(record)
                    }
                    AdvanceDecision::Stale(record) => Advanced::Stale(record),
                })
            })
        })
    }

    fn release<'a>(&'a self, key: &'a str, owner: &'a str) -> LedgerFuture<'a, bool> {
        Box::pin(async move {
            self.in_transaction(|tx| {
                let removed = tx
                    .execute(
                        "DELETE FROM tool_contract_ledger WHERE key = ?1 AND owner = ?2 AND state = ?3",
                        params![key, owner, WriteState::Executing.as_str()],
                    )
                    .map_err(store)?;
                Ok(removed > 0)
            })
        })
    }

    fn get<'a>(&'a self, key: &'a str) -> LedgerFuture<'a, Option<Record>> {
        Box::pin(async move { self.in_transaction(|tx| read(tx, key)) })
    }

    fn purge_expired(&self, now_ms: u64) -> LedgerFuture<'_, u64> {
        Box::pin(async move {
            self.in_transaction(|tx| {
                let removed = tx
                    .execute(
                        "DELETE FROM tool_contract_ledger WHERE expires_at_ms <= ?1 AND state IN (?2, ?3, ?4, ?5)",
                        params![
                            to_sql_ms(now_ms),
                            WriteState::Succeeded.as_str(),
                            WriteState::Failed.as_str(),
                            WriteState::Rejected.as_str(),
                            WriteState::Cancelled.as_str(),
                        ],
                    )
                    .map_err(store)?;
                Ok(removed as u64)
            })
        })
    }
}

fn read(tx: &Transaction<'_>, key: &str) -> Result<Option<Record>, LedgerError> {
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

fn write(tx: &Transaction<'_>, record: &Record) -> Result<(), LedgerError> {
    tx.execute(
        &format!("INSERT OR REPLACE INTO tool_contract_ledger ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"),
        params![
            record.key,
            record.request_sha256,
            record.tool,
            record.state.as_str(),
            record.owner,
            to_sql_ms(record.lease_until_ms),
            to_sql_ms(record.expires_at_ms),
            record.result,
        ],
    )
    .map_err(store)?;
    Ok(())
}

/// A row as SQLite gives it, before its state and times are checked.
struct RawRecord {
    key: String,
    request_sha256: String,
    tool: String,
    state: String,
    owner: String,
    lease_until_ms: i64,
    expires_at_ms: i64,
    result: Option<String>,
}

fn raw_record(row: &Row<'_>) -> rusqlite::Result<RawRecord> {
    Ok(RawRecord {
        key: row.get(0)?,
        request_sha256: row.get(1)?,
        tool: row.get(2)?,
        state: row.get(3)?,
        owner: row.get(4)?,
        lease_until_ms: row.get(5)?,
        expires_at_ms: row.get(6)?,
        result: row.get(7)?,
    })
}

impl RawRecord {
    fn into_record(self) -> Result<Record, LedgerError> {
        let state = self
            .state
            .parse::<WriteState>()
            .map_err(|error| LedgerError::Corrupt(error.to_string()))?;
        let time = |ms: i64| {
            u64::try_from(ms).map_err(|_| LedgerError::Corrupt(format!("negative time {ms}")))
        };
        Ok(Record {
            key: self.key,
            request_sha256: self.request_sha256,
            tool: self.tool,
            state,
            owner: self.owner,
            lease_until_ms: time(self.lease_until_ms)?,
            expires_at_ms: time(self.expires_at_ms)?,
            result: self.result,
        })
    }
}

// SQLite integers are signed; times past i64::MAX ms (year 292 million) are held at it.
fn to_sql_ms(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

fn store(error: rusqlite::Error) -> LedgerError {
    LedgerError::store(error)
}
