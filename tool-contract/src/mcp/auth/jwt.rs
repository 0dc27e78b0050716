//! JWT access tokens (RFC 9068) checked against their issuer's published keys, with
//! `jsonwebtoken` doing the cryptography.
//!
//! The order of the checks: the header's `typ` (`at+jwt`), the issuer (one this server
//! trusts, picked by the unverified `iss` and confirmed after), the key (`kid` among the
//! issuer's keys, fetched again when unknown, at most once per interval), the algorithm (the
//! key's own, which the header must name: `none`, or an HMAC under a public key, names
//! another), the signature, then the claims (issuer, audience, `exp`, `nbf`, subject, tenant).

use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation, decode};
use serde::Deserialize;
use serde_json::{Map, Value};
use url::Url;

use super::cache::TokenCache;
use super::claims::{self, Expected, TenantRule};
use super::discovery::{DiscoveryError, discover};
use super::error::AuthConfigError;
use super::fetch::Fetcher;
use super::jwks::KeySet;
use super::token::{TokenRefusal, TokenVerifier, VerifiedToken, VerifyFuture};
use super::uri::fetchable_url;

/// The most clock skew a verifier allows on `exp` and `nbf`.
pub const MAX_LEEWAY: Duration = Duration::from_secs(300);

/// An authorization server whose JWT access tokens a [`JwtVerifier`] accepts.
///
/// Its keys are found from its metadata (RFC 8414, or OpenID Connect Discovery) unless
/// [`with_jwks_uri`](Self::with_jwks_uri) names them. Each token's principal is its `sub`
/// within a tenant: the issuer's URL unless [`with_tenant_claim`](Self::with_tenant_claim) or
/// [`with_tenant`](Self::with_tenant) says otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issuer {
    url: String,
    tenant: TenantRule,
    jwks_uri: Option<Url>,
}

impl Issuer {
    /// The issuer `url`, exactly as its tokens' `iss` claim writes it (compared as a string).
    ///
    /// # Errors
    ///
    /// [`AuthConfigError::Uri`] when `url` is not an absolute `https` URL without query or
    /// fragment (or `http` on a loopback host, for development).
    pub fn new(url: &str) -> Result<Self, AuthConfigError> {
        fetchable_url(url)?;
        Ok(Issuer {
            url: url.to_owned(),
            tenant: TenantRule::Issuer,
            jwks_uri: None,
        })
    }

    /// The tenant of each token is its claim `claim` (a non-empty string; a token without it
    /// is refused).
    #[must_use]
    pub fn with_tenant_claim(mut self, claim: impl Into<String>) -> Self {
        self.tenant = TenantRule::Claim(claim.into());
        self
    }

    /// Every token of this issuer is of the tenant `tenant`.
    #[must_use]
    pub fn with_tenant(mut self, tenant: impl Into<String>) -> Self {
        self.tenant = TenantRule::Fixed(tenant.into());
        self
    }

    /// The issuer's JWK Set is at `uri`: its metadata is not fetched.
    ///
    /// # Errors
    ///
    /// [`AuthConfigError::Uri`] as for [`new`](Self::new).
    pub fn with_jwks_uri(mut self, uri: &str) -> Result<Self, AuthConfigError> {
        self.jwks_uri = Some(fetchable_url(uri)?);
        Ok(self)
    }

    /// The issuer URL.
    #[must_use]
    pub fn url(&self) -> &str {
        &self.url
    }

    pub(super) fn tenant_rule(&self) -> &TenantRule {
        &self.tenant
    }
}

/// Verifies JWT access tokens (RFC 9068) of the issuers it trusts; see the
/// [module docs](super) for the whole of what a token must be.
///
/// A verified token is remembered (by its SHA-256, with the resource) until it expires or for
/// a minute, whichever is sooner, so a client's next request costs no signature check.
pub struct JwtVerifier {
    issuers: Vec<IssuerKeys>,
    leeway: Duration,
    refresh_interval: Duration,
    max_key_age: Duration,
    any_token_type: bool,
    cache: TokenCache,
    fetcher: Fetcher,
}

impl std::fmt::Debug for JwtVerifier {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("JwtVerifier")
            .field(
                "issuers",
                &self
                    .issuers
                    .iter()
                    .map(|issuer| &issuer.issuer.url)
                    .collect::<Vec<_>>(),
            )
            .field("leeway", &self.leeway)
            .finish_non_exhaustive()
    }
}

/// One trusted issuer and what is known of its keys.
struct IssuerKeys {
    issuer: Issuer,
    keys: RwLock<Keys>,
    /// Held while the keys are fetched, so that one fetch serves every waiting request.
    fetching: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct Keys {
    set: Arc<KeySet>,
    /// When the set was last fetched.
    fetched_at: Option<Instant>,
    /// When a fetch was last tried, successful or not.
    tried_at: Option<Instant>,
    /// Whether the last fetch failed.
    failed: bool,
    /// The JWK Set's URL, once known.
    jwks_uri: Option<Url>,
}

/// What a token's header and unverified payload say, before anything is trusted.
struct Peeked {
    alg: String,
    kid: Option<String>,
    typ: Option<String>,
    iss: Option<String>,
}

impl JwtVerifier {
    /// Accepts the tokens of `issuers`, with a leeway of 30 s on `exp` and `nbf`, keys
    /// fetched again at most once a minute when a token names an unknown one (and at the
    /// first token after ten minutes).
    ///
    /// # Errors
    ///
    /// [`AuthConfigError::NoIssuer`] when `issuers` is empty; [`AuthConfigError::Tls`] when
    /// no TLS client can be made.
    pub fn new(issuers: impl IntoIterator<Item = Issuer>) -> Result<Self, AuthConfigError> {
        let issuers: Vec<IssuerKeys> = issuers
            .into_iter()
            .map(|issuer| IssuerKeys {
                keys: RwLock::new(Keys {
                    jwks_uri: issuer.jwks_uri.clone(),
                    ..Keys::default()
                }),
                issuer,
                fetching: tokio::sync::Mutex::new(()),
            })
            .collect();
        if issuers.is_empty() {
            return Err(AuthConfigError::NoIssuer);
        }
        let leeway = Duration::from_secs(30);
        Ok(JwtVerifier {
            issuers,
            leeway,
            refresh_interval: Duration::from_secs(60),
            max_key_age: Duration::from_secs(600),
            any_token_type: false,
            cache: TokenCache::new(60, leeway.as_secs()),
            fetcher: Fetcher::new().map_err(|error| AuthConfigError::Tls(error.to_string()))?,
        })
    }

    /// The clock skew allowed on `exp` and `nbf`; at most [`MAX_LEEWAY`], which a longer one
    /// is cut to.
    #[must_use]
    pub fn with_leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway.min(MAX_LEEWAY);
        self.cache = TokenCache::new(60, self.leeway.as_secs());
        self
    }

    /// The shortest time between two fetches of an issuer's keys (a token naming an unknown
    /// key fetches them again, once per interval at most, so that made-up key ids cannot make
    /// the server hammer its issuer).
    #[must_use]
    pub fn with_key_refresh_interval(mut self, interval: Duration) -> Self {
        self.refresh_interval = interval;
        self
    }

    /// How long a verified token is remembered at most (zero: never, every request checks its
    /// signature).
    #[must_use]
    pub fn with_cache_lifetime(mut self, lifetime: Duration) -> Self {
        self.cache = TokenCache::new(lifetime.as_secs(), self.leeway.as_secs());
        self
    }

    /// Accepts tokens whatever their header's `typ`, for issuers that do not type their access
    /// tokens `at+jwt` as RFC 9068 asks. The audience check still refuses an ID token, whose
    /// audience is its client, not this server.
    #[must_use]
    pub fn accepting_any_token_type(mut self) -> Self {
        self.any_token_type = true;
        self
    }

    async fn verify_token(
        &self,
        token: &str,
        resource: &str,
    ) -> Result<VerifiedToken, TokenRefusal> {
        if let Some(verified) = self.cache.get(resource, token) {
            return Ok((*verified).clone());
        }
        let peeked = peek(token)?;
        if !self.any_token_type && !is_access_token_type(peeked.typ.as_deref()) {
            return Err(TokenRefusal::NotAnAccessToken);
        }
        let issuer = self
            .issuers
            .iter()
            .find(|issuer| Some(issuer.issuer.url.as_str()) == peeked.iss.as_deref())
            .ok_or(TokenRefusal::WrongIssuer)?;
        let keys = self.keys_with(issuer, peeked.kid.as_deref()).await?;
        let key = keys
            .find(peeked.kid.as_deref())
            .ok_or(TokenRefusal::UnknownKey)?;
        // `none` and names no JOSE algorithm has are no algorithm of any key.
        if peeked.alg.parse::<Algorithm>().ok() != Some(key.algorithm) {
            return Err(TokenRefusal::WrongAlgorithm);
        }
        let mut validation = Validation::new(key.algorithm);
        // The claims are checked below, with exact refusals and the same rules as
        // introspection's: here only the signature, under the key's own algorithm.
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.validate_aud = false;
        validation.required_spec_claims.clear();
        let data =
            decode::<Map<String, Value>>(token, &key.decoding, &validation).map_err(|error| {
                match error.kind() {
                    ErrorKind::InvalidSignature => TokenRefusal::BadSignature,
                    ErrorKind::InvalidAlgorithm | ErrorKind::InvalidAlgorithmName => {
                        TokenRefusal::WrongAlgorithm
                    }
                    _ => TokenRefusal::Malformed,
                }
            })?;
        let verified = claims::check(
            &data.claims,
            &Expected {
                issuer: &issuer.issuer.url,
                issuer_required: true,
                resource,
                expiry_required: true,
                leeway_s: self.leeway.as_secs(),
                tenant: &issuer.issuer.tenant,
            },
        )?;
        self.cache.put(resource, token, Arc::new(verified.clone()));
        Ok(verified)
    }

    /// The keys of `issuer`, with `kid` among them if it publishes it: fetched when they
    /// never were, are old, or lack `kid`, and no fetch was tried within the interval.
    async fn keys_with(
        &self,
        issuer: &IssuerKeys,
        kid: Option<&str>,
    ) -> Result<Arc<KeySet>, TokenRefusal> {
        let usable = |keys: &Keys| {
            keys.set.find(kid).is_some()
                && keys
                    .fetched_at
                    .is_some_and(|at| at.elapsed() < self.max_key_age)
        };
        if let Some(set) = issuer.read(usable) {
            return Ok(set);
        }
        let _fetching = issuer.fetching.lock().await;
        // Another request may have fetched them while this one waited.
        if let Some(set) = issuer.read(usable) {
            return Ok(set);
        }
        let (jwks_uri, tried_at, failed, current) = {
            let keys = issuer.keys.read().unwrap_or_else(PoisonError::into_inner);
            let uri = keys.jwks_uri.clone();
            (uri, keys.tried_at, keys.failed, keys.set.clone())
        };
        if tried_at.is_some_and(|at| at.elapsed() < self.refresh_interval) {
            return if failed && current.find(kid).is_none() {
                Err(TokenRefusal::Unavailable(
                    "the issuer's keys could not be fetched".to_owned(),
                ))
            } else {
                Ok(current)
            };
        }
        issuer.write(|keys| keys.tried_at = Some(Instant::now()));
        match self.fetch_keys(&issuer.issuer, jwks_uri).await {
            Ok((uri, set)) => {
                let set = Arc::new(set);
                issuer.write(|keys| {
                    keys.set = set.clone();
                    keys.fetched_at = Some(Instant::now());
                    keys.failed = false;
                    keys.jwks_uri = Some(uri);
                });
                Ok(set)
            }
            Err(error) => {
                issuer.write(|keys| keys.failed = true);
                tracing::warn!(issuer = %issuer.issuer.url, %error, "the issuer's keys could not be fetched");
                if current.find(kid).is_some() {
                    // Old keys that still name this one serve until the issuer answers.
                    Ok(current)
                } else {
                    Err(TokenRefusal::Unavailable(error.to_string()))
                }
            }
        }
    }

    /// The JWK Set of `issuer`, from `jwks_uri` or the URI its metadata names.
    async fn fetch_keys(
        &self,
        issuer: &Issuer,
        jwks_uri: Option<Url>,
    ) -> Result<(Url, KeySet), DiscoveryError> {
        let uri = match jwks_uri {
            Some(uri) => uri,
            None => {
                let metadata = discover(&self.fetcher, &issuer.url).await?;
                let uri = metadata
                    .jwks_uri
                    .ok_or_else(|| DiscoveryError::Missing(issuer.url.clone(), "jwks_uri"))?;
                fetchable_url(&uri)
                    .map_err(|error| DiscoveryError::Unreadable(uri.clone(), error.to_string()))?
            }
        };
        let body = self.fetcher.get(&uri).await?;
        let set = KeySet::parse(&body)
            .map_err(|error| DiscoveryError::Unreadable(uri.to_string(), error.to_string()))?;
        Ok((uri, set))
    }
}

impl IssuerKeys {
    /// The key set, if `usable` says it serves.
    fn read(&self, usable: impl Fn(&Keys) -> bool) -> Option<Arc<KeySet>> {
        let keys = self.keys.read().unwrap_or_else(PoisonError::into_inner);
        usable(&keys).then(|| keys.set.clone())
    }

    fn write(&self, change: impl FnOnce(&mut Keys)) {
        change(&mut self.keys.write().unwrap_or_else(PoisonError::into_inner));
    }
}

impl TokenVerifier for JwtVerifier {
    fn verify<'a>(&'a self, token: &'a str, resource: &'a str) -> VerifyFuture<'a> {
        Box::pin(self.verify_token(token, resource))
    }

    fn authorization_servers(&self) -> Vec<String> {
        self.issuers
            .iter()
            .map(|issuer| issuer.issuer.url.clone())
            .collect()
    }
}

/// Whether `typ` is an access token's (RFC 9068, section 4; media types compare without
/// regard to case, and the `application/` prefix may be left out, RFC 7515, section 4.1.9).
fn is_access_token_type(typ: Option<&str>) -> bool {
    typ.is_some_and(|typ| {
        let typ = typ.strip_prefix("application/").unwrap_or(typ);
        typ.eq_ignore_ascii_case("at+jwt")
    })
}

/// The header and the unverified issuer of a compact JWS.
fn peek(token: &str) -> Result<Peeked, TokenRefusal> {
    #[derive(Deserialize)]
    struct Header {
        alg: String,
        kid: Option<String>,
        typ: Option<String>,
        crit: Option<Value>,
    }
    #[derive(Deserialize)]
    struct Payload {
        iss: Option<Value>,
    }
    let mut parts = token.split('.');
    let (Some(header), Some(payload), Some(_signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(TokenRefusal::Malformed);
    };
    let part = |text: &str| {
        URL_SAFE_NO_PAD
            .decode(text)
            .map_err(|_| TokenRefusal::Malformed)
    };
    let header: Header =
        serde_json::from_slice(&part(header)?).map_err(|_| TokenRefusal::Malformed)?;
    // No extension this verifier understands may be critical (RFC 7515, section 4.1.11).
    if header.crit.is_some() {
        return Err(TokenRefusal::Malformed);
    }
    let payload: Payload =
        serde_json::from_slice(&part(payload)?).map_err(|_| TokenRefusal::Malformed)?;
    Ok(Peeked {
        alg: header.alg,
        kid: header.kid,
        typ: header.typ,
        iss: payload.iss.and_then(|iss| iss.as_str().map(str::to_owned)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compact(header: &str, payload: &str) -> String {
        format!(
            "{}.{}.c2ln",
            URL_SAFE_NO_PAD.encode(header),
            URL_SAFE_NO_PAD.encode(payload)
        )
    }

    #[test]
    fn a_token_is_three_base64url_parts_of_json() {
        assert_eq!(peek("a.b").err(), Some(TokenRefusal::Malformed));
        assert_eq!(peek("a.b.c.d").err(), Some(TokenRefusal::Malformed));
        assert_eq!(peek("!!.b.c").err(), Some(TokenRefusal::Malformed));
        let peeked = peek(&compact(
            r#"{"alg":"RS256","kid":"k1","typ":"at+jwt"}"#,
            r#"{"iss":"https://as.example"}"#,
        ))
        .unwrap();
        assert_eq!(peeked.alg, "RS256");
        assert_eq!(peeked.kid.as_deref(), Some("k1"));
        assert_eq!(peeked.iss.as_deref(), Some("https://as.example"));
    }

    #[test]
    fn a_critical_header_is_refused() {
        let token = compact(r#"{"alg":"RS256","crit":["exp"],"exp":1}"#, "{}");
        assert_eq!(peek(&token).err(), Some(TokenRefusal::Malformed));
    }

    #[test]
    fn access_tokens_are_typed_at_jwt() {
        assert!(is_access_token_type(Some("at+jwt")));
        assert!(is_access_token_type(Some("application/AT+JWT")));
        assert!(!is_access_token_type(Some("JWT")));
        assert!(!is_access_token_type(None));
    }

    #[test]
    fn issuers_are_https_urls_without_query_or_fragment() {
        assert!(Issuer::new("https://auth.example.com").is_ok());
        assert!(Issuer::new("http://127.0.0.1:9000").is_ok());
        assert!(Issuer::new("http://auth.example.com").is_err());
        assert!(Issuer::new("https://auth.example.com?x").is_err());
        assert!(JwtVerifier::new([]).is_err());
    }
}
