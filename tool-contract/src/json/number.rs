//! Exact reading of JSON number literals: no coercion, no silent rounding.

/// The largest integer I-JSON can carry exactly: 2^53 − 1 (RFC 7493 §2.2).
pub const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// Why a literal is not an acceptable integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IntegerError {
    /// It has a fraction or an exponent (`1.0`, `1e2`): a number, not an integer.
    NotInteger,
    /// Its magnitude is over [`MAX_SAFE_INTEGER`].
    OutOfRange,
}

/// Whether a (grammatically valid) JSON number literal is written as an integer.
pub(crate) fn is_integer_literal(literal: &str) -> bool {
    !literal.bytes().any(|b| matches!(b, b'.' | b'e' | b'E'))
}

/// Reads an integer literal within ±(2^53 − 1).
pub(crate) fn parse_integer(literal: &str) -> Result<i64, IntegerError> {
    if !is_integer_literal(literal) {
        return Err(IntegerError::NotInteger);
    }
    let digits = literal.strip_prefix('-').unwrap_or(literal);
    // 2^53 − 1 has 16 digits; JSON forbids leading zeros, so more digits is out of range,
    // and at most 16 always fits an i64.
    if digits.len() > 16 {
        return Err(IntegerError::OutOfRange);
    }
    let value: i64 = literal.parse().map_err(|_| IntegerError::OutOfRange)?;
    if value.abs() > MAX_SAFE_INTEGER {
        return Err(IntegerError::OutOfRange);
    }
    Ok(value)
}

/// The digits `0`–`9` that begin `bytes[at..]`, when fewer than eight do and eight bytes are
/// there to read: their count (1 to 7) and their value, read a word at a time. `None` when
/// there are no eight bytes, no digit first, or eight digits in a row: the caller reads those
/// a byte at a time.
///
/// The word trick is simdjson's `parse_eight_digits_unrolled` (Lemire, "Number parsing at a
/// gigabyte per second", 2021), on the digits moved to the word's high end.
#[inline]
pub(crate) fn leading_digits(bytes: &[u8], at: usize) -> Option<(u64, usize)> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let word = u64::from_le_bytes(*bytes.get(at..)?.first_chunk::<8>()?);
    // Each byte less `0`: a digit becomes 0–9; any other byte has its high bit set, either
    // here or once 0x76 more lifts 10 and up past 0x7f. A borrow or a carry starts only at
    // such a byte, so the lowest flagged byte is always the first that is not a digit.
    let values = word.wrapping_sub(ONES * u64::from(b'0'));
    let not_digits = (values | values.wrapping_add(ONES * 0x76)) & HIGHS;
    let count = (not_digits.trailing_zeros() / 8) as usize;
    if count == 0 || count == 8 {
        return None;
    }
    // The digits at the top of the word, zeros (leading zeros of the number) below them.
    let digits = values << (8 * (8 - count));
    let pairs = ((digits & (ONES * 0x0f)).wrapping_mul(2561) >> 8) & 0x00ff_00ff_00ff_00ff;
    let quads = (pairs.wrapping_mul(6_553_601) >> 16) & 0x0000_ffff_0000_ffff;
    Some((quads.wrapping_mul(42_949_672_960_001) >> 32, count))
}

/// The fast path for integers: `0|[1-9][0-9]{0,14}` at `bytes[start..]`, not followed by a
/// fraction, an exponent or more digits: a non-negative integer of at most 15 digits, so
/// within 2^53 − 1. Returns the value and the end. `None` leaves every other literal (a sign,
/// 16 digits and more), and every error, to the general path.
#[inline(always)]
pub(crate) fn scan_plain_integer(bytes: &[u8], start: usize) -> Option<(i64, usize)> {
    let (value, end) = match leading_digits(bytes, start) {
        // Fewer than eight digits: under 2^53, so the conversion is exact.
        Some((value, count)) => (value as i64, start + count),
        None => {
            let mut end = start;
            let mut value: i64 = 0;
            while let Some(digit) = bytes.get(end).map(|byte| byte.wrapping_sub(b'0')) {
                if digit > 9 {
                    break;
                }
                // Wrapping: a longer literal is left to the general path.
                value = value.wrapping_mul(10).wrapping_add(i64::from(digit));
                end += 1;
            }
            (value, end)
        }
    };
    let digits = end - start;
    let plain = (1..=15).contains(&digits)
        && (digits == 1 || bytes[start] != b'0')
        && !matches!(bytes.get(end), Some(b'.' | b'e' | b'E'));
    plain.then_some((value, end))
}

/// Reads a literal as a double, only if the double is exactly the number written.
///
/// "Exactly" means the literal and the shortest round-trip form of the parsed double denote
/// the same decimal: `0.1` and `1.50` pass; `1e400` (infinite), `1e-400` (rounds to zero),
/// `9007199254740993` and `0.30000000000000001` (round to a neighbour) fail.
pub(crate) fn parse_exact_f64(literal: &str) -> Option<f64> {
    // Rust's float parsing is correctly rounded, so the only question left is whether it
    // rounded at all.
    let value: f64 = literal.parse().ok()?;
    if !value.is_finite() {
        return None;
    }
    if within_double_digits(literal, value) {
        return Some(value);
    }
    exact_by_shortest(literal, value)
}

/// The doubles whose every decimal of at most [`f64::DIGITS`] significant digits survives the
/// round trip: the normal range, with a margin at both ends.
const ROUND_TRIP_RANGE: std::ops::RangeInclusive<f64> = 1e-307..=1e307;

/// Whether `literal`, read as `value`, has at most 15 significant digits and `value` lies in
/// [`ROUND_TRIP_RANGE`]. Then the literal is exact with no formatting: every decimal of at
/// most 15 digits in that range comes back from its nearest double (`f64::DIGITS`), so no two
/// of them share a double; the shortest form of `value` has at most as many digits as the
/// literal, so it is one of them, and it is the literal.
fn within_double_digits(literal: &str, value: f64) -> bool {
    if !ROUND_TRIP_RANGE.contains(&value.abs()) {
        return false;
    }
    let mantissa = literal
        .as_bytes()
        .split(|&b| b == b'e' || b == b'E')
        .next()
        .unwrap_or_default();
    let digits = mantissa.iter().filter(|b| b.is_ascii_digit());
    // Significant: from the first non-zero digit to the last one.
    let mut significant = 0;
    let mut pending_zeros = 0;
    for &digit in digits {
        if digit == b'0' {
            pending_zeros += 1;
        } else {
            if significant > 0 {
                significant += pending_zeros;
            }
            significant += 1;
            pending_zeros = 0;
        }
    }
    significant <= f64::DIGITS
}

/// The general check: the literal and the shortest round-trip form of `value` denote the
/// same decimal.
fn exact_by_shortest(literal: &str, value: f64) -> Option<f64> {
    let mut buffer = ryu::Buffer::new();
    let shortest = buffer.format_finite(value);
    (Decimal::of(literal)? == Decimal::of(shortest)?).then_some(value)
}

/// A decimal `±0.d₁d₂…dₙ × 10^exponent` with no leading or trailing zero digit, so that two
/// spellings of one number compare equal.
#[derive(Debug, PartialEq, Eq)]
struct Decimal<'a> {
    negative: bool,
    digits: Digits<'a>,
    exponent: i64,
}

/// The significant digits, possibly split around the decimal point.
#[derive(Debug)]
struct Digits<'a>(&'a str, &'a str);

impl Digits<'_> {
    fn bytes(&self) -> impl Iterator<Item = u8> + '_ {
        self.0.bytes().chain(self.1.bytes())
    }
}

impl PartialEq for Digits<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.bytes().eq(other.bytes())
    }
}

impl Eq for Digits<'_> {}

impl<'a> Decimal<'a> {
    /// Parses a JSON number literal (or ryu's output, which has the same grammar). `None` only
    /// for a non-zero number whose exponent does not fit an `i64`.
    fn of(literal: &'a str) -> Option<Decimal<'a>> {
        let (negative, rest) = match literal.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, literal),
        };
        let (mantissa, exponent) = match rest.find(['e', 'E']) {
            Some(at) => (&rest[..at], &rest[at + 1..]),
            None => (rest, "0"),
        };
        let (integral, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let point = i64::try_from(integral.len()).ok()?;

        let all_leading_zeros = integral.bytes().all(|b| b == b'0');
        let (integral, fraction, point) = if all_leading_zeros {
            let zeros = fraction.len() - fraction.trim_start_matches('0').len();
            let zeros = i64::try_from(zeros).ok()?;
            ("", fraction.trim_start_matches('0'), -zeros)
        } else {
            (integral.trim_start_matches('0'), fraction, point)
        };
        let (integral, fraction) = if fraction.trim_end_matches('0').is_empty() {
            (integral.trim_end_matches('0'), "")
        } else {
            (integral, fraction.trim_end_matches('0'))
        };
        if integral.is_empty() && fraction.is_empty() {
            // Zero: its sign and exponent do not matter for exactness.
            return Some(Decimal {
                negative: false,
                digits: Digits("", ""),
                exponent: 0,
            });
        }
        Some(Decimal {
            negative,
            digits: Digits(integral, fraction),
            exponent: point.checked_add(exponent.parse().ok()?)?,
        })
    }
}

/// A bound as JSON: an integer where it is one, so `minimum: 1` is written `1`, not `1.0`.
pub(crate) fn json_number(value: f64) -> serde_json::Value {
    const SAFE: f64 = MAX_SAFE_INTEGER as f64;
    if value.fract() == 0.0 && value.abs() <= SAFE {
        // Whole and within ±(2^53 − 1): the conversion is exact.
        #[allow(clippy::cast_possible_truncation)]
        let whole = value as i64;
        serde_json::Value::from(whole)
    } else {
        serde_json::Value::from(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leading_digits_are_counted_and_read_a_word_at_a_time() {
        for text in [
            "7,",
            "40}",
            "1200 ",
            "189900]",
            "0000012\"",
            "9999999x",
            "1234567.",
        ] {
            let padded = format!("{text}........");
            let count = text.bytes().take_while(u8::is_ascii_digit).count();
            let value: u64 = text[..count].parse().unwrap();
            assert_eq!(
                leading_digits(padded.as_bytes(), 0),
                Some((value, count)),
                "{text}"
            );
        }
    }

    #[test]
    fn leading_digits_leave_eight_digits_no_digit_and_short_input_to_the_caller() {
        assert_eq!(leading_digits(b"12345678,", 0), None);
        assert_eq!(leading_digits(b"-1234567", 0), None);
        assert_eq!(leading_digits(b"x1234567", 0), None);
        assert_eq!(leading_digits(b"1234", 0), None);
        assert_eq!(leading_digits(b"..12,.....", 2), Some((12, 2)));
    }

    #[test]
    fn leading_digits_agree_with_reading_byte_by_byte_whatever_follows() {
        // Every byte value after every digit count, and bytes that borrow or carry between
        // the word's bytes (`/`, `:`, 0x00, 0xff) around the digits.
        for count in 1..8 {
            for follower in 0..=255u8 {
                let mut bytes: Vec<u8> = b"9081726354"[..count].to_vec();
                bytes.push(follower);
                bytes.extend_from_slice(&[0xff, b'/', 0x00, b':', b'9', b'9', b'9', b'9']);
                let expected_count = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
                let expected = (expected_count < 8).then(|| {
                    let text = std::str::from_utf8(&bytes[..expected_count]).unwrap();
                    (text.parse().unwrap(), expected_count)
                });
                assert_eq!(leading_digits(&bytes, 0), expected, "{count} {follower}");
            }
        }
    }

    #[test]
    fn integers_within_the_safe_range_are_read() {
        assert_eq!(parse_integer("0"), Ok(0));
        assert_eq!(parse_integer("-0"), Ok(0));
        assert_eq!(parse_integer("9007199254740991"), Ok(MAX_SAFE_INTEGER));
        assert_eq!(parse_integer("-9007199254740991"), Ok(-MAX_SAFE_INTEGER));
    }

    #[test]
    fn integers_past_the_safe_range_are_refused() {
        assert_eq!(
            parse_integer("9007199254740992"),
            Err(IntegerError::OutOfRange)
        );
        assert_eq!(
            parse_integer("18446744073709551616"),
            Err(IntegerError::OutOfRange)
        );
    }

    #[test]
    fn the_integer_fast_path_agrees_with_the_general_one() {
        // What the fast path reads, the general path reads the same; what it leaves, it
        // leaves whole. The literals sit before a `,` (and enough bytes for a word).
        for literal in [
            "0",
            "-0",
            "7",
            "-12",
            "1200",
            "1234567",
            "12345678",
            "999999999999999",
            "1000000000000000",
            "9007199254740991",
            "9007199254740992",
            "01",
            "00",
            "1.5",
            "1e3",
            "1E3",
            "12345678901234567",
            "123456789012345678901",
            "-",
            "",
        ] {
            let text = format!("{literal},........");
            match scan_plain_integer(text.as_bytes(), 0) {
                Some((value, end)) => {
                    assert_eq!(end, literal.len(), "{literal}");
                    assert_eq!(parse_integer(literal), Ok(value), "{literal}");
                }
                None => assert!(
                    !matches!(literal, "0" | "7" | "1200" | "1234567" | "12345678")
                        && literal != "999999999999999",
                    "{literal} was left to the general path"
                ),
            }
        }
    }

    #[test]
    fn fractions_and_exponents_are_not_integers() {
        assert_eq!(parse_integer("1.0"), Err(IntegerError::NotInteger));
        assert_eq!(parse_integer("1e2"), Err(IntegerError::NotInteger));
    }

    #[test]
    fn exact_doubles_are_read() {
        for literal in [
            "0",
            "-0",
            "0.1",
            "1.50",
            "1e21",
            "5e-324",
            "-2.5E+3",
            "123456.789",
            "0.000001",
        ] {
            assert!(parse_exact_f64(literal).is_some(), "{literal}");
        }
    }

    #[test]
    fn rounded_doubles_are_refused() {
        for literal in [
            "1e400",
            "1e-400",
            "9007199254740993",
            "0.30000000000000001",
            "18446744073709551616",
        ] {
            assert_eq!(parse_exact_f64(literal), None, "{literal}");
        }
    }

    #[test]
    fn the_short_literal_path_agrees_with_the_shortest_form_check() {
        let mantissas = [
            "1",
            "0.1",
            "9.999999999999999",
            "12345678901234.5",
            "123456789012345",
            "1234567890123456",
            "0.30000000000000001",
            "4.35",
            "100000000000000000000",
            "0.000000000000001",
            "2.2250738585072014",
            "1.7976931348623157",
            "900719925474099.3",
            "0.1000000000000000055511151231257827",
            "-5.5",
        ];
        let mut checked = 0;
        for mantissa in mantissas {
            for exponent in (-330..=330).step_by(7).chain([-308, -307, 307, 308]) {
                let literal = format!("{mantissa}e{exponent}");
                let Ok(value) = literal.parse::<f64>() else {
                    continue;
                };
                if !value.is_finite() || !within_double_digits(&literal, value) {
                    continue;
                }
                assert_eq!(
                    exact_by_shortest(&literal, value),
                    Some(value),
                    "{literal} takes the short path but is not exact"
                );
                checked += 1;
            }
        }
        assert!(checked > 500, "only {checked} literals took the short path");
    }

    #[test]
    fn long_or_out_of_range_literals_take_the_shortest_form_check() {
        for literal in [
            "0.30000000000000001",
            "1234567890123456",
            "1e-310",
            "1e308",
            "0",
        ] {
            let value: f64 = literal.parse().unwrap();
            assert!(!within_double_digits(literal, value), "{literal}");
        }
        for literal in [
            "100000000000000000000",
            "0.000100",
            "-1.50e10",
            "123456789012345",
        ] {
            let value: f64 = literal.parse().unwrap();
            assert!(within_double_digits(literal, value), "{literal}");
        }
    }

    #[test]
    fn zero_with_a_huge_exponent_is_still_zero() {
        assert_eq!(parse_exact_f64("0e99999999999999999999"), Some(0.0));
        assert_eq!(parse_exact_f64("0.0e5"), Some(0.0));
    }
}
