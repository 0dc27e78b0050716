//! The refund desk's policy file asks what the Rust rules it stands for ask, and proves it
//! does for every draft.

use std::sync::Arc;

use tool_contract::control::{MemoryAuditLog, MemoryStore};
use tool_contract::dispatch::{Dispatcher, Task};
use tool_contract::policy::{Claim, Prover, Verdict};
use tool_contract::providers::{Api, Correlation, ToolCall};
use tool_contract::{CallContext, Principal, Status};
use tool_contract_examples::refund_desk::{self as desk, Desk};

/// A refund draft of `amount_cents` for order `ORDER-1001`.
fn draft(amount_cents: u64) -> CallContext {
    let arguments = serde_json::json!({
        "order_ref": "ORDER-1001",
        "amount_cents": amount_cents,
        "reason": "arrived damaged",
    });
    let call = ToolCall {
        api: Api::OpenAiResponses,
        adapter_revision: tool_contract::providers::openai::ADAPTER
            .revision
            .to_owned(),
        response_id: Some("resp_1".to_owned()),
        call_id: format!("call_{amount_cents}"),
        correlation: Correlation::Id,
        name: "create_refund_draft".to_owned(),
        arguments: arguments.to_string().into_bytes(),
    };
    CallContext::new(call, format!("op-{amount_cents}"))
}

/// How many approvers a draft of `amount_cents` waits for under `dispatcher`, and whether
/// only signed approvals count.
async fn asked(dispatcher: &Dispatcher, amount_cents: u64) -> (u32, bool) {
    let agent = Principal::new("acme-shop", "agent");
    let dispatch = dispatcher
        .dispatch(&agent, &draft(amount_cents), &Task::unlimited())
        .await;
    assert_ne!(dispatch.result.model.status(), Status::Succeeded);
    let pending = dispatch
        .pending_approval
        .unwrap_or_else(|| panic!("{amount_cents} waits: {:?}", dispatch.result.model));
    (pending.approvals_required, pending.signatures_required)
}

#[tokio::test]
async fn the_desks_policy_file_asks_what_its_rust_rules_ask() {
    let desk = Arc::new(Desk::seeded());
    let dispatcher = |by_policies: bool| {
        let audit = Arc::new(MemoryAuditLog::new(desk::audit_key().unwrap()));
        let store = Arc::new(MemoryStore::new());
        let party = desk::relying_party().unwrap();
        if by_policies {
            desk::policy_dispatcher(&desk, audit, store, party).unwrap()
        } else {
            desk::signed_four_eyes_dispatcher(&desk, audit, store, party).unwrap()
        }
    };
    let (by_rust, by_policies) = (dispatcher(false), dispatcher(true));
    let at_the_line = desk::TWO_SUPERVISORS_ABOVE_CENTS;
    for amount in [100, at_the_line, at_the_line + 1, 90_000] {
        let rust = asked(&by_rust, amount).await;
        assert_eq!(asked(&by_policies, amount).await, rust, "{amount} cents");
    }
    assert_eq!(asked(&by_rust, at_the_line + 1).await, (2, true));
    assert_eq!(asked(&by_rust, at_the_line).await, (1, false));
}

#[tokio::test]
async fn the_desks_policy_file_proves_every_draft_above_the_line_waits_for_two_signed_approvals() {
    let test =
        "the_desks_policy_file_proves_every_draft_above_the_line_waits_for_two_signed_approvals";
    let Some(cvc5) = tool_contract_tests::program_named_by("TOOL_CONTRACT_CVC5", test) else {
        return;
    };
    let mut prover = Prover::new(&desk::policies(), &desk::registry())
        .unwrap()
        .solver(cvc5);
    let above = |cents: u64| {
        Claim::needs_approvers("create_refund_draft", 2)
            .signed()
            .when(format!("context.input.amount_cents > {cents}"))
    };
    let at_the_line = desk::TWO_SUPERVISORS_ABOVE_CENTS;
    assert_eq!(prover.prove(&above(at_the_line)).await, Ok(Verdict::Proved));
    let Ok(Verdict::Refuted(call)) = prover.prove(&above(at_the_line - 1)).await else {
        panic!("a draft at the line needs one person")
    };
    assert_eq!(call.input()["amount_cents"], at_the_line, "{call}");
}
