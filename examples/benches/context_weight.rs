//! What the refund desk's four tools cost a model's context, in bytes and in tokens (OpenAI's
//! `o200k_base` encoding, which tiktoken-rs ships): each provider's tool declarations, MCP's
//! `tools/list`, and what the model reads of one success and one refused call. Beside each,
//! the anchor: the same four tools written as plain rmcp tools (serde and schemars types,
//! rmcp's own schema functions, a `Json<T>` result), which is what a user pays without us.
//!
//! `cargo bench -p tool-contract-examples --bench context_weight` prints the table that
//! BENCHMARKS.md keeps. It counts; it does not time.

use std::sync::Arc;

use rmcp::handler::server::common::{schema_for_input, schema_for_output};
use rmcp::model::Tool;
use serde_json::{Value, json};
use tool_contract::control::{MemoryAuditLog, MemoryStore};
use tool_contract::mcp::McpServer;
use tool_contract::prelude::*;
use tool_contract_examples::refund_desk::{self as desk, Desk};

/// The anchor: the desk's tools as a plain rmcp server declares them.
mod anchor {
    // The argument types are only read by serde, as a plain rmcp tool's would be.
    #![allow(dead_code)]

    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    /// Read one order by its reference: its status, lines and total.
    #[derive(Deserialize, JsonSchema)]
    pub struct GetOrder {
        /// The order reference, e.g. ORDER-1001.
        pub order_ref: String,
    }

    #[derive(Serialize, JsonSchema)]
    pub struct Order {
        pub order_ref: String,
        pub status: OrderStatus,
        pub placed_at: String,
        pub lines: Vec<OrderLine>,
        pub total_cents: u64,
        /// Cents already refunded.
        pub refunded_cents: u64,
    }

    /// Where an order stands.
    #[derive(Serialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    pub enum OrderStatus {
        Delivered,
    }

    /// One line of an order.
    #[derive(Serialize, JsonSchema)]
    pub struct OrderLine {
        pub sku: String,
        pub title: String,
        pub quantity: u32,
        pub unit_cents: u64,
    }

    /// Search the help-centre articles on refunds, returns and shipping.
    #[derive(Deserialize, JsonSchema)]
    pub struct SearchKb {
        /// What to look for, in a few words.
        pub query: String,
    }

    /// The articles that match, best first.
    #[derive(Serialize, JsonSchema)]
    pub struct KbHits {
        pub hits: Vec<KbHit>,
    }

    /// One article, with the source it was read from.
    #[derive(Serialize, JsonSchema)]
    pub struct KbHit {
        pub article_id: String,
        pub title: String,
        pub excerpt: String,
        pub sources: Vec<Source>,
    }

    /// Where a fact was read.
    #[derive(Serialize, JsonSchema)]
    pub struct Source {
        pub id: String,
        pub label: String,
        pub tier: String,
        pub url: Option<String>,
        pub snippet: String,
        pub confidence: f64,
    }

    /// Draft a refund for an order; the person at the desk confirms it (two supervisors above 40.00).
    #[derive(Deserialize, JsonSchema)]
    pub struct CreateRefundDraft {
        /// The order to refund.
        pub order_ref: String,
        /// How much, in cents.
        pub amount_cents: u64,
        /// Why, in a sentence the customer would recognise.
        pub reason: String,
    }

    /// Read the refund draft of an order.
    #[derive(Deserialize, JsonSchema)]
    pub struct GetRefundDraft {
        /// The order whose draft to read.
        pub order_ref: String,
    }

    /// A refund draft, waiting for the payout run.
    #[derive(Serialize, JsonSchema)]
    pub struct RefundDraft {
        pub draft_ref: String,
        pub order_ref: String,
        pub amount_cents: u64,
        pub reason: String,
    }
}

/// One plain rmcp tool: its input schema as `Parameters<I>` gives it, its output schema as
/// `Json<O>` does.
fn anchor_tool<I, O>(name: &'static str, description: &'static str) -> Tool
where
    I: schemars::JsonSchema + 'static,
    O: schemars::JsonSchema + 'static,
{
    let input = schema_for_input::<I>().expect("an object schema");
    Tool::new(name, description, input).with_raw_output_schema(schema_for_output::<O>())
}

fn anchor_tools() -> Vec<Tool> {
    use anchor::*;
    vec![
        anchor_tool::<GetOrder, Order>("get_order", desk::GetOrder::spec().description()),
        anchor_tool::<SearchKb, KbHits>("search_kb", desk::SearchKb::spec().description()),
        anchor_tool::<CreateRefundDraft, RefundDraft>(
            "create_refund_draft",
            desk::CreateRefundDraft::spec().description(),
        ),
        anchor_tool::<GetRefundDraft, RefundDraft>(
            "get_refund_draft",
            desk::GetRefundDraft::spec().description(),
        ),
    ]
}

/// The anchor's tools in each provider's declaration shape: name, description, input schema.
fn anchor_declarations(tools: &[Tool], api: Api) -> Value {
    let declare = |tool: &Tool| {
        let (name, description) = (&tool.name, tool.description.as_deref().unwrap_or(""));
        let parameters = Value::Object((*tool.input_schema).clone());
        match api {
            Api::OpenAiResponses => json!({"type": "function", "name": name,
                "description": description, "parameters": parameters, "strict": false}),
            Api::AnthropicMessages => json!({"name": name, "description": description,
                "input_schema": parameters}),
            Api::GeminiGenerateContent => json!({"name": name, "description": description,
                "parametersJsonSchema": parameters}),
            _ => json!({"type": "function", "name": name, "description": description,
                "parameters": parameters}),
        }
    };
    let tools: Vec<Value> = tools.iter().map(declare).collect();
    match api {
        Api::GeminiGenerateContent => json!([{ "functionDeclarations": tools }]),
        _ => Value::Array(tools),
    }
}

/// The model's turn: one call that succeeds, one whose `order_ref` is not a string.
const TURN: &str = r#"{"id":"resp_w","status":"completed","output":[
  {"type":"function_call","call_id":"call_ok","name":"get_order","arguments":"{\"order_ref\":\"ORDER-1001\"}"},
  {"type":"function_call","call_id":"call_bad","name":"get_order","arguments":"{\"order_ref\":1001}"}]}"#;

/// What the model reads of the two calls, through the desk's dispatcher.
async fn desk_results() -> (String, String) {
    let desk = Arc::new(Desk::seeded());
    let audit = Arc::new(MemoryAuditLog::new(
        desk::audit_key().expect("the demo key"),
    ));
    let dispatcher =
        desk::four_eyes_dispatcher(&desk, audit, Arc::new(MemoryStore::new())).expect("built");
    let turn = OpenAiResponses
        .parse(TURN.as_bytes())
        .expect("a recorded turn");
    let principal = Principal::new("acme-shop", "agent:weight");
    let dispatched = dispatcher
        .dispatch_turn(&principal, &turn, &Task::unlimited())
        .await;
    let mut results = dispatched
        .answers()
        .iter()
        .map(|answer| String::from_utf8(answer.result.model.to_canonical_json()).expect("UTF-8"));
    let success = results.next().expect("the first call's result");
    let error = results.next().expect("the second call's result");
    (success, error)
}

/// What the model reads of the same two calls from the plain rmcp tool: `Json<Order>`'s text
/// content, and rmcp's invalid-params error for arguments serde refuses.
fn anchor_results() -> (String, String) {
    let order = anchor::Order {
        order_ref: "ORDER-1001".to_owned(),
        status: anchor::OrderStatus::Delivered,
        placed_at: "2026-11-20T14:03:00Z".to_owned(),
        lines: vec![
            anchor::OrderLine {
                sku: "MUG-STONE".to_owned(),
                title: "Stoneware mug".to_owned(),
                quantity: 1,
                unit_cents: 4990,
            },
            anchor::OrderLine {
                sku: "TEA-EARL".to_owned(),
                title: "Earl Grey, 100 g".to_owned(),
                quantity: 2,
                unit_cents: 850,
            },
        ],
        total_cents: 6690,
        refunded_cents: 0,
    };
    let success = serde_json::to_string(&order).expect("serializes");
    // rmcp's `Parameters<T>` reads the arguments with serde_json and answers its error text.
    let refused = serde_json::from_value::<anchor::GetOrder>(json!({"order_ref": 1001}))
        .err()
        .expect("an integer is not a string");
    let error = serde_json::to_string(&rmcp::ErrorData::invalid_params(
        format!("failed to deserialize parameters: {refused}"),
        None,
    ))
    .expect("serializes");
    (success, error)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let registry = desk::registry();
    let desk_server = McpServer::new(
        Arc::new(
            desk::four_eyes_dispatcher(
                &Arc::new(Desk::seeded()),
                Arc::new(MemoryAuditLog::new(desk::audit_key().expect("key"))),
                Arc::new(MemoryStore::new()),
            )
            .expect("built"),
        ),
        Principal::new("acme-shop", "mcp:weight"),
    );
    let anchor = anchor_tools();
    let (desk_success, desk_error) = runtime.block_on(desk_results());
    let (anchor_success, anchor_error) = anchor_results();

    let apis = [
        ("OpenAI Responses `tools`", Api::OpenAiResponses),
        ("Anthropic Messages `tools`", Api::AnthropicMessages),
        (
            "Gemini generateContent `functionDeclarations`",
            Api::GeminiGenerateContent,
        ),
        ("Gemini Interactions `tools`", Api::GeminiInteractions),
    ];
    let mut rows: Vec<(&str, String, String)> = apis
        .iter()
        .map(|&(what, api)| {
            let ours = tool_declarations(&registry, api).expect("declarable");
            (
                what,
                ours.to_string(),
                anchor_declarations(&anchor, api).to_string(),
            )
        })
        .collect();
    rows.push((
        "MCP `tools/list` result",
        json!({ "tools": desk_server.tools() }).to_string(),
        json!({ "tools": anchor }).to_string(),
    ));
    rows.push((
        "a success result (`get_order`)",
        desk_success,
        anchor_success,
    ));
    rows.push(("an argument error (`get_order`)", desk_error, anchor_error));

    let tokens = tiktoken_rs::o200k_base().expect("o200k_base ships with tiktoken-rs");
    let count = |text: &str| tokens.encode_ordinary(text).len();
    println!("| what | bytes | tokens | anchor bytes | anchor tokens | tokens ÷ anchor's |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    for (what, ours, anchor) in &rows {
        let (ours_tokens, anchor_tokens) = (count(ours), count(anchor));
        println!(
            "| {what} | {} | {ours_tokens} | {} | {anchor_tokens} | {:.2} |",
            ours.len(),
            anchor.len(),
            ours_tokens as f64 / anchor_tokens as f64,
        );
    }
    // What each envelope member costs in the success result: its tokens with the member
    // written, less its tokens without it.
    let success: Value = serde_json::from_str(&rows[5].1).expect("a model result");
    let whole = count(&rows[5].1);
    println!("\n| member of the success result | tokens |");
    println!("| --- | ---: |");
    for member in [
        "data",
        "schema_version",
        "status",
        "error",
        "execution",
        "provenance",
    ] {
        let mut without = success.clone();
        without.as_object_mut().expect("an object").remove(member);
        println!("| `{member}` | {} |", whole - count(&without.to_string()));
    }
    if std::env::args().any(|argument| argument == "--show") {
        for (what, ours, anchor) in &rows[5..] {
            println!("\n{what}\n  ours:   {ours}\n  anchor: {anchor}");
        }
    }
}
