//! A late write is seen (issue 29, point 5): a replica stalled past its lease, whose write was
//! settled elsewhere as never having happened, never leaves the books saying so once it acts;
//! and the handler learns its lease, so that it can stop, and a downstream can fence it out.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tool_contract::control::{ControlStore, MemoryAuditLog, MemoryStore, SqliteStore, WriteState};
use tool_contract::dispatch::{
    Dispatch, Dispatcher, HandlerContext, RetryPolicy, Task, ToolOptions, typed,
};
use tool_contract::{CallContext, ErrorCode, FailureKind, ToolContract, ToolFailure, ToolOutput};
use tool_contract_tests::postgres::Schema;
use tool_contract_tests::tracker::{advance_clock, alice, audit_key, clock, context, keys};

/// Pay an invoice.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Payment, effect = non_idempotent_write, operation = same_arguments, approval = not_required,
                reconcile = FindPayment, source_label = "bank", producer_revision = "bank-1")]
struct PayInvoice {
    #[tool_contract(max_len = 20)]
    invoice: String,
}

/// Find the payment of an invoice.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Payment, effect = read_only, source_label = "bank",
                producer_revision = "bank-1")]
struct FindPayment {
    #[tool_contract(max_len = 20)]
    invoice: String,
}

#[derive(Debug, serde::Serialize, ToolOutput)]
struct Payment {
    #[tool_output(bound = invoice)]
    invoice: String,
}

/// The downstream: it pays once per accepted write, and keeps the highest fencing token it
/// has seen for each invoice, refusing a lower one.
#[derive(Default)]
struct Bank {
    paid: Mutex<Vec<String>>,
    highest_token: Mutex<HashMap<String, u64>>,
    /// The tokens of the writes it accepted, and of the ones it refused.
    accepted: Mutex<Vec<u64>>,
    refused: Mutex<Vec<u64>>,
    /// Holds the next write until released, once.
    hold: Mutex<Option<Arc<Notify>>>,
    /// Told when a held write has arrived.
    arrived: Notify,
    /// Whether the handler stops, rather than act, once its lease has lapsed.
    stop_at_deadline: bool,
}

async fn pay(
    bank: Arc<Bank>,
    input: PayInvoice,
    cx: HandlerContext,
) -> Result<Payment, ToolFailure> {
    let hold = bank.hold.lock().unwrap().take();
    if let Some(hold) = hold {
        bank.arrived.notify_one();
        hold.notified().await;
    }
    let token = cx
        .fencing_token()
        .expect("a write's execution has a fencing token");
    if bank.stop_at_deadline
        && let Some(until) = cx.lease_deadline()
        && cx.now() >= until
    {
        return Err(ToolFailure::new(
            FailureKind::Failed,
            "the lease lapsed before the payment was sent: nothing was done",
        ));
    }
    {
        let mut highest = bank.highest_token.lock().unwrap();
        let seen = highest.entry(input.invoice.clone()).or_default();
        if token < *seen {
            bank.refused.lock().unwrap().push(token);
            return Err(ToolFailure::new(
                FailureKind::Failed,
                "a newer execution of this payment holds the invoice: refused, nothing paid",
            ));
        }
        *seen = token;
    }
    bank.accepted.lock().unwrap().push(token);
    bank.paid.lock().unwrap().push(input.invoice.clone());
    Ok(Payment {
        invoice: input.invoice,
    })
}

async fn find(
    bank: Arc<Bank>,
    input: FindPayment,
    _: HandlerContext,
) -> Result<Payment, ToolFailure> {
    if bank.paid.lock().unwrap().contains(&input.invoice) {
        Ok(Payment {
            invoice: input.invoice,
        })
    } else {
        Err(ToolFailure::new(FailureKind::NotFound, "no payment"))
    }
}

/// The lease a payment holds, by the dispatchers' clock: its timeout (60 s, one attempt, no
/// retry wait) and the grace (1 s). The tests move that clock past it at once; the handler's
/// own timeout, in real time, is never reached.
const LEASE: Duration = Duration::from_secs(61);
const RETENTION: Duration = Duration::from_secs(3600);

/// One replica over `store`.
fn replica(bank: &Arc<Bank>, store: &Arc<dyn ControlStore>) -> Arc<Dispatcher> {
    replica_with(bank, store, |pay: &PayInvoice| FindPayment {
        invoice: pay.invoice.clone(),
    })
}

/// One replica over `store`, whose status query's input `status_input` builds.
fn replica_with(
    bank: &Arc<Bank>,
    store: &Arc<dyn ControlStore>,
    status_input: fn(&PayInvoice) -> FindPayment,
) -> Arc<Dispatcher> {
    let options = ToolOptions::DEFAULT
        .with_timeout(Duration::from_secs(60))
        .with_retry(RetryPolicy::NEVER.with_max_total_wait(Duration::ZERO));
    Arc::new(
        Dispatcher::builder(tool_contract::registry![PayInvoice, FindPayment], keys())
            .clock(clock)
            .write_handler(typed(bank, pay), status_input, options)
            .handler(typed(bank, find))
            .lease_grace(Duration::from_secs(1))
            .retention(RETENTION)
            .store(store.clone())
            .audit_sink(Arc::new(MemoryAuditLog::new(audit_key())))
            .build()
            .unwrap(),
    )
}

fn pay_call() -> CallContext {
    context(
        "c1",
        "pay_invoice",
        serde_json::json!({ "invoice": "INV-7" }),
        "pay-7",
        "pay-7",
    )
}

fn code(dispatch: &Dispatch) -> Option<ErrorCode> {
    dispatch.result.model.error().map(|error| error.code())
}

/// The three stores, PostgreSQL when it is configured.
async fn stores(test: &str) -> Vec<(&'static str, Arc<dyn ControlStore>, Option<Schema>)> {
    let path = std::env::temp_dir().join(format!("{test}-{}.db", std::process::id()));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    let mut stores: Vec<(&'static str, Arc<dyn ControlStore>, Option<Schema>)> = vec![
        ("memory", Arc::new(MemoryStore::new()), None),
        ("sqlite", Arc::new(SqliteStore::open(&path).unwrap()), None),
    ];
    if let Some(schema) = Schema::new(test) {
        let store = schema.store().await;
        stores.push(("postgres", Arc::new(store), Some(schema)));
    }
    stores
}

/// Replica `a` starts the payment and stalls inside its handler past its lease; replica `b`,
/// asked the same call, finds the lease lapsed and settles the write by its status query
/// (nothing paid: never happened). Returns `a`'s dispatch, still running, and `b`'s answer.
async fn stall_and_settle_elsewhere(
    bank: &Arc<Bank>,
    a: &Arc<Dispatcher>,
    b: &Arc<Dispatcher>,
) -> (tokio::task::JoinHandle<Dispatch>, Arc<Notify>, Dispatch) {
    let hold = Arc::new(Notify::new());
    *bank.hold.lock().unwrap() = Some(hold.clone());
    let stalled = {
        let a = a.clone();
        tokio::spawn(async move { a.dispatch(&alice(), &pay_call(), &Task::unlimited()).await })
    };
    bank.arrived.notified().await;
    advance_clock(LEASE + Duration::from_secs(1));
    let settled = b.dispatch(&alice(), &pay_call(), &Task::unlimited()).await;
    (stalled, hold, settled)
}

#[tokio::test]
async fn a_write_that_acts_after_it_was_settled_as_never_happened_is_disputed_for_good() {
    for (name, store, _schema) in stores("late_write_disputed").await {
        let bank = Arc::new(Bank::default());
        let (a, b) = (replica(&bank, &store), replica(&bank, &store));
        let (stalled, hold, settled) = stall_and_settle_elsewhere(&bank, &a, &b).await;
        assert_eq!(
            settled.write_state,
            Some(WriteState::Failed),
            "{name}: {settled:?}"
        );

        // The stalled replica wakes up and pays: the books must not say "never happened".
        hold.notify_one();
        let late = stalled.await.unwrap();
        assert_eq!(bank.paid.lock().unwrap().len(), 1, "{name}");
        assert_eq!(
            code(&late),
            Some(ErrorCode::StatusConflict),
            "{name}: {late:?}"
        );
        assert_eq!(late.write_state, Some(WriteState::Disputed), "{name}");
        let ledger_key = format!("{}:pay-7", keys().principal_ref(&alice()));
        let record = store.get(&ledger_key).await.unwrap().expect("the record");
        assert_eq!(record.state, WriteState::Disputed, "{name}");

        // Every later call, on either replica, reads the dispute, and nothing runs again.
        for replica in [&a, &b, &a] {
            let again = replica
                .dispatch(&alice(), &pay_call(), &Task::unlimited())
                .await;
            assert_eq!(
                code(&again),
                Some(ErrorCode::StatusConflict),
                "{name}: {again:?}"
            );
            assert_eq!(again.write_state, Some(WriteState::Disputed), "{name}");
        }
        assert_eq!(bank.paid.lock().unwrap().len(), 1, "{name}: paid once");
    }
}

#[tokio::test]
async fn a_handler_that_checks_its_lease_deadline_stops_and_the_books_stay_true() {
    for (name, store, _schema) in stores("late_write_stops").await {
        let bank = Arc::new(Bank {
            stop_at_deadline: true,
            ..Bank::default()
        });
        let (a, b) = (replica(&bank, &store), replica(&bank, &store));
        let (stalled, hold, settled) = stall_and_settle_elsewhere(&bank, &a, &b).await;
        assert_eq!(settled.write_state, Some(WriteState::Failed), "{name}");
        hold.notify_one();
        let late = stalled.await.unwrap();
        assert!(bank.paid.lock().unwrap().is_empty(), "{name}: it stopped");
        assert_eq!(
            late.write_state,
            Some(WriteState::Failed),
            "{name}: {late:?}"
        );
        let again = b.dispatch(&alice(), &pay_call(), &Task::unlimited()).await;
        assert_eq!(again.write_state, Some(WriteState::Failed), "{name}");
    }
}

#[tokio::test]
async fn a_downstream_that_keeps_the_highest_fencing_token_refuses_a_stalled_writer() {
    for (name, store, _schema) in stores("late_write_fenced").await {
        let bank = Arc::new(Bank::default());
        // `b` starts first: its own count of claims is behind `a`'s, so only the record
        // can tell it that a newer claim must be above `a`'s.
        let b = replica(&bank, &store);
        std::thread::sleep(Duration::from_millis(5));
        let a = replica(&bank, &store);
        let (stalled, hold, settled) = stall_and_settle_elsewhere(&bank, &a, &b).await;
        assert_eq!(settled.write_state, Some(WriteState::Failed), "{name}");

        // Long after, the record is past its retention, and the same payment runs afresh
        // under a newer claim, whose token is higher.
        advance_clock(RETENTION + Duration::from_secs(1));
        let fresh = b.dispatch(&alice(), &pay_call(), &Task::unlimited()).await;
        assert_eq!(
            fresh.write_state,
            Some(WriteState::Succeeded),
            "{name}: {fresh:?}"
        );

        // The stalled writer wakes up with its old token: the downstream turns it away.
        hold.notify_one();
        let late = stalled.await.unwrap();
        let accepted = bank.accepted.lock().unwrap().clone();
        let refused = bank.refused.lock().unwrap().clone();
        assert_eq!(accepted.len(), 1, "{name}");
        assert_eq!(refused.len(), 1, "{name}");
        assert!(
            refused[0] < accepted[0],
            "{name}: tokens grow with every claim"
        );
        assert_eq!(bank.paid.lock().unwrap().len(), 1, "{name}: paid once");
        assert_ne!(code(&late), None, "{name}: the stalled writer did nothing");
        assert_ne!(late.write_state, Some(WriteState::Disputed), "{name}");
    }
}

#[tokio::test]
async fn a_status_input_builder_that_panics_leaves_the_write_unknown_and_dispatch_returns() {
    let store: Arc<dyn ControlStore> = Arc::new(MemoryStore::new());
    let bank = Arc::new(Bank::default());
    let a = replica(&bank, &store);
    let b = replica_with(&bank, &store, |_: &PayInvoice| {
        panic!("the application's own bug in the status query's input")
    });
    // `a` stalls past its lease; `b` is asked the same call and must build the status query.
    let (stalled, hold, asked) = stall_and_settle_elsewhere(&bank, &a, &b).await;
    assert_eq!(code(&asked), Some(ErrorCode::OutcomeUnknown), "{asked:?}");
    assert_eq!(asked.write_state, Some(WriteState::Unknown));
    hold.notify_one();
    stalled.await.unwrap();
}

#[tokio::test]
async fn a_person_settles_a_dispute_as_done_and_every_later_call_follows() {
    use tool_contract::dispatch::Settlement;
    for (name, store, _schema) in stores("late_write_settled").await {
        let bank = Arc::new(Bank::default());
        let (a, b) = (replica(&bank, &store), replica(&bank, &store));
        let (stalled, hold, _) = stall_and_settle_elsewhere(&bank, &a, &b).await;
        hold.notify_one();
        assert_eq!(
            stalled.await.unwrap().write_state,
            Some(WriteState::Disputed)
        );

        // An output the contract refuses (another invoice than this call's) settles nothing.
        let wrong = serde_json::json!({ "invoice": "INV-8" });
        let refused = b
            .settle(
                &alice(),
                &pay_call(),
                Settlement::Done(wrong),
                "ops@acme.example",
            )
            .await;
        assert!(
            matches!(
                refused,
                Err(tool_contract::dispatch::SettleError::InvalidOutput(_))
            ),
            "{name}: {refused:?}"
        );
        let output = serde_json::json!({ "invoice": "INV-7" });
        let settled = b
            .settle(
                &alice(),
                &pay_call(),
                Settlement::Done(output),
                "ops@acme.example",
            )
            .await
            .expect("settled");
        assert_eq!(settled.write_state, Some(WriteState::Succeeded), "{name}");
        assert!(
            settled
                .result
                .audit
                .detail
                .as_deref()
                .unwrap_or_default()
                .contains("ops@acme.example"),
            "{name}: the audit names who settled it"
        );
        for replica in [&a, &b] {
            let again = replica
                .dispatch(&alice(), &pay_call(), &Task::unlimited())
                .await;
            assert_eq!(code(&again), None, "{name}: {again:?}");
            assert_eq!(again.write_state, Some(WriteState::Succeeded), "{name}");
        }
        // Settled once: a second settlement is refused.
        let twice = b
            .settle(
                &alice(),
                &pay_call(),
                Settlement::NeverHappened,
                "ops@acme.example",
            )
            .await;
        assert!(
            matches!(
                twice,
                Err(tool_contract::dispatch::SettleError::NotUnsettled(
                    WriteState::Succeeded
                ))
            ),
            "{name}: {twice:?}"
        );
        assert_eq!(bank.paid.lock().unwrap().len(), 1, "{name}");
    }
}

#[tokio::test]
async fn a_person_settles_an_unknown_write_as_never_happened_and_retries_follow() {
    use tool_contract::dispatch::Settlement;
    let store: Arc<dyn ControlStore> = Arc::new(MemoryStore::new());
    let bank = Arc::new(Bank {
        stop_at_deadline: true,
        ..Bank::default()
    });
    let a = replica(&bank, &store);
    // `b` cannot ask the status query: the write stays unknown, for a person.
    let b = replica_with(&bank, &store, |_: &PayInvoice| {
        panic!("no status query here")
    });
    let (stalled, hold, asked) = stall_and_settle_elsewhere(&bank, &a, &b).await;
    assert_eq!(asked.write_state, Some(WriteState::Unknown));
    let settled = b
        .settle(
            &alice(),
            &pay_call(),
            Settlement::NeverHappened,
            "ops@acme.example",
        )
        .await
        .expect("settled");
    assert_eq!(settled.write_state, Some(WriteState::Failed));
    let again = b.dispatch(&alice(), &pay_call(), &Task::unlimited()).await;
    assert_eq!(again.write_state, Some(WriteState::Failed), "{again:?}");
    assert_ne!(code(&again), Some(ErrorCode::OutcomeUnknown));
    // The stalled execution stops at its deadline: the settlement stays true.
    hold.notify_one();
    stalled.await.unwrap();
    assert!(bank.paid.lock().unwrap().is_empty());
}

/// A stalled replica (`stalled_worker`) paying out on `store` into `payouts`, started and
/// stopped at its word `ready`, just before it pays: the process and the rest of what it says.
fn stalled_worker_at_ready(
    store: &str,
    payouts: &std::path::Path,
    name: &str,
) -> (
    std::process::Child,
    std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
) {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let mut worker = Command::new(env!("CARGO_BIN_EXE_stalled_worker"))
        .arg(store)
        .arg(payouts)
        .stdout(Stdio::piped())
        .spawn()
        .expect("the worker starts");
    let mut lines = BufReader::new(worker.stdout.take().expect("stdout is piped")).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "ready", "{name}");
    (worker, lines)
}

/// A runtime, and a replica here over `store` paying into `payouts`, once the stalled
/// replica's lease has surely lapsed.
fn replica_here_past_the_lease(
    store: &str,
    payouts: &std::path::Path,
) -> (tokio::runtime::Runtime, Dispatcher) {
    use tool_contract_tests::stalled::{self, Payouts};
    std::thread::sleep(stalled::TIMEOUT + stalled::GRACE + Duration::from_millis(1500));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let here = runtime.block_on(async {
        let store = stalled::open_store(store).await.unwrap();
        stalled::replica(store, Payouts::open(payouts), || {})
    });
    (runtime, here)
}

/// The `STORE` argument of the stalled worker for a fresh SQLite file named after `test`.
fn fresh_sqlite(test: &str) -> String {
    let path = std::env::temp_dir().join(format!("{test}-{}.db", std::process::id()));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    format!("sqlite:{}", path.display())
}

/// The `STORE` argument of the stalled worker for a fresh PostgreSQL schema named after
/// `test`, migrated; `None` (the test skipped) without a database.
fn fresh_postgres(test: &str) -> Option<String> {
    let schema = Schema::new(test)?;
    // The schema is created (and migrated) by the first store to connect.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(schema.store());
    Some(format!("postgres:{}:{}", schema.name, schema.url))
}

/// The stalled replica as a process of its own: started on `store`, stopped with SIGSTOP
/// just before it pays, kept stopped past its lease while this process settles the write
/// (its status query finds no payout: never happened), then continued. What it then does must
/// leave the record disputed, and every later call here must read the dispute.
fn a_stopped_process_that_pays_after_its_write_was_settled(store: &str, name: &str) {
    use std::process::Command;
    use tool_contract_tests::stalled::{self, Payouts};

    let payouts_path =
        std::env::temp_dir().join(format!("payouts-{name}-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&payouts_path);
    let payouts = Payouts::open(&payouts_path);
    let (mut worker, mut lines) = stalled_worker_at_ready(store, &payouts_path, name);
    let pid = worker.id().to_string();
    let signal = |which: &str| {
        let sent = Command::new("kill")
            .args([which, &pid])
            .status()
            .expect("kill runs");
        assert!(sent.success(), "{name}: kill {which}");
    };
    signal("-STOP");
    let (runtime, here) = replica_here_past_the_lease(store, &payouts_path);
    let ask = || {
        runtime.block_on(here.dispatch(
            &stalled::principal(),
            &stalled::payout_call(),
            &Task::unlimited(),
        ))
    };
    let settled = ask();
    assert_eq!(
        settled.write_state,
        Some(WriteState::Failed),
        "{name}: {settled:?}"
    );

    signal("-CONT");
    let answer = lines.next().unwrap().unwrap();
    assert!(worker.wait().unwrap().success(), "{name}");
    assert_eq!(answer, "STATUS_CONFLICT disputed", "{name}");
    assert!(payouts.count("ORDER-9") <= 1, "{name}: never paid twice");
    for _ in 0..2 {
        let later = ask();
        assert_eq!(
            code(&later),
            Some(ErrorCode::StatusConflict),
            "{name}: {later:?}"
        );
        assert_eq!(later.write_state, Some(WriteState::Disputed), "{name}");
    }
    let _ = std::fs::remove_file(&payouts_path);
}

#[test]
fn a_replica_stopped_past_its_lease_in_another_process_leaves_its_write_disputed_on_sqlite() {
    a_stopped_process_that_pays_after_its_write_was_settled(&fresh_sqlite("stalled"), "sqlite");
}

#[test]
fn a_replica_stopped_past_its_lease_in_another_process_leaves_its_write_disputed_on_postgres() {
    if let Some(store) = fresh_postgres("stalled_process") {
        a_stopped_process_that_pays_after_its_write_was_settled(&store, "postgres");
    }
}

/// A replica killed (SIGKILL) in its handler, before it pays: its record stays marked running.
/// Past its lease, a person settles it on another replica with no call before: the write is
/// `unknown` there as a dispatch would read it, and the settlement is recorded and replayed.
fn a_killed_process_write_is_settled_by_a_person_with_no_call_before(store: &str, name: &str) {
    use tool_contract::dispatch::Settlement;
    use tool_contract_tests::stalled::{self, Payouts};

    let payouts_path =
        std::env::temp_dir().join(format!("killed-{name}-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&payouts_path);
    let (mut worker, _) = stalled_worker_at_ready(store, &payouts_path, name);
    worker.kill().expect("the worker is killed");
    let _ = worker.wait();
    let (runtime, here) = replica_here_past_the_lease(store, &payouts_path);
    let settled = runtime
        .block_on(here.settle(
            &stalled::principal(),
            &stalled::payout_call(),
            Settlement::NeverHappened,
            "ops:sam",
        ))
        .unwrap_or_else(|error| panic!("{name}: {error}"));
    assert_eq!(settled.write_state, Some(WriteState::Failed), "{name}");
    let later = runtime.block_on(here.dispatch(
        &stalled::principal(),
        &stalled::payout_call(),
        &Task::unlimited(),
    ));
    assert_eq!(
        later.write_state,
        Some(WriteState::Failed),
        "{name}: replayed"
    );
    assert_eq!(Payouts::open(&payouts_path).count("ORDER-9"), 0, "{name}");
    let _ = std::fs::remove_file(&payouts_path);
}

#[test]
fn a_killed_replicas_write_is_settled_with_no_call_before_on_sqlite() {
    let store = fresh_sqlite("killed");
    a_killed_process_write_is_settled_by_a_person_with_no_call_before(&store, "sqlite");
}

#[test]
fn a_killed_replicas_write_is_settled_with_no_call_before_on_postgres() {
    if let Some(store) = fresh_postgres("killed_process") {
        a_killed_process_write_is_settled_by_a_person_with_no_call_before(&store, "postgres");
    }
}

#[tokio::test]
async fn a_write_whose_end_could_not_be_recorded_is_settled_by_a_reconcile_pass_nobody_calls() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use tool_contract::control::StoreError;
    use tool_contract::results::Delivery;
    use tool_contract_tests::hooked::Hooked;
    for (name, store, _schema) in stores("late_write_stale").await {
        let bank = Arc::new(Bank::default());
        // The store is down just when the payment's end is to be recorded.
        let down = Arc::new(AtomicBool::new(false));
        let flaky: Arc<dyn ControlStore> = Arc::new(Hooked::new(store.clone(), {
            let down = down.clone();
            move |step| {
                if step == "advance" && down.swap(false, Ordering::SeqCst) {
                    Err(StoreError::store(std::io::Error::other(
                        "the store is down",
                    )))
                } else {
                    Ok(())
                }
            }
        }));
        down.store(true, Ordering::SeqCst);
        let a = replica(&bank, &flaky);
        let paid = a.dispatch(&alice(), &pay_call(), &Task::unlimited()).await;
        assert_eq!(bank.paid.lock().unwrap().len(), 1, "{name}");
        assert_eq!(
            paid.write_state,
            Some(WriteState::Unknown),
            "{name}: {paid:?}"
        );
        let ledger_key = format!("{}:pay-7", keys().principal_ref(&alice()));
        let record = store.get(&ledger_key).await.unwrap().expect("the record");
        assert_eq!(
            record.state,
            WriteState::Executing,
            "{name}: left executing"
        );

        // Nobody calls again. Past the lease, a pass on another replica settles it.
        let b = replica(&bank, &store);
        assert!(
            b.reconcile_stale(&Task::unlimited())
                .await
                .unwrap()
                .is_empty(),
            "{name}: lease running"
        );
        advance_clock(LEASE + Duration::from_secs(1));
        let settled = b.reconcile_stale(&Task::unlimited()).await.unwrap();
        assert_eq!(settled.len(), 1, "{name}");
        assert_eq!(
            settled[0].write_state,
            Some(WriteState::Succeeded),
            "{name}: {:?}",
            settled[0]
        );
        assert_eq!(
            settled[0].result.model.execution().delivery,
            Delivery::ReceiptReconciled,
            "{name}"
        );
        let record = store.get(&ledger_key).await.unwrap().expect("the record");
        assert_eq!(record.state, WriteState::Succeeded, "{name}");
        assert!(
            b.reconcile_stale(&Task::unlimited())
                .await
                .unwrap()
                .is_empty(),
            "{name}: nothing left"
        );
        assert_eq!(
            bank.paid.lock().unwrap().len(),
            1,
            "{name}: never paid again"
        );
    }
}

#[tokio::test]
async fn a_stale_record_whose_call_does_not_read_is_passed_over_and_kept() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use tool_contract::control::StoreError;
    use tool_contract_tests::hooked::Hooked;
    let path = std::env::temp_dir().join(format!("stale-unreadable-{}.db", std::process::id()));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    let store: Arc<dyn ControlStore> = Arc::new(SqliteStore::open(&path).unwrap());
    let bank = Arc::new(Bank::default());
    let down = Arc::new(AtomicBool::new(true));
    let flaky: Arc<dyn ControlStore> = Arc::new(Hooked::new(store.clone(), {
        let down = down.clone();
        move |step| {
            if step == "advance" && down.swap(false, Ordering::SeqCst) {
                Err(StoreError::store(std::io::Error::other(
                    "the store is down",
                )))
            } else {
                Ok(())
            }
        }
    }));
    replica(&bank, &flaky)
        .dispatch(&alice(), &pay_call(), &Task::unlimited())
        .await;
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("UPDATE tool_contract_ledger SET call = 'not a call'")
        .unwrap();
    advance_clock(LEASE + Duration::from_secs(1));
    let b = replica(&bank, &store);
    assert!(
        b.reconcile_stale(&Task::unlimited())
            .await
            .unwrap()
            .is_empty()
    );
    let ledger_key = format!("{}:pay-7", keys().principal_ref(&alice()));
    let record = store.get(&ledger_key).await.unwrap().expect("kept");
    assert_eq!(
        record.state,
        WriteState::Executing,
        "nothing lost, nothing decided"
    );
    // A call of its own still settles it, by its status query.
    let asked = b.dispatch(&alice(), &pay_call(), &Task::unlimited()).await;
    assert_eq!(asked.write_state, Some(WriteState::Succeeded), "{asked:?}");
    assert_eq!(bank.paid.lock().unwrap().len(), 1);
}
