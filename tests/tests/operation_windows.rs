//! "Once" for as long as the contract reads: an operation named by its fields or key is kept
//! for good, or for its `within`, past the ledger's retention; after a stated window a repeat
//! is a new operation whose approval and receipt name the earlier run. On every store.

use std::sync::Arc;
use std::time::Duration;

use tool_contract::control::MemoryAuditLog;
use tool_contract::dispatch::{Dispatch, Dispatcher, Task};
use tool_contract::results::Delivery;
use tool_contract::vocabulary::OperationWindow;
use tool_contract::{ErrorCode, Status, ToolContract, ToolFailure, ToolOutput};
use tool_contract_tests::backends::Backend;
use tool_contract_tests::console::receipt_signer;
use tool_contract_tests::expenses::{HOUR, PayOut, desk_builder, employee, pay, run, waiting};
use tool_contract_tests::tracker::{advance_clock, audit_key, clock, keys};

const DAY: Duration = Duration::from_secs(86_400);

/// Pay a member's monthly allowance: once per member within thirty days; a manager approves.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Allowance, effect = idempotent_write, approval = by_another,
                operation = [member_id], within = "30d")]
struct PayAllowance {
    #[tool_contract(pattern = "^M-[0-9]{1,6}$")]
    member_id: String,
}

/// Close a member's account: once per member, for good.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Allowance, effect = idempotent_write, approval = not_required,
                operation = [member_id])]
struct CloseAccount {
    #[tool_contract(pattern = "^M-[0-9]{1,6}$")]
    member_id: String,
}

#[derive(Debug, serde::Serialize, ToolOutput)]
struct Allowance {
    #[tool_output(bound = member_id)]
    member_id: String,
}

/// The allowance desk over `backend`'s store, signing receipts, with a one-second retention:
/// whatever outlives it, the contract kept.
async fn allowance_desk(backend: &impl Backend) -> Dispatcher {
    Dispatcher::builder(tool_contract::registry![PayAllowance, CloseAccount], keys())
        .clock(clock)
        .store(backend.open().await)
        .retention(Duration::from_secs(1))
        .audit_sink(Arc::new(MemoryAuditLog::new(audit_key())))
        .approval_receipts(receipt_signer())
        .handler(|input: PayAllowance| async move {
            Ok::<_, ToolFailure>(Allowance {
                member_id: input.member_id,
            })
        })
        .handler(|input: CloseAccount| async move {
            Ok::<_, ToolFailure>(Allowance {
                member_id: input.member_id,
            })
        })
        .build()
        .expect("the desk builds")
}

fn member_call(dispatcher: &Dispatcher, call_id: &str, tool: &str) -> tool_contract::CallContext {
    dispatcher.context(tool_contract_tests::kb::call(
        call_id,
        tool,
        r#"{"member_id":"M-7"}"#,
    ))
}

async fn dispatch(dispatcher: &Dispatcher, call: &tool_contract::CallContext) -> Dispatch {
    dispatcher
        .dispatch(&employee(), call, &Task::unlimited())
        .await
}

fn delivery(dispatch: &Dispatch) -> Delivery {
    dispatch.result.model.execution().delivery
}

#[test]
fn the_contract_says_how_long_each_operation_lasts() {
    assert_eq!(
        PayAllowance::spec().operation_window(),
        Some(OperationWindow::Within(30 * DAY))
    );
    assert_eq!(
        CloseAccount::spec().operation_window(),
        Some(OperationWindow::ForGood)
    );
    assert_eq!(
        PayOut::spec().operation_window(),
        Some(OperationWindow::ForGood)
    );
    assert_ne!(
        PayAllowance::spec().revisions().effect,
        CloseAccount::spec().revisions().effect,
        "the window is part of the effect declaration"
    );
}

/// The issue's expense assistant: a report paid once is paid once, however late the model
/// asks again, after the ledger's retention and its purge.
async fn a_report_paid_once_stays_paid_past_the_ledgers_retention(backend: &impl Backend) {
    let (builder, payroll) = desk_builder(backend.open().await);
    let desk = builder.retention(Duration::from_secs(1)).build().unwrap();
    let pending = waiting(&desk, &pay(&desk, "call_1", "R-7", 4200)).await;
    desk.approve_pending(&pending, "manager:mia", HOUR)
        .await
        .unwrap();
    let paid = run(&desk, &pay(&desk, "call_2", "R-7", 4200)).await;
    assert_eq!(delivery(&paid), Delivery::Fresh);
    advance_clock(400 * DAY);
    desk.purge_expired().await.unwrap();
    let again = run(&desk, &pay(&desk, "call_3", "R-7", 4200)).await;
    assert_eq!(again.result.model.status(), Status::Succeeded);
    assert_eq!(delivery(&again), Delivery::LocalReplay);
    assert!(again.pending_approval.is_none(), "nobody is asked again");
    assert_eq!(payroll.payouts("R-7"), 1);
}

/// After a stated window the repeat is a new operation, never silently a first time: the
/// person approving it is shown the earlier run, and the receipt names it.
async fn after_its_window_a_repeat_names_the_earlier_run_in_preview_and_receipt(
    backend: &impl Backend,
) {
    let desk = allowance_desk(backend).await;
    let first = dispatch(&desk, &member_call(&desk, "c1", "pay_allowance")).await;
    let pending = first.pending_approval.expect("a manager approves");
    assert_eq!(pending.preview.earlier_run, None, "a first run");
    desk.approve_pending(&pending, "manager:mia", HOUR)
        .await
        .unwrap();
    let paid = dispatch(&desk, &member_call(&desk, "c2", "pay_allowance")).await;
    assert_eq!(delivery(&paid), Delivery::Fresh);
    let paid_result = paid.result.audit.binding.result_sha256.clone();

    // Within the window (and long past the ledger's retention): the same operation.
    advance_clock(29 * DAY);
    desk.purge_expired().await.unwrap();
    let within = dispatch(&desk, &member_call(&desk, "c3", "pay_allowance")).await;
    assert_eq!(delivery(&within), Delivery::LocalReplay);

    advance_clock(2 * DAY);
    desk.purge_expired().await.unwrap();
    let repeat = dispatch(&desk, &member_call(&desk, "c4", "pay_allowance")).await;
    assert_eq!(
        repeat.result.model.error().map(|error| error.code()),
        Some(ErrorCode::ApprovalRequired)
    );
    let pending = repeat.pending_approval.expect("asked again");
    let earlier = pending.preview.earlier_run.clone().expect("named");
    assert_eq!(earlier.ended, "succeeded");
    assert_eq!(earlier.result_sha256.as_deref(), Some(paid_result.as_str()));
    assert!(pending.preview.to_text().contains("earlier_run"));
    desk.approve_pending(&pending, "manager:mia", HOUR)
        .await
        .unwrap();
    let ran = dispatch(&desk, &member_call(&desk, "c5", "pay_allowance")).await;
    assert_eq!(delivery(&ran), Delivery::Fresh);
    let receipt = ran
        .result
        .audit
        .approval
        .as_ref()
        .and_then(|approval| approval.receipt.as_ref())
        .expect("a receipt");
    assert_eq!(
        receipt.receipt.earlier_run.as_ref(),
        Some(&earlier),
        "the receipt names the earlier run"
    );
    let published =
        tool_contract::results::KeySet::new([receipt_signer().published_key()]).unwrap();
    let verified = published
        .verify(receipt.to_json().as_bytes())
        .expect("the receipt verifies");
    assert_eq!(verified.earlier_run, Some(earlier));
}

/// An operator purges finished operations by age; none within its window, none kept for good.
async fn purging_by_age_never_touches_an_operation_within_its_window(backend: &impl Backend) {
    let desk = allowance_desk(backend).await;
    let closed = dispatch(&desk, &member_call(&desk, "c1", "close_account")).await;
    assert_eq!(delivery(&closed), Delivery::Fresh);
    let pending = dispatch(&desk, &member_call(&desk, "c2", "pay_allowance"))
        .await
        .pending_approval
        .expect("a manager approves");
    desk.approve_pending(&pending, "manager:mia", HOUR)
        .await
        .unwrap();
    dispatch(&desk, &member_call(&desk, "c3", "pay_allowance")).await;

    advance_clock(10 * DAY);
    assert_eq!(desk.purge_operations(Duration::ZERO).await.unwrap(), 0);
    // The allowance's window ends at 30 days: one more day later, it did not end two ago.
    advance_clock(21 * DAY);
    assert_eq!(desk.purge_operations(2 * DAY).await.unwrap(), 0);
    advance_clock(2 * DAY);
    assert_eq!(desk.purge_operations(2 * DAY).await.unwrap(), 1);
    // The closed account is kept for good: still one operation, replayed.
    let again = dispatch(&desk, &member_call(&desk, "c4", "close_account")).await;
    assert_eq!(delivery(&again), Delivery::LocalReplay);
}

tool_contract_tests::on_every_store!(
    a_report_paid_once_stays_paid_past_the_ledgers_retention,
    after_its_window_a_repeat_names_the_earlier_run_in_preview_and_receipt,
    purging_by_age_never_touches_an_operation_within_its_window,
);

/// How many operations the size of a kept record is measured over.
const MEASURED: usize = 400;

/// Closes `MEASURED` accounts, each a kept operation, as one member each.
async fn close_accounts(desk: &Dispatcher, from: usize) {
    for member in from..from + MEASURED {
        let arguments = format!(r#"{{"member_id":"M-{member}"}}"#);
        let call = desk.context(tool_contract_tests::kb::call(
            &format!("c{member}"),
            "close_account",
            &arguments,
        ));
        let closed = dispatch(desk, &call).await;
        assert_eq!(delivery(&closed), Delivery::Fresh);
    }
}

/// What a kept operation costs on SQLite: the ledger's table and its indexes, page bytes
/// (`dbstat`) per record, over `MEASURED` records.
#[tokio::test]
async fn a_kept_operation_costs_about_a_kilobyte_on_sqlite() {
    let file = tool_contract_tests::backends::sqlite_file();
    let desk = allowance_desk(&file).await;
    let ledger_bytes = || {
        let connection = rusqlite::Connection::open(&file.0).unwrap();
        connection
            .query_row(
                "SELECT SUM(pgsize) FROM dbstat \
                 WHERE name IN ('tool_contract_ledger', 'tool_contract_ledger_expiry', \
                                'sqlite_autoindex_tool_contract_ledger_1')",
                [],
                |row| row.get::<_, i64>(0),
            )
            .unwrap()
    };
    close_accounts(&desk, 0).await;
    let before = ledger_bytes();
    close_accounts(&desk, MEASURED).await;
    let per_operation = (ledger_bytes() - before) / MEASURED as i64;
    eprintln!("a kept operation on SQLite: {per_operation} bytes");
    assert!(
        (100..1536).contains(&per_operation),
        "{per_operation} bytes"
    );
}

/// What a kept operation costs on PostgreSQL: the ledger's table, its TOAST and its indexes
/// (`pg_total_relation_size`) per record, over `MEASURED` records.
#[tokio::test]
async fn a_kept_operation_costs_about_a_kilobyte_on_postgres() {
    let Some(schema) = tool_contract_tests::postgres::Schema::new("kept_operation_bytes") else {
        return;
    };
    let backend = tool_contract_tests::backends::Postgres(schema);
    let desk = allowance_desk(&backend).await;
    let table = format!("'{}.tool_contract_ledger'", backend.0.name);
    let ledger_bytes = || {
        backend
            .0
            .query_i64(&format!("SELECT pg_total_relation_size({table})"))
    };
    close_accounts(&desk, 0).await;
    let before = ledger_bytes();
    close_accounts(&desk, MEASURED).await;
    let per_operation = (ledger_bytes() - before) / MEASURED as i64;
    eprintln!("a kept operation on PostgreSQL: {per_operation} bytes");
    assert!(
        (100..1536).contains(&per_operation),
        "{per_operation} bytes"
    );
}
