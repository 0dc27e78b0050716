//! The expense desk as a new user tries it: a payout a manager approves, once per report.

use std::sync::Arc;

use tool_contract::control::AuditHistory as _;
use tool_contract::{ErrorCode, Status};
use tool_contract_tests::backends::Backend;
use tool_contract_tests::expenses::{HOUR, desk, desk_builder, pay, run, waiting};

async fn a_refused_retry_with_another_amount_leaves_the_grant_and_the_approved_amount_runs_once(
    backend: &impl Backend,
) {
    let (desk, payroll) = desk(backend.open().await);
    let pending = waiting(&desk, &pay(&desk, "call_1", "R-7", 4200)).await;
    desk.approve_pending(&pending, "manager:mia", HOUR)
        .await
        .unwrap();
    // The model sends another amount: refused, and nothing new is asked.
    let other = run(&desk, &pay(&desk, "call_2", "R-7", 4300)).await;
    assert_eq!(
        other.result.model.error().map(|error| error.code()),
        Some(ErrorCode::ApprovalInvalid)
    );
    assert!(other.pending_approval.is_none());
    // The exact approved call runs on the standing grant: the manager is not asked again.
    let paid = run(&desk, &pay(&desk, "call_3", "R-7", 4200)).await;
    assert_eq!(paid.result.model.status(), Status::Succeeded);
    let approval = paid.result.audit.approval.as_ref().expect("approved");
    assert_eq!(approval.approval_id, pending.approval_id);
    assert_eq!(payroll.all(), [("R-7".to_owned(), 4200)]);
    assert!(desk.pending_approvals().await.unwrap().is_empty());
}

/// A spent approval put back in the store (its granted row restored, the payout's record
/// removed) pays twice on one approval; the audit history shows it, with or without signed
/// receipts: every audit marks the execution that spent a grant.
#[tokio::test]
async fn a_spent_approval_put_back_is_caught_by_the_audit_history_without_receipts() {
    let file = tool_contract_tests::backends::sqlite_file();
    let log = Arc::new(tool_contract::control::MemoryAuditLog::new(
        tool_contract_tests::tracker::audit_key(),
    ));
    let (builder, payroll) = desk_builder(file.open().await);
    let desk = builder.audit_sink(log.clone()).build().unwrap();
    let sql = |statements: &str| {
        rusqlite::Connection::open(&file.0)
            .unwrap()
            .execute_batch(statements)
            .unwrap();
    };
    let pending = waiting(&desk, &pay(&desk, "call_1", "R-7", 4200)).await;
    desk.approve_pending(&pending, "manager:mia", HOUR)
        .await
        .unwrap();
    sql("CREATE TABLE copied AS SELECT * FROM tool_contract_approvals");
    // A replay before and after spends nothing: only executions count.
    for call_id in ["call_2", "call_3"] {
        run(&desk, &pay(&desk, call_id, "R-7", 4200)).await;
    }
    sql(
        "INSERT OR REPLACE INTO tool_contract_approvals SELECT * FROM copied; \
         DELETE FROM tool_contract_ledger;",
    );
    run(&desk, &pay(&desk, "call_4", "R-7", 4200)).await;
    assert_eq!(payroll.payouts("R-7"), 2, "one approval, two payouts");

    let history = log.read_back().await.unwrap();
    let calls = history.calls(&tool_contract_tests::tracker::audit_key());
    assert!(calls.chain.is_ok());
    assert!(
        calls
            .calls
            .iter()
            .filter_map(|(_, audit)| audit.approval.as_ref())
            .all(|approval| approval.receipt.is_none()),
        "this desk signs no receipts"
    );
    assert_eq!(
        calls.redeemed_more_than_once(),
        [(pending.approval_id.clone(), 2)]
    );
}

/// A turn held while its payouts wait: resumed once people decided, the approved payout runs
/// and the model reads its real result, the rejected one its rejection, the undecided one
/// still waits under the same approval; nothing runs twice.
async fn a_held_turn_resumed_after_the_decisions_reads_each_real_outcome(backend: &impl Backend) {
    use tool_contract::control::RejectionReason;
    use tool_contract::dispatch::Task;
    use tool_contract::providers::{OpenAiResponses, ProviderApi};

    let (desk, payroll) = desk(backend.open().await);
    let body = br#"{"id":"resp_9","status":"completed","output":[
      {"type":"function_call","call_id":"c7","name":"pay_out","arguments":"{\"report_id\":\"R-7\",\"amount_cents\":4200}"},
      {"type":"function_call","call_id":"c8","name":"pay_out","arguments":"{\"report_id\":\"R-8\",\"amount_cents\":900}"},
      {"type":"function_call","call_id":"c9","name":"pay_out","arguments":"{\"report_id\":\"R-9\",\"amount_cents\":15000}"}]}"#;
    let turn = OpenAiResponses.parse(body).unwrap();
    let employee = tool_contract_tests::expenses::employee();
    let task = Task::unlimited();
    let held = desk.dispatch_turn(&employee, &turn, &task).await;
    assert!(held.is_waiting());
    let pending: Vec<_> = held.pending_approvals().cloned().collect();
    desk.approve_pending(&pending[0], "manager:mia", HOUR)
        .await
        .unwrap();
    desk.reject_because(&pending[2].approval_id, RejectionReason::NotPermitted)
        .await
        .unwrap();

    let resumed = desk.resume_turn(&employee, held, &task).await;
    let codes: Vec<_> = resumed
        .answers()
        .iter()
        .map(|answer| answer.result.model.error().map(|error| error.code()))
        .collect();
    assert_eq!(
        codes,
        [
            None,
            Some(ErrorCode::ApprovalRequired),
            Some(ErrorCode::RejectedNotPermitted)
        ]
    );
    assert_eq!(
        resumed.answers()[0].result.model.status(),
        Status::Succeeded
    );
    let still = resumed.pending_approvals().next().expect("R-8 still waits");
    assert_eq!(still.approval_id, pending[1].approval_id);
    assert!(resumed.is_waiting());
    // What the model reads next: the real payout, bound to its own call id.
    let next = OpenAiResponses
        .write_results(&desk.binder(), &employee, &turn, resumed.answers())
        .unwrap();
    let paid: serde_json::Value =
        serde_json::from_str(next[0]["output"].as_str().unwrap()).unwrap();
    assert_eq!(next[0]["call_id"], "c7");
    assert_eq!(paid["data"]["report_id"], "R-7");
    assert_eq!(paid["execution"]["delivery"], "fresh");
    assert_eq!(payroll.all(), [("R-7".to_owned(), 4200)]);
}

tool_contract_tests::on_every_store!(
    a_refused_retry_with_another_amount_leaves_the_grant_and_the_approved_amount_runs_once,
    a_held_turn_resumed_after_the_decisions_reads_each_real_outcome,
);
