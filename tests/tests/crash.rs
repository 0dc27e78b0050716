//! Issue 16, point 5: the crash test across OS processes. Four workers (`crash_worker`)
//! dispatch 2,000 writes, every key twice, every fifth write approved by another worker;
//! their handlers record each execution in an effect table. The driver kills random workers
//! with SIGKILL at random moments (at least 20 times) and starts them again, then checks from
//! the effect table, the store and the audit: every operation executed at most once, every
//! one committed or (unknown, then) reconciled, no approved operation lost, no grant redeemed
//! twice, every audit chain verifies. One line of figures per store.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rand::{RngExt, SeedableRng};
use serde_json::Value;
use tool_contract::SecretKey;
use tool_contract::control::SqliteStore;
use tool_contract::control::{JsonLinesAuditLog, PostgresAuditLog};
use tool_contract_tests::postgres::Schema;

const WORKERS: u32 = 4;
const OPERATIONS: u32 = 2_000;
const KILLS: u32 = 24;
const DEADLINE: Duration = Duration::from_secs(240);

fn audit_key() -> SecretKey {
    SecretKey::new([0x5a; 32]).unwrap()
}

struct Workers {
    args: Vec<String>,
    children: Vec<Child>,
}

impl Workers {
    fn start(store: &str, schema: &str, audit_dir: &Path) -> Workers {
        let args = vec![
            store.to_owned(),
            schema.to_owned(),
            audit_dir.display().to_string(),
        ];
        let mut workers = Workers {
            args,
            children: Vec::new(),
        };
        for index in 0..WORKERS {
            let child = workers.spawn(index);
            workers.children.push(child);
        }
        workers
    }

    fn spawn(&self, index: u32) -> Child {
        Command::new(env!("CARGO_BIN_EXE_crash_worker"))
            .args([
                &self.args[0],
                &self.args[1],
                &index.to_string(),
                &WORKERS.to_string(),
                &OPERATIONS.to_string(),
                &self.args[2],
            ])
            .stdout(Stdio::null())
            .spawn()
            .expect("the worker starts")
    }

    /// SIGKILLs `index` (running or not) and starts it again.
    fn kill_and_restart(&mut self, index: usize) {
        let child = &mut self.children[index];
        let _ = child.kill();
        let _ = child.wait();
        self.children[index] = self.spawn(index as u32);
    }

    /// Waits for every worker to finish its operations; fails past the deadline.
    fn finish(&mut self, started: Instant) {
        for child in &mut self.children {
            loop {
                if let Some(status) = child.try_wait().unwrap() {
                    assert!(status.success(), "a worker failed: {status}");
                    break;
                }
                if started.elapsed() > DEADLINE {
                    let _ = child.kill();
                    panic!("the workers did not settle every operation in {DEADLINE:?}");
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Kills random workers at random moments, `KILLS` times.
fn kill_randomly(workers: &mut Workers) -> u32 {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(0x5eed);
    for _ in 0..KILLS {
        std::thread::sleep(Duration::from_millis(rng.random_range(40..250)));
        let index = rng.random_range(0..WORKERS as usize);
        workers.kill_and_restart(index);
    }
    KILLS
}

/// What the store, the effect table and the audit say at the end.
#[derive(Debug, Default)]
struct Outcome {
    /// Executions per downstream key.
    effects: HashMap<String, u32>,
    /// (state, stored result) per ledger key.
    records: Vec<(String, String, Option<String>)>,
    /// (state, redeemed) per approval row.
    approvals: Vec<(String, bool)>,
    /// Audit records (JSON) of every stream.
    audit: Vec<Value>,
    streams: usize,
}

fn check(store: &str, outcome: &Outcome, kills: u32, elapsed: Duration) {
    let executed_twice = outcome.effects.values().filter(|count| **count > 1).count();
    assert_eq!(executed_twice, 0, "an operation executed twice");
    assert_eq!(
        outcome.records.len(),
        OPERATIONS as usize,
        "one record per operation"
    );
    let mut committed = 0;
    let (mut found, mut absent) = (0, 0);
    for (_, state, result) in &outcome.records {
        let reconciled = result
            .as_deref()
            .is_some_and(|result| result.contains("\"delivery\":\"receipt_reconciled\""));
        match state.as_str() {
            "succeeded" if reconciled => found += 1,
            "succeeded" => committed += 1,
            "failed" => absent += 1,
            other => panic!("an operation was left {other}"),
        }
    }
    let executions: u32 = outcome.effects.values().sum();
    assert_eq!(
        executions as usize,
        committed + found,
        "every execution is a succeeded record, every succeeded record an execution"
    );
    let approval_operations = (0..OPERATIONS).filter(|op| op.is_multiple_of(5)).count();
    let granted = outcome
        .approvals
        .iter()
        .filter(|(state, redeemed)| state == "granted" && *redeemed)
        .count();
    assert_eq!(
        granted, approval_operations,
        "every approved operation ran on its grant"
    );
    // Executions on a grant, by approval id: once each.
    let mut runs: HashMap<&str, u32> = HashMap::new();
    for record in &outcome.audit {
        let approval = record["audit"]["approval"]["approval_id"].as_str();
        let fresh = record["model"]["execution"]["delivery"] == "fresh"
            && record["model"]["status"] == "succeeded";
        if let (Some(approval), true) = (approval, fresh) {
            *runs.entry(approval).or_default() += 1;
        }
    }
    let redeemed_twice = runs.values().filter(|count| **count > 1).count();
    assert_eq!(redeemed_twice, 0, "a grant ran twice");
    println!(
        "crash test ({store}): {WORKERS} workers, {OPERATIONS} operations (each key dispatched \
         by 2 workers), {kills} SIGKILLs, {executions} executed and none twice, {committed} \
         committed, {} unknown then reconciled ({found} found, {absent} never happened), \
         {granted} approvals given on other workers and redeemed once each, {} audit records \
         in {} chains verified, {:.1} s",
        found + absent,
        outcome.audit.len(),
        outcome.streams,
        elapsed.as_secs_f64()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_test_on_postgres() {
    let Some(schema) = Schema::new("crash_test_on_postgres") else {
        return;
    };
    let name = schema.name.clone();
    schema.execute(&format!(
        "CREATE SCHEMA {name}; CREATE TABLE {name}.crash_effects (key TEXT NOT NULL, worker TEXT NOT NULL)"
    ));
    drop(schema.store().await);
    let started = Instant::now();
    let mut workers = Workers::start(&schema.url, &name, Path::new("/nonexistent"));
    let kills = tokio::task::block_in_place(|| kill_randomly(&mut workers));
    tokio::task::block_in_place(|| workers.finish(started));
    let elapsed = started.elapsed();
    let store = schema.store().await;
    let heads = PostgresAuditLog::verify(&store, &audit_key(), &[])
        .await
        .expect("every audit chain verifies");
    let (client, connection) = tokio_postgres::connect(&schema.url, tokio_postgres::NoTls)
        .await
        .unwrap();
    let driver = tokio::spawn(connection);
    let mut outcome = Outcome {
        streams: heads.len(),
        ..Outcome::default()
    };
    for row in client
        .query(
            &format!("SELECT key, count(*) FROM {name}.crash_effects GROUP BY key"),
            &[],
        )
        .await
        .unwrap()
    {
        outcome
            .effects
            .insert(row.get(0), u32::try_from(row.get::<_, i64>(1)).unwrap());
    }
    for row in client
        .query(
            &format!("SELECT key, state, result FROM {name}.tool_contract_ledger"),
            &[],
        )
        .await
        .unwrap()
    {
        outcome.records.push((row.get(0), row.get(1), row.get(2)));
    }
    for row in client
        .query(
            &format!(
                "SELECT state, redeemed_owner IS NOT NULL FROM {name}.tool_contract_approvals"
            ),
            &[],
        )
        .await
        .unwrap()
    {
        outcome.approvals.push((row.get(0), row.get(1)));
    }
    for row in client
        .query(
            &format!("SELECT record FROM {name}.tool_contract_audit"),
            &[],
        )
        .await
        .unwrap()
    {
        outcome
            .audit
            .push(serde_json::from_str(row.get(0)).unwrap());
    }
    drop(client);
    let _ = driver.await;
    check("postgres", &outcome, kills, elapsed);
}

#[test]
fn crash_test_on_one_sqlite_file() {
    let dir = std::env::temp_dir().join(format!("tool-contract-crash-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path: PathBuf = dir.join("store.sqlite");
    drop(SqliteStore::open(&path).unwrap());
    let connection = rusqlite::Connection::open(&path).unwrap();
    connection
        .execute_batch("CREATE TABLE crash_effects (key TEXT NOT NULL, worker TEXT NOT NULL)")
        .unwrap();
    drop(connection);
    let started = Instant::now();
    let mut workers = Workers::start(&format!("sqlite:{}", path.display()), "-", &dir);
    let kills = kill_randomly(&mut workers);
    workers.finish(started);
    let elapsed = started.elapsed();
    let mut outcome = Outcome::default();
    let connection = rusqlite::Connection::open(&path).unwrap();
    let mut effects = connection
        .prepare("SELECT key, count(*) FROM crash_effects GROUP BY key")
        .unwrap();
    for row in effects
        .query_map([], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, u32>(1)?))
        })
        .unwrap()
    {
        let (key, count) = row.unwrap();
        outcome.effects.insert(key, count);
    }
    let mut records = connection
        .prepare("SELECT key, state, result FROM tool_contract_ledger")
        .unwrap();
    for row in records
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .unwrap()
    {
        outcome.records.push(row.unwrap());
    }
    let mut approvals = connection
        .prepare("SELECT state, redeemed_owner IS NOT NULL FROM tool_contract_approvals")
        .unwrap();
    for row in approvals
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
    {
        outcome.approvals.push(row.unwrap());
    }
    for entry in std::fs::read_dir(&dir).unwrap() {
        let file = entry.unwrap().path();
        if file
            .extension()
            .is_some_and(|extension| extension == "jsonl")
        {
            JsonLinesAuditLog::verify(&file, &audit_key(), None)
                .unwrap_or_else(|error| panic!("{}: {error}", file.display()));
            outcome.streams += 1;
            for line in std::fs::read_to_string(&file).unwrap().lines() {
                outcome.audit.push(serde_json::from_str(line).unwrap());
            }
        }
    }
    check("one SQLite file", &outcome, kills, elapsed);
    let _ = std::fs::remove_dir_all(&dir);
}
