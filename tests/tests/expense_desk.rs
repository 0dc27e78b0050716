//! The expense desk as a new user tries it: a payout a manager approves, once per report.

use std::sync::Arc;

use tool_contract::control::MemoryStore;
use tool_contract::{ErrorCode, Status};
use tool_contract_tests::expenses::{HOUR, desk, pay, run, waiting};

#[tokio::test]
async fn a_refused_retry_with_another_amount_leaves_the_grant_and_the_approved_amount_runs_once() {
    let (desk, payroll) = desk(Arc::new(MemoryStore::new()));
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
