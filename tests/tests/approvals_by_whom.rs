//! `approval = by_another` means someone other than the caller, on every path; `by_caller`
//! means the caller's own confirmation is enough.

use std::sync::Arc;

use rmcp::model::{CallToolRequestParams, CallToolResponse};
use serde_json::{Value, json};
use tool_contract::control::{ApprovalError, Approver, MemoryStore};
use tool_contract::mcp::McpServer;
use tool_contract::{ErrorCode, Status};
use tool_contract_tests::backends::Backend;
use tool_contract_tests::expenses::{HOUR, desk, employee, pay, run, waiting};
use tool_contract_tests::mcp::{Wire, discover};
use tool_contract_tests::tracker::{self, Remote, message};

async fn by_another_an_approver_named_as_the_requester_approves_nothing(backend: &impl Backend) {
    let (desk, payroll) = desk(backend.open().await);
    let call = pay(&desk, "call_1", "R-7", 4200);
    let pending = waiting(&desk, &call).await;
    assert!(pending.by_another);
    // The employee who asked, however the application spells them.
    for own in ["E-1001", "e-1001", " E-1001 ", "E\u{200b}-1001"] {
        let refused = desk.approve_pending(&pending, own, HOUR).await;
        assert!(
            matches!(refused, Err(ApprovalError::CallerCannotApprove)),
            "{own:?}: {refused:?}"
        );
    }
    let still = run(&desk, &call).await;
    assert_eq!(
        still.result.model.error().map(|error| error.code()),
        Some(ErrorCode::ApprovalRequired)
    );
    assert_eq!(payroll.payouts("R-7"), 0);

    desk.approve_pending(&pending, "manager:mia", HOUR)
        .await
        .expect("another person approves");
    let paid = run(&desk, &call).await;
    assert_eq!(paid.result.model.status(), Status::Succeeded);
    assert_eq!(payroll.payouts("R-7"), 1);
}

#[tokio::test]
async fn by_caller_the_requesters_own_confirmation_is_enough() {
    let remote = Remote::new();
    let dispatcher = tracker::builder(&remote).build().unwrap();
    let call = message("m1", "bob@globex.example");
    let pending = tracker::pending_approval(&dispatcher, &call).await;
    assert!(!pending.by_another);
    let confirmed = dispatcher
        .approve_pending(&pending, "alice", HOUR)
        .await
        .expect("the caller confirms");
    assert!(confirmed.grant().is_some());
    let sent = tracker::run(&dispatcher, &call).await;
    assert_eq!(sent.result.model.status(), Status::Succeeded);
}

fn pay_arguments() -> Value {
    json!({ "report_id": "R-7", "amount_cents": 4200 })
}

/// On a handshake revision the caller's client, which takes forms, is asked nothing (an
/// elicitation would fail the request): the call waits for someone else, who approves it.
#[tokio::test]
async fn by_another_over_an_mcp_session_the_callers_client_is_asked_nothing() {
    let (desk, payroll) = desk(Arc::new(MemoryStore::new()));
    let desk = Arc::new(desk);
    let server = McpServer::new(Arc::clone(&desk), employee());
    let capabilities = json!({ "elicitation": { "form": {}, "url": {} } });
    let (mut wire, _) = Wire::initialize(server, "2025-11-25", capabilities).await;
    let call = json!({ "name": "pay_out", "arguments": pay_arguments() });
    let answer = wire.request("tools/call", call.clone()).await;
    let result = &answer["result"];
    assert_eq!(
        result["structuredContent"]["error"]["code"], "APPROVAL_REQUIRED",
        "{answer}"
    );
    let pending = &result["_meta"]["tool-contract/pending_approval"];
    assert_eq!(pending["preview"]["arguments"], pay_arguments(), "{answer}");
    assert_eq!(payroll.payouts("R-7"), 0);

    let waiting = desk
        .pending_approvals()
        .await
        .unwrap()
        .pop()
        .expect("pending");
    desk.approve_pending(&waiting, "manager:mia", HOUR)
        .await
        .unwrap();
    let again = wire.request("tools/call", call).await;
    assert_eq!(
        again["result"]["structuredContent"]["status"], "succeeded",
        "{again}"
    );
    assert_eq!(payroll.payouts("R-7"), 1);
}

/// A client that would approve every form it is shown.
#[derive(Clone, Default)]
struct Approving(Arc<std::sync::atomic::AtomicU32>);

impl rmcp::ClientHandler for Approving {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let capabilities = rmcp::model::ClientCapabilities::builder()
            .enable_elicitation()
            .build();
        rmcp::model::ClientConfig::new(
            capabilities,
            rmcp::model::Implementation::new("approving", "1"),
        )
    }

    async fn create_elicitation(
        &self,
        _request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut result = rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Accept);
        result.content = Some(json!({ "approve": true }));
        Ok(result)
    }
}

/// On 2026-07-28 no `input_required` asks the caller: the call answers APPROVAL_REQUIRED.
#[tokio::test]
async fn by_another_on_2026_07_28_the_caller_is_not_asked_to_approve() {
    let (desk, payroll) = desk(Arc::new(MemoryStore::new()));
    let person = Approving::default();
    let client = discover(McpServer::new(Arc::new(desk), employee()), person.clone()).await;
    let Value::Object(arguments) = pay_arguments() else {
        unreachable!("an object literal")
    };
    let answered = client
        .call_tool_once(CallToolRequestParams::new("pay_out").with_arguments(arguments))
        .await
        .expect("tools/call");
    let CallToolResponse::Complete(result) = answered else {
        panic!("the caller was asked: {answered:?}");
    };
    let code = &result.structured_content.as_ref().unwrap()["error"]["code"];
    assert_eq!(code, "APPROVAL_REQUIRED");
    assert_eq!(person.0.load(std::sync::atomic::Ordering::Relaxed), 0);
    assert_eq!(payroll.payouts("R-7"), 0);
}

tool_contract_tests::on_every_store!(
    by_another_an_approver_named_as_the_requester_approves_nothing
);

/// In the console, an enrolled approver whom the directory ties to the employee who asked
/// approves nothing with their own passkey; a manager's signature pays it once. (The console
/// refused a requester their own call before the contract could say `by_another`; this
/// holds it on the contract's path.)
#[tokio::test]
async fn by_another_the_requester_enrolled_in_the_console_approves_nothing() {
    let (tools, payroll) =
        tool_contract_tests::expenses::desk_builder(Arc::new(MemoryStore::new()));
    let desk = tool_contract_tests::console::desk_of(tracker::Remote::new(), tools).await;
    for approver in [
        Approver::new("emp-1001", "Eli Employee", ["expenses"], ["*"]).with_subject("E-1001"),
        Approver::new("mgr-mia", "Mia Manager", ["expenses"], ["*"]).with_subject("M-7"),
    ] {
        desk.dispatcher.put_approver(approver).await.expect("added");
    }
    let call = pay(&desk.dispatcher, "call_1", "R-7", 4200);
    let pending = waiting(&desk.dispatcher, &call).await;

    let (mut own, mut own_passkey) = desk.enrolled("emp-1001").await;
    let refused = own
        .decide(&pending.approval_id, "approve", &mut own_passkey)
        .await;
    // The requester's own call is not among those they may decide: not found for them.
    assert_eq!(refused.status, 404, "{}", refused.text);
    let still = run(&desk.dispatcher, &call).await;
    assert_eq!(
        still.result.model.error().map(|error| error.code()),
        Some(ErrorCode::ApprovalRequired)
    );
    assert_eq!(payroll.payouts("R-7"), 0);

    let (mut mia, mut mia_passkey) = desk.enrolled("mgr-mia").await;
    let approved = mia
        .decide(&pending.approval_id, "approve", &mut mia_passkey)
        .await;
    assert_eq!(approved.status, 200, "{}", approved.text);
    let paid = run(&desk.dispatcher, &call).await;
    assert_eq!(paid.result.model.status(), Status::Succeeded);
    assert_eq!(payroll.payouts("R-7"), 1);
}
