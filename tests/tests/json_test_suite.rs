//! JSONTestSuite's 318 parser files (`vectors/jsontestsuite/`) through the canonicalizer and
//! through a generated validator whose one field is free-form: every `n_` refused, every `y_`
//! accepted unless a stated strictness refuses it, every `i_` decided as written here.

use std::fs;
use std::path::PathBuf;

use tool_contract::json::canonical;
use tool_contract::{ToolContract, ToolOutput, ViolationKind};

/// Read any JSON value.
#[derive(serde::Deserialize, ToolContract)]
#[tool_contract(output = Wrapped, effect = read_only, source_label = "suite",
                producer_revision = "suite-1")]
struct ReadAnything {}

/// A file's value, as a free-form field.
#[derive(serde::Serialize, ToolOutput)]
#[tool_output(max_bytes = 1048576, max_depth = 256)]
struct Wrapped {
    #[tool_output(free_form(max_depth = 255, max_bytes = 1048576))]
    value: serde_json::Value,
}

/// `y_` files refused on purpose: I-JSON (RFC 7493, section 2.3) and RFC 8785 need member
/// names unique, and a reader that kept one of two values would hash another document.
const Y_REFUSED_FOR_DUPLICATE_KEYS: [&str; 2] = [
    "y_object_duplicated_key.json",
    "y_object_duplicated_key_and_value.json",
];

/// The `i_` files the canonicalizer accepts; the validator refuses every `i_` file.
/// - Numbers past a double's range (`1e-999`, `123e-10000000`) read as the double RFC 8785
///   says they are (0): the canonicalizer follows the RFC; the validator refuses any number
///   that is not exactly a double (`InexactNumber`), so no contract sees one.
/// - Integers beyond ±(2^53 − 1) are doubles to RFC 8785; the validator refuses them
///   (`IntegerOutOfRange`, I-JSON section 2.2).
///
/// Refused by both: numbers that overflow a double, lone or broken surrogates, bytes that are
/// not UTF-8, UTF-16 text, a byte order mark, and 500 nested arrays (past the one nesting limit).
const I_ACCEPTED_BY_CANONICALIZER: [&str; 5] = [
    "i_number_double_huge_neg_exp.json",
    "i_number_real_underflow.json",
    "i_number_too_big_neg_int.json",
    "i_number_too_big_pos_int.json",
    "i_number_very_big_negative_int.json",
];

struct Case {
    name: String,
    canonical: Result<Vec<u8>, String>,
    validated: Result<(), Vec<ViolationKind>>,
}

fn cases(prefix: char) -> Vec<Case> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("vectors/jsontestsuite/test_parsing");
    let mut names: Vec<String> = fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.starts_with(prefix))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let bytes = fs::read(dir.join(&name)).unwrap();
            let mut wrapped = b"{\"value\":".to_vec();
            wrapped.extend_from_slice(&bytes);
            wrapped.push(b'}');
            Case {
                canonical: canonical::canonicalize(&bytes).map_err(|error| error.to_string()),
                validated: ReadAnything {}
                    .validate_output(&wrapped)
                    .map(drop)
                    .map_err(|violations| violations.iter().map(|v| v.kind().clone()).collect()),
                name,
            }
        })
        .collect()
}

#[test]
fn every_n_file_is_refused_by_both_readers() {
    let cases = cases('n');
    assert_eq!(cases.len(), 188);
    for case in cases {
        assert!(case.canonical.is_err(), "canonicalized {}", case.name);
        assert!(case.validated.is_err(), "validated {}", case.name);
    }
}

#[test]
fn every_y_file_is_accepted_by_both_readers_but_those_with_duplicate_keys() {
    let cases = cases('y');
    assert_eq!(cases.len(), 95);
    for case in cases {
        if Y_REFUSED_FOR_DUPLICATE_KEYS.contains(&case.name.as_str()) {
            let error = case.canonical.unwrap_err();
            assert!(error.contains("twice"), "{}: {error}", case.name);
            assert_eq!(
                case.validated,
                Err(vec![ViolationKind::DuplicateKey]),
                "{}",
                case.name
            );
            continue;
        }
        let canonical = case
            .canonical
            .unwrap_or_else(|error| panic!("{}: {error}", case.name));
        assert_eq!(
            canonical::canonicalize(&canonical).as_deref(),
            Ok(canonical.as_slice()),
            "{}: canonical output is a fixed point",
            case.name
        );
        assert_eq!(case.validated, Ok(()), "{}", case.name);
    }
}

#[test]
fn every_i_file_is_decided_as_written() {
    let cases = cases('i');
    assert_eq!(cases.len(), 35);
    for case in cases {
        let accepted = I_ACCEPTED_BY_CANONICALIZER.contains(&case.name.as_str());
        assert_eq!(
            case.canonical.is_ok(),
            accepted,
            "{}: {:?}",
            case.name,
            case.canonical
        );
        let kinds = case.validated.expect_err(&case.name);
        if accepted {
            let number = matches!(
                kinds[0],
                ViolationKind::InexactNumber | ViolationKind::IntegerOutOfRange { .. }
            );
            assert!(number, "{}: {kinds:?}", case.name);
        }
    }
}
