//! Why an authorization configuration cannot be used.

use super::uri::UriError;

/// Why a [`ResourceServer`](super::ResourceServer) or a verifier could not be built: each is a
/// mistake of the application's configuration, found before anything is served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthConfigError {
    /// A resource, issuer or endpoint URI that cannot be one.
    #[error(transparent)]
    Uri(#[from] UriError),
    /// A JWT verifier without any issuer to trust.
    #[error("no issuer is trusted: name at least one")]
    NoIssuer,
    /// A verifier naming no authorization server, which the protected resource metadata must
    /// list (MCP's authorization, "Authorization Server Discovery").
    #[error("the verifier names no authorization server for the metadata to list")]
    NoAuthorizationServer,
    /// A scope that is not a scope token (RFC 6749, section 3.3).
    #[error("`{0}` is not a scope: printable ASCII without space, `\"` or `\\`")]
    InvalidScope(String),
    /// Scopes named for a tool the registry does not have.
    #[error("scopes are named for `{0}`, which the registry does not have")]
    UnknownTool(String),
    /// The TLS client for the authorization servers could not be made.
    #[error("the TLS client could not be made: {0}")]
    Tls(String),
}
