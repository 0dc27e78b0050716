//! Encodings that cannot fail, and reading back JSON this crate has already read exactly.

use std::fmt;

use serde::de::Error as _;
use serde_json::Value;

use super::scan::find_string_special;

/// The value of an encoding that cannot fail, for the reason `invariant` states.
///
/// Every caller holds an invariant that rules the error out (a `Value` always serializes,
/// validated arguments are I-JSON, canonical JSON is UTF-8), so an error here is a bug in this
/// crate, never an answer to input. It fails loudly, with a panic that names the invariant,
/// and never goes on with a stand-in: an empty or default encoding would be hashed, sent or
/// stored as if it were the value.
#[track_caller]
pub(crate) fn infallible<T, E: fmt::Display>(result: Result<T, E>, invariant: &'static str) -> T {
    match result {
        Ok(value) => value,
        Err(error) => panic!("tool-contract bug: {invariant} ({error})"),
    }
}

/// The deepest nesting read back by [`parse_validated`]: the DSL's greatest `max_depth`
/// (256), one level for the model-result envelope around a tool's data, and one for a record
/// around the envelope.
pub(crate) const MAX_VALIDATED_DEPTH: usize = 258;

/// Parses JSON this crate has already read exactly (I-JSON, within a contract's depth) into
/// a `Value`, past serde_json's own limit of 128 levels, which is lower than the DSL's.
///
/// Nesting deeper than [`MAX_VALIDATED_DEPTH`] is refused before parsing, so the recursion
/// stays bounded whatever the input.
pub(crate) fn parse_validated(json: &[u8]) -> Result<Value, serde_json::Error> {
    if nesting_depth(json) > MAX_VALIDATED_DEPTH {
        return Err(serde_json::Error::custom(format_args!(
            "nested deeper than {MAX_VALIDATED_DEPTH} levels"
        )));
    }
    let mut deserializer = serde_json::Deserializer::from_slice(json);
    deserializer.disable_recursion_limit();
    let value = serde::Deserialize::deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(value)
}

/// The deepest nesting of `[` and `{` outside strings (of text that may not even be JSON).
fn nesting_depth(json: &[u8]) -> usize {
    let (mut depth, mut deepest, mut at) = (0_usize, 0, 0);
    while let Some(&byte) = json.get(at) {
        match byte {
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            b'"' => {
                // To the closing quote, stepping over escapes.
                at = find_string_special(json, at + 1);
                while json.get(at) == Some(&b'\\') || json.get(at).is_some_and(|b| *b < 0x20) {
                    let step = if json[at] == b'\\' { 2 } else { 1 };
                    at = find_string_special(json, at + step);
                }
            }
            _ => {}
        }
        at += 1;
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_is_counted_outside_strings_only() {
        assert_eq!(nesting_depth(br#"{"a":[1,{"b":"[[[{"}]}"#), 3);
        assert_eq!(nesting_depth(br#"["\"[[", "\\", [[]]]"#), 3);
        assert_eq!(nesting_depth(b"7"), 0);
    }

    #[test]
    fn validated_json_deeper_than_serde_json_allows_is_read() {
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert!(serde_json::from_str::<Value>(&deep).is_err());
        assert!(parse_validated(deep.as_bytes()).is_ok());
    }

    #[test]
    fn nesting_past_the_bound_is_refused_before_parsing() {
        let deep = format!("{}{}", "[".repeat(300), "]".repeat(300));
        assert!(parse_validated(deep.as_bytes()).is_err());
    }

    #[test]
    #[should_panic(expected = "tool-contract bug: canonical JSON is UTF-8")]
    fn a_broken_invariant_fails_loudly() {
        let broken: Result<(), &str> = Err("invalid UTF-8");
        infallible(broken, "canonical JSON is UTF-8");
    }
}
