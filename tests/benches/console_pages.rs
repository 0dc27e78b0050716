//! The console's pages over a PostgreSQL audit log of a million records: the log is filled
//! through the dispatcher (reads, each appended as it runs, many at once so the log
//! group-commits), then an auditor signed in with a passkey reads each page over loopback,
//! timed from request to last byte (twenty times, or as many as fit in ten seconds). The
//! goal is 100 ms a page; a page over that fails the run. Filling takes about a second per
//! thousand records here.
//!
//! ```sh
//! TOOL_CONTRACT_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test \
//!     cargo bench -p tool-contract-tests --bench console_pages [-- RECORDS]
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use tool_contract::SecretKey;
use tool_contract::console::{Console, ConsoleOptions};
use tool_contract::control::{ControlStore, MemoryStore, PostgresAuditLog};
use tool_contract::results::KeySet;
use tool_contract_tests::console::{
    Visit, invitation, put_people, receipt_signer, relying_party, serve,
};
use tool_contract_tests::passkey::SoftAuthenticator;
use tool_contract_tests::postgres::Schema;
use tool_contract_tests::tracker::{Remote, audit_key, builder, dispatch_read};

/// Records in the log unless the command line says otherwise.
const RECORDS: usize = 1_000_000;
/// Reads in flight while the log fills.
const WRITERS: usize = 64;
/// Times each page is read, at most.
const READS: usize = 20;
/// How long a page is read again, once it was read once.
const SPENT: Duration = Duration::from_secs(10);
/// The goal: each page within this.
const GOAL: Duration = Duration::from_millis(100);

fn main() {
    let records: usize = std::env::args()
        .skip(1)
        .find_map(|argument| argument.parse().ok())
        .unwrap_or(RECORDS);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(run(records));
}

async fn run(records: usize) {
    let schema = Schema::new("console_pages")
        .expect("TOOL_CONTRACT_POSTGRES_URL names the PostgreSQL server this bench fills");
    let postgres = schema.store().await;
    let log = Arc::new(
        PostgresAuditLog::new(&postgres, audit_key()).sign_tree_heads(receipt_signer(), 1_000),
    );
    let store: Arc<dyn ControlStore> = Arc::new(MemoryStore::new());
    let dispatcher = Arc::new(
        builder(&Remote::new())
            .store(store)
            .audit_sink(log.clone())
            .relying_party(relying_party())
            .approval_receipts(receipt_signer())
            .build()
            .expect("the desk builds"),
    );

    let started = Instant::now();
    let writers: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let dispatcher = dispatcher.clone();
            tokio::spawn(async move {
                for index in (writer..records).step_by(WRITERS) {
                    dispatch_read(&dispatcher, index).await;
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.expect("a writer");
    }
    let filled = started.elapsed();
    println!(
        "filled: {records} records in {:.1} s ({:.0} a second)",
        filled.as_secs_f64(),
        records as f64 / filled.as_secs_f64()
    );

    put_people(&dispatcher).await;
    let published = KeySet::new([receipt_signer().published_key()]).expect("one key");
    let console = Console::new(
        dispatcher.clone(),
        SecretKey::new([0x33; 32]).expect("a key"),
        ConsoleOptions::new(tool_contract_tests::passkey::ORIGIN, "/console"),
    )
    .expect("the console sets up")
    .with_audit_log(log.clone(), audit_key(), published);
    let mut dee = Visit::new(&serve(&console).await);
    let mut key = SoftAuthenticator::new();
    let enrolled = dee
        .enrol(&invitation(&console, "aud-dee").await, &mut key)
        .await;
    assert_eq!(enrolled.status, 200, "{}", enrolled.text);

    let mut over = Vec::new();
    for page in ["/audit", "/overview", "/receipts"] {
        let mut took = Vec::with_capacity(READS);
        let began = Instant::now();
        // A page far over the goal is read fewer times: at least once, then for 10 s.
        while took.len() < READS && (took.is_empty() || began.elapsed() < SPENT) {
            let asked = Instant::now();
            let answer = dee.get(page).await;
            took.push(asked.elapsed());
            assert_eq!(answer.status, 200, "{page}: {}", answer.text);
            assert!(!answer.text.contains("broken"), "{page}: {}", answer.text);
        }
        took.sort_unstable();
        let (median, slowest) = (took[took.len() / 2], took[took.len() - 1]);
        println!(
            "{page}: median {:.1} ms, slowest {:.1} ms of {}",
            median.as_secs_f64() * 1e3,
            slowest.as_secs_f64() * 1e3,
            took.len()
        );
        if slowest > GOAL {
            over.push(page);
        }
    }
    println!(
        "console: pages over a PostgreSQL log of {records} records, goal {} ms: {}",
        GOAL.as_millis(),
        if over.is_empty() {
            "met".to_owned()
        } else {
            format!("over on {over:?}")
        }
    );
    assert!(over.is_empty(), "pages over the goal: {over:?}");
}
