//! Claims about a policy set proved for every call the contracts allow, or refuted with a
//! call, by Cedar's symbolic compiler and cvc5 (the solver named by `TOOL_CONTRACT_CVC5`).

use std::path::PathBuf;

use tool_contract::policy::{Claim, Policies, ProofError, Prover, Verdict};
use tool_contract::{ToolContract, ToolOutput};

/// Draft a refund.
#[allow(dead_code)] // Its fields are for the policies.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Draft, effect = non_idempotent_write, operation = same_arguments,
                approval = by_another, reconcile = manual, source_label = "desk",
                producer_revision = "desk-1")]
struct CreateRefundDraft {
    /// The order.
    #[tool_contract(max_len = 20)]
    order_id: String,
    /// How much, in cents.
    #[tool_contract(maximum = 1000000)]
    amount_cents: u32,
}

/// Look up an order.
#[allow(dead_code)]
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Draft, effect = read_only, source_label = "desk",
                producer_revision = "desk-1")]
struct GetOrder {
    /// The order.
    #[tool_contract(max_len = 20)]
    order_id: String,
}

#[derive(Debug, serde::Serialize, ToolOutput)]
struct Draft {
    draft_id: u32,
}

/// The solver, or `None` (with a line saying `test` was skipped).
fn cvc5(test: &str) -> Option<PathBuf> {
    tool_contract_tests::program_named_by("TOOL_CONTRACT_CVC5", test)
}

fn prover(policies: &str) -> Prover {
    Prover::new(
        &Policies::cedar("desk.cedar", policies),
        &tool_contract::registry![CreateRefundDraft, GetOrder],
    )
    .unwrap_or_else(|errors| panic!("{errors:?}"))
}

const EVERYONE_DRAFTS: &str = r#"
@id("drafts") permit(principal, action == Tools::Action::"create_refund_draft", resource);
"#;

const ABOVE_500: &str = "context.input.amount_cents > 50000";

#[tokio::test]
async fn a_claim_the_approval_rules_keep_is_proved() {
    let Some(cvc5) = cvc5("a_claim_the_approval_rules_keep_is_proved") else {
        return;
    };
    let mut prover = prover(&format!(
        r#"{EVERYONE_DRAFTS}
        @id("two-above-400") @approvers("2")
        permit(principal, action == Tools::Action::"create_refund_draft", resource)
          when {{ context.input.amount_cents > 40000 }};"#
    ))
    .solver(cvc5);
    let claim = Claim::needs_approvers("create_refund_draft", 2).when(ABOVE_500);
    assert_eq!(prover.prove(&claim).await, Ok(Verdict::Proved));
}

#[tokio::test]
async fn a_claim_the_approval_rules_break_is_refuted_with_a_call_it_is_false_of() {
    let Some(cvc5) = cvc5("a_claim_the_approval_rules_break_is_refuted_with_a_call_it_is_false_of")
    else {
        return;
    };
    let mut prover = prover(&format!(
        r#"{EVERYONE_DRAFTS}
        @id("two-above-600") @approvers("2")
        permit(principal, action == Tools::Action::"create_refund_draft", resource)
          when {{ context.input.amount_cents > 60000 }};"#
    ))
    .solver(cvc5);
    let claim = Claim::needs_approvers("create_refund_draft", 2).when(ABOVE_500);
    let Ok(Verdict::Refuted(call)) = prover.prove(&claim).await else {
        panic!("a draft of 500.01 to 600.00 needs one person")
    };
    let amount = call.input()["amount_cents"].as_i64().unwrap();
    assert!((50_001..=60_000).contains(&amount), "{call}");
}

#[tokio::test]
async fn a_claim_of_signed_approvals_needs_a_rule_that_asks_for_signatures() {
    let Some(cvc5) = cvc5("a_claim_of_signed_approvals_needs_a_rule_that_asks_for_signatures")
    else {
        return;
    };
    let rule = |signed: &str| {
        format!(
            r#"{EVERYONE_DRAFTS}
            @id("two") @approvers("2") {signed}
            permit(principal, action == Tools::Action::"create_refund_draft", resource)
              when {{ context.input.amount_cents > 50000 }};"#
        )
    };
    let claim = Claim::needs_approvers("create_refund_draft", 2)
        .signed()
        .when(ABOVE_500);
    let mut unsigned = prover(&rule("")).solver(&cvc5);
    assert!(matches!(
        unsigned.prove(&claim).await,
        Ok(Verdict::Refuted(_))
    ));
    let mut signed = prover(&rule(r#"@signed_approvals("passkeys")"#)).solver(&cvc5);
    assert_eq!(signed.prove(&claim).await, Ok(Verdict::Proved));
}

#[tokio::test]
async fn a_call_no_policy_permits_is_proved_never_permitted_and_one_permitted_is_shown() {
    let Some(cvc5) =
        cvc5("a_call_no_policy_permits_is_proved_never_permitted_and_one_permitted_is_shown")
    else {
        return;
    };
    let acme_only = r#"
        @id("acme-reads") permit(principal, action == Tools::Action::"get_order", resource)
          when { principal.tenant == "acme" };"#;
    let claim = Claim::never_permitted("get_order").when(r#"principal.tenant != "acme""#);
    let mut prover_of_acme = prover(acme_only).solver(&cvc5);
    assert_eq!(prover_of_acme.prove(&claim).await, Ok(Verdict::Proved));

    let everyone = r#"
        @id("reads") permit(principal, action == Tools::Action::"get_order", resource);"#;
    let mut prover_of_everyone = prover(everyone).solver(&cvc5);
    let Ok(Verdict::Refuted(call)) = prover_of_everyone.prove(&claim).await else {
        panic!("everyone may read")
    };
    assert_ne!(call.principal()["tenant"], "acme", "{call}");
}

/// Decimals, times, enums, sets of records and options, as the schema types a contract's
/// fields, are reasoned about as a call carries them.
#[tokio::test]
async fn every_kind_of_field_the_schema_types_can_be_proved_about() {
    let Some(cvc5) = cvc5("every_kind_of_field_the_schema_types_can_be_proved_about") else {
        return;
    };
    let policies =
        Policies::cedar("quotes.cedar", crate::policies::EVERY_KIND_OF_FIELD).namespace("Desk");
    let mut prover = Prover::new(
        &policies,
        &tool_contract::registry![crate::policies::QuoteRefund],
    )
    .unwrap_or_else(|errors| panic!("{errors:?}"))
    .solver(cvc5);
    for condition in [
        r#"context.input.rate.greaterThan(decimal("0.5"))"#,
        r#"context.input.asked_at >= datetime("2026-12-06T09:30:00Z")"#,
        r#"context.input.reason == Desk::quote_refund::Input::reason::"late""#,
        "context.input has note",
        "context.input.lines.isEmpty()",
    ] {
        let claim = Claim::never_permitted("quote_refund").when(condition);
        assert_eq!(
            prover.prove(&claim).await,
            Ok(Verdict::Proved),
            "{condition}"
        );
    }
    let Ok(Verdict::Refuted(call)) = prover.prove(&Claim::never_permitted("quote_refund")).await
    else {
        panic!("a damaged mug's quote is permitted")
    };
    assert!(
        call.input()["reason"].to_string().contains("damaged"),
        "{call}"
    );
}

#[tokio::test]
async fn one_prover_decides_claim_after_claim_on_one_solver() {
    let Some(cvc5) = cvc5("one_prover_decides_claim_after_claim_on_one_solver") else {
        return;
    };
    let mut prover = prover(EVERYONE_DRAFTS).solver(cvc5);
    let never = Claim::never_permitted("create_refund_draft");
    let bounded = Claim::never_permitted("create_refund_draft").when("false");
    for _ in 0..2 {
        assert!(matches!(
            prover.prove(&never).await,
            Ok(Verdict::Refuted(_))
        ));
        assert_eq!(prover.prove(&bounded).await, Ok(Verdict::Proved));
    }
}

#[tokio::test]
async fn a_claim_that_does_not_fit_the_contracts_is_refused_before_the_solver_runs() {
    // No solver: each refusal comes first.
    let mut prover = prover(EVERYONE_DRAFTS).solver("/nonexistent/cvc5");
    let refused = [
        (
            Claim::never_permitted("delete_order"),
            "no contract is named",
        ),
        (
            Claim::needs_approvers("create_refund_draft", 1),
            "counts from 2",
        ),
        (Claim::needs_approvers("create_refund_draft", 17), "to 16"),
        (Claim::needs_approvers("get_order", 2), "needs no approval"),
        (
            Claim::never_permitted("create_refund_draft").when("context.input.amount > 5"),
            "amount",
        ),
        (
            Claim::never_permitted("create_refund_draft").when("context.input.order_id > 5"),
            "type",
        ),
        (
            Claim::never_permitted("create_refund_draft")
                .when("true }; permit(principal, action, resource) when { true"),
            "not one Cedar expression",
        ),
        (
            Claim::never_permitted("create_refund_draft").signed(),
            "signed approvals are a claim of needs_approvers",
        ),
    ];
    for (claim, why) in refused {
        match prover.prove(&claim).await {
            Err(ProofError::Claim(refusal)) if refusal.contains(why) => {}
            other => panic!("{claim:?}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_solver_that_cannot_run_is_an_error_and_never_a_proof() {
    let mut prover = prover(EVERYONE_DRAFTS).solver("/nonexistent/cvc5");
    let claim = Claim::never_permitted("create_refund_draft");
    assert!(matches!(
        prover.prove(&claim).await,
        Err(ProofError::Solver(_))
    ));
}
