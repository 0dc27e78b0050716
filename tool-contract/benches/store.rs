//! One write's store steps (the look with the claim, then the outcome record) at 1, 4 and 16
//! concurrent clients, on the memory store and on PostgreSQL, in the same run beside
//! `pgbench` running, per write, two single-statement transactions: a plain insert and a
//! plain fenced update (the database's floor for two state changes), and the store's own
//! two statements (what its advisory lock and answer cost above the floor).
//!
//! PostgreSQL parts need `TOOL_CONTRACT_POSTGRES_URL` (and `pgbench` on the path for the
//! floor); without them they say so and are left out. After criterion's groups, one line per
//! client count gives writes per second and the p99 of one write, measured over a fixed
//! time, for the store and for pgbench.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use tool_contract::control::{
    Advance, Claim, Claimed, IfAbsent, Lease, PostgresOptions, PostgresStore,
};
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
    assert_eq!(
        store.claim_if_absent(&claim).await.unwrap(),
        IfAbsent::Claimed(Claimed::Fresh)
    );
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
        for (name, script) in [("floor", FLOOR), ("same statements", SAME_STATEMENTS)] {
            for clients in CLIENTS {
                match pgbench(&url, script, clients, 5) {
                    Some((tps, p99_ms)) => println!(
                        "store_write pgbench ({name}): {clients} clients, {tps:.0} writes/s, \
                         p99 {p99_ms:.2} ms"
                    ),
                    None => eprintln!("store bench: pgbench did not run; its {name} is left out"),
                }
            }
        }
    }
}

/// Two single-statement transactions per write: the insert of a fresh record, and the update
/// of its outcome fenced by state and lease. `{ledger}` is filled in.
const FLOOR: &str = "\\set n random(1, 9000000000000000)
INSERT INTO {ledger} (key, request_sha256, tool, state, owner, lease_generation, lease_until_ms, expires_at_ms, result, call) VALUES ('pgbench:' || :n, repeat('r', 64), 'note_order', 'executing', 'pgbench', :n, 1787392860000, 1787396400000, NULL, NULL) ON CONFLICT (key) DO NOTHING;
UPDATE {ledger} SET state = 'succeeded', result = repeat('s', 64), expires_at_ms = 1787396400001 WHERE key = 'pgbench:' || :n AND state = 'executing' AND owner = 'pgbench' AND lease_generation = :n;
";

/// The store's own two statements (`claim_if_absent`, then `advance`), as it sends them.
const SAME_STATEMENTS: &str = "\\set n random(1, 9000000000000000)
INSERT INTO {ledger} (key, request_sha256, tool, state, owner, lease_generation, lease_until_ms, expires_at_ms, result, call) VALUES ('pgbench:' || :n, repeat('r', 64), 'note_order', 'executing', 'pgbench', :n, 1787392860000, 1787396400000, NULL, NULL) ON CONFLICT (key) DO NOTHING RETURNING 1;
UPDATE {ledger} AS l SET state = 'succeeded', result = COALESCE(repeat('s', 64), l.result), expires_at_ms = 1787396400001 WHERE l.key = 'pgbench:' || :n AND l.state = 'executing' AND (NOT TRUE OR (l.owner = 'pgbench' AND l.lease_generation = :n)) RETURNING l.key, l.request_sha256, l.tool, l.state, l.owner, l.lease_generation, l.lease_until_ms, l.expires_at_ms, l.result, l.call;
";

/// pgbench running `script` (with the bench schema's ledger filled in): its writes
/// per second and the p99 of one write in milliseconds (from its per-transaction log), or
/// `None` if it could not run.
fn pgbench(url: &str, script: &str, clients: usize, seconds: u64) -> Option<(f64, f64)> {
    let script = script
        .replace("{ledger}", &format!("{SCHEMA}.tool_contract_ledger"))
        .replace(
            "{lock}",
            &format!("'{SCHEMA}' || chr(10) || 'pgbench:' || :n"),
        );
    let directory = std::env::temp_dir().join(format!(
        "tool-contract-pgbench-{}-{clients}",
        std::process::id()
    ));
    std::fs::create_dir_all(&directory).ok()?;
    let path = directory.join("write.sql");
    std::fs::write(&path, script).ok()?;
    let threads = clients.min(2).to_string();
    let output = std::process::Command::new("pgbench")
        .current_dir(&directory)
        .args([
            "-n",
            "-M",
            "extended",
            "-l",
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
    let text = String::from_utf8_lossy(&output.stdout);
    let tps = text
        .lines()
        .find(|line| line.starts_with("tps = "))?
        .trim_start_matches("tps = ")
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    // Each log line: client, transaction number, latency in microseconds, …
    let mut latencies: Vec<u64> = Vec::new();
    for entry in std::fs::read_dir(&directory).ok()?.flatten() {
        if entry
            .file_name()
            .to_string_lossy()
            .starts_with("pgbench_log")
        {
            let log = std::fs::read_to_string(entry.path()).ok()?;
            latencies.extend(
                log.lines()
                    .filter_map(|line| line.split_whitespace().nth(2)?.parse::<u64>().ok()),
            );
        }
    }
    let _ = std::fs::remove_dir_all(&directory);
    latencies.sort_unstable();
    let p99 = *latencies.get((latencies.len() * 99 / 100).min(latencies.len().checked_sub(1)?))?;
    Some((tps, p99 as f64 / 1e3))
}

criterion_group!(benches, bench_store);
criterion_main!(benches);
