//! A knowledge-base search tool and the weather tools of the provider fixtures, with the
//! trusted context every projection test needs.

use std::sync::OnceLock;

use serde_json::Value;
use time::OffsetDateTime;
use tool_contract::providers::{Api, Correlation, ToolCall};
use tool_contract::{
    AuditKeys, Binder, CallContext, CallResult, Principal, RawProvenance, RawResult, Registry,
    SecretKey, ToolContract, ToolOutput,
};

/// Search the knowledge base for articles.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = KbHits, effect = read_only, source_label = "knowledge-base",
                producer_revision = "kb-v1")]
pub struct SearchKb {
    /// What to look for.
    #[tool_contract(max_len = 200)]
    pub query: String,
}

/// The articles that match.
#[derive(Debug, serde::Serialize, ToolOutput)]
pub struct KbHits {
    #[tool_output(bound = query)]
    pub query: String,
    #[tool_output(max_items = 10)]
    pub hits: Vec<KbHit>,
}

/// One matching article.
#[derive(Debug, serde::Serialize, ToolOutput)]
pub struct KbHit {
    #[tool_output(pattern = "^KB-[0-9]+$")]
    pub article_id: String,
    #[tool_output(max_len = 200)]
    pub title: String,
    #[tool_output(max_len = 2000)]
    pub text: String,
}

/// Current weather for a city.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Weather, effect = read_only, source_label = "weather",
                producer_revision = "weather-v1")]
pub struct GetWeather {
    /// The city.
    pub city: String,
}

/// The weather.
#[derive(Debug, serde::Serialize, ToolOutput)]
pub struct Weather {
    pub temp_c: i32,
}

/// Current local time in an IANA time zone.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = LocalTime, effect = read_only, source_label = "clock",
                producer_revision = "clock-v1")]
pub struct GetTime {
    /// The time zone.
    pub timezone: String,
}

/// The time.
#[derive(Debug, serde::Serialize, ToolOutput)]
pub struct LocalTime {
    pub local_time: String,
}

/// The registry of these tools, accepting every shipped adapter.
pub fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        tool_contract::registry![SearchKb, GetWeather, GetTime]
            .into_builder()
            .all_adapters()
            .build()
    })
}

/// 2026-08-22T10:00:00Z, for results whose time the dispatcher sets.
pub fn fixed_clock() -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp(1_787_392_800).unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

/// The application's audit keys (plain SHA-256 digests).
pub fn keys() -> AuditKeys {
    AuditKeys::new(SecretKey::new([0x5a; 32]).unwrap())
}

/// A binder over [`registry`] with [`keys`] and [`fixed_clock`].
pub fn binder() -> Binder<'static> {
    Binder::new(registry(), keys()).with_clock(fixed_clock)
}

/// The principal every call is made for.
pub fn alice() -> Principal {
    Principal::new("acme", "alice@acme.example")
}

/// An OpenAI Responses call of `name` with `arguments`.
pub fn call(call_id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        api: Api::OpenAiResponses,
        adapter_revision: tool_contract::providers::openai::ADAPTER
            .revision
            .to_owned(),
        response_id: Some("resp_1".to_owned()),
        call_id: call_id.to_owned(),
        correlation: Correlation::Id,
        name: name.to_owned(),
        arguments: arguments.as_bytes().to_vec(),
    }
}

/// A `search_kb` call for `query`, as operation `op-<call_id>` with key `key-<call_id>`.
pub fn search_call(call_id: &str, query: &str) -> CallContext {
    let arguments = serde_json::json!({ "query": query }).to_string();
    CallContext::new(
        call(&format!("call_{call_id}"), "search_kb", &arguments),
        format!("op-{call_id}"),
    )
    .with_idempotency_key(format!("key-{call_id}"))
}

/// The knowledge base's provenance claim.
pub fn kb_provenance() -> RawProvenance {
    RawProvenance::new("kb-v1", "2026-08-22T09:59:00Z").with_resource_revision("kb-index-42")
}

/// Runs `search_kb` for `context` with the handler output `output`.
pub fn search(context: &CallContext, output: &Value) -> CallResult {
    let input = SearchKb::parse_arguments(&context.call.arguments).unwrap();
    let raw = RawResult::new(output.to_string(), kb_provenance());
    binder().project_output(&alice(), context, &input, raw)
}

/// A hit list for `query`.
pub fn hits(query: &str) -> Value {
    serde_json::json!({
        "query": query,
        "hits": [
            { "article_id": "KB-1", "title": "Refund policy", "text": "Refunds within 30 days." },
            { "article_id": "KB-2", "title": "Shipping", "text": "We ship in 2 days." }
        ]
    })
}

/// Every object key anywhere in `value`.
pub fn all_keys(value: &Value) -> Vec<String> {
    let mut keys = Vec::new();
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(map) => {
                for (key, child) in map {
                    keys.push(key.clone());
                    stack.push(child);
                }
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    keys
}

/// Every string anywhere in `value` (keys and values).
pub fn all_strings(value: &Value) -> Vec<String> {
    let mut strings = all_keys(value);
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::String(text) => strings.push(text.clone()),
            Value::Object(map) => stack.extend(map.values()),
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    strings
}
