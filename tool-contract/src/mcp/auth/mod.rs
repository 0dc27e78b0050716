//! Who calls: MCP over HTTP as an OAuth 2.1 resource server (feature `mcp-auth`).
//!
//! MCP's authorization specification (2025-06-18 on, unchanged in 2026-07-28) makes an HTTP
//! server a resource server: each request carries a bearer access token its authorization
//! server issued *for this server*, and the server acts for the principal the token proves.
//! [`McpServer::authenticated`](super::McpServer::authenticated) serves a
//! [`ResourceServer`] that way:
//!
//! - The protected resource metadata (RFC 9728) is served at
//!   `/.well-known/oauth-protected-resource` followed by the MCP endpoint's path, and at the
//!   root form: the resource, its authorization servers, the scopes a client asks for.
//! - A request without a valid token is answered `401` with
//!   `WWW-Authenticate: Bearer resource_metadata="…", scope="…"` (and
//!   `error="invalid_token"` when a token was refused); a call whose scopes the token lacks,
//!   `403` with `error="insufficient_scope"` and every scope the call needs (step-up).
//! - Tokens come from the `Authorization` header only; one in the query string is refused
//!   (`400`), and a header over [`MAX_AUTHORIZATION_BYTES`] is refused before it is parsed.
//! - Each request's principal is its token's: the tenant as its issuer's configuration says
//!   ([`Issuer::with_tenant_claim`]), the subject from `sub`. It flows through the whole
//!   pipeline (ledger keys, approvals, audit, the approver an MCP answer is recorded as), and
//!   binds the sealed `requestState` of a 2026-07-28 approval: a state issued to one
//!   principal and sent back with another's token is refused (`other_principal`). A
//!   handshake session keeps the principal of its `initialize`; a request in it with another
//!   principal's token is refused `403`.
//! - `tools/list` shows only the tools the token may call.
//!
//! [`JwtVerifier`] checks JWT access tokens (RFC 9068) against the issuer's JWK Set, found
//! from its metadata (RFC 8414, or OpenID Connect Discovery) and fetched again, at most once
//! per interval, when a token names an unknown key: `iss` exactly, `aud` containing this
//! server's canonical URI (RFC 8707), `exp` and `nbf` within a bounded leeway, and the
//! signature under the algorithm of the key (never the token's word alone: `alg: none`, and
//! an HMAC "signed" with the public key, are refused). [`IntrospectionVerifier`] asks the
//! issuer instead (RFC 7662). An application may plug its own [`TokenVerifier`].

mod cache;
mod claims;
mod discovery;
mod door;
mod error;
mod fetch;
mod introspection;
mod jwks;
mod jwt;
mod resource;
mod scopes;
mod token;
mod uri;

pub use door::MAX_AUTHORIZATION_BYTES;
pub(crate) use door::{Caller, Door};
pub use error::AuthConfigError;
pub use introspection::IntrospectionVerifier;
pub use jwt::{Issuer, JwtVerifier, MAX_LEEWAY};
pub use resource::ResourceServer;
pub use token::{TokenRefusal, TokenVerifier, VerifiedToken, VerifyFuture};
pub use uri::UriError;
