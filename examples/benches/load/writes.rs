//! Writes through the ledger on PostgreSQL, as many callers at once make them: a dispatcher
//! (a worker thread per core) whose store is PostgreSQL and whose audit log is a durable file
//! signing a tree head per sync, as the desk's; 50 clients each dispatching a new write as
//! the last is answered. Beside it, pgbench at 50 clients running the store's own two
//! statements of a write (`SAME_STATEMENTS`). Then approved writes across two replicas: each
//! write asked on one, approved through the other, and run on the first.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tool_contract::control::{JsonLinesAuditLog, PostgresOptions, PostgresStore};
use tool_contract::dispatch::{Dispatcher, Task};
use tool_contract::{CallContext, Status};
use tool_contract_tests::tracker::{self, Remote};

#[path = "../../../tool-contract/benches/common/pgbench.rs"]
mod pgbench;

const SCHEMA: &str = "tool_contract_load";
const CLIENTS: usize = 50;
const LENGTH: Duration = Duration::from_secs(5);

/// The writes' figures.
pub struct Writes {
    pub per_second: f64,
    pub pgbench_per_second: f64,
}

pub fn run() -> Result<Writes, String> {
    let url = std::env::var("TOOL_CONTRACT_POSTGRES_URL")
        .map_err(|_| "TOOL_CONTRACT_POSTGRES_URL is not set: the writes are left out")?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| error.to_string())?;
    psql(&url, &format!("DROP SCHEMA IF EXISTS {SCHEMA} CASCADE"))?;
    // Two replicas' pools and pgbench's 50 connections within PostgreSQL's default 100.
    let options = PostgresOptions::default()
        .with_schema(SCHEMA)
        .with_pool_size(20);
    let (first, second) = runtime.block_on(async {
        let first = PostgresStore::connect_with(&url, options.clone()).await;
        let second = PostgresStore::connect_with(&url, options).await;
        (first, second)
    });
    let first = first.map_err(|error| format!("PostgreSQL: {error}"))?;
    let second = second.map_err(|error| format!("PostgreSQL: {error}"))?;
    let remote = Remote::new();
    let replica = |store: PostgresStore, name: &str| -> Result<Arc<Dispatcher>, String> {
        let path =
            std::env::temp_dir().join(format!("load-audit-{name}-{}.jsonl", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let log = JsonLinesAuditLog::open(&path, tracker::audit_key())
            .and_then(|log| log.sign_tree_heads(tool_contract_tests::console::receipt_signer(), 1))
            .map_err(|error| error.to_string())?;
        tracker::builder(&remote)
            .store(Arc::new(store))
            .audit_sink(Arc::new(log))
            .build()
            .map(Arc::new)
            .map_err(|error| error.to_string())
    };
    let one = replica(first, "one")?;
    let other = replica(second, "other")?;

    let writer = one.clone();
    let mut writes = runtime.block_on(clients(move |client, n| {
        let one = writer.clone();
        async move {
            let write = format!("{client}-{n}");
            let call = tracker::create(&format!("w{write}"), "Load", &write, &write);
            succeeded(&one, &call).await
        }
    }));
    let per_second = writes.per_second();
    println!(
        "load: writes {CLIENTS} clients: {per_second:.0} writes/s, p99 {:.1} ms{}",
        writes.p99_ms(),
        writes.errors()
    );
    let (pgbench_per_second, pgbench_p99) = pgbench::pgbench(
        &url,
        SCHEMA,
        pgbench::SAME_STATEMENTS,
        "prepared",
        CLIENTS,
        LENGTH.as_secs(),
    )
    .ok_or("pgbench did not run: is it on the path?")?;
    println!(
        "load: writes {CLIENTS} clients, pgbench (the store's two statements, prepared): \
         {pgbench_per_second:.0} writes/s, p99 {pgbench_p99:.1} ms"
    );

    let mut approved = runtime.block_on(clients(move |client, n| {
        let (one, other) = (one.clone(), other.clone());
        async move {
            let call = tracker::message(
                &format!("a{client}-{n}"),
                &format!("c{client}-{n}@globex.example"),
            );
            let asked = one
                .dispatch(&tracker::alice(), &call, &Task::unlimited())
                .await;
            let Some(pending) = asked.pending_approval else {
                return Err(format!("not asked: {:?}", asked.result.model.status()));
            };
            other
                .approve_pending(&pending, "alice", Duration::from_secs(3600))
                .await
                .map_err(|error| error.to_string())?;
            succeeded(&one, &call).await
        }
    }));
    println!(
        "load: approved writes {CLIENTS} clients, asked and run on one replica, approved on \
         the other: {:.0} writes/s, p99 {:.1} ms{}",
        approved.per_second(),
        approved.p99_ms(),
        approved.errors()
    );
    Ok(Writes {
        per_second,
        pgbench_per_second,
    })
}

/// Dispatches `call` and checks that it ran.
async fn succeeded(dispatcher: &Dispatcher, call: &CallContext) -> Result<(), String> {
    let dispatch = dispatcher
        .dispatch(&tracker::alice(), call, &Task::unlimited())
        .await;
    if let Some(error) = dispatch.audit_error {
        return Err(format!("audit: {error}"));
    }
    match dispatch.result.model.status() {
        Status::Succeeded => Ok(()),
        other => Err(format!("{other:?}: {:?}", dispatch.result.model.error())),
    }
}

/// What the clients did.
#[derive(Default)]
struct Done {
    latencies: Vec<Duration>,
    failures: Vec<String>,
    elapsed: Duration,
}

impl Done {
    fn per_second(&self) -> f64 {
        self.latencies.len() as f64 / self.elapsed.as_secs_f64()
    }

    fn p99_ms(&mut self) -> f64 {
        self.latencies.sort_unstable();
        let at = (self.latencies.len() * 99 / 100).min(self.latencies.len().saturating_sub(1));
        self.latencies
            .get(at)
            .map_or(f64::NAN, |latency| latency.as_secs_f64() * 1e3)
    }

    fn errors(&self) -> String {
        match self.failures.first() {
            Some(first) => format!("; {} failed, the first: {first}", self.failures.len()),
            None => String::new(),
        }
    }
}

/// [`CLIENTS`] clients, each doing `one(client, n)` for its n-th write, back to back, for
/// [`LENGTH`].
async fn clients<F, W>(one: F) -> Done
where
    F: Fn(usize, u64) -> W + Clone + Send + 'static,
    W: std::future::Future<Output = Result<(), String>> + Send + 'static,
{
    let start = Instant::now();
    let end = start + LENGTH;
    let tasks: Vec<_> = (0..CLIENTS)
        .map(|client| {
            let one = one.clone();
            tokio::spawn(async move {
                let mut done = Done::default();
                let mut n = 0;
                while Instant::now() < end {
                    let sent = Instant::now();
                    match one(client, n).await {
                        Ok(()) => done.latencies.push(sent.elapsed()),
                        Err(failure) => done.failures.push(failure),
                    }
                    n += 1;
                }
                done
            })
        })
        .collect();
    let mut all = Done::default();
    for task in tasks {
        let done = task.await.unwrap_or_default();
        all.latencies.extend(done.latencies);
        all.failures.extend(done.failures);
    }
    all.elapsed = start.elapsed();
    all
}

/// Runs `sql` with `psql` against `url`.
fn psql(url: &str, sql: &str) -> Result<(), String> {
    let output = std::process::Command::new("psql")
        .args(["-q", "-v", "ON_ERROR_STOP=1", "-c", sql, url])
        .output()
        .map_err(|error| format!("psql: {error}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!("psql: {}", String::from_utf8_lossy(&output.stderr)))
    }
}
