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

mod error;
pub(crate) mod object;
mod order;
mod parse;
pub(crate) mod write;

use serde_json::Value;

pub use error::CanonicalError;
pub use order::cmp_utf16;
pub(crate) use write::{write_str, write_value};

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
