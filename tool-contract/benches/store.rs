//! One write's store round trip (the ledger look, the claim, the outcome record) at 1, 4 and
//! 16 concurrent clients, on the memory store and on PostgreSQL, beside `pgbench` running the
//! same SQL statements (the database's own floor), in the same run.
//!
//! PostgreSQL parts need `TOOL_CONTRACT_POSTGRES_URL` (and `pgbench` on the path for the
//! floor); without them they say so and are left out. After criterion's groups, one line per
//! client count gives writes per second and the p99 of one write, measured over a fixed
//! time, for the store and for pgbench.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use tool_contract::control::{Advance, Claim, Claimed, Lease, PostgresOptions, PostgresStore};
use tool_contract::control::{ControlStore, MemoryStore, RowSeal, WriteEvent, WriteState};
use tool_contract::{AuditKeys, SecretKey};

const CLIENTS: [usize; 3] = [1, 4, 16];
const SCHEMA: &str = "tool_contract_bench";
const T0: u64 = 1_787_392_800_000;

static KEYS: AtomicU64 = AtomicU64::new(0);

/// The store's steps of one write under a fresh key, as the dispatcher takes them.
async fn one_write(store: &dyn ControlStore, owner: &str) {
    let n = KEYS.fetch_add(1, Ordering::Relaxed);
    let key = format!("bench:{n}");
    let lease = Lease {
        owner: owner.to_owned(),
        generation: n,
    };
    assert!(store.get(&key).await.unwrap().is_none());
    let claim = Claim {
        key: key.clone(),
        request_sha256: "r".repeat(64),
        tool: "note_order".to_owned(),
        lease: lease.clone(),
        now_ms: T0,
        lease_ms: 60_000,
        retention_ms: 3_600_000,
        redeem: None,
        seal: RowSeal::new(&AuditKeys::new(SecretKey::from([7; 32]))),
        call: None,
    };
    assert_eq!(store.claim(&claim).await.unwrap(), Claimed::Fresh);
    let step = Advance {
        key,
        lease,
        from: WriteState::Executing,
        event: WriteEvent::Commit,
        result: Some("s".repeat(64) + "\n{\"status\":\"succeeded\"}"),
        now_ms: T0 + 1,
        retention_ms: 3_600_000,
    };
    store.advance(&step).await.unwrap();
}

/// `writes` writes spread over `clients` tasks; the time they took.
async fn concurrent(store: Arc<dyn ControlStore>, clients: usize, writes: u64) -> Duration {
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for client in 0..clients {
        let store = store.clone();
        let share = writes / clients as u64 + u64::from((client as u64) < writes % clients as u64);
        tasks.spawn(async move {
            let owner = format!("bench-{client}");
            for _ in 0..share {
                one_write(&*store, &owner).await;
            }
        });
    }
    tasks.join_all().await;
    started.elapsed()
}

/// Writes per second and the p99 of one write, over `seconds`.
async fn throughput(store: Arc<dyn ControlStore>, clients: usize, seconds: u64) -> (f64, Duration) {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for client in 0..clients {
        let store = store.clone();
        tasks.spawn(async move {
            let owner = format!("bench-{client}");
            let mut latencies = Vec::new();
            while Instant::now() < deadline {
                let one = Instant::now();
                one_write(&*store, &owner).await;
                latencies.push(one.elapsed());
            }
            latencies
        });
    }
    let mut latencies: Vec<Duration> = tasks.join_all().await.into_iter().flatten().collect();
    let elapsed = started.elapsed();
    latencies.sort();
    let p99 = latencies[(latencies.len() * 99 / 100).min(latencies.len() - 1)];
    (latencies.len() as f64 / elapsed.as_secs_f64(), p99)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn postgres(runtime: &tokio::runtime::Runtime) -> Option<(String, Arc<dyn ControlStore>)> {
    let Ok(url) = std::env::var("TOOL_CONTRACT_POSTGRES_URL") else {
        eprintln!("store bench: TOOL_CONTRACT_POSTGRES_URL is not set; PostgreSQL left out");
        return None;
    };
    let options = PostgresOptions {
        schema: SCHEMA.to_owned(),
        pool_size: 16,
        ..PostgresOptions::default()
    };
    let store = runtime
        .block_on(PostgresStore::connect_with(&url, options))
        .expect("the bench database is reachable");
    Some((url, Arc::new(store)))
}

fn bench_store(c: &mut Criterion) {
    let runtime = runtime();
    let mut stores: Vec<(&str, Arc<dyn ControlStore>)> =
        vec![("memory", Arc::new(MemoryStore::new()))];
    let postgres = postgres(&runtime);
    if let Some((_, store)) = &postgres {
        stores.push(("postgres", store.clone()));
    }
    let mut group = c.benchmark_group("store_write");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(4));
    for (name, store) in &stores {
        for clients in CLIENTS {
            group.bench_function(format!("{name}/{clients}_clients"), |b| {
                b.iter_custom(|writes| runtime.block_on(concurrent(store.clone(), clients, writes)))
            });
        }
    }
    group.finish();
    for (name, store) in &stores {
        for clients in CLIENTS {
            let (per_second, p99) = runtime.block_on(throughput(store.clone(), clients, 3));
            println!(
                "store_write {name}: {clients} clients, {per_second:.0} writes/s, p99 {:.2} ms",
                p99.as_secs_f64() * 1e3
            );
        }
    }
    if let Some((url, _)) = postgres {
        for clients in CLIENTS {
            match pgbench(&url, clients, 5) {
                Some(tps) => println!(
                    "store_write pgbench (same statements): {clients} clients, {tps:.0} writes/s"
                ),
                None => eprintln!("store bench: pgbench did not run; its floor is left out"),
            }
        }
    }
}

/// pgbench with a script of the statements the store sends for one write; its writes per
/// second, or `None` if it could not run.
fn pgbench(url: &str, clients: usize, seconds: u64) -> Option<f64> {
    let ledger = format!("{SCHEMA}.tool_contract_ledger");
    let script = format!(
        "\\set n random(1, 9000000000000000)
SELECT key FROM {ledger} WHERE key = 'pgbench:' || :n;
BEGIN;
SELECT pg_advisory_xact_lock(hashtextextended('{SCHEMA}' || chr(10) || 'pgbench:' || :n, 0));
SELECT key, request_sha256, tool, state, owner, lease_generation, lease_until_ms, expires_at_ms, result FROM {ledger} WHERE key = 'pgbench:' || :n FOR UPDATE;
INSERT INTO {ledger} (key, request_sha256, tool, state, owner, lease_generation, lease_until_ms, expires_at_ms, result) VALUES ('pgbench:' || :n, repeat('r', 64), 'note_order', 'executing', 'pgbench', :n, 1787392860000, 1787396400000, NULL) ON CONFLICT (key) DO NOTHING;
COMMIT;
BEGIN;
SELECT pg_advisory_xact_lock(hashtextextended('{SCHEMA}' || chr(10) || 'pgbench:' || :n, 0));
SELECT key, request_sha256, tool, state, owner, lease_generation, lease_until_ms, expires_at_ms, result FROM {ledger} WHERE key = 'pgbench:' || :n FOR UPDATE;
UPDATE {ledger} SET request_sha256 = repeat('r', 64), tool = 'note_order', state = 'succeeded', owner = 'pgbench', lease_generation = :n, lease_until_ms = 1787392860000, expires_at_ms = 1787396400001, result = repeat('s', 64) WHERE key = 'pgbench:' || :n AND state = 'executing' AND owner = 'pgbench' AND lease_generation = :n;
COMMIT;
"
    );
    let path =
        std::env::temp_dir().join(format!("tool-contract-pgbench-{}.sql", std::process::id()));
    std::fs::write(&path, script).ok()?;
    let threads = clients.min(2).to_string();
    let output = std::process::Command::new("pgbench")
        .args([
            "-n",
            "-M",
            "prepared",
            "-c",
            &clients.to_string(),
            "-j",
            &threads,
            "-T",
        ])
        .arg(seconds.to_string())
        .arg("-f")
        .arg(&path)
        .arg(url)
        .output()
        .ok()?;
    let _ = std::fs::remove_file(&path);
    let text = String::from_utf8_lossy(&output.stdout);
    let line = text.lines().find(|line| line.starts_with("tps = "))?;
    line.trim_start_matches("tps = ")
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

criterion_group!(benches, bench_store);
criterion_main!(benches);
