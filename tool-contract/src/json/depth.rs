//! One nesting limit for all JSON this crate reads, and serde_json readers held to it.
//!
//! serde_json stops at 128 levels by default, below the DSL's greatest `max_depth`: a value a
//! contract allows would then fail to canonicalize, read back, or parse for a gate. Every
//! reader here counts the nesting first, without recursion, and only then lets serde_json
//! recurse, so the stack stays bounded whatever the input.

use serde::Deserialize;
use serde::de::Error as _;
use serde_json::de::SliceRead;

use super::scan::find_string_special;

/// The deepest nesting of arrays and objects a JSON text may have to be read at all: the
/// DSL's greatest `max_depth` (256), and 16 levels for what wraps a contract's value (the
/// model result around a tool's data, an audit record around that, a provider body around a
/// call's arguments). A contract's own `max_depth` is checked after, on the value itself.
pub const MAX_NESTING: usize = 272;

/// A serde_json reader of `json`, past serde_json's 128 levels and within [`MAX_NESTING`].
///
/// # Errors
///
/// A custom serde_json error at the first bracket past the limit.
pub(crate) fn reader(json: &[u8]) -> Result<serde_json::Deserializer<SliceRead<'_>>, Deep> {
    if let Some(offset) = first_too_deep(json) {
        return Err(Deep::at(json, offset));
    }
    let mut deserializer = serde_json::Deserializer::from_slice(json);
    deserializer.disable_recursion_limit();
    Ok(deserializer)
}

/// Reads all of `json` as a `T`, within [`MAX_NESTING`].
pub(crate) fn from_slice<'de, T: Deserialize<'de>>(json: &'de [u8]) -> serde_json::Result<T> {
    let mut deserializer = reader(json).map_err(Deep::into_serde)?;
    let value = T::deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(value)
}

/// Where a text nests deeper than [`MAX_NESTING`]: 1-based, as serde_json reports places.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Deep {
    pub(crate) line: usize,
    pub(crate) column: usize,
}

impl Deep {
    fn at(json: &[u8], offset: usize) -> Self {
        let before = &json[..offset];
        let line_start = before
            .iter()
            .rposition(|&byte| byte == b'\n')
            .map_or(0, |at| at + 1);
        Deep {
            line: before.iter().filter(|&&byte| byte == b'\n').count() + 1,
            column: offset - line_start + 1,
        }
    }

    /// What it says.
    pub(crate) fn reason() -> String {
        format!("nested deeper than {MAX_NESTING} levels")
    }

    fn into_serde(self) -> serde_json::Error {
        serde_json::Error::custom(format_args!(
            "{} at line {} column {}",
            Self::reason(),
            self.line,
            self.column
        ))
    }
}

/// The offset of the first `[` or `{`, outside strings, that opens a level past
/// [`MAX_NESTING`] (of text that may not even be JSON).
fn first_too_deep(json: &[u8]) -> Option<usize> {
    let (mut depth, mut at) = (0_usize, 0);
    while let Some(&byte) = json.get(at) {
        match byte {
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Some(at);
                }
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
    None
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    fn nested(levels: usize) -> String {
        format!("{}{}", "[".repeat(levels), "]".repeat(levels))
    }

    #[test]
    fn nesting_is_counted_outside_strings_only() {
        let inside_strings = format!(r#"["{}", "\"{}", "\\"]"#, "[".repeat(400), "{".repeat(400));
        assert_eq!(first_too_deep(inside_strings.as_bytes()), None);
        assert_eq!(first_too_deep(nested(MAX_NESTING).as_bytes()), None);
        assert_eq!(
            first_too_deep(nested(MAX_NESTING + 1).as_bytes()),
            Some(MAX_NESTING)
        );
    }

    #[test]
    fn the_whole_limit_is_read_past_serde_jsons_own() {
        let deep = nested(MAX_NESTING);
        assert!(serde_json::from_str::<Value>(&deep).is_err());
        assert!(from_slice::<Value>(deep.as_bytes()).is_ok());
    }

    #[test]
    fn nesting_past_the_limit_is_refused_where_it_starts() {
        let deep = format!("\n  {}", nested(MAX_NESTING + 1));
        let error = from_slice::<Value>(deep.as_bytes()).unwrap_err();
        let expected = format!("{} at line 2 column {}", Deep::reason(), MAX_NESTING + 3);
        assert!(error.to_string().starts_with(&expected), "{error}");
    }
}
