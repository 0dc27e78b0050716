//! `parse_arguments`: a model's arguments, read exactly.

use tool_contract::ToolContract;
use tool_contract::vocabulary::ForbiddenKeys;
use tool_contract_tests::{GetOrder, found};

fn codes(bytes: &[u8]) -> Vec<(String, &'static str)> {
    match GetOrder::parse_arguments(bytes) {
        Ok(input) => panic!("expected violations, got {input:?}"),
        Err(violations) => found(&violations),
    }
}

#[test]
fn valid_arguments_come_back_typed() {
    let input = GetOrder::parse_arguments(br#"{"order_ref":"ORDER-7","with_lines":true}"#).unwrap();
    assert_eq!(input.order_ref, "ORDER-7");
    assert!(input.with_lines);
}

#[test]
fn arguments_breaking_a_field_rule_fail_with_the_fields_path() {
    assert_eq!(
        codes(br#"{"order_ref":"order 7","with_lines":true}"#),
        vec![("/order_ref".to_owned(), "pattern_mismatch")]
    );
}

#[test]
fn arguments_of_the_wrong_type_are_not_coerced() {
    assert_eq!(
        codes(br#"{"order_ref":"ORDER-7","with_lines":"true"}"#),
        vec![("/with_lines".to_owned(), "wrong_type")]
    );
}

#[test]
fn unknown_and_missing_arguments_both_fail() {
    assert_eq!(
        codes(br#"{"order_ref":"ORDER-7","lines":true}"#),
        vec![
            ("/lines".to_owned(), "unknown_field"),
            ("/with_lines".to_owned(), "missing_field")
        ]
    );
}

#[test]
fn arguments_that_are_not_an_object_fail() {
    assert_eq!(codes(b"[]"), vec![(String::new(), "wrong_type")]);
    assert_eq!(codes(b"\"ORDER-7\""), vec![(String::new(), "wrong_type")]);
}

#[test]
fn a_forbidden_key_in_raw_arguments_is_named_as_forbidden() {
    assert_eq!(
        codes(br#"{"order_ref":"ORDER-7","with_lines":true,"Authorization":"Bearer x"}"#),
        vec![("/Authorization".to_owned(), "forbidden_key")]
    );
}

#[test]
fn a_registrys_extra_forbidden_key_applies_to_arguments() {
    let keys = ForbiddenKeys::default().with_name("tenant");
    let violations = GetOrder::parse_arguments_with(
        br#"{"order_ref":"ORDER-7","with_lines":true,"Tenant":"acme"}"#,
        &keys,
    )
    .unwrap_err();
    assert_eq!(
        found(&violations),
        vec![("/Tenant".to_owned(), "forbidden_key")]
    );
}

#[test]
fn duplicate_argument_keys_are_refused() {
    assert_eq!(
        codes(br#"{"order_ref":"ORDER-7","order_ref":"ORDER-8","with_lines":true}"#),
        vec![("/order_ref".to_owned(), "duplicate_key")]
    );
}

#[test]
fn arguments_over_the_default_size_limit_fail() {
    let huge = format!(
        r#"{{"order_ref":"{}","with_lines":true}}"#,
        "9".repeat(2 << 20)
    );
    assert_eq!(codes(huge.as_bytes()), vec![(String::new(), "too_large")]);
}
