//! Cedar policies as data: the schema the contracts make, policies validated against it when
//! the dispatcher is built, and each call decided by them on every path.

use std::sync::Arc;

use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};
use time::OffsetDateTime;
use tool_contract::control::MemoryStore;
use tool_contract::dispatch::{
    BuildError, BuildErrors, Dispatch, Dispatcher, DispatcherBuilder, Task,
};
use tool_contract::mcp::McpServer;
use tool_contract::policy::{CedarSchema, Policies, PolicyError};
use tool_contract::{ErrorCode, Principal, Status, ToolContract, ToolFailure, ToolOutput};
use tool_contract_tests::task_client::{self, Started};
use tool_contract_tests::tracker::{Remote, alice, builder, code, context};

/// Quote a refund for an order.
#[allow(dead_code)] // Its fields are for the policies; the handler reads one.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Quote, effect = read_only, source_label = "desk", producer_revision = "desk-1")]
pub(crate) struct QuoteRefund {
    /// The order.
    #[tool_contract(max_len = 20)]
    order_id: String,
    /// How much, in cents.
    #[tool_contract(maximum = 1000000)]
    amount_cents: u32,
    /// The share refunded.
    rate: f64,
    /// Whether the customer is waiting.
    urgent: bool,
    /// Why.
    reason: Reason,
    /// The order's lines.
    #[tool_contract(max_items = 5)]
    lines: Vec<Line>,
    /// A note for the desk.
    #[tool_contract(max_len = 200)]
    note: Option<String>,
    /// When the customer asked.
    #[serde(with = "time::serde::rfc3339")]
    asked_at: OffsetDateTime,
    /// Whatever the shop sent.
    #[tool_contract(free_form(max_depth = 2, max_bytes = 256))]
    extra: Value,
}

#[derive(Debug, serde::Serialize, serde::Deserialize, ToolOutput)]
#[serde(rename_all = "snake_case")]
enum Reason {
    Damaged,
    Late,
}

#[derive(Debug, serde::Serialize, serde::Deserialize, ToolOutput)]
struct Line {
    #[tool_output(max_len = 20)]
    sku: String,
    #[tool_output(maximum = 100)]
    count: u8,
}

#[derive(Debug, serde::Serialize, ToolOutput)]
pub(crate) struct Quote {
    refund_cents: u32,
}

async fn quote(input: QuoteRefund) -> Result<Quote, ToolFailure> {
    Ok(Quote {
        refund_cents: input.amount_cents,
    })
}

fn quote_arguments() -> Value {
    json!({
        "order_id": "A-1", "amount_cents": 4200, "rate": 0.5, "urgent": false,
        "reason": "damaged", "lines": [{ "sku": "mug", "count": 2 }], "note": null,
        "asked_at": "2026-12-06T10:00:00+01:00", "extra": { "channel": "mail" }
    })
}

#[test]
fn the_schema_gives_each_tool_an_action_whose_context_is_its_typed_input() {
    let schema = CedarSchema::of(&tool_contract::registry![QuoteRefund], "Desk").unwrap();
    assert_eq!(
        schema.as_cedar(),
        r#"namespace Desk {
  entity User = {
    "id": String,
    "tenant": String,
    "scopes"?: Set<String>
  };

  entity McpServer;

  action "call_tool";

  action "quote_refund" in [Action::"call_tool"] appliesTo {
    principal: [User],
    resource: [McpServer],
    context: {
      "input": {
        "order_id": String,
        "amount_cents": Long,
        "rate": decimal,
        "urgent": Bool,
        "reason": Desk::quote_refund::Input::reason,
        "lines": Set<{
          "sku": String,
          "count": Long
        }>,
        "note"?: String,
        "asked_at": datetime
      }
    }
  };
}

namespace Desk::quote_refund::Input {
  entity reason enum ["damaged", "late"];
}
"#
    );
}

#[test]
fn a_namespace_that_is_not_a_cedar_name_is_refused() {
    let error = CedarSchema::of(&tool_contract::registry![QuoteRefund], "my-desk").unwrap_err();
    assert!(error.message().contains("\"my-desk\""), "{error}");
}

/// A `permit` whose condition reads a field of every kind the schema types (a decimal, a
/// datetime, an enum, a set of records, an option), each as `quote_arguments()` satisfies it.
pub(crate) const EVERY_KIND_OF_FIELD: &str = r#"
permit(principal, action == Desk::Action::"quote_refund", resource) when {
    context.input.rate.lessThanOrEqual(decimal("0.5")) &&
    context.input.asked_at < datetime("2026-12-06T09:30:00Z") &&
    context.input.reason == Desk::quote_refund::Input::reason::"damaged" &&
    context.input.lines.contains({ sku: "mug", count: 2 }) &&
    !(context.input has note)
};"#;

/// The quote desk with `policies`, before `build`.
fn quote_desk(policies: &str) -> DispatcherBuilder {
    Dispatcher::for_development(tool_contract::registry![QuoteRefund])
        .handler(quote)
        .policies(Policies::cedar("desk.cedar", policies).namespace("Desk"))
}

/// The errors building the quote desk with `policies` ends in.
fn refused(policies: &str) -> Vec<PolicyError> {
    let errors: BuildErrors = quote_desk(policies).build().unwrap_err();
    errors
        .into_iter()
        .map(|error| {
            let BuildError::Policy(error) = error else {
                panic!("not a policy's error: {error}")
            };
            assert_eq!(error.file(), "desk.cedar");
            error
        })
        .collect()
}

#[test]
fn a_policy_naming_a_field_no_contract_has_fails_the_build_at_its_place() {
    let errors = refused(
        "permit(principal, action == Desk::Action::\"quote_refund\", resource)\n  \
         when { context.input.order_number == \"A-1\" };",
    );
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].policy(), Some("policy0"));
    assert_eq!((errors[0].line(), errors[0].column()), (Some(2), Some(10)));
    assert!(
        errors[0].message().contains("order_number"),
        "{}",
        errors[0]
    );
}

#[test]
fn a_policy_comparing_a_string_with_a_number_fails_the_build() {
    let errors = refused(
        "@id(\"big\")\npermit(principal, action == Desk::Action::\"quote_refund\", resource)\n  \
         when { context.input.order_id > 500 };",
    );
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].policy(), Some("big"));
    assert_eq!(errors[0].line(), Some(3));
}

#[test]
fn a_field_cedar_cannot_type_is_not_in_the_schema() {
    let errors = refused(
        "permit(principal, action == Desk::Action::\"quote_refund\", resource)\n  \
         when { context.input has extra };",
    );
    assert_eq!(errors.len(), 1, "{errors:?}");
}

#[test]
fn an_enum_member_the_contract_does_not_have_fails_the_build() {
    let errors = refused(
        "permit(principal, action == Desk::Action::\"quote_refund\", resource)\n  \
         when { context.input.reason == Desk::quote_refund::Input::reason::\"lost\" };",
    );
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].message().contains("lost"), "{errors:?}");
}

#[test]
fn every_invalid_policy_is_listed_at_once_in_the_order_of_the_text() {
    let errors = refused(
        "@id(\"first\")\npermit(principal, action, resource) when { context.input.nope };\n\
         @id(\"fine\")\npermit(principal, action == Desk::Action::\"quote_refund\", resource);\n\
         @id(\"second\")\nforbid(principal, action == Desk::Action::\"quote_refund\", resource)\n  \
         when { principal.name == \"mallory\" };",
    );
    let policies: Vec<_> = errors.iter().map(PolicyError::policy).collect();
    assert_eq!(policies, [Some("first"), Some("second")], "{errors:?}");
}

#[test]
fn a_syntax_error_names_its_line_and_column() {
    let errors =
        refused("permit(principal, action, resource);\npermit(principal, action resource);");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].policy(), None);
    assert_eq!(errors[0].line(), Some(2), "{errors:?}");
}

#[test]
fn a_template_and_a_duplicate_id_are_refused() {
    let template = refused("permit(principal == ?principal, action, resource);");
    assert!(template[0].message().contains("template"), "{template:?}");
    let twice = refused(
        "@id(\"same\")\npermit(principal, action, resource);\n\
         @id(\"same\")\nforbid(principal, action, resource);",
    );
    assert_eq!(twice.len(), 1, "{twice:?}");
    assert_eq!(twice[0].policy(), Some("same"));
}

async fn quoted(dispatcher: &Dispatcher, arguments: Value) -> Dispatch {
    let call = context("c1", "quote_refund", arguments, "op-1", "k-1");
    dispatcher
        .dispatch(&alice(), &call, &Task::unlimited())
        .await
}

#[tokio::test]
async fn decimals_times_enums_sets_and_options_are_decided_on_as_the_call_carried_them() {
    let dispatcher = quote_desk(EVERY_KIND_OF_FIELD).build().unwrap();
    let permitted = quoted(&dispatcher, quote_arguments()).await;
    assert_eq!(permitted.result.model.status(), Status::Succeeded);

    // Each changed argument alone makes the policy not apply.
    for (key, value) in [
        ("rate", json!(0.75)),
        ("asked_at", json!("2026-12-06T09:30:00Z")),
        ("reason", json!("late")),
        ("lines", json!([{ "sku": "mug", "count": 3 }])),
        ("note", json!("call first")),
    ] {
        let mut arguments = quote_arguments();
        arguments[key] = value;
        let denied = quoted(&dispatcher, arguments).await;
        assert_eq!(code(&denied), Some(ErrorCode::NotFound), "{key}");
        assert_eq!(
            denied.result.audit.detail.as_deref(),
            Some("the policies refused: no policy permits it"),
            "{key}"
        );
    }
}

#[tokio::test]
async fn a_number_a_cedar_decimal_cannot_hold_is_refused_not_rounded() {
    let dispatcher = quote_desk(r#"permit(principal, action, resource);"#)
        .build()
        .unwrap();
    let mut arguments = quote_arguments();
    arguments["rate"] = json!(0.33333);
    let denied = quoted(&dispatcher, arguments).await;
    assert_eq!(code(&denied), Some(ErrorCode::NotFound));
    let detail = denied.result.audit.detail.unwrap();
    assert!(detail.contains("four places"), "{detail}");
}

/// Reads of any document but the secret ones; messages within globex; nothing for mallory.
const TRACKER_POLICIES: &str = r#"
@id("docs")
permit(principal, action == Tools::Action::"read_doc", resource)
  unless { context.input.doc_id like "secret-*" };

@id("messages")
permit(principal, action == Tools::Action::"send_message", resource)
  when { context.input.to like "*@globex.example" };

@id("not-mallory")
forbid(principal, action, resource) when { principal.id == "mallory" };
"#;

fn tracker_with_policies(remote: &Arc<Remote>) -> Dispatcher {
    builder(remote)
        .policies(Policies::cedar("tracker.cedar", TRACKER_POLICIES))
        .build()
        .unwrap()
}

fn read(doc_id: &str) -> tool_contract::CallContext {
    context("c1", "read_doc", json!({ "doc_id": doc_id }), "op-1", "k-1")
}

#[tokio::test(start_paused = true)]
async fn a_call_a_policy_permits_runs() {
    let remote = Remote::new();
    let dispatcher = tracker_with_policies(&remote);
    let dispatch = dispatcher
        .dispatch(&alice(), &read("d-1"), &Task::unlimited())
        .await;
    assert_eq!(dispatch.result.model.status(), Status::Succeeded);
    assert_eq!(remote.reads(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_call_no_policy_permits_reads_exactly_like_not_found_and_runs_nothing() {
    let remote = Remote::new();
    let dispatcher = tracker_with_policies(&remote);
    let call = read("secret-1");
    let denied = dispatcher
        .dispatch(&alice(), &call, &Task::unlimited())
        .await;
    assert_eq!(code(&denied), Some(ErrorCode::NotFound));
    assert_eq!(remote.reads(), 0);
    let not_found = dispatcher.binder().project_failure(
        &alice(),
        &call,
        ToolFailure::new(tool_contract::FailureKind::NotFound, "gone"),
    );
    assert_eq!(denied.result.model, not_found.model);
    dispatcher
        .binder()
        .verify(&alice(), &call, &denied.result)
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_forbid_wins_over_a_permit_and_the_audit_names_it() {
    let remote = Remote::new();
    let dispatcher = tracker_with_policies(&remote);
    let mallory = Principal::new("acme", "mallory");
    let denied = dispatcher
        .dispatch(&mallory, &read("d-1"), &Task::unlimited())
        .await;
    assert_eq!(code(&denied), Some(ErrorCode::NotFound));
    assert_eq!(
        denied.result.audit.detail.as_deref(),
        Some("the policies refused: forbidden by not-mallory")
    );
    assert_eq!(remote.reads(), 0);
}

#[tokio::test(start_paused = true)]
async fn without_a_matching_permit_a_tool_is_refused() {
    let remote = Remote::new();
    let dispatcher = tracker_with_policies(&remote);
    let call = context(
        "c1",
        "discover_advisors",
        json!({ "schools": ["Lund"] }),
        "op-1",
        "k-1",
    );
    let denied = dispatcher
        .dispatch(&alice(), &call, &Task::unlimited())
        .await;
    assert_eq!(code(&denied), Some(ErrorCode::NotFound));
    assert_eq!(remote.reads(), 0);

    let unchecked = builder(&remote).build().unwrap();
    let ran = unchecked
        .dispatch(&alice(), &call, &Task::unlimited())
        .await;
    assert_eq!(ran.result.model.status(), Status::Succeeded);
    assert_eq!(remote.reads(), 1);
}

#[tokio::test(start_paused = true)]
async fn the_authorizer_and_the_policies_must_both_allow() {
    let remote = Remote::new();
    let dispatcher = builder(&remote)
        .authorizer(
            |principal: &Principal, _: &tool_contract::ToolSpec, _: &Value| {
                principal.subject != "bob"
            },
        )
        .policies(Policies::cedar("tracker.cedar", TRACKER_POLICIES))
        .build()
        .unwrap();
    let bob = Principal::new("acme", "bob");
    let refused = dispatcher
        .dispatch(&bob, &read("d-1"), &Task::unlimited())
        .await;
    assert_eq!(code(&refused), Some(ErrorCode::NotFound));
    assert_eq!(
        refused.result.audit.detail.as_deref(),
        Some("the authorizer refused")
    );
    let forbidden = dispatcher
        .dispatch(&alice(), &read("secret-1"), &Task::unlimited())
        .await;
    assert_eq!(code(&forbidden), Some(ErrorCode::NotFound));
    assert_eq!(
        forbidden.result.audit.detail.as_deref(),
        Some("the policies refused: no policy permits it")
    );
    let allowed = dispatcher
        .dispatch(&alice(), &read("d-1"), &Task::unlimited())
        .await;
    assert_eq!(allowed.result.model.status(), Status::Succeeded);
    assert_eq!(remote.reads(), 1);
}

fn arguments(value: Value) -> serde_json::Map<String, Value> {
    let Value::Object(arguments) = value else {
        unreachable!("an object literal")
    };
    arguments
}

#[tokio::test]
async fn over_mcp_a_denied_call_reads_not_found_and_runs_nothing() {
    let remote = Remote::new();
    let dispatcher = Arc::new(tracker_with_policies(&remote));
    let client = tool_contract_tests::mcp::discover(
        McpServer::new(dispatcher, alice()),
        task_client::TaskClient,
    )
    .await;
    let denied = client
        .call_tool(
            CallToolRequestParams::new("read_doc")
                .with_arguments(arguments(json!({ "doc_id": "secret-1" }))),
        )
        .await
        .unwrap();
    let structured = denied.structured_content.expect("structuredContent");
    assert_eq!(structured["error"]["code"], "NOT_FOUND", "{structured}");
    assert_eq!(remote.reads(), 0);
}

#[tokio::test]
async fn as_a_task_a_denied_write_reads_not_found_and_runs_nothing() {
    let remote = Remote::new();
    let dispatcher = Arc::new(
        builder(&remote)
            .store(Arc::new(MemoryStore::new()))
            .policies(Policies::cedar("tracker.cedar", TRACKER_POLICIES))
            .build()
            .unwrap(),
    );
    let client = task_client::session(task_client::server(dispatcher, alice())).await;
    let call = CallToolRequestParams::new("send_message").with_arguments(arguments(
        json!({ "to": "eve@evil.example", "text": "hello" }),
    ));
    let answer = match task_client::start(&client, call).await {
        Started::Answered(result) => result,
        Started::Task(task_id) => {
            let task =
                task_client::until(&client, &task_id, rmcp::model::TaskStatus::Completed).await;
            serde_json::to_value(task).unwrap()
        }
    };
    assert!(answer.to_string().contains("NOT_FOUND"), "{answer}");
    assert_eq!(remote.all_requests(), 0);
}

#[tokio::test]
async fn a_forbid_that_fails_refuses_the_call_where_cedar_would_skip_it() {
    let dispatcher = quote_desk(
        r#"@id("all") permit(principal, action, resource);
           @id("overflows")
           forbid(principal, action, resource)
             when { context.input.amount_cents * 9223372036854775807 > 0 };"#,
    )
    .build()
    .unwrap();
    let denied = quoted(&dispatcher, quote_arguments()).await;
    assert_eq!(code(&denied), Some(ErrorCode::NotFound));
    let detail = denied.result.audit.detail.unwrap();
    assert!(
        detail.starts_with("the policies refused: a policy failed"),
        "{detail}"
    );
    assert!(detail.contains("overflows"), "{detail}");
}

#[tokio::test(start_paused = true)]
async fn each_call_is_decided_for_its_own_principal_tenant_and_all() {
    let remote = Remote::new();
    let dispatcher = builder(&remote)
        .policies(Policies::cedar(
            "tenants.cedar",
            r#"permit(principal, action == Tools::Action::"read_doc", resource)
                 when { principal.tenant == "acme" };"#,
        ))
        .build()
        .unwrap();
    let call = read("d-1");
    let elsewhere = Principal::new("globex", "alice");
    for (principal, runs) in [(alice(), true), (elsewhere.clone(), false), (alice(), true)] {
        let dispatch = dispatcher
            .dispatch(&principal, &call, &Task::unlimited())
            .await;
        let status = dispatch.result.model.status();
        assert_eq!(status == Status::Succeeded, runs, "{principal:?}");
    }
    assert_eq!(remote.reads(), 2);
}

#[tokio::test]
async fn an_edit_a_person_approved_is_decided_by_the_policies_as_if_the_model_asked_it() {
    let remote = Remote::new();
    let dispatcher = tracker_with_policies(&remote);
    let call = tool_contract_tests::tracker::message("m1", "bob@globex.example");
    let pending = tool_contract_tests::tracker::pending_approval(&dispatcher, &call).await;
    let edited = json!({ "to": "eve@evil.example", "text": "hello" });
    dispatcher
        .approve_with_edits(
            &pending.approval_id,
            &pending.preview_sha256,
            &edited,
            "ana",
            tool_contract_tests::tracker::clock() + std::time::Duration::from_secs(3600),
        )
        .await
        .expect("the approval is recorded")
        .grant()
        .expect("one person grants it");
    let dispatch = tool_contract_tests::tracker::run(&dispatcher, &call).await;
    assert_eq!(code(&dispatch), Some(ErrorCode::NotFound), "{dispatch:?}");
    assert_eq!(remote.all_requests(), 0, "the edited call never ran");
}

/// Messages may be sent anywhere; those outside acme need two people, those within none, and
/// those to the board only count signed approvals.
const APPROVAL_RULES: &str = r#"
@id("messages")
permit(principal, action == Tools::Action::"send_message", resource);

@id("outside-two") @approvers("2")
permit(principal, action == Tools::Action::"send_message", resource)
  when { !(context.input.to like "*@acme.example") };

@id("inside-none") @approvers("0")
permit(principal, action == Tools::Action::"send_message", resource)
  when { context.input.to like "*@acme.example" };

@id("board-signed") @signed_approvals("passkeys")
permit(principal, action, resource)
  when { context.input has to && context.input.to == "board@acme.example" };
"#;

fn tracker_with_rules(remote: &Arc<Remote>) -> Dispatcher {
    builder(remote)
        .policies(Policies::cedar("rules.cedar", APPROVAL_RULES))
        .build()
        .unwrap()
}

#[tokio::test]
async fn an_approval_rule_asks_as_many_people_as_it_says_for_the_calls_it_matches() {
    let remote = Remote::new();
    let dispatcher = tracker_with_rules(&remote);
    let outside = tool_contract_tests::tracker::message("m1", "bob@globex.example");
    let pending = tool_contract_tests::tracker::pending_approval(&dispatcher, &outside).await;
    assert_eq!(pending.approvals_required, 2);
    assert!(!pending.signatures_required);
    assert_eq!(remote.all_requests(), 0);
}

#[tokio::test]
async fn an_approval_rule_of_no_one_runs_the_calls_it_matches_at_once() {
    let remote = Remote::new();
    let dispatcher = tracker_with_rules(&remote);
    let inside = tool_contract_tests::tracker::message("m1", "carol@acme.example");
    let ran = tool_contract_tests::tracker::run(&dispatcher, &inside).await;
    assert_eq!(ran.result.model.status(), Status::Succeeded, "{ran:?}");
    assert_eq!(remote.all_requests(), 1);
}

#[tokio::test]
async fn the_largest_ask_of_the_rules_that_match_holds_and_signatures_with_it() {
    let remote = Remote::new();
    let dispatcher = tracker_with_rules(&remote);
    // `inside-none` and `board-signed` both match: one person, with a passkey.
    let board = tool_contract_tests::tracker::message("m1", "board@acme.example");
    let pending = tool_contract_tests::tracker::pending_approval(&dispatcher, &board).await;
    assert_eq!(pending.approvals_required, 1);
    assert!(pending.signatures_required);
}

#[tokio::test]
async fn approval_rules_never_permit_a_call() {
    let remote = Remote::new();
    // Only approval rules: no access policy permits `send_message`.
    let rules_alone = APPROVAL_RULES.replace(
        "@id(\"messages\")\npermit(principal, action == Tools::Action::\"send_message\", resource);",
        "",
    );
    let dispatcher = builder(&remote)
        .policies(Policies::cedar("rules.cedar", rules_alone))
        .build()
        .unwrap();
    let outside = tool_contract_tests::tracker::message("m1", "bob@globex.example");
    let refused = tool_contract_tests::tracker::run(&dispatcher, &outside).await;
    assert_eq!(code(&refused), Some(ErrorCode::NotFound));
}

#[test]
fn an_approval_rule_that_forbids_names_the_principal_or_adds_an_approval_is_refused() {
    let remote = Remote::new();
    let errors = builder(&remote)
        .policies(Policies::cedar(
            "rules.cedar",
            r#"
            @id("forbids") @approvers("2")
            forbid(principal, action == Tools::Action::"send_message", resource);
            @id("names-bob") @approvers("2")
            permit(principal, action == Tools::Action::"send_message", resource)
              when { principal.id == "bob" };
            @id("on-a-read") @approvers("1")
            permit(principal, action == Tools::Action::"read_doc", resource);
            @id("too-many") @approvers("17")
            permit(principal, action == Tools::Action::"send_message", resource);
            "#,
        ))
        .build()
        .unwrap_err();
    let mut refused: Vec<&str> = errors
        .iter()
        .map(|error| match error {
            BuildError::Policy(error) => error.policy().unwrap(),
            other => panic!("{other}"),
        })
        .collect();
    refused.sort_unstable();
    assert_eq!(
        refused,
        ["forbids", "names-bob", "on-a-read", "too-many"],
        "{errors}"
    );
}

#[tokio::test(start_paused = true)]
async fn the_audit_names_the_permits_that_let_each_call_through() {
    let remote = Remote::new();
    let log = Arc::new(tool_contract::control::MemoryAuditLog::new(
        tool_contract_tests::tracker::audit_key(),
    ));
    let dispatcher = builder(&remote)
        .audit_sink(log.clone())
        .policies(Policies::cedar("tracker.cedar", TRACKER_POLICIES))
        .build()
        .unwrap();
    let looked = dispatcher
        .dispatch(&alice(), &read("d-1"), &Task::unlimited())
        .await;
    assert_eq!(looked.result.audit.policies, ["docs"]);

    // A write: asked, approved, then run; each record names the permit it ran under.
    let call = tool_contract_tests::tracker::message("m1", "bob@globex.example");
    tool_contract_tests::tracker::approve(&dispatcher, &call, "ana").await;
    let sent = tool_contract_tests::tracker::run(&dispatcher, &call).await;
    assert_eq!(sent.result.model.status(), Status::Succeeded, "{sent:?}");
    assert_eq!(sent.result.audit.policies, ["messages"]);

    // A refusal names none: its detail says why.
    let refused = dispatcher
        .dispatch(&alice(), &read("secret-1"), &Task::unlimited())
        .await;
    assert!(refused.result.audit.policies.is_empty());

    // The log keeps them as the records said.
    let kept: Vec<Vec<String>> = log
        .records()
        .into_iter()
        .map(|(_, audit)| audit.policies)
        .collect();
    assert_eq!(kept.first().unwrap(), &["docs"]);
    assert!(
        kept.iter().any(|policies| policies == &["messages"]),
        "{kept:?}"
    );
    assert!(kept.last().unwrap().is_empty());
}

#[test]
fn a_user_named_by_id_alone_is_refused_for_it_is_that_subject_in_every_tenant() {
    let errors = refused(
        "@id(\"scope\")\npermit(principal == Desk::User::\"alice\", action, resource);\n\
         @id(\"condition\")\npermit(principal, action, resource) when { principal == Desk::User::\"alice\" };\n\
         @id(\"attributes\")\npermit(principal, action, resource)\n  \
         when { principal.id == \"alice\" && principal.tenant == \"acme\" };",
    );
    let mut policies: Vec<_> = errors.iter().map(PolicyError::policy).collect();
    policies.sort_unstable();
    assert_eq!(policies, [Some("condition"), Some("scope")], "{errors:?}");
    assert!(
        errors[0].message().contains("every tenant"),
        "{}",
        errors[0]
    );
}
