//! Output types that borrow their strings from the bytes they are read from: `&'a str` and
//! `Cow<'a, str>` fields, read exactly as owned ones are.

use std::borrow::Cow;

use tool_contract::vocabulary::ForbiddenKeys;
use tool_contract::{ToolContract, ToolOutput, ViolationKind};

/// Track a parcel.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Parcel, effect = read_only, source_label = "carrier",
                producer_revision = "carrier-1")]
struct TrackParcel {
    #[tool_contract(max_len = 20)]
    parcel_ref: String,
}

#[derive(Debug, serde::Serialize, ToolOutput)]
struct Parcel {
    #[tool_output(bound = parcel_ref)]
    parcel_ref: String,
    #[tool_output(max_len = 40)]
    status: String,
    #[tool_output(pattern = "^[A-Z]{2}$")]
    country: String,
    notes: Vec<String>,
    depot: Option<Depot>,
}

#[derive(Debug, serde::Serialize, ToolOutput)]
struct Depot {
    name: String,
    city: Option<String>,
}

/// `Parcel`, borrowed from the document.
#[derive(Debug, serde::Serialize, ToolOutput)]
struct ParcelView<'a> {
    #[tool_output(bound = parcel_ref)]
    parcel_ref: &'a str,
    #[tool_output(max_len = 40)]
    status: Cow<'a, str>,
    #[tool_output(pattern = "^[A-Z]{2}$")]
    country: &'a str,
    notes: Vec<&'a str>,
    depot: Option<DepotView<'a>>,
}

#[derive(Debug, serde::Serialize, ToolOutput)]
struct DepotView<'a> {
    name: &'a str,
    city: Option<Cow<'a, str>>,
}

const DOCUMENT: &str = r#"{"parcel_ref":"P-1","status":"out for delivery","country":"NL","notes":["ring twice","side door"],"depot":{"name":"Utrecht-2","city":"Utrecht"}}"#;

fn call() -> TrackParcel {
    TrackParcel {
        parcel_ref: "P-1".to_owned(),
    }
}

fn view(bytes: &[u8]) -> Result<ParcelView<'_>, tool_contract::Violations> {
    call().validate_output_borrowed(bytes, &ForbiddenKeys::DEFAULT)
}

/// Whether `text` lies inside `document`'s bytes.
fn points_into(text: &str, document: &[u8]) -> bool {
    document.as_ptr_range().contains(&text.as_ptr())
}

fn codes(violations: &tool_contract::Violations) -> Vec<(String, &'static str)> {
    violations
        .iter()
        .map(|violation| (violation.path().to_owned(), violation.kind().code()))
        .collect()
}

#[test]
fn every_borrowed_string_points_into_the_document() {
    let document = DOCUMENT.as_bytes();
    let view = view(document).expect("a valid document");
    let depot = view.depot.as_ref().expect("a depot");
    let city = depot.city.as_ref().expect("a city");
    assert!(matches!(view.status, Cow::Borrowed(_)));
    assert!(matches!(city, Cow::Borrowed(_)));
    for text in [
        view.parcel_ref,
        &view.status,
        view.country,
        depot.name,
        city,
    ]
    .into_iter()
    .chain(view.notes.iter().copied())
    {
        assert!(points_into(text, document), "{text:?} was copied");
    }
    assert_eq!(view.notes, ["ring twice", "side door"]);
}

#[test]
fn a_cow_field_decodes_escapes_into_a_copy() {
    let document = br#"{"parcel_ref":"P-1","status":"held \"at customs\"","country":"NL","notes":[],"depot":{"name":"A","city":"\u00c9vry"}}"#;
    let view = view(document).expect("a valid document");
    assert_eq!(view.status, r#"held "at customs""#);
    assert!(matches!(view.status, Cow::Owned(_)));
    let city = view.depot.and_then(|depot| depot.city).expect("a city");
    assert_eq!(city, "Évry");
    assert!(matches!(city, Cow::Owned(_)));
}

#[test]
fn a_str_field_refuses_a_string_with_escapes_at_its_path() {
    let document = br#"{"parcel_ref":"P-1","status":"ok","country":"NL","notes":["a","line\nbreak"],"depot":{"name":"Utrecht\/2","city":null}}"#;
    let violations = view(document).expect_err("escapes cannot be borrowed");
    assert_eq!(
        codes(&violations),
        [
            ("/notes/1".to_owned(), "borrowed_escapes"),
            ("/depot/name".to_owned(), "borrowed_escapes"),
        ]
    );
    assert_eq!(
        violations.as_slice()[0].kind(),
        &ViolationKind::BorrowedEscapes
    );
}

#[test]
fn a_borrowed_view_is_held_to_the_same_contract_as_the_owned_output() {
    let broken = [
        // Rules: too long, pattern.
        r#"{"parcel_ref":"P-1","status":"a status far longer than forty characters in all","country":"nl","notes":[],"depot":null}"#,
        // A `bound` field with another call's value.
        r#"{"parcel_ref":"P-2","status":"ok","country":"NL","notes":[],"depot":null}"#,
        // Unknown, forbidden, duplicate and missing keys.
        r#"{"parcel_ref":"P-1","status":"ok","status":"ok","country":"NL","notes":[],"depot":{"name":"A","city":null,"password":"x"},"extra":1}"#,
        // Wrong types and malformed JSON.
        r#"{"parcel_ref":"P-1","status":7,"country":"NL","notes":[true],"depot":null}"#,
        r#"{"parcel_ref":"P-1","status":"ok""#,
    ];
    let call = call();
    for document in broken {
        let owned = call
            .validate_output(document.as_bytes())
            .expect_err("the owned output refuses it");
        let borrowed = view(document.as_bytes()).expect_err("the view refuses it");
        assert!(!owned.is_empty());
        assert_eq!(codes(&borrowed), codes(&owned), "{document}");
    }
}

#[test]
fn a_borrowed_view_writes_the_same_canonical_json_as_the_owned_output() {
    let document = br#"{"depot":{"city":"\u00c9vry","name":"A"},"notes":["x"],"country":"NL","status":"tab\there","parcel_ref":"P-1"}"#;
    let owned = call().validate_output(document).expect("a valid document");
    let view = view(document).expect("a valid document");
    assert_eq!(view.to_canonical_json(), owned.to_canonical_json());
    assert_eq!(
        serde_json::to_value(&view).expect("serializes"),
        serde_json::to_value(&owned).expect("serializes")
    );
}
