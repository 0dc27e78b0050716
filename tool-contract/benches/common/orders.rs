//! One read behind a dispatcher, for the benches that serve it (over MCP, over HTTP).

use std::sync::Arc;

use tool_contract::control::AuditSink;
use tool_contract::dispatch::{Dispatcher, HandlerContext};
use tool_contract::providers::{Api, Correlation, ToolCall};
use tool_contract::results::ProtectedAudit;
use tool_contract::{
    AuditKeys, CallContext, ModelResult, RawProvenance, RawResult, SecretKey, ToolContract,
    ToolFailure, ToolOutput,
};

/// Read one order.
#[derive(serde::Deserialize, ToolContract)]
#[tool_contract(output = Order, effect = read_only, source_label = "orders", producer_revision = "o-1")]
pub struct GetOrder {
    #[tool_contract(max_len = 32)]
    pub order_ref: String,
}

/// An order's total.
#[derive(serde::Serialize, ToolOutput)]
pub struct Order {
    #[tool_output(max_len = 32)]
    order_ref: String,
    #[tool_output(maximum = 1000000)]
    total_cents: u32,
}

/// Answers every order with a total of 42.00.
pub async fn get_order(input: GetOrder, _: HandlerContext) -> Result<RawResult, ToolFailure> {
    let output = format!(
        r#"{{"order_ref":"{}","total_cents":4200}}"#,
        input.order_ref
    );
    Ok(RawResult::new(
        output,
        RawProvenance::new("o-1", "2026-11-29T10:00:00Z"),
    ))
}

/// Keeps nothing: the bench measures the calls, not a growing log.
pub struct Discard;

impl AuditSink for Discard {
    fn append<'a>(
        &'a self,
        _: &'a ModelResult,
        _: &'a ProtectedAudit,
    ) -> tool_contract::control::AuditFuture<'a> {
        Box::pin(std::future::ready(Ok(())))
    }
}

/// The dispatcher of [`GetOrder`], its audits discarded.
pub fn dispatcher() -> Dispatcher {
    let registry = tool_contract::registry![GetOrder]
        .into_builder()
        .all_adapters()
        .build();
    Dispatcher::builder(
        registry,
        AuditKeys::new(SecretKey::new([3; 32]).expect("32 bytes")),
    )
    .handler(get_order)
    .audit_sink(Arc::new(Discard))
    .build()
    .expect("every tool has a handler")
}

/// A model's call of `name` for the order `ORDER-7`, as OpenAI's Responses API makes it, its
/// operation `op-1`.
pub fn call(name: &str) -> CallContext {
    let call = ToolCall {
        api: Api::OpenAiResponses,
        adapter_revision: "openai-responses/2026-08".to_owned(),
        response_id: Some("resp_1".to_owned()),
        call_id: "call_1".to_owned(),
        correlation: Correlation::Id,
        name: name.to_owned(),
        arguments: br#"{"order_ref":"ORDER-7"}"#.to_vec(),
    };
    CallContext::new(call, "op-1")
}
