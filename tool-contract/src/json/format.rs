//! The named string formats a field may require: `rfc3339`, `rfc3339_utc`, `https_url`.

use serde::Serialize;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::names::wire_names;

wire_names! {
    /// A named string format a field may require.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
    #[non_exhaustive]
    pub enum Format {
        /// An RFC 3339 date-time with any offset: the format of `time::OffsetDateTime` fields.
        Rfc3339 = "rfc3339",
        /// An RFC 3339 date-time in UTC, written with a `Z` offset: `2026-11-29T12:00:00Z`.
        Rfc3339Utc = "rfc3339_utc",
        /// An absolute `https://` URL with a host and no user info.
        HttpsUrl = "https_url",
    }
}

impl Format {
    /// Whether `value` is in this format.
    #[must_use]
    pub fn matches(self, value: &str) -> bool {
        match self {
            Format::Rfc3339 => parse_rfc3339(value).is_some(),
            Format::Rfc3339Utc => is_rfc3339_utc(value),
            Format::HttpsUrl => is_https_url(value),
        }
    }
}

/// Reads an RFC 3339 date-time with any offset, written with the `T` separator (RFC 3339
/// §5.6 lets applications use a space instead; one spelling keeps digests stable).
pub(crate) fn parse_rfc3339(value: &str) -> Option<OffsetDateTime> {
    if value.as_bytes().get(10) != Some(&b'T') {
        return None;
    }
    OffsetDateTime::parse(value, &Rfc3339).ok()
}

/// Whether `value` is an RFC 3339 date-time written in UTC with a `Z` (not `+00:00`, and not
/// RFC 3339's `-00:00` for an unknown offset): one spelling per instant keeps digests stable.
pub(crate) fn is_rfc3339_utc(value: &str) -> bool {
    value.ends_with('Z') && parse_rfc3339(value).is_some_and(|time| time.offset().is_utc())
}

/// Whether `value` is an absolute `https://` URL: a host (a DNS name, an IPv4 address or a
/// bracketed IPv6 address), an optional port, then only characters RFC 3986 §2 allows, with
/// every `%` starting a two-digit escape. User info (`user:pass@`) is refused: credentials
/// must not travel in URLs.
///
/// This is a format check, not a URL parser: the `url` crate would pull in IDNA tables for
/// an answer we need only as yes or no.
pub(crate) fn is_https_url(value: &str) -> bool {
    let Some(rest) = value.strip_prefix("https://") else {
        return false;
    };
    let authority_end = rest
        .bytes()
        .position(|b| matches!(b, b'/' | b'?' | b'#'))
        .unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    is_authority(authority) && is_uri_tail(tail)
}

fn is_authority(authority: &str) -> bool {
    let (host, port) = if let Some(bracketed) = authority.strip_prefix('[') {
        let Some((address, after)) = bracketed.split_once(']') else {
            return false;
        };
        if address.is_empty()
            || !address
                .bytes()
                .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
        {
            return false;
        }
        match after.strip_prefix(':') {
            Some(port) => (address, Some(port)),
            None if after.is_empty() => (address, None),
            None => return false,
        }
    } else {
        match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    let host_ok = authority.starts_with('[') || is_dns_name(host);
    let port_ok = port.is_none_or(|port| {
        !port.is_empty() && port.len() <= 5 && port.parse::<u16>().is_ok_and(|p| p > 0)
    });
    host_ok && port_ok
}

/// Labels of 1–63 letters, digits and inner hyphens, joined by dots (one trailing dot
/// allowed), 253 bytes at most.
fn is_dns_name(host: &str) -> bool {
    let host = host.strip_suffix('.').unwrap_or(host);
    if host.is_empty() || host.len() > 253 {
        return false;
    }
    let mut label_len = 0;
    let mut previous = b'.';
    for &b in host.as_bytes() {
        if b == b'.' {
            if label_len == 0 || previous == b'-' {
                return false;
            }
            label_len = 0;
        } else if b.is_ascii_alphanumeric() || (b == b'-' && label_len > 0) {
            label_len += 1;
            if label_len > 63 {
                return false;
            }
        } else {
            return false;
        }
        previous = b;
    }
    label_len > 0 && previous != b'-'
}

/// The bytes RFC 3986 allows unescaped in a path, query or fragment (§3.3–3.5): unreserved,
/// sub-delims, `:`, `@`, `/`, `?`; `#` is handled apart.
const URI_TAIL_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        // `b < 256`, so the cast is exact.
        #[allow(clippy::cast_possible_truncation)]
        let byte = b as u8;
        table[b] = byte.is_ascii_alphanumeric();
        b += 1;
    }
    let others = b"-._~!$&'()*+,;=:@/?";
    let mut i = 0;
    while i < others.len() {
        table[others[i] as usize] = true;
        i += 1;
    }
    table
};

fn is_uri_tail(tail: &str) -> bool {
    let bytes = tail.as_bytes();
    let mut i = 0;
    let mut seen_fragment = false;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'%' => {
                let escape = bytes.get(i + 1..i + 3);
                if !escape.is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit)) {
                    return false;
                }
                i += 3;
                continue;
            }
            b'#' if !seen_fragment => seen_fragment = true,
            b if URI_TAIL_BYTES[usize::from(b)] => {}
            _ => return false,
        }
        i += 1;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_times_with_z_are_rfc3339_utc() {
        assert!(is_rfc3339_utc("2026-11-29T12:00:00Z"));
        assert!(is_rfc3339_utc("2026-11-29T12:00:00.123Z"));
    }

    #[test]
    fn other_offsets_and_non_times_are_not_rfc3339_utc() {
        for value in [
            "2026-11-29T12:00:00+00:00",
            "2026-11-29T12:00:00+01:00",
            "2026-11-29 12:00:00Z",
            "2026-13-29T12:00:00Z",
            "Z",
            "",
        ] {
            assert!(!is_rfc3339_utc(value), "{value}");
        }
    }

    #[test]
    fn https_urls_with_hosts_pass() {
        for value in [
            "https://example.com",
            "https://example.com/a/b?q=1&r=%20#top",
            "https://shop.example.com:8443/",
            "https://[2001:db8::1]/x",
            "https://192.0.2.1/",
        ] {
            assert!(is_https_url(value), "{value}");
        }
    }

    #[test]
    fn other_urls_fail_https_url() {
        for value in [
            "http://example.com",
            "https://",
            "https:///path",
            "https://user:pass@example.com/",
            "https://exa mple.com",
            "https://example.com/a b",
            "https://example.com/%zz",
            "https://example.com:0/",
            "https://example.com:99999/",
            "https://-bad-.com/",
            "https://bad-.com/",
            "https://a..b/",
            "https://example.com../",
            "javascript:alert(1)",
        ] {
            assert!(!is_https_url(value), "{value}");
        }
    }
}
