//! RFC 8785's order of member names (section 3.2.3): by UTF-16 code units.

use std::cmp::Ordering;

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
