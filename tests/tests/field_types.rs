//! Every supported field type, read exactly; and the serde_json build the project relies on.

use serde_json::json;
use time::OffsetDateTime;
use tool_contract::{ToolContract, ToolOutput};
use tool_contract_tests::found;

/// Look up a product.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Product, effect = read_only, source_label = "catalog",
                producer_revision = "catalog-3")]
struct GetProduct {
    #[tool_contract(max_items = 2, max_len = 5)]
    tags: Vec<String>,
}

#[derive(Debug, serde::Serialize, ToolOutput)]
#[serde(rename_all = "camelCase")]
struct Product {
    display_name: String,
    #[tool_output(minimum = -40, maximum = 60)]
    storage_temp_c: i8,
    weight_kg: f64,
    in_stock: bool,
    #[serde(with = "time::serde::rfc3339")]
    observed_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    #[tool_output(format = rfc3339_utc)]
    discontinued_at: Option<OffsetDateTime>,
    availability: Availability,
    #[serde(rename = "type")]
    r#kind: String,
}

#[derive(Debug, PartialEq, serde::Serialize, ToolOutput)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
enum Availability {
    InStock,
    #[serde(rename = "gone")]
    Discontinued,
}

fn product() -> serde_json::Value {
    json!({
        "displayName": "Mug",
        "storageTempC": -5,
        "weightKg": 0.35,
        "inStock": true,
        "observedAt": "2026-11-29T10:00:00+01:00",
        "discontinuedAt": null,
        "availability": "IN_STOCK",
        "type": "kitchen"
    })
}

fn call() -> GetProduct {
    GetProduct { tags: vec![] }
}

#[test]
fn camel_case_keys_times_enums_and_raw_identifiers_read_exactly() {
    let view = call().validate_output_value(&product()).unwrap();
    assert_eq!(view.display_name, "Mug");
    assert_eq!(view.storage_temp_c, -5);
    assert!(view.in_stock);
    assert_eq!(view.observed_at.offset().whole_hours(), 1);
    assert_eq!(view.discontinued_at, None);
    assert_eq!(view.availability, Availability::InStock);
    assert_eq!(view.r#kind, "kitchen");
    assert!(view.weight_kg > 0.0);
}

#[test]
fn snake_case_keys_are_unknown_under_camel_case() {
    let mut output = product();
    output["display_name"] = json!("Mug");
    let violations = call().validate_output_value(&output).unwrap_err();
    assert_eq!(
        found(&violations),
        vec![("/display_name".to_owned(), "unknown_field")]
    );
}

#[test]
fn an_offset_date_time_must_be_rfc3339() {
    let mut output = product();
    output["observedAt"] = json!("29/11/2026");
    let violations = call().validate_output_value(&output).unwrap_err();
    assert_eq!(
        found(&violations),
        vec![("/observedAt".to_owned(), "invalid_format")]
    );
}

#[test]
fn an_rfc3339_utc_date_time_refuses_other_offsets() {
    let mut output = product();
    output["discontinuedAt"] = json!("2026-11-29T10:00:00+01:00");
    let violations = call().validate_output_value(&output).unwrap_err();
    assert_eq!(
        found(&violations),
        vec![("/discontinuedAt".to_owned(), "invalid_format")]
    );
    output["discontinuedAt"] = json!("2026-11-29T09:00:00Z");
    assert!(call().validate_output_value(&output).is_ok());
}

#[test]
fn a_small_integer_type_keeps_its_declared_bounds() {
    let mut output = product();
    output["storageTempC"] = json!(-41);
    let violations = call().validate_output_value(&output).unwrap_err();
    assert_eq!(
        found(&violations),
        vec![("/storageTempC".to_owned(), "below_minimum")]
    );
}

#[test]
fn string_rules_on_a_vec_apply_to_each_item_and_max_items_to_the_vec() {
    let ok = GetProduct::parse_arguments(br#"{"tags":["mug","blue"]}"#).unwrap();
    assert_eq!(ok.tags, ["mug", "blue"]);
    let violations =
        GetProduct::parse_arguments(br#"{"tags":["ok","too-long","x","y"]}"#).unwrap_err();
    assert_eq!(
        found(&violations),
        vec![
            ("/tags/1".to_owned(), "too_long"),
            ("/tags".to_owned(), "too_many_items")
        ]
    );
}

#[test]
fn serde_json_parses_shortest_doubles_exactly() {
    // Without serde_json's `float_roundtrip`, which this workspace enables, about 30% of
    // 17-digit shortest forms parse to a neighbouring double.
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    for _ in 0..10_000 {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let value = f64::from_bits(state >> 2);
        if !value.is_finite() {
            continue;
        }
        let text = format!("{value:e}");
        let parsed: f64 = serde_json::from_str(&text).unwrap();
        assert_eq!(parsed.to_bits(), value.to_bits(), "{text}");
    }
}

/// Look up an order's lines.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Lines, effect = read_only)]
struct GetLines {
    #[tool_contract(max_len = 12)]
    order_ref: String,
}

/// Derived types under `Option` and `Vec`, which the derive reads, writes and shapes from
/// `Line` through the runtime's `Option` and `Vec` helpers.
#[derive(Debug, PartialEq, serde::Serialize, ToolOutput)]
struct Lines {
    #[tool_output(max_items = 3)]
    shipped: Option<Vec<Line>>,
    #[tool_output(max_items = 3)]
    returned: Vec<Option<Line>>,
}

#[derive(Debug, PartialEq, serde::Serialize, ToolOutput)]
struct Line {
    #[tool_output(maximum = 99)]
    qty: u8,
}

#[test]
fn derived_types_under_option_and_vec_read_write_and_describe_their_layers() {
    let call = GetLines {
        order_ref: "ORDER-7".into(),
    };
    let bytes = br#"{"returned":[null,{"qty":3}],"shipped":[{"qty":1},{"qty":2}]}"#;
    let lines = call.validate_output(bytes).unwrap();
    assert_eq!(
        lines,
        Lines {
            shipped: Some(vec![Line { qty: 1 }, Line { qty: 2 }]),
            returned: vec![None, Some(Line { qty: 3 })],
        }
    );
    assert_eq!(
        lines.to_canonical_json(),
        bytes.to_vec(),
        "written back as read"
    );
    let empty = call
        .validate_output(br#"{"shipped":null,"returned":[]}"#)
        .unwrap();
    assert_eq!(
        empty.to_canonical_json(),
        br#"{"returned":[],"shipped":null}"#
    );

    // Each layer's rules and each item's path, as for any field.
    let bad = br#"{"shipped":[{"qty":1},{"qty":100}],"returned":[null,null,null,null]}"#;
    assert_eq!(
        found(&call.validate_output(bad).unwrap_err()),
        [
            ("/shipped/1/qty".to_owned(), "above_maximum"),
            ("/returned".to_owned(), "too_many_items"),
        ]
    );

    // The schema says the layers: a nullable list of lines, a list of nullable lines.
    let schema = GetLines::spec().output_schema();
    let shipped = &schema["properties"]["shipped"];
    let returned = &schema["properties"]["returned"];
    assert!(shipped.to_string().contains("\"null\""), "{shipped}");
    assert!(shipped.to_string().contains("\"array\""), "{shipped}");
    assert_eq!(returned["type"], "array", "{returned}");
    assert!(
        returned["items"].to_string().contains("\"null\""),
        "{returned}"
    );
}
