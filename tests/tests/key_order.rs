//! Declared keys are read in any order and any spelling: the in-order reading of a
//! generated validator (each declared key recognised by its bytes) gives what the general
//! reading gives, and hands over to it at the first key written otherwise.

use tool_contract::{ToolContract, ToolOutput, Violations};
use tool_contract_tests::found;

/// Read a card.
#[derive(serde::Deserialize, ToolContract)]
#[tool_contract(output = Card, effect = read_only, source_label = "cards", producer_revision = "cards-1")]
struct GetCard {
    id: String,
}

#[derive(Debug, PartialEq, serde::Serialize, ToolOutput)]
struct Card {
    #[tool_output(bound = id)]
    id: String,
    name: String,
    count: u32,
    #[serde(rename = "say \"hi\"\\")]
    quoted: String,
}

fn read(text: &str) -> Result<Card, Violations> {
    GetCard { id: "c1".into() }.validate_output(text.as_bytes())
}

fn card() -> Card {
    Card {
        id: "c1".into(),
        name: "Ada".into(),
        count: 3,
        quoted: "q".into(),
    }
}

fn violations(text: &str) -> Vec<(String, &'static str)> {
    found(&read(text).expect_err("violations"))
}

#[test]
fn keys_in_declared_order_are_read() {
    let text = r#"{"id":"c1","name":"Ada","count":3,"say \"hi\"\\":"q"}"#;
    assert_eq!(read(text).unwrap(), card());
}

#[test]
fn keys_in_declared_order_with_whitespace_everywhere_are_read() {
    let text = "{ \"id\" :\t\"c1\" ,\n\"name\"\r: \"Ada\" , \"count\" : 3 , \"say \\\"hi\\\"\\\\\" : \"q\" }";
    assert_eq!(read(text).unwrap(), card());
}

#[test]
fn keys_in_canonical_order_are_read() {
    let text = r#"{"count":3,"id":"c1","name":"Ada","say \"hi\"\\":"q"}"#;
    assert_eq!(read(text).unwrap(), card());
}

#[test]
fn keys_in_another_order_are_read_the_same() {
    let text = r#"{"say \"hi\"\\":"q","count":3,"name":"Ada","id":"c1"}"#;
    assert_eq!(read(text).unwrap(), card());
    let text = r#"{"id":"c1","count":3,"name":"Ada","say \"hi\"\\":"q"}"#;
    assert_eq!(read(text).unwrap(), card());
}

#[test]
fn keys_spelled_with_escapes_are_read_the_same() {
    let text = r#"{"id":"c1","n\u0061me":"Ada","count":3,"say \u0022hi\u0022\u005c":"q"}"#;
    assert_eq!(read(text).unwrap(), card());
}

#[test]
fn a_key_repeated_after_the_declared_order_is_a_duplicate() {
    let text = r#"{"id":"c1","name":"Ada","count":3,"say \"hi\"\\":"q","id":"c1"}"#;
    assert_eq!(violations(text), [("/id".to_owned(), "duplicate_key")]);
    let text = r#"{"id":"c1","id":"c1","name":"Ada","count":3,"say \"hi\"\\":"q"}"#;
    assert_eq!(violations(text), [("/id".to_owned(), "duplicate_key")]);
}

#[test]
fn an_unknown_key_amid_the_declared_order_is_reported_and_the_rest_is_read() {
    let text = r#"{"id":"c1","extra":[1,{"a":2}],"name":"Ada","count":3,"say \"hi\"\\":"q"}"#;
    assert_eq!(violations(text), [("/extra".to_owned(), "unknown_field")]);
}

#[test]
fn a_key_that_starts_with_a_declared_key_is_another_key() {
    let text = r#"{"id":"c1","names":"Ada","count":3,"say \"hi\"\\":"q"}"#;
    assert_eq!(
        violations(text),
        [
            ("/names".to_owned(), "unknown_field"),
            ("/name".to_owned(), "missing_field")
        ]
    );
}

#[test]
fn a_key_missing_from_the_declared_order_is_missing() {
    let text = r#"{"id":"c1","count":3,"say \"hi\"\\":"q"}"#;
    assert_eq!(violations(text), [("/name".to_owned(), "missing_field")]);
}

#[test]
fn a_declared_key_without_its_colon_is_a_syntax_error() {
    for text in [
        r#"{"id":"c1","name" "Ada","count":3,"say \"hi\"\\":"q"}"#,
        r#"{"id":"c1" "name":"Ada","count":3,"say \"hi\"\\":"q"}"#,
        r#"{"id":"c1",,"name":"Ada","count":3,"say \"hi\"\\":"q"}"#,
    ] {
        let found = violations(text);
        assert_eq!(found.len(), 1, "{text}: {found:?}");
        assert_eq!(found[0].1, "syntax", "{text}");
    }
}

#[test]
fn a_key_that_needs_escapes_is_written_canonically() {
    let written = String::from_utf8(card().to_canonical_json()).unwrap();
    assert_eq!(
        written,
        r#"{"count":3,"id":"c1","name":"Ada","say \"hi\"\\":"q"}"#
    );
}

#[test]
fn each_violation_is_reported_at_its_own_key_in_declared_order() {
    let text = r#"{"id":"c2","name":7,"count":"3","say \"hi\"\\":"q"}"#;
    assert_eq!(
        violations(text),
        [
            ("/id".to_owned(), "bound_mismatch"),
            ("/name".to_owned(), "wrong_type"),
            ("/count".to_owned(), "wrong_type")
        ]
    );
}

#[test]
fn each_violation_is_reported_at_its_own_key_in_any_order() {
    let text = r#"{"name":7,"extra":1,"count":"3","id":"c2","say \"hi\"\\":"q"}"#;
    assert_eq!(
        violations(text),
        [
            ("/name".to_owned(), "wrong_type"),
            ("/extra".to_owned(), "unknown_field"),
            ("/count".to_owned(), "wrong_type"),
            ("/id".to_owned(), "bound_mismatch")
        ]
    );
}

/// Look at nothing.
#[derive(serde::Deserialize, ToolContract)]
#[tool_contract(output = Done, effect = read_only, source_label = "cards", producer_revision = "cards-1")]
struct Ping {}

/// An answer that carries nothing.
#[derive(Debug, PartialEq, serde::Serialize, ToolOutput)]
struct Done {}

#[test]
fn an_output_without_fields_is_the_empty_object() {
    assert_eq!(Done {}.to_canonical_json(), b"{}");
    assert_eq!(Ping {}.validate_output(b" { } "), Ok(Done {}));
    let refused = Ping {}.validate_output(br#"{"id":"c1"}"#).unwrap_err();
    assert_eq!(found(&refused), [("/id".to_owned(), "unknown_field")]);
}
