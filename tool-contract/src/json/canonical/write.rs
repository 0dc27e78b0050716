//! Writes canonical text: sorted members, ECMAScript numbers, minimal escaping.

use serde_json::{Map, Number, Value};

use super::parse::Node;
use super::{CanonicalError, cmp_utf16};
use crate::json::scan::find_string_special;

/// 2^53: below it every integer is a double written exactly as its decimal digits.
const EXACT_INTEGER_LIMIT: u64 = 1 << 53;

pub(super) fn write_node(out: &mut Vec<u8>, node: &Node<'_>) {
    match node {
        Node::Null => out.extend_from_slice(b"null"),
        Node::Bool(value) => write_bool(out, *value),
        Node::Integer(value) => write_i64(out, *value),
        Node::Double(value) => write_f64(out, *value),
        Node::String(value) => write_str(out, value),
        Node::Array(items) => {
            out.push(b'[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write_node(out, item);
            }
            out.push(b']');
        }
        Node::Object(members) => {
            out.push(b'{');
            for (index, (name, value)) in members.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write_str(out, name);
                out.push(b':');
                write_node(out, value);
            }
            out.push(b'}');
        }
    }
}

/// Writes a `Value` canonically.
pub(crate) fn write_value(out: &mut Vec<u8>, value: &Value) -> Result<(), CanonicalError> {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(value) => write_bool(out, *value),
        Value::Number(number) => write_number(out, number)?,
        Value::String(value) => write_str(out, value),
        Value::Array(items) => {
            out.push(b'[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write_value(out, item)?;
            }
            out.push(b']');
        }
        Value::Object(members) => write_map(out, members)?,
    }
    Ok(())
}

fn write_map(out: &mut Vec<u8>, members: &Map<String, Value>) -> Result<(), CanonicalError> {
    // serde_json's map is sorted by UTF-8 already unless some crate in the build turned on
    // `preserve_order`; either way, sorting is needed only when the order is not UTF-16's.
    let sorted = members
        .keys()
        .zip(members.keys().skip(1))
        .all(|(a, b)| cmp_utf16(a, b).is_lt());
    out.push(b'{');
    if sorted {
        for (index, (name, value)) in members.iter().enumerate() {
            write_member(out, index, name, value)?;
        }
    } else {
        let mut ordered: Vec<(&String, &Value)> = members.iter().collect();
        ordered.sort_by(|(a, _), (b, _)| cmp_utf16(a, b));
        for (index, (name, value)) in ordered.into_iter().enumerate() {
            write_member(out, index, name, value)?;
        }
    }
    out.push(b'}');
    Ok(())
}

fn write_member(
    out: &mut Vec<u8>,
    index: usize,
    name: &str,
    value: &Value,
) -> Result<(), CanonicalError> {
    if index > 0 {
        out.push(b',');
    }
    write_str(out, name);
    out.push(b':');
    write_value(out, value)
}

pub(crate) fn write_bool(out: &mut Vec<u8>, value: bool) {
    out.extend_from_slice(if value { b"true" } else { b"false" });
}

fn write_number(out: &mut Vec<u8>, number: &Number) -> Result<(), CanonicalError> {
    if let Some(value) = number.as_i64() {
        write_i64(out, value);
    } else if let Some(value) = number.as_u64() {
        // Above i64::MAX, so above 2^53: the nearest double is what RFC 8785 writes.
        write_f64(out, value as f64);
    } else {
        match number.as_f64() {
            Some(value) if value.is_finite() => write_f64(out, value),
            _ => return Err(CanonicalError::NonFiniteNumber(number.to_string())),
        }
    }
    Ok(())
}

fn write_i64(out: &mut Vec<u8>, value: i64) {
    write_integer(out, i128::from(value));
}

/// An integer as the double RFC 8785 reads it as: its digits up to 2^53, the nearest double
/// beyond.
pub(crate) fn write_integer(out: &mut Vec<u8>, value: i128) {
    match i64::try_from(value) {
        Ok(small) if small.unsigned_abs() <= EXACT_INTEGER_LIMIT => {
            out.extend_from_slice(itoa::Buffer::new().format(small).as_bytes());
        }
        _ => write_f64(out, value as f64),
    }
}

/// ECMAScript `Number.prototype.toString` of a finite double (RFC 8785 section 3.2.2.3).
pub(crate) fn write_f64(out: &mut Vec<u8>, value: f64) {
    debug_assert!(value.is_finite(), "callers refuse non-finite numbers");
    out.extend_from_slice(ryu_js::Buffer::new().format_finite(value).as_bytes());
}

/// A JSON string as RFC 8785 section 3.2.2.2 writes it.
pub fn write_str(out: &mut Vec<u8>, value: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = value.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut run_start = 0;
    loop {
        // The bytes to escape are exactly those the reader stops at in a string.
        let at = find_string_special(bytes, run_start);
        out.extend_from_slice(&bytes[run_start..at]);
        let Some(&byte) = bytes.get(at) else {
            break;
        };
        // RFC 8785 section 3.2.2.2: short escapes where JSON has them, else \u00xx.
        let short = match byte {
            b'"' => Some(b'"'),
            b'\\' => Some(b'\\'),
            0x08 => Some(b'b'),
            b'\t' => Some(b't'),
            b'\n' => Some(b'n'),
            0x0c => Some(b'f'),
            b'\r' => Some(b'r'),
            _ => None,
        };
        match short {
            Some(letter) => out.extend_from_slice(&[b'\\', letter]),
            None => out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(byte >> 4)],
                HEX[usize::from(byte & 0xf)],
            ]),
        }
        run_start = at + 1;
    }
    out.push(b'"');
}
