//! Writes canonical text: sorted members, ECMAScript numbers, minimal escaping.

use serde_json::{Map, Number, Value};

use super::error::CanonicalError;
use super::order::cmp_utf16;
use super::parse::Node;
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
    if !write_short_decimal(out, value) {
        out.extend_from_slice(ryu_js::Buffer::new().format_finite(value).as_bytes());
    }
}

/// Powers of ten a double holds exactly.
const POWERS_OF_TEN: [f64; 16] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
];

/// Writes `value` as ECMAScript does when it is a decimal of fewer than 16 significant digits
/// in fixed notation (at least 1e-6, below 1e15), which is what most data holds (prices,
/// quantities, coordinates); `false`, writing nothing, for any other, which `ryu_js` writes.
///
/// ECMAScript writes the fewest significant digits that read back as `value`. In fixed
/// notation the fewest fraction digits `f` give the fewest significant digits (two decimals
/// that read back as one double are within one unit in the last place of each other, so their
/// exponents differ by at most one). For `f` from 0 up: `m`, the nearest integer to
/// `value × 10^f`, is the candidate, and `m / 10^f` is the double that reading the decimal
/// `m × 10^-f` gives (both exact, one correctly rounded division). While `|m| < 10^15` the
/// double's spacing is below `10^-f / 4`, so at most one such decimal reads back as `value`
/// (ECMAScript's rule for choosing among several never arises), and the rounding error of
/// `value × 10^f` is too small to pick a neighbour of it.
fn write_short_decimal(out: &mut Vec<u8>, value: f64) -> bool {
    let magnitude = value.abs();
    if value == 0.0 {
        // ECMAScript writes both zeros as `0`.
        out.push(b'0');
        return true;
    }
    if !(1e-6..1e15).contains(&magnitude) {
        return false;
    }
    for (fraction_digits, &power) in POWERS_OF_TEN.iter().enumerate() {
        let scaled = (value * power).round();
        if scaled.abs() >= 1e15 {
            return false;
        }
        if scaled / power != value {
            continue;
        }
        // Below 10^15: exact in an i64.
        let digits_of = scaled.abs() as u64;
        if value < 0.0 {
            out.push(b'-');
        }
        let mut buffer = itoa::Buffer::new();
        let digits = buffer.format(digits_of).as_bytes();
        if fraction_digits == 0 {
            out.extend_from_slice(digits);
        } else if digits.len() > fraction_digits {
            let point = digits.len() - fraction_digits;
            out.extend_from_slice(&digits[..point]);
            out.push(b'.');
            out.extend_from_slice(&digits[point..]);
        } else {
            out.extend_from_slice(b"0.");
            out.resize(out.len() + fraction_digits - digits.len(), b'0');
            out.extend_from_slice(digits);
        }
        return true;
    }
    false
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

#[cfg(test)]
mod tests {
    use super::{write_f64, write_short_decimal};

    fn ryu(value: f64) -> String {
        ryu_js::Buffer::new().format_finite(value).to_owned()
    }

    fn written(value: f64) -> String {
        let mut out = Vec::new();
        write_f64(&mut out, value);
        String::from_utf8(out).unwrap()
    }

    /// A fixed sequence of pseudo-random 64-bit words (xorshift64*), so a failure repeats.
    fn words(count: usize) -> impl Iterator<Item = u64> {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        std::iter::repeat_with(move || {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            state.wrapping_mul(0x2545_f491_4f6c_dd1d)
        })
        .take(count)
    }

    #[test]
    fn short_decimals_are_written_as_ryu_js_writes_them() {
        let mut short = 0;
        for (index, word) in words(400_000).enumerate() {
            // Decimals with up to 15 fraction digits and up to 16 digits in all, both signs.
            let fraction_digits = (word % 16) as i32;
            let digits = (word >> 8) % 10_u64.pow(1 + (word >> 4) as u32 % 16);
            let sign = if index % 2 == 0 { 1.0 } else { -1.0 };
            let value = sign * digits as f64 / 10_f64.powi(fraction_digits);
            assert_eq!(written(value), ryu(value), "{digits}e-{fraction_digits}");
            if write_short_decimal(&mut Vec::new(), value) {
                short += 1;
            }
        }
        // Most of them take the short way; the test would see it if none did.
        assert!(short > 200_000, "{short} of 400000 were short");
    }

    #[test]
    fn any_double_is_written_as_ryu_js_writes_it() {
        for word in words(400_000) {
            let value = f64::from_bits(word);
            if value.is_finite() {
                assert_eq!(written(value), ryu(value), "{word:#x}");
            }
        }
    }

    #[test]
    fn the_edges_of_the_short_way_are_written_as_ryu_js_writes_them() {
        let edges = [
            0.0,
            -0.0,
            1e-6,
            -1e-6,
            1e15,
            999_999_999_999_999.9,
            999_999_999_999_999.0,
            1e15 - 0.5,
            0.1,
            0.2 + 0.1,
            1.0 / 3.0,
            2.0 / 3.0,
            123_456.789,
            9_007_199_254_740_993.0,
            5e-324,
            f64::MAX,
            f64::MIN_POSITIVE,
            f64::EPSILON,
        ];
        for value in edges {
            for step in -64..=64_i64 {
                let near = f64::from_bits(value.to_bits().wrapping_add_signed(step));
                if near.is_finite() {
                    assert_eq!(written(near), ryu(near), "{near:e}");
                }
            }
        }
    }
}
