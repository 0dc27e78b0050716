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
//!
//! Then an approved write's steps, each grant made beforehand and left out of the time:
//! approved through the store that redeems it (the claim that redeems the store's own grant,
//! the outcome) and, on PostgreSQL, through another replica (the look with the approval
//! stage first). Beside them `pgbench` runs per write the floor of each: an insert that
//! updates a second table in the same statement and the fenced update, with the look's read
//! of two rows before them for the second.
//!
//! Each pgbench floor runs twice: with its statements prepared once per connection
//! (`-M prepared`), as the store prepares its common path's statements, and with each
//! statement parsed and planned every time it is sent (`-M extended`). The floors of each
//! client count run right after the store's measurement at that count: the tables grow over
//! the run, and both meet them as they are.

mod common;

use common::ledger_writes::{KEYS, T0, at, one_write, record_outcome, seal};
use common::pgbench::{
    APPROVED_FLOOR, APPROVED_HERE_FLOOR, FLOOR, SAME_STATEMENTS, granted_rows, pgbench,
};

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use tool_contract::Effect;
use tool_contract::control::{ApprovalAsk, ApprovalCheck, ApproveStep, PendingApproval, Preview};
use tool_contract::control::{Claim, Claimed, Lease, PostgresOptions, PostgresStore};
use tool_contract::control::{ControlStore, MemoryStore};
use tool_contract::results::ApprovalBasis;

const CLIENTS: [usize; 3] = [1, 4, 16];
const SCHEMA: &str = "tool_contract_bench";

/// An approved write made ready: its stage's ask, and the claim that will redeem its grant.
struct Approved {
    ask: ApprovalAsk,
    claim: Claim,
}

/// A write under a fresh key, asked for approval and granted through `approver`: what the
/// timed part needs.
async fn approved(approver: &dyn ControlStore, owner: &str) -> Approved {
    let n = KEYS.fetch_add(1, Ordering::Relaxed);
    let key = format!("bench-approved:{n}");
    let approval_id = format!("apr_{n}");
    let preview = Preview {
        tool: "note_order".to_owned(),
        description: "Note an order.".to_owned(),
        effect: Effect::NonIdempotentWrite,
        arguments: serde_json::json!({ "order_ref": format!("ORDER-{n}") }),
        earlier_run: None,
        required_by: Vec::new(),
    };
    let preview_sha256 = preview.sha256();
    let ask = ApprovalAsk {
        ledger_key: key.clone(),
        request_sha256: "r".repeat(64),
        tool: "note_order".to_owned(),
        principal_ref: "p".repeat(64),
        operation_id: format!("op-{n}"),
        now: at(T0),
        fresh: PendingApproval {
            approval_id: approval_id.clone(),
            request_sha256: "r".repeat(64),
            preview,
            preview_sha256: preview_sha256.clone(),
            principal_ref: "p".repeat(64),
            tenant: "acme".to_owned(),
            operation_id: format!("op-{n}"),
            ledger_key: key.clone(),
            approvals_required: 1,
            signatures_required: false,
            approvals: Vec::new(),
            by_another: false,
            caller_person_ref: String::new(),
        },
        retention_ms: 3_600_000,
        // Every ask is the same principal's: no bound stops the bench's thousands.
        pending_limit: usize::MAX,
        seal: seal(),
    };
    approver.check_approval(&ask).await.unwrap();
    let step = ApproveStep {
        approval_id: approval_id.clone(),
        preview_sha256,
        approver: "supervisor".to_owned(),
        expires_at: at(T0 + 3_600_000),
        now: at(T0),
        edited_arguments: None,
        approvals_required: 0,
        signatures_required: false,
        required_by: Vec::new(),
        basis: ApprovalBasis::Service,
        person_ref: None,
        seal: seal(),
    };
    assert!(approver.approve(&step).await.unwrap().is_ok());
    let claim = Claim {
        key,
        request_sha256: "r".repeat(64),
        tool: "note_order".to_owned(),
        lease: Lease {
            owner: owner.to_owned(),
            generation: n,
        },
        now_ms: T0,
        lease_ms: 60_000,
        retention_ms: 3_600_000,
        kept: false,
        redeem: Some(approval_id),
        seal: seal(),
        call: None,
    };
    Approved { ask, claim }
}

/// The store's steps of one approved write, as the dispatcher takes them: the grant from
/// the store's hint, else from the look.
async fn one_approved_write(store: &dyn ControlStore, write: &Approved) {
    let grant = match store.approval_hint(&write.ask) {
        Some(grant) => grant,
        None => {
            let look = store.look_for_approval(&write.ask).await.unwrap();
            let Some(ApprovalCheck::Proceed(grant)) = look.check else {
                panic!("the look answers with the grant, not {:?}", look.check);
            };
            grant
        }
    };
    assert_eq!(
        store.claim_redeeming(&write.claim, &grant).await.unwrap(),
        Claimed::Fresh
    );
    record_outcome(store, write.claim.key.clone(), write.claim.lease.clone()).await;
}

/// Approved writes per second and the p99 of one: `rounds` rounds of `per_client` writes by
/// each of `clients` tasks, each round's grants made through `approver` before its clock
/// starts (a round's grants fit in what a store keeps hints for).
async fn approved_throughput(
    store: Arc<dyn ControlStore>,
    approver: &dyn ControlStore,
    clients: usize,
    per_client: usize,
    rounds: usize,
) -> (f64, Duration) {
    let mut timed = Duration::ZERO;
    let mut latencies = Vec::with_capacity(rounds * clients);
    for _ in 0..rounds {
        let mut ready = Vec::with_capacity(clients);
        for client in 0..clients {
            let owner = format!("bench-{client}");
            let mut writes = Vec::with_capacity(per_client);
            for _ in 0..per_client {
                writes.push(approved(approver, &owner).await);
            }
            ready.push(writes);
        }
        let started = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        for writes in ready {
            let store = store.clone();
            tasks.spawn(async move {
                let mut latencies = Vec::with_capacity(writes.len());
                for write in &writes {
                    let one = Instant::now();
                    one_approved_write(&*store, write).await;
                    latencies.push(one.elapsed());
                }
                latencies
            });
        }
        latencies.extend(tasks.join_all().await);
        timed += started.elapsed();
    }
    rate_and_p99(latencies, timed)
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
    rate_and_p99(tasks.join_all().await, started.elapsed())
}

/// Writes per second over `elapsed`, and the p99 of one, from each task's latencies.
fn rate_and_p99(per_task: Vec<Vec<Duration>>, elapsed: Duration) -> (f64, Duration) {
    let mut latencies: Vec<Duration> = per_task.into_iter().flatten().collect();
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

/// A store the bench runs, shared by its client tasks.
type Store = Arc<dyn ControlStore>;

/// The bench's PostgreSQL store, and a second one on the same schema: another replica.
fn postgres(runtime: &tokio::runtime::Runtime) -> Option<(String, Store, Store)> {
    let Ok(url) = std::env::var("TOOL_CONTRACT_POSTGRES_URL") else {
        eprintln!("store bench: TOOL_CONTRACT_POSTGRES_URL is not set; PostgreSQL left out");
        return None;
    };
    // Each run starts from an empty schema: its keys count from 0 again.
    runtime.block_on(common::postgres::execute(
        &url,
        &format!("DROP SCHEMA IF EXISTS {SCHEMA} CASCADE"),
    ));
    let options = PostgresOptions::default()
        .with_schema(SCHEMA)
        .with_pool_size(16);
    let store = runtime
        .block_on(PostgresStore::connect_with(&url, options.clone()))
        .expect("the bench database is reachable");
    let replica = runtime
        .block_on(PostgresStore::connect_with(&url, options))
        .expect("the bench database is reachable");
    Some((url, Arc::new(store), Arc::new(replica)))
}

fn bench_store(c: &mut Criterion) {
    let runtime = runtime();
    let mut stores: Vec<(&str, Arc<dyn ControlStore>)> =
        vec![("memory", Arc::new(MemoryStore::new()))];
    let postgres = postgres(&runtime);
    if let Some((_, store, _)) = &postgres {
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
    // Each measurement of the store is followed at once by its floors at the same client
    // count: the tables grow over the run, and both sides meet them as they are.
    let url = postgres.as_ref().map(|(url, _, _)| url.as_str());
    for (name, store) in &stores {
        for clients in CLIENTS {
            let (per_second, p99) = runtime.block_on(throughput(store.clone(), clients, 3));
            println!(
                "store_write {name}: {clients} clients, {per_second:.0} writes/s, p99 {:.2} ms",
                p99.as_secs_f64() * 1e3
            );
            if let Some(url) = url.filter(|_| *name == "postgres") {
                floors(&runtime, url, "store_write", "floor", FLOOR, clients, false);
                let same = SAME_STATEMENTS;
                floors(
                    &runtime,
                    url,
                    "store_write",
                    "same statements",
                    same,
                    clients,
                    false,
                );
            }
        }
    }
    // Approved through the store that redeems (its hint), and, on PostgreSQL, through
    // another replica (the look first), in rounds of fewer writes than a store keeps hints for.
    let mut approvers: Vec<(&str, &str, Store, Store)> = stores
        .iter()
        .map(|(name, store)| (*name, "approved here", store.clone(), store.clone()))
        .collect();
    if let Some((_, store, replica)) = &postgres {
        approvers.push((
            "postgres",
            "approved elsewhere",
            store.clone(),
            replica.clone(),
        ));
    }
    for (name, approved_by, store, approver) in &approvers {
        for clients in CLIENTS {
            let (per_second, p99) = runtime.block_on(approved_throughput(
                store.clone(),
                &**approver,
                clients,
                960 / clients,
                4,
            ));
            println!(
                "store_approved_write {name} ({approved_by}): {clients} clients, \
                 {per_second:.0} writes/s, p99 {:.2} ms",
                p99.as_secs_f64() * 1e3
            );
            if let Some(url) = url.filter(|_| *name == "postgres") {
                let (floor, script) = if *approved_by == "approved here" {
                    ("floor, two statements", APPROVED_HERE_FLOOR)
                } else {
                    ("floor, three statements", APPROVED_FLOOR)
                };
                let label = "store_approved_write";
                floors(&runtime, url, label, floor, script, clients, true);
            }
        }
    }
}

/// pgbench running `script` at `clients`, prepared and then extended, each run's line
/// printed under `label` and `name`; with `granted`, on granted rows made again before each
/// run, so no run redeems rows another spent.
fn floors(
    runtime: &tokio::runtime::Runtime,
    url: &str,
    label: &str,
    name: &str,
    script: &str,
    clients: usize,
    granted: bool,
) {
    for mode in ["prepared", "extended"] {
        if granted {
            runtime.block_on(common::postgres::execute(url, &granted_rows(SCHEMA)));
        }
        match pgbench(url, SCHEMA, script, mode, clients, 5) {
            Some((tps, p99_ms)) => println!(
                "{label} pgbench ({name}, {mode}): {clients} clients, {tps:.0} writes/s, \
                 p99 {p99_ms:.2} ms"
            ),
            None => eprintln!("store bench: pgbench did not run; its {name} is left out"),
        }
    }
}

criterion_group!(benches, bench_store);
criterion_main!(benches);
