//! The refund desk's tools as MCP lists them: every result the desk's replay produces validates
//! against its tool's `outputSchema` under an independent validator (the `jsonschema` crate), a
//! result outside the contract does not, and the lists a model or a client is handed stay
//! small.

use std::sync::Arc;

use jsonschema::Validator;
use serde_json::{Value, json};
use tool_contract::Principal;
use tool_contract::control::{MemoryAuditLog, MemoryStore};
use tool_contract::mcp::McpServer;
use tool_contract::providers::{Api, tool_declarations};
use tool_contract_examples::refund_desk::{self as desk, Desk};

use crate::replay::json_replay;

/// The desk's tools as its MCP server lists them.
fn listed_tools() -> Vec<rmcp::model::Tool> {
    let desk = Arc::new(Desk::seeded());
    let audit = Arc::new(MemoryAuditLog::new(desk::audit_key().unwrap()));
    let dispatcher =
        desk::four_eyes_dispatcher(&desk, audit, Arc::new(MemoryStore::new())).unwrap();
    McpServer::new(
        Arc::new(dispatcher),
        Principal::new("acme-shop", "mcp:test"),
    )
    .tools()
}

/// The validator of `tool`'s listed `outputSchema`, formats asserted.
fn output_validator(tool: &str) -> Validator {
    let tools = listed_tools();
    let listed = tools
        .iter()
        .find(|listed| listed.name == tool)
        .unwrap_or_else(|| panic!("{tool} is listed"));
    let schema = Value::Object((**listed.output_schema.as_ref().expect("an outputSchema")).clone());
    jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(&schema)
        .expect("the outputSchema compiles")
}

#[test]
fn every_result_of_the_replay_validates_against_its_tools_output_schema() {
    let mut checked = 0;
    let mut codes = std::collections::BTreeSet::new();
    for provider in ["openai", "anthropic", "gemini", "interactions"] {
        let (lines, _) = json_replay(provider);
        for line in lines {
            let tool = line["tool"].as_str().unwrap();
            let result = &line["model_result"];
            if let Some(code) = result["error"]["code"].as_str() {
                codes.insert(code.to_owned());
            }
            // `issue_gift_card` is no tool of the desk: its UNKNOWN_TOOL result has no schema
            // of its own, and must fit every tool's.
            let tools: Vec<&str> = match tool {
                "issue_gift_card" => vec!["get_order", "search_kb", "create_refund_draft"],
                tool => vec![tool],
            };
            for tool in tools {
                let validator = output_validator(tool);
                let errors: Vec<String> = validator
                    .iter_errors(result)
                    .map(|error| error.to_string())
                    .collect();
                assert!(errors.is_empty(), "{provider} {tool}: {errors:?}\n{result}");
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 4 * 13);
    let expected = [
        "APPROVAL_INVALID",
        "APPROVAL_REQUIRED",
        "INVALID_ARGUMENTS",
        "OUTCOME_UNKNOWN",
        "RATE_LIMIT",
        "UNKNOWN_TOOL",
    ];
    assert_eq!(
        codes.iter().map(String::as_str).collect::<Vec<_>>(),
        expected
    );
}

/// The replay's first result: `get_order` of ORDER-1001, as the model read it.
fn order_result() -> Value {
    let (lines, _) = json_replay("openai");
    assert_eq!(lines[0]["tool"], "get_order");
    lines[0]["model_result"].clone()
}

#[test]
fn a_result_outside_the_contract_fails_its_output_schema() {
    let validator = output_validator("get_order");
    let result = order_result();
    assert!(validator.is_valid(&result));
    let tamper: [(&str, &str, Value); 9] = [
        ("an unknown member in the data", "/data/discount", json!(5)),
        ("a status outside the enum", "/data/status", json!("lost")),
        (
            "a quantity below its minimum",
            "/data/lines/0/quantity",
            json!(0),
        ),
        (
            "a total of the wrong type",
            "/data/total_cents",
            json!("6690"),
        ),
        (
            "a SKU off its pattern",
            "/data/lines/0/sku",
            json!("mug stone"),
        ),
        (
            "a time not in UTC",
            "/data/placed_at",
            json!("2026-11-20T15:03:00+01:00"),
        ),
        ("an unknown envelope member", "/audit", json!({})),
        (
            "an error beside the data",
            "/error",
            json!({"code": "TOOL_ERROR"}),
        ),
        (
            "another schema version",
            "/schema_version",
            json!("tool-model-result-v1"),
        ),
    ];
    for (what, pointer, value) in tamper {
        let mut tampered = result.clone();
        let (parent, member) = pointer.rsplit_once('/').unwrap();
        tampered.pointer_mut(parent).unwrap()[member] = value;
        assert!(!validator.is_valid(&tampered), "{what} passed");
    }
    let mut missing = result;
    missing["data"]
        .as_object_mut()
        .unwrap()
        .remove("refunded_cents");
    assert!(!validator.is_valid(&missing), "a missing member passed");
}

#[test]
fn the_desks_mcp_tools_list_weighs_at_most_16_kb() {
    let listed = json!({ "tools": listed_tools() }).to_string();
    assert!(listed.len() <= 16_000, "{} bytes", listed.len());
}

#[test]
fn the_desks_gemini_declarations_weigh_at_most_4_kb() {
    let declared = tool_declarations(&desk::registry(), Api::GeminiGenerateContent).unwrap();
    let bytes = declared.to_string().len();
    assert!(bytes <= 4_000, "{bytes} bytes");
}
