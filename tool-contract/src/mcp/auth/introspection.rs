//! Tokens checked by asking their issuer (OAuth 2.0 Token Introspection, RFC 7662): for opaque
//! tokens, and for JWTs whose revocation must be seen at once.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value};
use tokio::sync::OnceCell;
use url::Url;
use url::form_urlencoded;

use super::cache::TokenCache;
use super::claims::{self, Expected};
use super::discovery::{DiscoveryError, discover};
use super::error::AuthConfigError;
use super::fetch::Fetcher;
use super::jwt::Issuer;
use super::token::{TokenRefusal, TokenVerifier, VerifiedToken, VerifyFuture};
use super::uri::fetchable_url;

/// Verifies each token by asking its issuer's introspection endpoint (RFC 7662), as a client
/// of the issuer with its own credentials (HTTP Basic, RFC 6749, section 2.3.1).
///
/// The issuer's answer must say the token is `active`, name this server in its `aud` (RFC
/// 8707), not be past its `exp` (when it gives one), and carry a `sub` (and the tenant claim,
/// when the issuer's tenant is one). Answers are not remembered unless
/// [`with_cache_lifetime`](Self::with_cache_lifetime) says for how long, so a revoked token is
/// refused from the next request on.
pub struct IntrospectionVerifier {
    issuer: Issuer,
    endpoint: OnceCell<Url>,
    client_authorization: String,
    leeway: Duration,
    cache: TokenCache,
    fetcher: Fetcher,
}

impl std::fmt::Debug for IntrospectionVerifier {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("IntrospectionVerifier")
            .field("issuer", &self.issuer.url())
            .field("endpoint", &self.endpoint.get().map(Url::as_str))
            .finish_non_exhaustive()
    }
}

impl IntrospectionVerifier {
    /// Asks `issuer`, whose metadata names its introspection endpoint, as the client
    /// `client_id` with `client_secret`.
    ///
    /// # Errors
    ///
    /// [`AuthConfigError::Tls`] when no TLS client can be made.
    pub fn new(
        issuer: Issuer,
        client_id: &str,
        client_secret: &str,
    ) -> Result<Self, AuthConfigError> {
        let encoded =
            |text: &str| form_urlencoded::byte_serialize(text.as_bytes()).collect::<String>();
        let credentials = format!("{}:{}", encoded(client_id), encoded(client_secret));
        Ok(IntrospectionVerifier {
            issuer,
            endpoint: OnceCell::new(),
            client_authorization: format!("Basic {}", STANDARD.encode(credentials)),
            leeway: Duration::from_secs(30),
            cache: TokenCache::new(0, 30),
            fetcher: Fetcher::new().map_err(|error| AuthConfigError::Tls(error.to_string()))?,
        })
    }

    /// Asks the introspection endpoint `uri` instead of the one the issuer's metadata names.
    ///
    /// # Errors
    ///
    /// [`AuthConfigError::Uri`] when `uri` is not an `https` URL (or `http` on a loopback
    /// host) without query or fragment.
    pub fn with_endpoint(self, uri: &str) -> Result<Self, AuthConfigError> {
        let uri = fetchable_url(uri)?;
        Ok(IntrospectionVerifier {
            endpoint: OnceCell::new_with(Some(uri)),
            ..self
        })
    }

    /// Remembers an active answer for up to `lifetime` (never past the token's `exp`): fewer
    /// questions, and a revocation seen that much later.
    #[must_use]
    pub fn with_cache_lifetime(mut self, lifetime: Duration) -> Self {
        self.cache = TokenCache::new(lifetime.as_secs(), self.leeway.as_secs());
        self
    }

    async fn introspect(&self, token: &str, resource: &str) -> Result<VerifiedToken, TokenRefusal> {
        if let Some(verified) = self.cache.get(resource, token) {
            return Ok((*verified).clone());
        }
        let unavailable = |error: DiscoveryError| TokenRefusal::Unavailable(error.to_string());
        let endpoint = self
            .endpoint
            .get_or_try_init(|| self.discover_endpoint())
            .await
            .map_err(unavailable)?;
        let form = form_urlencoded::Serializer::new(String::new())
            .append_pair("token", token)
            .append_pair("token_type_hint", "access_token")
            .finish();
        let answer = self
            .fetcher
            .post_form(endpoint, form, Some(&self.client_authorization))
            .await
            .map_err(|error| unavailable(error.into()))?;
        let claims: Map<String, Value> = serde_json::from_slice(&answer).map_err(|error| {
            TokenRefusal::Unavailable(format!("the introspection answer does not read: {error}"))
        })?;
        if claims.get("active") != Some(&Value::Bool(true)) {
            return Err(TokenRefusal::Inactive);
        }
        let verified = claims::check(
            &claims,
            &Expected {
                issuer: self.issuer.url(),
                issuer_required: false,
                resource,
                expiry_required: false,
                leeway_s: self.leeway.as_secs(),
                tenant: self.issuer.tenant_rule(),
            },
        )?;
        self.cache
            .put(resource, token, std::sync::Arc::new(verified.clone()));
        Ok(verified)
    }

    async fn discover_endpoint(&self) -> Result<Url, DiscoveryError> {
        let url = self.issuer.url();
        let metadata = discover(&self.fetcher, url).await?;
        let endpoint = metadata
            .introspection_endpoint
            .ok_or_else(|| DiscoveryError::Missing(url.to_owned(), "introspection_endpoint"))?;
        fetchable_url(&endpoint)
            .map_err(|error| DiscoveryError::Unreadable(endpoint.clone(), error.to_string()))
    }
}

impl TokenVerifier for IntrospectionVerifier {
    fn verify<'a>(&'a self, token: &'a str, resource: &'a str) -> VerifyFuture<'a> {
        Box::pin(self.introspect(token, resource))
    }

    fn authorization_servers(&self) -> Vec<String> {
        vec![self.issuer.url().to_owned()]
    }
}
