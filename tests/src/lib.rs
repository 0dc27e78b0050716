//! Contracts shared by the conformance tests: an order desk small enough to read at a glance.

/// The repository's README, whose every Rust snippet runs as a doctest so that none rots.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;

/// The guide's chapters (rendered in the runtime crate's docs as `tool_contract::guide`),
/// whose snippets run here, with every feature and the services the tests have.
#[cfg(doctest)]
pub mod guide {
    #[doc = include_str!("../../tool-contract/guide/01-contracts.md")]
    pub struct Contracts;
    #[doc = include_str!("../../tool-contract/guide/02-results.md")]
    pub struct Results;
    #[doc = include_str!("../../tool-contract/guide/03-dispatch.md")]
    pub struct Dispatch;
    #[doc = include_str!("../../tool-contract/guide/04-approvals.md")]
    pub struct Approvals;
    #[doc = include_str!("../../tool-contract/guide/05-stores.md")]
    pub struct Stores;
    #[doc = include_str!("../../tool-contract/guide/06-mcp.md")]
    pub struct Mcp;
    #[doc = include_str!("../../tool-contract/guide/07-providers.md")]
    pub struct Providers;
    #[doc = include_str!("../../tool-contract/guide/08-audit.md")]
    pub struct Audit;
    #[doc = include_str!("../../tool-contract/guide/09-production.md")]
    pub struct Production;
    #[doc = include_str!("../../tool-contract/guide/10-tasks.md")]
    pub struct Tasks;
    #[doc = include_str!("../../tool-contract/guide/11-policies.md")]
    pub struct Policies;
}

pub mod browser;
pub mod console;
pub mod expenses;
pub mod http;
pub mod issuer;
pub mod kb;
pub mod listening;
pub mod mcp;
pub mod passkey;
pub mod schools;
pub mod task_client;
pub mod tasks;
pub mod tracker;

use serde_json::{Value, json};
use tool_contract::{ToolContract, ToolOutput, Violations};

/// The program `variable` names, or `None` (with a line saying `test` was skipped): how the
/// tests that need a program from outside Cargo (Node 22, ChromeDriver) find it.
pub fn program_named_by(variable: &str, test: &str) -> Option<std::path::PathBuf> {
    match std::env::var(variable) {
        Ok(path) if !path.is_empty() => Some(path.into()),
        _ => {
            eprintln!("skipped {test}: {variable} is not set");
            None
        }
    }
}

/// Read one order by its reference.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = OrderView, effect = read_only, source_label = "orders",
                producer_revision = "orders-v2")]
pub struct GetOrder {
    /// The order reference, e.g. ORDER-7.
    #[tool_contract(pattern = "^ORDER-[0-9]{1,12}$", max_len = 32)]
    pub order_ref: String,
    /// Whether to include the order lines.
    pub with_lines: bool,
}

/// One order, as the order service reports it.
#[derive(Debug, PartialEq, serde::Serialize, ToolOutput)]
#[tool_output(max_bytes = 2048, max_depth = 5)]
pub struct OrderView {
    #[tool_output(bound = order_ref)]
    pub order_ref: String,
    pub status: OrderStatus,
    #[tool_output(maximum = 1000000)]
    pub total_cents: u32,
    #[tool_output(min_len = 3, max_len = 3)]
    pub currency: String,
    #[tool_output(format = rfc3339_utc)]
    pub placed_at: String,
    #[tool_output(format = https_url)]
    pub receipt_url: Option<String>,
    #[tool_output(max_items = 5)]
    pub lines: Vec<OrderLine>,
    #[tool_output(max_len = 10)]
    pub note: Option<String>,
    #[tool_output(minimum = 0)]
    pub weight_kg: f64,
    #[tool_output(free_form(max_depth = 2, max_bytes = 256))]
    pub metadata: Value,
}

/// One line of an order.
#[derive(Debug, PartialEq, serde::Serialize, ToolOutput)]
pub struct OrderLine {
    #[tool_output(pattern = "^[A-Z0-9-]+$")]
    pub sku: String,
    #[tool_output(minimum = 1)]
    pub quantity: u8,
}

/// Where an order stands.
#[derive(Debug, PartialEq, serde::Serialize, ToolOutput)]
#[serde(rename_all = "snake_case")]
pub enum OrderStatus {
    Paid,
    Pending,
    Refunded,
    #[serde(rename = "on-hold")]
    OnHold,
}

/// The input of the call that every output in the tests answers.
#[must_use]
pub fn order_7() -> GetOrder {
    GetOrder {
        order_ref: "ORDER-7".to_owned(),
        with_lines: true,
    }
}

/// A valid output for [`order_7`].
#[must_use]
pub fn valid_output() -> Value {
    json!({
        "order_ref": "ORDER-7",
        "status": "paid",
        "total_cents": 4200,
        "currency": "EUR",
        "placed_at": "2026-11-29T10:00:00Z",
        "receipt_url": "https://shop.example.com/receipts/7",
        "lines": [{ "sku": "MUG-1", "quantity": 2 }],
        "note": null,
        "weight_kg": 0.35,
        "metadata": { "channel": "web" }
    })
}

/// Validates `value`'s JSON text as the output of [`order_7`].
pub fn validate(value: &Value) -> Result<OrderView, Violations> {
    order_7().validate_output(value.to_string().as_bytes())
}

/// Validates raw bytes as the output of [`order_7`].
pub fn validate_bytes(bytes: &[u8]) -> Result<OrderView, Violations> {
    order_7().validate_output(bytes)
}

/// Each violation as `(path, kind code)`, for assertions that read like the spec.
#[must_use]
pub fn found(violations: &Violations) -> Vec<(String, &'static str)> {
    violations
        .iter()
        .map(|v| (v.path().to_owned(), v.kind().code()))
        .collect()
}

/// [`found`] for a result expected to fail.
///
/// # Panics
/// If the result is `Ok`.
#[must_use]
pub fn rejected(result: Result<OrderView, Violations>) -> Vec<(String, &'static str)> {
    match result {
        Ok(view) => panic!("expected violations, got {view:?}"),
        Err(violations) => found(&violations),
    }
}

/// `valid_output()` with `pointer` set to `value`.
///
/// # Panics
/// If `pointer` names no value.
#[must_use]
pub fn with(pointer: &str, value: Value) -> Value {
    let mut output = valid_output();
    *output
        .pointer_mut(pointer)
        .expect("pointer into the valid output") = value;
    output
}

/// `valid_output()` without the key at `key` of the top-level object.
#[must_use]
pub fn without(key: &str) -> Value {
    let mut output = valid_output();
    output.as_object_mut().map(|object| object.remove(key));
    output
}
pub mod backends;
pub mod hooked;
pub mod postgres;
pub mod stalled;
pub mod waiting_cost;
