//! Canonical resource URIs (RFC 8707, section 2; MCP's "Canonical Server URI") and which URLs
//! the server fetches from.

use url::{Host, Url};

/// Why a URI cannot name this server or an issuer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UriError {
    /// It does not parse as an absolute URI.
    #[error("`{0}` is not an absolute URI")]
    NotAbsolute(String),
    /// It has a fragment, or a query (RFC 8707: a resource has no fragment and should have no
    /// query; an issuer has neither, RFC 8414).
    #[error("`{0}` has a query or a fragment")]
    QueryOrFragment(String),
    /// It is neither `https` nor `http` on a loopback host. OAuth 2.1 (section 1.5) asks for
    /// TLS everywhere; plain HTTP is for a server and issuer on this machine only.
    #[error("`{0}` is neither https nor http on a loopback host")]
    NotHttps(String),
}

/// `uri` as this crate compares resource URIs: parsed, scheme and host lowercase (MCP asks
/// servers to accept uppercase ones), default port dropped, and no trailing `/` on an empty
/// path (the form MCP recommends).
pub(super) fn canonical(uri: &str) -> Result<String, UriError> {
    fetchable_url(uri).map(|url| written(&url))
}

/// `uri` as a URL the server may name and fetch from: absolute, without query or fragment,
/// over HTTPS (or plain HTTP to this machine).
pub(super) fn fetchable_url(uri: &str) -> Result<Url, UriError> {
    let url = Url::parse(uri).map_err(|_| UriError::NotAbsolute(uri.to_owned()))?;
    if url.query().is_some() || url.fragment().is_some() {
        return Err(UriError::QueryOrFragment(uri.to_owned()));
    }
    if !fetchable(&url) {
        return Err(UriError::NotHttps(uri.to_owned()));
    }
    Ok(url)
}

/// Whether an audience value names the resource `canonical` (a value that does not parse
/// names nothing).
pub(super) fn names_resource(audience: &str, canonical_resource: &str) -> bool {
    Url::parse(audience).is_ok_and(|url| written(&url) == canonical_resource)
}

/// Whether the server may fetch from `url`: over HTTPS, or plain HTTP to this machine.
pub(super) fn fetchable(url: &Url) -> bool {
    match url.scheme() {
        "https" => url.host().is_some(),
        "http" => is_loopback(url),
        _ => false,
    }
}

/// Whether `url` names this machine.
pub(super) fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(Host::Domain(domain)) => domain.eq_ignore_ascii_case("localhost"),
        Some(Host::Ipv4(address)) => address.is_loopback(),
        Some(Host::Ipv6(address)) => address.is_loopback(),
        None => false,
    }
}

/// `url` as text, without the `/` `Url` writes for an empty path.
fn written(url: &Url) -> String {
    let text = url.as_str();
    if url.path() == "/" && url.query().is_none() && url.fragment().is_none() {
        text.trim_end_matches('/').to_owned()
    } else {
        text.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_canonical_uri_has_lowercase_scheme_and_host_and_no_trailing_slash() {
        assert_eq!(
            canonical("HTTPS://MCP.Example.com/").unwrap(),
            "https://mcp.example.com"
        );
        assert_eq!(
            canonical("https://mcp.example.com:443/mcp").unwrap(),
            "https://mcp.example.com/mcp"
        );
        assert_eq!(
            canonical("http://127.0.0.1:8931/mcp").unwrap(),
            "http://127.0.0.1:8931/mcp"
        );
    }

    #[test]
    fn fragments_queries_relative_and_plain_http_elsewhere_are_refused() {
        assert!(matches!(
            canonical("https://mcp.example.com#x"),
            Err(UriError::QueryOrFragment(_))
        ));
        assert!(matches!(
            canonical("https://mcp.example.com/mcp?x=1"),
            Err(UriError::QueryOrFragment(_))
        ));
        assert!(matches!(
            canonical("mcp.example.com"),
            Err(UriError::NotAbsolute(_))
        ));
        assert!(matches!(
            canonical("http://mcp.example.com/mcp"),
            Err(UriError::NotHttps(_))
        ));
        assert!(matches!(
            canonical("ftp://127.0.0.1/mcp"),
            Err(UriError::NotHttps(_))
        ));
    }

    #[test]
    fn an_audience_names_the_resource_however_its_case_and_slash() {
        let ours = canonical("https://mcp.example.com").unwrap();
        assert!(names_resource("https://MCP.example.com/", &ours));
        assert!(!names_resource("https://mcp.example.com.evil", &ours));
        assert!(!names_resource("https://mcp.example.com/other", &ours));
        assert!(!names_resource("not a uri", &ours));
    }
}
