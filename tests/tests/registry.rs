//! The registry and the specs and schemas it holds.

use serde_json::json;
use tool_contract::contract::{RegistryError, Shape};
use tool_contract::vocabulary::{Approval, Reconcile};
use tool_contract::{Effect, Registry, ToolContract, ToolOutput};
use tool_contract_tests::GetOrder;

#[derive(Debug, serde::Serialize, ToolOutput)]
struct Draft {
    draft_ref: String,
}

/// Read a refund draft.
#[derive(serde::Deserialize, ToolContract)]
#[tool_contract(output = Draft, effect = read_only, source_label = "refunds", producer_revision = "r1")]
struct GetRefundDraft {
    draft_ref: String,
}

/// Create a refund draft
/// for one order.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Draft, effect = non_idempotent_write, operation = same_arguments, approval = by_caller,
                reconcile = GetRefundDraft, source_label = "refunds", producer_revision = "r1",
                handler_revision = "h7", output_revision = "draft-v1")]
struct CreateRefundDraft {
    /// The order to refund.
    order_ref: String,
    /// Why.
    reason: Option<String>,
}

/// Read a refund draft (a second revision of the same tool).
#[derive(serde::Deserialize, ToolContract)]
#[tool_contract(output = Draft, effect = read_only, source_label = "refunds",
                producer_revision = "r1", name = "get_refund_draft")]
struct GetRefundDraftV2 {
    draft_ref: String,
    /// A new argument.
    locale: String,
}

#[test]
fn the_default_name_is_the_struct_name_in_snake_case() {
    assert_eq!(CreateRefundDraft::NAME, "create_refund_draft");
    assert_eq!(CreateRefundDraft::spec().name(), "create_refund_draft");
}

/// Its lines wrapped in the source are one line to the model, as Markdown reads them.
#[test]
fn the_doc_comment_is_the_description() {
    assert_eq!(
        CreateRefundDraft::spec().description(),
        "Create a refund draft for one order."
    );
}

#[test]
fn the_spec_holds_effect_approval_reconcile_and_revisions() {
    let spec = CreateRefundDraft::spec();
    assert_eq!(spec.effect(), Effect::NonIdempotentWrite);
    assert_eq!(spec.approval(), Some(Approval::ByCaller));
    assert_eq!(spec.reconcile(), Some(Reconcile::Tool("get_refund_draft")));
    assert_eq!(spec.source_label(), "refunds");
    assert_eq!(spec.producer_revision(), "r1");
    assert_eq!(spec.revisions().handler.as_deref(), Some("h7"));
    assert_eq!(spec.revisions().output, "draft-v1");
    assert_eq!(spec.revisions().policy, None);
    assert_eq!(GetRefundDraft::spec().approval(), None);
}

#[test]
fn undeclared_revisions_are_digests_of_what_they_describe() {
    let revisions = GetRefundDraft::spec().revisions();
    for revision in [&revisions.input, &revisions.output, &revisions.effect] {
        assert!(revision.starts_with("sha256:"), "{revision}");
        assert_eq!(revision.len(), "sha256:".len() + 16);
    }
    // Same output type, same effect: same revisions; another input schema: another revision.
    let v2 = GetRefundDraftV2::spec().revisions();
    assert_eq!(revisions.output, v2.output);
    assert_eq!(revisions.effect, v2.effect);
    assert_ne!(revisions.input, v2.input);
    assert_ne!(
        revisions.effect,
        CreateRefundDraft::spec().revisions().effect
    );
}

#[test]
fn the_spec_lists_argument_fields_with_keys_docs_and_shapes() {
    let fields = CreateRefundDraft::spec().arguments().fields();
    assert_eq!(fields.len(), 2);
    assert_eq!(fields[0].name(), "order_ref");
    assert_eq!(fields[0].description(), Some("The order to refund."));
    assert!(matches!(fields[0].shape(), Shape::String));
    assert!(matches!(fields[1].shape(), Shape::Nullable(_)));
}

#[test]
fn an_optional_argument_takes_null_or_a_value() {
    let none = CreateRefundDraft::parse_arguments(br#"{"order_ref":"O-1","reason":null}"#).unwrap();
    assert_eq!((none.order_ref.as_str(), none.reason), ("O-1", None));
    let some =
        CreateRefundDraft::parse_arguments(br#"{"order_ref":"O-1","reason":"late"}"#).unwrap();
    assert_eq!(some.reason.as_deref(), Some("late"));
}

#[test]
fn the_input_schema_is_closed_and_requires_every_property() {
    assert_eq!(
        CreateRefundDraft::spec().input_schema(),
        &json!({
            "type": "object",
            "properties": {
                "order_ref": { "type": "string", "description": "The order to refund." },
                "reason": { "type": ["string", "null"], "description": "Why." }
            },
            "required": ["order_ref", "reason"],
            "additionalProperties": false
        })
    );
}

#[test]
fn the_output_schema_carries_bounds_formats_and_enums() {
    let schema = GetOrder::spec().output_schema();
    assert_eq!(schema["additionalProperties"], json!(false));
    assert_eq!(
        schema["properties"]["status"]["enum"],
        json!(["paid", "pending", "refunded", "on-hold"])
    );
    assert_eq!(
        schema["properties"]["receipt_url"]["type"],
        json!(["string", "null"])
    );
    assert_eq!(schema["properties"]["lines"]["maxItems"], json!(5));
    assert_eq!(
        schema["properties"]["lines"]["items"]["properties"]["quantity"],
        json!({ "type": "integer", "minimum": 1, "maximum": 255 })
    );
}

#[test]
fn the_registry_macro_holds_every_tool_by_name() {
    let registry = tool_contract::registry![GetOrder, GetRefundDraft, CreateRefundDraft];
    assert_eq!(registry.len(), 3);
    let names: Vec<_> = registry.tools().map(|spec| spec.name()).collect();
    assert_eq!(
        names,
        ["get_order", "get_refund_draft", "create_refund_draft"]
    );
    assert_eq!(
        registry.get("get_order").unwrap().effect(),
        Effect::ReadOnly
    );
    assert!(registry.get("delete_everything").is_none());
}

#[test]
fn the_builder_refuses_two_tools_with_one_name() {
    let result = Registry::builder()
        .register::<GetRefundDraft>()
        .and_then(|builder| builder.register::<GetRefundDraftV2>());
    assert_eq!(
        result.err(),
        Some(RegistryError::DuplicateName("get_refund_draft"))
    );
}

#[test]
fn the_builder_extends_the_forbidden_keys() {
    let registry = Registry::builder().forbid_key("tenant_id").build();
    assert!(registry.forbidden_keys().is_forbidden("tenantId"));
    assert!(registry.forbidden_keys().is_forbidden("password"));
}

#[test]
fn mcp_calls_are_accepted_by_default_and_refused_once_other_adapters_are_named() {
    use tool_contract::providers::{Api, Provider};
    let adapter = tool_contract::mcp::ADAPTER;
    assert_eq!(adapter.api, Api::McpToolsCall);
    assert_eq!(adapter.api.provider(), Provider::McpClient);
    assert_eq!(adapter.api.as_str(), "mcp_tools_call");
    assert_eq!(serde_json::to_value(adapter.api).unwrap(), "mcp_tools_call");
    assert_eq!(
        serde_json::to_value(Provider::McpClient).unwrap(),
        "mcp_client"
    );

    let bare = tool_contract::registry![GetOrder];
    assert!(bare.accepts_adapter(adapter.api, adapter.revision));
    let only_openai = bare
        .clone()
        .into_builder()
        .adapter(tool_contract::providers::openai::ADAPTER)
        .build();
    assert!(!only_openai.accepts_adapter(adapter.api, adapter.revision));
    let every_again = only_openai.into_builder().all_adapters().build();
    assert!(every_again.accepts_adapter(adapter.api, adapter.revision));
    let only_mcp = bare.into_builder().adapter(adapter).build();
    assert!(only_mcp.accepts_adapter(adapter.api, adapter.revision));
    assert!(!only_mcp.accepts_adapter(Api::OpenAiResponses, "openai-responses/2026-08"));
}
