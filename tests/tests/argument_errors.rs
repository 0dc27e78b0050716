//! `INVALID_ARGUMENTS` tells the model, per path, which rule of the contract the arguments
//! broke and the rule's published value, through the whole dispatcher, and never the value it
//! refused.

use serde_json::{Value, json};
use tool_contract::dispatch::Dispatcher;
use tool_contract::{Principal, ToolContract, ToolOutput, registry};
use tool_contract_tests::kb::call;

/// File an expense claim.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[allow(dead_code)] // Only its reading is under test.
#[tool_contract(output = Filed, effect = read_only, max_bytes = 600, max_depth = 3)]
struct FileClaim {
    /// The claim's reference.
    #[tool_contract(pattern = "^CLM-[0-9]{3}$", max_len = 7)]
    claim_ref: String,
    /// Why, in a few words.
    #[tool_contract(min_len = 3, max_len = 20)]
    note: String,
    /// How much, in euros.
    #[tool_contract(minimum = 1, maximum = 500)]
    amount: u32,
    /// Nights away.
    nights: u8,
    /// The rate applied.
    rate: f64,
    /// What kind of expense.
    kind: Kind,
    /// Receipts' ids.
    #[tool_contract(max_items = 2)]
    receipts: Vec<String>,
    /// When it was spent.
    #[tool_contract(format = rfc3339_utc)]
    spent_at: String,
}

#[derive(Debug, serde::Serialize, serde::Deserialize, ToolOutput)]
#[serde(rename_all = "snake_case")]
enum Kind {
    Travel,
    Meals,
}

#[derive(serde::Serialize, ToolOutput)]
struct Filed {
    accepted: bool,
}

/// Arguments that meet every rule, with `member` replaced by `value` (or removed when `None`).
fn arguments_with(member: &str, value: Option<Value>) -> String {
    let mut arguments = json!({
        "claim_ref": "CLM-042", "note": "train to Lyon", "amount": 120, "nights": 1,
        "rate": 0.5, "kind": "travel", "receipts": ["r-1"], "spent_at": "2026-11-30T08:00:00Z",
    });
    match value {
        Some(value) => arguments[member] = value,
        None => {
            arguments.as_object_mut().unwrap().remove(member);
        }
    }
    arguments.to_string()
}

/// What the model reads of a call with `arguments`: its error's `violations`, after checking
/// that the result is `INVALID_ARGUMENTS` and that `planted` appears nowhere in it.
fn told(arguments: &str, planted: &str) -> Value {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let dispatcher = Dispatcher::for_development(registry![FileClaim])
        .handler(|_: FileClaim| async { Ok(Filed { accepted: true }) })
        .build()
        .unwrap();
    let context = dispatcher.context(call("call_1", "file_claim", arguments));
    let principal = Principal::new("acme", "agent:1");
    let task = tool_contract::dispatch::Task::unlimited();
    let dispatched = runtime.block_on(dispatcher.dispatch(&principal, &context, &task));
    let model = serde_json::to_value(&dispatched.result.model).unwrap();
    assert_eq!(model["error"]["code"], "INVALID_ARGUMENTS", "{model}");
    let text = String::from_utf8(dispatched.result.model.to_canonical_json()).unwrap();
    assert!(
        !text.contains(planted),
        "the value {planted} came back: {text}"
    );
    model["error"]["violations"].clone()
}

fn one(path: &str, constraint: &str, expected: Option<Value>) -> Value {
    let mut violation = json!({ "path": path, "constraint": constraint });
    if let Some(expected) = expected {
        violation["expected"] = expected;
    }
    json!([violation])
}

#[test]
fn a_string_too_long_names_max_length_and_the_limit() {
    let arguments = arguments_with("note", Some(json!("a very long note indeed, too long")));
    assert_eq!(
        told(&arguments, "indeed"),
        one("/note", "max_length", Some(json!(20)))
    );
}

#[test]
fn a_string_too_short_names_min_length_and_the_limit() {
    let arguments = arguments_with("note", Some(json!("zz")));
    assert_eq!(
        told(&arguments, "\"zz\""),
        one("/note", "min_length", Some(json!(3)))
    );
}

#[test]
fn a_string_off_its_pattern_names_the_pattern() {
    let arguments = arguments_with("claim_ref", Some(json!("CLM-4x2")));
    assert_eq!(
        told(&arguments, "4x2"),
        one("/claim_ref", "pattern", Some(json!("^CLM-[0-9]{3}$")))
    );
}

#[test]
fn a_value_of_another_type_names_the_type_expected() {
    let arguments = arguments_with("amount", Some(json!("one hundred")));
    assert_eq!(
        told(&arguments, "hundred"),
        one("/amount", "type", Some(json!("integer")))
    );
}

#[test]
fn an_unknown_member_is_named_without_its_value() {
    let mut arguments: Value = serde_json::from_str(&arguments_with("note", None)).unwrap();
    arguments["note"] = json!("train to Lyon");
    arguments["approved_by"] = json!("the-ceo-said-yes");
    assert_eq!(
        told(&arguments.to_string(), "the-ceo-said-yes"),
        one("/approved_by", "unknown_member", None)
    );
}

#[test]
fn a_missing_member_names_required() {
    let arguments = arguments_with("nights", None);
    assert_eq!(told(&arguments, "Lyon"), one("/nights", "required", None));
}

#[test]
fn a_number_out_of_its_bounds_names_the_bound() {
    let below = arguments_with("amount", Some(json!(0)));
    assert_eq!(
        told(&below, "Lyon"),
        one("/amount", "minimum", Some(json!(1)))
    );
    let above = arguments_with("amount", Some(json!(9_999)));
    assert_eq!(
        told(&above, "9999"),
        one("/amount", "maximum", Some(json!(500)))
    );
}

/// Beyond what its type holds too (`-5` for a `u32`, a number past 2^53), an integer is told
/// the contract's own bound on that side: the one the model was shown.
#[test]
fn an_integer_past_its_types_range_and_its_bound_names_the_bound() {
    for (value, planted) in [
        (json!(-5), "-5"),
        (json!(-9_007_199_254_740_993i64), "-9007"),
    ] {
        let below = arguments_with("amount", Some(value));
        assert_eq!(
            told(&below, planted),
            one("/amount", "minimum", Some(json!(1)))
        );
    }
    let above = arguments_with("amount", Some(json!(5_000_000_000u64)));
    assert_eq!(
        told(&above, "5000000000"),
        one("/amount", "maximum", Some(json!(500)))
    );
}

#[test]
fn an_integer_its_type_cannot_hold_names_the_range() {
    let arguments = arguments_with("nights", Some(json!(4_096)));
    assert_eq!(
        told(&arguments, "4096"),
        one("/nights", "integer_range", Some(json!([0, 255])))
    );
}

#[test]
fn a_value_outside_the_enum_names_the_allowed_values() {
    let arguments = arguments_with("kind", Some(json!("yacht")));
    assert_eq!(
        told(&arguments, "yacht"),
        one("/kind", "enum", Some(json!(["travel", "meals"])))
    );
}

#[test]
fn too_many_items_names_max_items() {
    let arguments = arguments_with("receipts", Some(json!(["r-1", "r-2", "r-3"])));
    assert_eq!(
        told(&arguments, "r-3"),
        one("/receipts", "max_items", Some(json!(2)))
    );
}

#[test]
fn a_string_not_in_its_format_names_the_format() {
    let arguments = arguments_with("spent_at", Some(json!("last tuesday")));
    assert_eq!(
        told(&arguments, "tuesday"),
        one("/spent_at", "format", Some(json!("rfc3339_utc")))
    );
}

#[test]
fn a_number_no_double_holds_names_exact_number() {
    let arguments = arguments_with("rate", Some(json!(0.5))).replace("0.5", "1e400");
    assert_eq!(
        told(&arguments, "1e400"),
        one("/rate", "exact_number", None)
    );
}

#[test]
fn a_repeated_member_names_duplicate_member() {
    let arguments = arguments_with("nights", Some(json!(1)))
        .replace("\"nights\":1", "\"nights\":1,\"nights\":77");
    assert_eq!(
        told(&arguments, "77"),
        one("/nights", "duplicate_member", None)
    );
}

#[test]
fn a_credential_member_names_forbidden_member() {
    let mut arguments: Value =
        serde_json::from_str(&arguments_with("nights", Some(json!(1)))).unwrap();
    arguments["api_key"] = json!("sk-live-planted");
    assert_eq!(
        told(&arguments.to_string(), "sk-live-planted"),
        one("/api_key", "forbidden_member", None)
    );
}

#[test]
fn arguments_that_are_not_json_name_json_syntax() {
    assert_eq!(
        told("{\"claim_ref\": CLM-042}", "CLM-042"),
        one("/claim_ref", "json_syntax", None)
    );
}

#[test]
fn arguments_over_the_contracts_size_name_max_bytes() {
    let arguments = arguments_with("note", Some(json!("x".repeat(700))));
    assert_eq!(
        told(&arguments, "xxxx"),
        one("", "max_bytes", Some(json!(600)))
    );
}

#[test]
fn arguments_nested_too_deep_name_max_depth() {
    let arguments = arguments_with("receipts", Some(json!([[["deep"]]])));
    assert_eq!(
        told(&arguments, "deep"),
        json!([
            {"path": "/receipts/0", "constraint": "type", "expected": "string"},
            {"path": "/receipts/0", "constraint": "max_depth", "expected": 3},
        ])
    );
}

#[test]
fn every_path_at_fault_is_told_each_with_its_own_rule() {
    let mut arguments: Value =
        serde_json::from_str(&arguments_with("note", Some(json!("zz")))).unwrap();
    arguments["amount"] = json!(true);
    let violations = told(&arguments.to_string(), "\"zz\"");
    assert_eq!(
        violations,
        json!([
            {"path": "/note", "constraint": "min_length", "expected": 3},
            {"path": "/amount", "constraint": "type", "expected": "integer"},
        ])
    );
}
