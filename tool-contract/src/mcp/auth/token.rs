//! What a verifier says of a bearer token: the caller it proves, or why it was refused.

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;

use crate::vocabulary::Principal;

/// The future a [`TokenVerifier`] answers with.
pub type VerifyFuture<'a> =
    Pin<Box<dyn Future<Output = Result<VerifiedToken, TokenRefusal>> + Send + 'a>>;

/// Checks a bearer access token and says whom it proves.
///
/// [`JwtVerifier`](super::JwtVerifier) checks JWT access tokens (RFC 9068) against their
/// issuer's published keys; [`IntrospectionVerifier`](super::IntrospectionVerifier) asks the
/// issuer (RFC 7662). An application may plug its own, for tokens of another kind.
///
/// A verifier must check that the token was issued for `resource` (its audience, RFC 8707):
/// a token for another server is refused with [`TokenRefusal::WrongAudience`].
pub trait TokenVerifier: Send + Sync + 'static {
    /// Verifies `token`, as presented to the resource whose canonical URI is `resource`.
    fn verify<'a>(&'a self, token: &'a str, resource: &'a str) -> VerifyFuture<'a>;

    /// The issuers whose tokens it accepts, as the protected resource metadata lists them
    /// (`authorization_servers`, RFC 9728): where a client goes for a token.
    fn authorization_servers(&self) -> Vec<String>;
}

/// A token a [`TokenVerifier`] accepted: the principal it proves and what it grants.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct VerifiedToken {
    /// Who calls: the tenant as the issuer's configuration says, the subject from `sub`.
    pub principal: Principal,
    /// The scopes the token grants (its `scope` claim).
    pub scopes: BTreeSet<String>,
    /// The issuer that vouches for it.
    pub issuer: String,
    /// When it expires, in seconds since the Unix epoch (`exp`), when it says.
    pub expires_at: Option<u64>,
    /// The OAuth client it was issued to (`client_id`), when it says.
    pub client_id: Option<String>,
}

impl VerifiedToken {
    /// A token of `issuer` proving `principal`, granting no scope and without an expiry.
    #[must_use]
    pub fn new(principal: Principal, issuer: impl Into<String>) -> Self {
        VerifiedToken {
            principal,
            scopes: BTreeSet::new(),
            issuer: issuer.into(),
            expires_at: None,
            client_id: None,
        }
    }

    /// The same token, granting `scopes`.
    #[must_use]
    pub fn with_scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The same token, expiring at `expires_at` (seconds since the Unix epoch).
    #[must_use]
    pub fn expiring_at(mut self, expires_at: u64) -> Self {
        self.expires_at = Some(expires_at);
        self
    }

    /// The same token, issued to the OAuth client `client_id`.
    #[must_use]
    pub fn for_client(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = Some(client_id.into());
        self
    }
}

/// Why a bearer token was refused. Every refusal is answered `401` with
/// `error="invalid_token"` (RFC 6750), except [`Unavailable`](Self::Unavailable), answered
/// `503`: the token may be good, but nobody could say so.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenRefusal {
    /// Not a token this verifier reads (not a compact JWS, undecodable parts, a critical
    /// header it does not understand).
    #[error("the token is malformed")]
    Malformed,
    /// Its header's `typ` is not `at+jwt` (RFC 9068, section 4): an ID token or another
    /// JWT is not an access token.
    #[error("the token is not a JWT access token")]
    NotAnAccessToken,
    /// Its issuer is not one this server trusts.
    #[error("the token's issuer is not trusted")]
    WrongIssuer,
    /// Its key id names no key its issuer publishes, even after the keys were fetched again.
    #[error("the token's key is not one its issuer publishes")]
    UnknownKey,
    /// Its header's `alg` is not the algorithm of the key it names (`none`, or an HMAC
    /// "signed" with a public key, among others).
    #[error("the token's algorithm is not its key's")]
    WrongAlgorithm,
    /// The signature does not verify.
    #[error("the token's signature does not verify")]
    BadSignature,
    /// It was issued for another resource: this server is not in its audience (RFC 8707).
    #[error("the token was issued for another resource")]
    WrongAudience,
    /// It has expired.
    #[error("the token has expired")]
    Expired,
    /// It is not valid yet (`nbf`).
    #[error("the token is not valid yet")]
    NotYetValid,
    /// A claim it must carry is missing or of the wrong type.
    #[error("the token lacks the claim `{0}`")]
    MissingClaim(&'static str),
    /// Its issuer says it is not active (revoked, or never issued).
    #[error("the token is not active")]
    Inactive,
    /// Nobody could say whether it is valid: the issuer's metadata, keys or introspection
    /// could not be had.
    #[error("the token could not be verified: {0}")]
    Unavailable(String),
}

impl TokenRefusal {
    /// A short code for logs and tests.
    #[must_use]
    pub fn code(&self) -> &'static str {
        match self {
            TokenRefusal::Malformed => "malformed",
            TokenRefusal::NotAnAccessToken => "not_an_access_token",
            TokenRefusal::WrongIssuer => "wrong_issuer",
            TokenRefusal::UnknownKey => "unknown_key",
            TokenRefusal::WrongAlgorithm => "wrong_algorithm",
            TokenRefusal::BadSignature => "bad_signature",
            TokenRefusal::WrongAudience => "wrong_audience",
            TokenRefusal::Expired => "expired",
            TokenRefusal::NotYetValid => "not_yet_valid",
            TokenRefusal::MissingClaim(_) => "missing_claim",
            TokenRefusal::Inactive => "inactive",
            TokenRefusal::Unavailable(_) => "unavailable",
        }
    }
}
