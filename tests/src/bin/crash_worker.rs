//! One worker of the crash test (`tests/tests/crash.rs`): dispatches its share of the
//! operations against a shared store until each is settled, approving writes other workers
//! asked for. The driver kills it with SIGKILL at random moments and starts it again.
//!
//! `crash_worker STORE SCHEMA INDEX WORKERS OPERATIONS AUDIT_DIR`, where `STORE` is a
//! `postgres://` URL (store, effects and audit in `SCHEMA`) or `sqlite:PATH` (store and
//! effects in that file, the audit in a JSON-lines file of this process in `AUDIT_DIR`).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::{RngExt, SeedableRng};
use tool_contract::control::{AuditSink, ControlStore, JsonLinesAuditLog, PostgresAuditLog};
use tool_contract::control::{PostgresOptions, PostgresStore, SqliteStore};
use tool_contract::dispatch::{Dispatcher, HandlerContext, RetryPolicy, Task, ToolOptions};
use tool_contract::providers::{Api, Correlation, ToolCall};
use tool_contract::{
    AuditKeys, CallContext, ErrorCode, FailureKind, Principal, RawProvenance, RawResult, SecretKey,
    Status, ToolContract, ToolFailure, ToolOutput,
};

/// Move money: each execution is one row in the effect table.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Transferred, effect = non_idempotent_write, operation = same_arguments, approval = not_required,
                reconcile = FindTransfer, source_label = "bank", producer_revision = "bank-v1")]
pub struct Transfer {
    /// The operation.
    #[tool_contract(maximum = 1000000)]
    pub op: u32,
}

/// Move money once a person approved it.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Transferred, effect = non_idempotent_write, operation = same_arguments, approval = by_caller,
                reconcile = FindTransfer, source_label = "bank", producer_revision = "bank-v1")]
pub struct ApprovedTransfer {
    /// The operation.
    #[tool_contract(maximum = 1000000)]
    pub op: u32,
}

/// Whether a transfer happened (the writes' status query).
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Transferred, effect = read_only, source_label = "bank",
                producer_revision = "bank-v1")]
pub struct FindTransfer {
    /// The operation.
    #[tool_contract(maximum = 1000000)]
    pub op: u32,
}

/// A transfer that happened.
#[derive(Debug, serde::Serialize, ToolOutput)]
pub struct Transferred {
    /// The operation.
    #[tool_output(maximum = 1000000)]
    pub op: u32,
}

/// Where executions are recorded: the downstream system of the test.
enum Effects {
    Postgres(tokio_postgres::Client, String),
    Sqlite(Mutex<rusqlite::Connection>),
}

impl Effects {
    async fn record(&self, key: &str, worker: &str) -> Result<(), String> {
        match self {
            Effects::Postgres(client, schema) => client
                .execute(
                    &format!("INSERT INTO {schema}.crash_effects (key, worker) VALUES ($1, $2)"),
                    &[&key, &worker],
                )
                .await
                .map(drop)
                .map_err(|error| error.to_string()),
            Effects::Sqlite(connection) => connection
                .lock()
                .unwrap()
                .execute(
                    "INSERT INTO crash_effects (key, worker) VALUES (?1, ?2)",
                    rusqlite::params![key, worker],
                )
                .map(drop)
                .map_err(|error| error.to_string()),
        }
    }

    /// How many operations the store holds as finished (read straight from its table).
    async fn finished(&self) -> Result<u32, String> {
        let query = "SELECT count(*) FROM {ledger} WHERE state IN ('succeeded', 'failed')";
        let count: i64 = match self {
            Effects::Postgres(client, schema) => client
                .query_one(
                    &query.replace("{ledger}", &format!("{schema}.tool_contract_ledger")),
                    &[],
                )
                .await
                .map(|row| row.get(0))
                .map_err(|error| error.to_string())?,
            Effects::Sqlite(connection) => connection
                .lock()
                .unwrap()
                .query_row(
                    &query.replace("{ledger}", "tool_contract_ledger"),
                    [],
                    |row| row.get(0),
                )
                .map_err(|error| error.to_string())?,
        };
        u32::try_from(count).map_err(|error| error.to_string())
    }

    async fn found(&self, key: &str) -> Result<bool, String> {
        match self {
            Effects::Postgres(client, schema) => client
                .query_opt(
                    &format!("SELECT 1 FROM {schema}.crash_effects WHERE key = $1 LIMIT 1"),
                    &[&key],
                )
                .await
                .map(|row| row.is_some())
                .map_err(|error| error.to_string()),
            Effects::Sqlite(connection) => connection
                .lock()
                .unwrap()
                .query_row(
                    "SELECT count(*) FROM crash_effects WHERE key = ?1",
                    [key],
                    |row| row.get::<_, i64>(0),
                )
                .map(|count| count > 0)
                .map_err(|error| error.to_string()),
        }
    }
}

fn transferred(op: u32) -> RawResult {
    RawResult::new(
        format!("{{\"op\":{op}}}"),
        RawProvenance::new("bank-v1", "2026-12-01T00:00:00Z"),
    )
}

const OPTIONS: ToolOptions = ToolOptions::DEFAULT
    .with_timeout(Duration::from_secs(2))
    .with_retry(
        RetryPolicy::NEVER
            .with_base(Duration::from_millis(10))
            .with_cap(Duration::from_millis(10))
            .with_max_total_wait(Duration::from_millis(0)),
    );

async fn execute(
    effects: &Effects,
    worker: &str,
    op: u32,
    key: &str,
) -> Result<RawResult, ToolFailure> {
    effects
        .record(key, worker)
        .await
        .map_err(|error| ToolFailure::new(FailureKind::NotSent, error))?;
    // Work after the effect: a kill here leaves a write that happened but is not recorded.
    let pause = rand::rng().random_range(0..15);
    tokio::time::sleep(Duration::from_millis(pause)).await;
    Ok(transferred(op))
}

fn call(index: u32, approval: bool) -> CallContext {
    let name = if approval {
        "approved_transfer"
    } else {
        "transfer"
    };
    let call = ToolCall {
        api: Api::OpenAiResponses,
        adapter_revision: tool_contract::providers::openai::ADAPTER
            .revision
            .to_owned(),
        response_id: None,
        call_id: format!("call-{index}"),
        correlation: Correlation::Id,
        name: name.to_owned(),
        arguments: format!("{{\"op\":{index}}}").into_bytes(),
    };
    let operation = format!("op-{index}");
    CallContext::new(call, operation.clone()).with_idempotency_key(operation)
}

/// Operations needing approval: every fifth.
fn needs_approval(index: u32) -> bool {
    index.is_multiple_of(5)
}

/// Approves every pending approval this worker did not ask for; how many.
async fn approve_others(dispatcher: &Dispatcher, asked: &HashSet<String>, worker: &str) -> u32 {
    let mut approvals = 0;
    for pending in dispatcher.pending_approvals().await.unwrap_or_default() {
        if asked.contains(&pending.approval_id) {
            continue;
        }
        let expires = dispatcher.now() + Duration::from_secs(600);
        if dispatcher
            .approve(
                &pending.approval_id,
                &pending.preview_sha256,
                worker,
                expires,
            )
            .await
            .is_ok()
        {
            approvals += 1;
        }
    }
    approvals
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, store, schema, index, workers, operations, audit_dir] = &args[..] else {
        eprintln!("usage: crash_worker STORE SCHEMA INDEX WORKERS OPERATIONS AUDIT_DIR");
        std::process::exit(2);
    };
    let (index, workers, operations): (u32, u32, u32) = (
        index.parse().unwrap(),
        workers.parse().unwrap(),
        operations.parse().unwrap(),
    );
    let worker = format!("worker-{index}-{}", std::process::id());
    let audit_key = SecretKey::new([0x5a; 32]).unwrap();
    let (control, sink, effects): (Arc<dyn ControlStore>, Arc<dyn AuditSink>, Effects) =
        if let Some(path) = store.strip_prefix("sqlite:") {
            let control = SqliteStore::open(path).expect("the store file opens");
            let connection = rusqlite::Connection::open(path).unwrap();
            connection.busy_timeout(Duration::from_secs(30)).unwrap();
            connection
                .pragma_update(None, "synchronous", "FULL")
                .unwrap();
            let audit = format!("{audit_dir}/{worker}.jsonl");
            let sink =
                JsonLinesAuditLog::open(&audit, audit_key.clone()).expect("the audit log opens");
            (
                Arc::new(control),
                Arc::new(sink),
                Effects::Sqlite(Mutex::new(connection)),
            )
        } else {
            let options = PostgresOptions::default().with_schema(schema.clone());
            let control = PostgresStore::connect_with(store, options)
                .await
                .expect("the database is reachable");
            let (client, connection) = tokio_postgres::connect(store, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(connection);
            let sink = PostgresAuditLog::new(&control, audit_key.clone());
            (
                Arc::new(control),
                Arc::new(sink),
                Effects::Postgres(client, schema.clone()),
            )
        };
    let effects = Arc::new(effects);
    let registry = tool_contract::registry![Transfer, ApprovedTransfer, FindTransfer]
        .into_builder()
        .all_adapters()
        .build();
    let (e1, e2, e3) = (effects.clone(), effects.clone(), effects.clone());
    let (w1, w2) = (worker.clone(), worker.clone());
    let dispatcher = Dispatcher::builder(
        registry,
        AuditKeys::new(SecretKey::new([0x33; 32]).unwrap()),
    )
    .store(control)
    .audit_sink(sink)
    .lease_grace(Duration::from_millis(500))
    .write_handler(
        move |input: Transfer, cx: HandlerContext| {
            let (effects, worker) = (e1.clone(), w1.clone());
            async move { execute(&effects, &worker, input.op, cx.idempotency_key()).await }
        },
        |write: &Transfer| FindTransfer { op: write.op },
        OPTIONS,
    )
    .write_handler(
        move |input: ApprovedTransfer, cx: HandlerContext| {
            let (effects, worker) = (e2.clone(), w2.clone());
            async move { execute(&effects, &worker, input.op, cx.idempotency_key()).await }
        },
        |write: &ApprovedTransfer| FindTransfer { op: write.op },
        OPTIONS,
    )
    .handler_with(
        move |input: FindTransfer, cx: HandlerContext| {
            let effects = e3.clone();
            async move {
                match effects.found(cx.idempotency_key()).await {
                    Ok(true) => Ok(transferred(input.op)),
                    Ok(false) => Err(ToolFailure::new(FailureKind::NotFound, "no such transfer")),
                    Err(error) => Err(ToolFailure::new(FailureKind::NotSent, error)),
                }
            }
        },
        OPTIONS,
    )
    .build()
    .expect("every tool has its handler");
    let principal = Principal::new("acme", "crash-test");
    // Each operation is this worker's and the next one's: every key is dispatched twice.
    let mut open: Vec<u32> = (0..operations)
        .filter(|op| op % workers == index || (op + 1) % workers == index)
        .collect();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(u64::from(std::process::id()));
    let mut asked: HashSet<String> = HashSet::new();
    let (mut dispatches, mut approvals) = (0u32, 0u32);
    while !open.is_empty() {
        let at = rng.random_range(0..open.len());
        let op = open[at];
        let dispatch = dispatcher
            .dispatch(
                &principal,
                &call(op, needs_approval(op)),
                &Task::unlimited(),
            )
            .await;
        dispatches += 1;
        if let Some(pending) = &dispatch.pending_approval {
            asked.insert(pending.approval_id.clone());
        }
        let settled = match dispatch.result.model.error().map(|error| error.code()) {
            None => dispatch.result.model.status() == Status::Succeeded,
            // Settled as never having happened: a terminal record, replayed as this failure.
            Some(ErrorCode::ToolError) => dispatch
                .write_state
                .is_some_and(|state| state.is_terminal()),
            Some(_) => false,
        };
        if settled {
            open.swap_remove(at);
        }
        if dispatches.is_multiple_of(4) {
            approvals += approve_others(&dispatcher, &asked, &worker).await;
        }
        if !settled {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
    // Its own operations settled, the worker stays the person for the others' approvals
    // until every operation is finished: an approval is never left to the workers that
    // asked for it.
    while effects.finished().await.unwrap_or(0) < operations {
        approvals += approve_others(&dispatcher, &asked, &worker).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!("{worker}: {dispatches} dispatches, {approvals} approvals given");
}
