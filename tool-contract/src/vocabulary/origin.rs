//! Which browser origins a server on this crate serves state-changing requests for: one rule,
//! for the MCP endpoint and the approvals console alike.

/// An origin as the rule compares it: lowercase, without a trailing `/`.
pub(crate) fn normalized(origin: &str) -> String {
    origin.trim_end_matches('/').to_ascii_lowercase()
}

#[cfg(any(feature = "mcp-http", feature = "console"))]
/// Whether a request may be served by its `Origin`: none (not from a browser), a loopback
/// origin, or one of `allowed` ([`normalized`]).
pub(crate) fn origin_allowed(headers: &http::HeaderMap, allowed: &[String]) -> bool {
    let Some(origin) = headers.get(http::header::ORIGIN) else {
        return true;
    };
    let Ok(origin) = origin.to_str() else {
        return false;
    };
    let origin = normalized(origin);
    if allowed.contains(&origin) {
        return true;
    }
    let Some((scheme, authority)) = origin.split_once("://") else {
        return false;
    };
    let host = match authority.strip_prefix('[') {
        Some(bracketed) => bracketed.split(']').next().unwrap_or_default(),
        None => authority.split(':').next().unwrap_or_default(),
    };
    matches!(scheme, "http" | "https") && matches!(host, "localhost" | "127.0.0.1" | "::1")
}
