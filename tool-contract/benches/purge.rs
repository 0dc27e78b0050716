//! The purge of a million expired ledger records on PostgreSQL, timed while writes flow
//! (`cargo bench -p tool-contract --features postgres --bench purge`): how long the purge
//! takes, and what the writes meanwhile cost beside the same writes with nothing purged.
//! Needs `TOOL_CONTRACT_POSTGRES_URL`; the schema `tool_contract_purge_bench` is made anew.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::ledger_writes::{T0, one_write};
use tool_contract::control::{ControlStore, PostgresOptions, PostgresStore};

const SCHEMA: &str = "tool_contract_purge_bench";
const EXPIRED: u64 = 1_000_000;
const CLIENTS: usize = 8;

/// Writes from `CLIENTS` clients until `stop`: each write's time.
async fn writing(store: Arc<dyn ControlStore>, stop: Arc<AtomicBool>) -> Vec<Duration> {
    let mut clients = tokio::task::JoinSet::new();
    for client in 0..CLIENTS {
        let (store, stop) = (Arc::clone(&store), Arc::clone(&stop));
        clients.spawn(async move {
            let owner = format!("client-{client}");
            let mut times = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let began = Instant::now();
                one_write(store.as_ref(), &owner).await;
                times.push(began.elapsed());
            }
            times
        });
    }
    let mut times = Vec::new();
    while let Some(client) = clients.join_next().await {
        times.extend(client.expect("a writer"));
    }
    times
}

/// Writes for `seconds`, and what they cost: writes a second, p50, p99.
async fn writes_for(
    store: &Arc<dyn ControlStore>,
    while_running: impl Future<Output = ()>,
) -> (usize, Duration, Duration, Duration) {
    let stop = Arc::new(AtomicBool::new(false));
    let writers = tokio::spawn(writing(Arc::clone(store), Arc::clone(&stop)));
    let began = Instant::now();
    while_running.await;
    let elapsed = began.elapsed();
    stop.store(true, Ordering::Relaxed);
    let mut times = writers.await.expect("the writers");
    times.sort_unstable();
    let at = |share: f64| {
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let index = ((times.len() as f64 * share) as usize).min(times.len().saturating_sub(1));
        times.get(index).copied().unwrap_or_default()
    };
    (times.len(), elapsed, at(0.5), at(0.99))
}

fn main() {
    let Ok(url) = std::env::var("TOOL_CONTRACT_POSTGRES_URL") else {
        eprintln!("purge bench: TOOL_CONTRACT_POSTGRES_URL is not set; nothing measured");
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        common::postgres::execute(&url, &format!("DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")).await;
        let options = PostgresOptions::default()
            .with_schema(SCHEMA)
            .with_pool_size(u32::try_from(CLIENTS).unwrap_or(8) + 2);
        let store: Arc<dyn ControlStore> = Arc::new(
            PostgresStore::connect_with(&url, options)
                .await
                .expect("the bench database is reachable"),
        );
        // A million finished writes whose retention ended long ago, as the ledger keeps them.
        let filled = Instant::now();
        common::postgres::execute(
            &url,
            &format!(
                "INSERT INTO {SCHEMA}.tool_contract_ledger (key, request_sha256, tool, state, \
                 owner, lease_generation, lease_until_ms, expires_at_ms, result, call, kept) \
                 SELECT 'old:' || g, repeat('r', 64), 'note_order', 'succeeded', 'bench', g, 0, \
                 1, repeat('s', 64) || E'\\n{{\"status\":\"succeeded\"}}', NULL, false \
                 FROM generate_series(1, {EXPIRED}) AS g; \
                 ANALYZE {SCHEMA}.tool_contract_ledger"
            ),
        )
        .await;
        eprintln!("purge bench: {EXPIRED} expired records written in {:?}", filled.elapsed());

        let (alone, alone_for, alone_p50, alone_p99) =
            writes_for(&store, tokio::time::sleep(Duration::from_secs(5))).await;
        let mut purged = None;
        let (during, purge_took, during_p50, during_p99) = writes_for(&store, async {
            purged = Some(store.purge_expired(T0).await.expect("the purge"));
        })
        .await;
        let purged = purged.expect("the purge ran");
        assert_eq!(purged.records, EXPIRED, "every expired record, and no written one");
        #[allow(clippy::cast_precision_loss)]
        let rate = |writes: usize, took: Duration| writes as f64 / took.as_secs_f64();
        eprintln!(
            "purge: {} records in {purge_took:.2?}; writes meanwhile {:.0}/s, p50 {during_p50:.2?}, \
             p99 {during_p99:.2?} ({CLIENTS} clients; alone {:.0}/s, p50 {alone_p50:.2?}, p99 \
             {alone_p99:.2?})",
            purged.records,
            rate(during, purge_took),
            rate(alone, alone_for),
        );
        common::postgres::execute(&url, &format!("DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")).await;
    });
}
