//! A payout whose replica is stopped (SIGSTOP) past its lease, in a process of its own
//! (`src/bin/stalled_worker.rs`), while the test settles the write on another: the contracts,
//! the downstream (a SQLite file of payouts, written synchronously) and the dispatcher both
//! sides build.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tool_contract::control::{ControlStore, MemoryAuditLog, PostgresOptions, PostgresStore};
use tool_contract::control::{SqliteStore, StoreError};
use tool_contract::dispatch::{Dispatcher, HandlerContext, RetryPolicy, ToolOptions, typed};
use tool_contract::{CallContext, FailureKind, Principal, ToolContract, ToolFailure, ToolOutput};

use crate::tracker::{audit_key, context, keys};

/// Pay out an order's refund.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = PaidOut, effect = non_idempotent_write, operation = same_arguments, approval = not_required,
                reconcile = FindPayout, source_label = "payouts", producer_revision = "payouts-1")]
pub struct Payout {
    /// The order.
    #[tool_contract(max_len = 20)]
    pub order: String,
}

/// Whether an order's payout happened.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = PaidOut, effect = read_only, source_label = "payouts",
                producer_revision = "payouts-1")]
pub struct FindPayout {
    /// The order.
    #[tool_contract(max_len = 20)]
    pub order: String,
}

/// A payout that happened.
#[derive(Debug, serde::Serialize, ToolOutput)]
pub struct PaidOut {
    /// The order.
    #[tool_output(bound = order)]
    pub order: String,
}

/// The lease a payout holds: one attempt of `TIMEOUT`, no retry wait, and `GRACE`.
pub const TIMEOUT: Duration = Duration::from_secs(1);
/// The grace past the attempt's time.
pub const GRACE: Duration = Duration::from_secs(1);

/// The downstream: a SQLite file with one row per payout made.
pub struct Payouts {
    path: std::path::PathBuf,
}

impl Payouts {
    /// The payouts kept in `path` (created if missing).
    pub fn open(path: &Path) -> Payouts {
        let connection = rusqlite::Connection::open(path).expect("the payouts file opens");
        connection
            .execute_batch("CREATE TABLE IF NOT EXISTS payouts (ord TEXT NOT NULL)")
            .expect("the payouts table");
        Payouts {
            path: path.to_owned(),
        }
    }

    fn connection(&self) -> rusqlite::Connection {
        let connection = rusqlite::Connection::open(&self.path).expect("the payouts file opens");
        connection
            .busy_timeout(Duration::from_secs(10))
            .expect("a busy timeout");
        connection
    }

    /// How many payouts `order` had.
    pub fn count(&self, order: &str) -> u32 {
        self.connection()
            .query_row(
                "SELECT count(*) FROM payouts WHERE ord = ?1",
                [order],
                |row| row.get(0),
            )
            .expect("the payouts read")
    }

    fn pay(&self, order: &str) {
        self.connection()
            .execute("INSERT INTO payouts (ord) VALUES (?1)", [order])
            .expect("the payout is written");
    }
}

/// The handler: `before_paying` runs first (the worker tells the driver it is about to pay,
/// and gives it a moment to stop the process), then the payout is written, synchronously.
async fn pay_out(
    payouts: Arc<(Payouts, fn())>,
    input: Payout,
    _: HandlerContext,
) -> Result<PaidOut, ToolFailure> {
    (payouts.1)();
    tokio::time::sleep(Duration::from_millis(300)).await;
    payouts.0.pay(&input.order);
    Ok(PaidOut { order: input.order })
}

async fn find_payout(
    payouts: Arc<(Payouts, fn())>,
    input: FindPayout,
    _: HandlerContext,
) -> Result<PaidOut, ToolFailure> {
    if payouts.0.count(&input.order) > 0 {
        Ok(PaidOut { order: input.order })
    } else {
        Err(ToolFailure::new(FailureKind::NotFound, "no payout"))
    }
}

/// A replica over `store`, paying out into `payouts`, on the system clock.
pub fn replica(store: Arc<dyn ControlStore>, payouts: Payouts, before_paying: fn()) -> Dispatcher {
    let options = ToolOptions::DEFAULT
        .with_timeout(TIMEOUT)
        .with_retry(RetryPolicy::NEVER.with_max_total_wait(Duration::ZERO));
    let payouts = Arc::new((payouts, before_paying));
    Dispatcher::builder(tool_contract::registry![Payout, FindPayout], keys())
        .write_handler(
            typed(&payouts, pay_out),
            |payout: &Payout| FindPayout {
                order: payout.order.clone(),
            },
            options,
        )
        .handler(typed(&payouts, find_payout))
        .lease_grace(GRACE)
        .store(store)
        .audit_sink(Arc::new(MemoryAuditLog::new(audit_key())))
        .build()
        .expect("every tool has its handler")
}

/// The store a `STORE` argument names: `sqlite:PATH`, or `postgres:SCHEMA:URL`.
///
/// # Errors
///
/// The store's own, when it cannot be opened.
pub async fn open_store(store: &str) -> Result<Arc<dyn ControlStore>, StoreError> {
    if let Some(path) = store.strip_prefix("sqlite:") {
        return Ok(Arc::new(SqliteStore::open(path)?));
    }
    let rest = store.strip_prefix("postgres:").unwrap_or(store);
    let (schema, url) = rest.split_once(':').unwrap_or(("tool_contract", rest));
    let options = PostgresOptions::default().with_schema(schema);
    Ok(Arc::new(PostgresStore::connect_with(url, options).await?))
}

/// The one call both sides make: the payout of `ORDER-9`, under one operation key.
pub fn payout_call() -> CallContext {
    context(
        "c1",
        "payout",
        serde_json::json!({ "order": "ORDER-9" }),
        "payout-9",
        "payout-9",
    )
}

/// The principal both sides act for.
pub fn principal() -> Principal {
    crate::tracker::alice()
}
