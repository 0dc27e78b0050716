//! The emitted JSON Schemas are valid draft 2020-12 and agree with the generated validators,
//! checked with the `jsonschema` crate on a corpus of accepted and rejected values.

use jsonschema::Validator;
use serde_json::{Value, json};
use tool_contract::ToolContract;
use tool_contract_tests::{GetOrder, order_7, valid_output, with, without};

fn compile(schema: &Value) -> Validator {
    jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(schema)
        .expect("the emitted schema compiles")
}

/// Output values with the verdict both sides must give.
fn output_corpus() -> Vec<(&'static str, Value, bool)> {
    let line = json!({ "sku": "MUG-1", "quantity": 1 });
    vec![
        ("valid", valid_output(), true),
        ("null optional", with("/receipt_url", json!(null)), true),
        ("unicode length", with("/currency", json!("€€€")), true),
        ("free-form scalar", with("/metadata", json!(12)), true),
        ("enum rename", with("/status", json!("on-hold")), true),
        (
            "unknown field",
            with("/lines/0", json!({ "sku": "A", "quantity": 1, "x": 1 })),
            false,
        ),
        ("missing field", without("placed_at"), false),
        (
            "string for integer",
            with("/total_cents", json!("1")),
            false,
        ),
        (
            "fraction for integer",
            with("/total_cents", json!(1.5)),
            false,
        ),
        ("bool for string", with("/currency", json!(true)), false),
        ("null for required", with("/currency", json!(null)), false),
        ("over u8", with("/lines/0/quantity", json!(256)), false),
        ("below minimum", with("/lines/0/quantity", json!(0)), false),
        (
            "above maximum",
            with("/total_cents", json!(1_000_001)),
            false,
        ),
        ("negative weight", with("/weight_kg", json!(-0.5)), false),
        ("enum outside", with("/status", json!("lost")), false),
        ("too long", with("/currency", json!("EURO")), false),
        ("too short", with("/currency", json!("EU")), false),
        ("pattern", with("/lines/0/sku", json!("mug 1")), false),
        (
            "offset time",
            with("/placed_at", json!("2026-11-29T10:00:00+01:00")),
            false,
        ),
        ("not a time", with("/placed_at", json!("yesterday")), false),
        (
            "http url",
            with("/receipt_url", json!("http://example.com/")),
            false,
        ),
        (
            "too many items",
            with("/lines", json!([line, line, line, line, line, line])),
            false,
        ),
        ("array for object", with("/lines/0", json!([])), false),
        ("object for array", with("/lines", json!({})), false),
    ]
}

#[test]
fn emitted_schemas_are_valid_draft_2020_12() {
    let registry = tool_contract::registry![GetOrder];
    for spec in registry.tools() {
        assert!(jsonschema::draft202012::meta::is_valid(spec.input_schema()));
        assert!(jsonschema::draft202012::meta::is_valid(
            spec.output_schema()
        ));
    }
}

#[test]
fn the_output_schema_agrees_with_the_generated_validator() {
    let schema = compile(GetOrder::spec().output_schema());
    let input = order_7();
    for (case, value, expected) in output_corpus() {
        assert_eq!(schema.is_valid(&value), expected, "schema, {case}");
        assert_eq!(
            input.validate_output_value(&value).is_ok(),
            expected,
            "validator, {case}"
        );
    }
}

#[test]
fn the_input_schema_agrees_with_the_generated_validator() {
    let schema = compile(GetOrder::spec().input_schema());
    let corpus = [
        (json!({ "order_ref": "ORDER-7", "with_lines": true }), true),
        (json!({ "order_ref": "ORDER-7", "with_lines": 1 }), false),
        (json!({ "order_ref": "ORDER-7" }), false),
        (
            json!({ "order_ref": "ORDER-7", "with_lines": true, "x": 1 }),
            false,
        ),
        (json!({ "order_ref": "ORDER-", "with_lines": true }), false),
        (
            json!({ "order_ref": format!("ORDER-{}", "1".repeat(27)), "with_lines": true }),
            false,
        ),
        (json!([]), false),
    ];
    for (value, expected) in corpus {
        assert_eq!(schema.is_valid(&value), expected, "schema, {value}");
        let parsed = GetOrder::parse_arguments(value.to_string().as_bytes());
        assert_eq!(parsed.is_ok(), expected, "validator, {value}");
    }
}

/// What a JSON Schema cannot say, the validator still refuses: these pass the schema.
#[test]
fn the_validator_is_stricter_than_the_schema_where_json_schema_cannot_speak() {
    let schema = compile(GetOrder::spec().output_schema());
    let input = order_7();
    let stricter = [
        (
            "bound to another call",
            with("/order_ref", json!("ORDER-8")),
        ),
        (
            "forbidden key in free form",
            with("/metadata", json!({ "api_key": "k" })),
        ),
        (
            "free form too deep",
            with("/metadata", json!({ "a": { "b": { "c": 1 } } })),
        ),
    ];
    for (case, value) in stricter {
        assert!(schema.is_valid(&value), "schema, {case}");
        assert!(
            input.validate_output_value(&value).is_err(),
            "validator, {case}"
        );
    }
}
