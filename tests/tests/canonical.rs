//! RFC 8785 conformance: the official vectors, Appendix B, the number file, edge cases, and a
//! differential check against serde_jcs.

use std::fs;
use std::path::PathBuf;

use proptest::prelude::*;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tool_contract::json::canonical::{self, CanonicalError};

fn vectors(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("vectors/jcs")
        .join(path)
}

fn canonical_text(json: &str) -> Result<String, CanonicalError> {
    canonical::canonicalize(json.as_bytes()).map(|bytes| String::from_utf8(bytes).unwrap())
}

fn double_text(value: f64) -> String {
    String::from_utf8(canonical::to_vec(&json!(value)).unwrap()).unwrap()
}

#[test]
fn official_inputs_canonicalize_to_the_official_outputs() {
    let names = [
        "arrays",
        "french",
        "structures",
        "unicode",
        "values",
        "weird",
    ];
    for name in names {
        let input = fs::read(vectors(&format!("input/{name}.json"))).unwrap();
        let expected = fs::read(vectors(&format!("output/{name}.json"))).unwrap();
        let actual = canonical::canonicalize(&input).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&actual),
            String::from_utf8_lossy(&expected),
            "{name}"
        );
    }
}

#[test]
fn appendix_b_numbers_serialize_as_the_rfc_says() {
    let table = fs::read_to_string(vectors("rfc8785-appendix-b.tsv")).unwrap();
    let mut rows = 0;
    for line in table.lines().skip(1) {
        let mut columns = line.split('\t');
        let (hex, expected) = (columns.next().unwrap(), columns.next().unwrap());
        let value = f64::from_bits(u64::from_str_radix(hex, 16).unwrap());
        if expected == "ERROR" {
            assert!(!value.is_finite(), "{hex}");
            assert!(serde_json::Number::from_f64(value).is_none());
        } else {
            assert_eq!(double_text(value), expected, "{hex}");
        }
        rows += 1;
    }
    assert_eq!(rows, 26);
}

#[test]
fn the_first_ten_thousand_lines_of_the_number_file_serialize_and_parse_back() {
    let file = fs::read(vectors("numbers/es6testfile-10k.txt")).unwrap();
    assert_eq!(
        format!("{:x}", Sha256::digest(&file)),
        "b9f7a8e75ef22a835685a52ccba7f7d6bdc99e34b010992cbc5864cd12be6892",
        "the file is the published prefix"
    );
    let text = String::from_utf8(file).unwrap();
    for line in text.lines() {
        let (hex, expected) = line.split_once(',').unwrap();
        let value = f64::from_bits(u64::from_str_radix(hex, 16).unwrap());
        assert_eq!(double_text(value), expected, "{hex}");
        // Parsing the shortest form must give back the very same double.
        assert_eq!(canonical_text(expected).unwrap(), expected, "{hex}");
    }
    assert_eq!(text.lines().count(), 10_000);
}

#[test]
fn hand_derived_edge_cases_hold() {
    let cases = fs::read_to_string(vectors("extra/edge-cases.jsonl")).unwrap();
    for line in cases.lines() {
        let case: Value = serde_json::from_str(line).unwrap();
        let input = case["input"].as_str().unwrap();
        match case["expected"].as_str() {
            Some(expected) => assert_eq!(canonical_text(input).unwrap(), expected, "{case}"),
            None => assert!(canonical_text(input).is_err(), "{case}"),
        }
    }
}

#[test]
fn minus_zero_is_zero() {
    assert_eq!(canonical_text("[-0, -0.0, -0e-3]").unwrap(), "[0,0,0]");
    assert_eq!(double_text(-0.0), "0");
}

#[test]
fn exponents_start_at_1e21_and_below_1e_minus_6() {
    assert_eq!(
        canonical_text("[1e20, 1e21, 1e-6, 1e-7]").unwrap(),
        "[100000000000000000000,1e+21,0.000001,1e-7]"
    );
}

#[test]
fn the_smallest_subnormal_is_5e_minus_324() {
    assert_eq!(canonical_text("5e-324").unwrap(), "5e-324");
    assert_eq!(double_text(f64::from_bits(1)), "5e-324");
}

#[test]
fn keys_sort_by_utf16_code_units_not_utf8_bytes() {
    // U+FF61 is one code unit (0xFF61); U+1F600 is the pair 0xD83D 0xDE00, which sorts first
    // in UTF-16 although its UTF-8 bytes (F0 ...) sort after EF BD A1.
    let canonical = canonical_text(r#"{"\uff61":1,"\ud83d\ude00":2,"a":3}"#).unwrap();
    assert_eq!(canonical, "{\"a\":3,\"\u{1F600}\":2,\"\u{FF61}\":1}");
    assert!(
        "\u{FF61}" < "\u{1F600}",
        "UTF-8 order is the other way round"
    );
}

#[test]
fn control_characters_use_short_escapes_or_lowercase_u00xx() {
    let canonical = canonical_text(r#""\u0000\u0008\u0009\u000a\u000c\u000d\u001F\u007f/\u00e9""#);
    assert_eq!(
        canonical.unwrap(),
        "\"\\u0000\\b\\t\\n\\f\\r\\u001f\u{7f}/é\""
    );
}

#[test]
fn a_duplicate_key_is_refused_and_named() {
    let error = canonical_text(r#"{"a":{"b":1,"b":2}}"#).unwrap_err();
    assert_eq!(
        error,
        CanonicalError::DuplicateKey {
            name: "b".to_owned()
        }
    );
}

#[test]
fn a_duplicate_key_written_with_an_escape_is_still_a_duplicate() {
    let error = canonical_text(r#"{"a":1,"\u0061":2}"#).unwrap_err();
    assert_eq!(
        error,
        CanonicalError::DuplicateKey {
            name: "a".to_owned()
        }
    );
}

#[test]
fn a_lone_surrogate_is_refused() {
    for text in [r#""\ud800""#, r#""\udc00""#, r#"{"\ud83d":1}"#] {
        let error = canonical_text(text).unwrap_err();
        assert!(
            matches!(error, CanonicalError::Invalid { .. }),
            "{text}: {error}"
        );
    }
}

#[test]
fn a_number_beyond_the_double_range_is_refused() {
    let error = canonical_text("[1e400]").unwrap_err();
    assert!(
        matches!(&error, CanonicalError::Invalid { reason, .. } if reason.contains("out of range")),
        "{error}"
    );
    assert!(canonical_text("-1.8e308").is_err());
}

#[test]
fn invalid_utf8_is_refused() {
    let error = canonical::canonicalize(b"\"\xff\"").unwrap_err();
    assert!(matches!(error, CanonicalError::Invalid { .. }));
}

#[test]
fn trailing_text_after_the_value_is_refused() {
    assert!(canonical_text("{} {}").is_err());
    assert!(canonical_text("").is_err());
}

#[test]
fn nesting_as_deep_as_the_limit_is_canonicalized() {
    let levels = tool_contract::json::MAX_NESTING;
    let deep = format!("{}{}", "[".repeat(levels), "]".repeat(levels));
    assert_eq!(canonical_text(&deep).unwrap(), deep);
}

#[test]
fn nesting_beyond_the_limit_is_refused_without_overflowing_the_stack() {
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let error = canonical_text(&deep).unwrap_err();
    let column = tool_contract::json::MAX_NESTING + 1;
    assert!(
        matches!(&error, CanonicalError::Invalid { line: 1, column: c, reason }
            if *c == column && reason.contains("nested deeper than")),
        "{error}"
    );
}

#[test]
fn whitespace_is_removed_and_literals_kept() {
    assert_eq!(
        canonical_text(" { \"a\" : [ true , false , null ] } \n").unwrap(),
        r#"{"a":[true,false,null]}"#
    );
}

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |v| v.is_finite())
            .prop_map(Value::from),
        "\\PC{0,8}".prop_map(Value::String),
        prop::sample::select(vec![
            "\u{1F600}",
            "\u{FF61}",
            "\u{E000}",
            "\u{7f}",
            "\u{1f}",
            "\""
        ])
        .prop_map(|s| Value::String(s.to_owned())),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(
                "\\PC{0,4}|[\u{E000}-\u{FFFF}\u{10000}-\u{10FFF}]{1,2}",
                inner,
                0..6
            )
            .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn agrees_with_serde_jcs(value in arbitrary_json()) {
        let ours = canonical::to_vec(&value).unwrap();
        let theirs = serde_jcs::to_vec(&value).unwrap();
        prop_assert_eq!(String::from_utf8(ours).unwrap(), String::from_utf8(theirs).unwrap());
    }

    #[test]
    fn the_text_form_and_the_value_form_agree(value in arbitrary_json()) {
        let text = serde_json::to_vec_pretty(&value).unwrap();
        prop_assert_eq!(canonical::canonicalize(&text).unwrap(), canonical::to_vec(&value).unwrap());
    }

    #[test]
    fn canonical_text_is_a_fixed_point(value in arbitrary_json()) {
        let once = canonical::to_vec(&value).unwrap();
        prop_assert_eq!(canonical::canonicalize(&once).unwrap(), once);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        let _ = canonical::canonicalize(&bytes);
    }
}
