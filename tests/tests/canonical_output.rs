//! The derive's one-pass canonical writer: the same bytes as RFC 8785 of the serde form.

use proptest::prelude::*;
use serde_json::Value;
use tool_contract::ToolOutput;
use tool_contract::json::canonical;
use tool_contract_tests::{OrderLine, OrderStatus, OrderView, valid_output, validate};

fn by_serde<T: serde::Serialize>(value: &T) -> String {
    String::from_utf8(canonical::to_vec(&serde_json::to_value(value).unwrap()).unwrap()).unwrap()
}

fn generated<T: ToolOutput>(value: &T) -> String {
    String::from_utf8(value.to_canonical_json()).unwrap()
}

#[test]
fn a_validated_output_writes_as_rfc8785_of_its_serde_form() {
    let view = validate(&valid_output()).unwrap();
    assert_eq!(generated(&view), by_serde(&view));
    assert!(
        generated(&view).starts_with(r#"{"currency":"EUR","lines":[{"quantity":2,"sku":"MUG-1"}]"#)
    );
}

/// Names that sort one way in UTF-8 and the other in UTF-16.
#[derive(serde::Serialize, ToolOutput)]
struct Glyphs {
    #[serde(rename = "\u{FF61}")]
    halfwidth: bool,
    #[serde(rename = "\u{1F600}")]
    smile: bool,
    #[serde(rename = "z")]
    last_in_rust: bool,
}

#[test]
fn member_names_are_sorted_by_utf16_at_compile_time() {
    let glyphs = Glyphs {
        halfwidth: true,
        smile: false,
        last_in_rust: true,
    };
    assert_eq!(
        generated(&glyphs),
        "{\"z\":true,\"\u{1F600}\":false,\"\u{FF61}\":true}"
    );
    assert_eq!(generated(&glyphs), by_serde(&glyphs));
}

/// Names that need escaping.
#[derive(serde::Serialize, ToolOutput)]
struct Escaped {
    #[serde(rename = "say \"hi\"\t")]
    quoted: Quoted,
    plain: bool,
}

#[derive(serde::Serialize, ToolOutput)]
enum Quoted {
    #[serde(rename = "back\\slash")]
    Backslash,
}

#[test]
fn names_that_need_escaping_are_escaped() {
    let escaped = Escaped {
        quoted: Quoted::Backslash,
        plain: false,
    };
    assert_eq!(
        generated(&escaped),
        r#"{"plain":false,"say \"hi\"\t":"back\\slash"}"#
    );
    assert_eq!(generated(&escaped), by_serde(&escaped));
}

#[test]
fn renamed_enum_values_write_their_wire_name() {
    assert_eq!(generated(&OrderStatus::OnHold), "\"on-hold\"");
}

fn status() -> impl Strategy<Value = OrderStatus> {
    (0..4u8).prop_map(|n| match n {
        0 => OrderStatus::Paid,
        1 => OrderStatus::Pending,
        2 => OrderStatus::Refunded,
        _ => OrderStatus::OnHold,
    })
}

fn free_form() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |v| v.is_finite())
            .prop_map(Value::from),
        "\\PC{0,6}".prop_map(Value::String),
    ];
    leaf.prop_recursive(2, 12, 4, |inner| {
        prop::collection::btree_map("[a-z\u{E000}\u{10000}]{1,3}", inner, 0..4)
            .prop_map(|map| Value::Object(map.into_iter().collect()))
    })
}

prop_compose! {
    fn order_view()(
        status in status(),
        total_cents in any::<u32>(),
        strings in prop::collection::vec("\\PC{0,12}|[\u{0}-\u{1f}\"\\\\\u{7f}\u{2028}]{0,4}", 4),
        receipt_url in prop::option::of("\\PC{0,8}"),
        lines in prop::collection::vec(("\\PC{0,6}", any::<u8>()), 0..4),
        note in prop::option::of("\\PC{0,6}"),
        weight_kg in any::<f64>().prop_filter("finite", |v| v.is_finite()),
        metadata in free_form(),
    ) -> OrderView {
        OrderView {
            order_ref: strings[0].clone(),
            status,
            total_cents,
            currency: strings[1].clone(),
            placed_at: strings[2].clone(),
            receipt_url,
            lines: lines.into_iter().map(|(sku, quantity)| OrderLine { sku, quantity }).collect(),
            note,
            weight_kg,
            metadata,
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn any_output_value_writes_as_rfc8785_of_its_serde_form(view in order_view()) {
        prop_assert_eq!(generated(&view), by_serde(&view));
    }
}

#[test]
fn a_non_finite_double_writes_as_serde_json_writes_it() {
    let mut view = validate(&valid_output()).unwrap();
    view.weight_kg = f64::NAN;
    assert_eq!(generated(&view), by_serde(&view));
    assert!(generated(&view).contains(r#""weight_kg":null"#));
}

/// A time written as `time::serde::rfc3339` writes it.
#[derive(serde::Serialize, ToolOutput)]
struct Stamped {
    #[serde(with = "time::serde::rfc3339")]
    at: time::OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    until: Option<time::OffsetDateTime>,
}

#[test]
fn a_date_time_writes_as_its_rfc3339_serde_form() {
    let at = time::OffsetDateTime::parse(
        "2026-11-29T10:00:00.5+01:00",
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    let stamped = Stamped { at, until: None };
    assert_eq!(generated(&stamped), by_serde(&stamped));
    assert_eq!(
        generated(&stamped),
        r#"{"at":"2026-11-29T10:00:00.5+01:00","until":null}"#
    );
}
