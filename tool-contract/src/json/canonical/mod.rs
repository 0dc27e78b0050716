//! RFC 8785 (JSON Canonicalization Scheme): one byte sequence for one JSON value, so that a
//! digest of it means the value and not the way it happened to be written.
//!
//! - object members are sorted by their names' UTF-16 code units (not by UTF-8 bytes: the two
//!   orders differ once a name holds a character above U+FFFF), arrays keep their order;
//! - numbers are written as ECMAScript's `Number.prototype.toString` writes the IEEE-754
//!   double they denote: `1.0` is `1`, `-0` is `0`, `1e21` is `1e+21`;
//! - strings escape only `"`, `\` and the controls below U+0020 (`\b \t \n \f \r` by name, the
//!   rest as `\u00xx`); everything else, U+007F and U+2028 included, is written as itself;
//! - no whitespace.
//!
//! Input must be I-JSON (RFC 7493): a duplicate member name, a lone surrogate, or a number
//! outside the range of a double is refused rather than silently resolved. Integers beyond
//! 2^53 are read as the nearest double, as RFC 8785 prescribes (`9007199254740993` becomes
//! `9007199254740992`); contracts that cannot accept that refuse such numbers at validation.
//!
//! ```
//! use tool_contract::json::canonical;
//!
//! let canonical = canonical::canonicalize(br#"{ "b": 1.50, "a": [true, -0, 1e21] }"#)?;
//! assert_eq!(canonical, br#"{"a":[true,0,1e+21],"b":1.5}"#);
//!
//! assert!(canonical::canonicalize(br#"{"a":1,"a":2}"#).is_err());
//!
//! let value = serde_json::json!({ "z": "\u{2028}", "é": null });
//! assert_eq!(canonical::to_vec(&value)?, "{\"z\":\"\u{2028}\",\"é\":null}".as_bytes());
//! # Ok::<(), canonical::CanonicalError>(())
//! ```

pub(crate) mod object;
mod parse;
pub(crate) mod write;

use std::cmp::Ordering;

use serde_json::Value;

pub(crate) use write::{write_str, write_value};

/// Why a JSON text or value has no canonical form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CanonicalError {
    /// The text is not JSON, or not I-JSON: bad syntax, invalid UTF-8, a lone surrogate, a
    /// number beyond the range of a double, or nesting deeper than
    /// [`MAX_NESTING`](crate::json::MAX_NESTING) levels.
    #[error("not I-JSON at line {line}, column {column}: {reason}")]
    Invalid {
        /// 1-based line of the fault.
        line: usize,
        /// 1-based column of the fault.
        column: usize,
        /// What is wrong there.
        reason: String,
    },
    /// An object names one member twice; I-JSON leaves no way to choose between them.
    #[error("an object has the member name {name:?} twice")]
    DuplicateKey {
        /// The repeated name.
        name: String,
    },
    /// A number that is not a finite double (only possible in a `Value` built with
    /// serde_json's `arbitrary_precision`).
    #[error("the number {0} is not a finite IEEE-754 double")]
    NonFiniteNumber(String),
}

/// The canonical form of a JSON text.
///
/// # Errors
///
/// [`CanonicalError`] when the text is not I-JSON.
pub fn canonicalize(json: &[u8]) -> Result<Vec<u8>, CanonicalError> {
    let node = parse::parse(json)?;
    let mut out = Vec::with_capacity(json.len());
    write::write_node(&mut out, &node);
    Ok(out)
}

/// The canonical form of a value already parsed.
///
/// A `Value` cannot hold a duplicate key or a lone surrogate, so this fails only for a number
/// that is not a finite double.
///
/// # Errors
///
/// [`CanonicalError::NonFiniteNumber`].
pub fn to_vec(value: &Value) -> Result<Vec<u8>, CanonicalError> {
    let mut out = Vec::with_capacity(256);
    write_value(&mut out, value)?;
    Ok(out)
}

/// Orders member names as RFC 8785 does: by UTF-16 code units.
///
/// UTF-8 bytes order strings by code point, which agrees with UTF-16 except between a
/// character in U+E000..=U+FFFF and one above U+FFFF (UTF-16 writes the latter with
/// surrogates, which sort below U+E000). Such characters start with a byte of 0xEE or more, so
/// byte order decides unless the first differing bytes include one.
///
/// ```
/// use std::cmp::Ordering;
/// use tool_contract::json::canonical::cmp_utf16;
///
/// // U+1F600 is written with surrogates (0xD83D...), below U+FF61 in UTF-16.
/// assert_eq!(cmp_utf16("\u{1F600}", "\u{FF61}"), Ordering::Less);
/// assert_eq!(cmp_utf16("a", "b"), Ordering::Less);
/// ```
#[must_use]
pub fn cmp_utf16(a: &str, b: &str) -> Ordering {
    let (x, y) = (a.as_bytes(), b.as_bytes());
    match x.iter().zip(y).position(|(p, q)| p != q) {
        Some(at) if x[at] >= 0xEE || y[at] >= 0xEE => a.encode_utf16().cmp(b.encode_utf16()),
        Some(at) => x[at].cmp(&y[at]),
        None => x.len().cmp(&y.len()),
    }
}
