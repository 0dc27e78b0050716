//! An authorization server's metadata, found from its issuer URL: OAuth 2.0 Authorization
//! Server Metadata (RFC 8414) first, then OpenID Connect Discovery 1.0, as MCP's clients look
//! for it. Its `issuer` must be the configured issuer exactly (RFC 8414, section 3.3), or the
//! metadata is not used.

use serde::Deserialize;
use url::Url;

use super::fetch::{FetchError, Fetcher};

/// What the server reads of an authorization server's metadata.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(super) struct ServerMetadata {
    pub(super) issuer: String,
    pub(super) jwks_uri: Option<String>,
    pub(super) introspection_endpoint: Option<String>,
}

/// Why no metadata could be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum DiscoveryError {
    #[error(transparent)]
    Fetch(#[from] FetchError),
    #[error("the metadata at {0} does not read: {1}")]
    Unreadable(String, String),
    #[error("the metadata at {0} names the issuer {1}, not this one")]
    OtherIssuer(String, String),
    #[error("the metadata of {0} names no {1}")]
    Missing(String, &'static str),
}

/// The metadata of `issuer`, from the first of its well-known documents that answers.
pub(super) async fn discover(
    fetcher: &Fetcher,
    issuer: &str,
) -> Result<ServerMetadata, DiscoveryError> {
    let parsed = Url::parse(issuer)
        .map_err(|error| DiscoveryError::Unreadable(issuer.to_owned(), error.to_string()))?;
    let mut last = None;
    for url in well_known(&parsed) {
        let body = match fetcher.get(&url).await {
            Ok(body) => body,
            // Not published there: the next form may be.
            Err(error @ FetchError::Status(..)) => {
                last = Some(error);
                continue;
            }
            Err(error) => return Err(error.into()),
        };
        let metadata: ServerMetadata = serde_json::from_slice(&body)
            .map_err(|error| DiscoveryError::Unreadable(url.to_string(), error.to_string()))?;
        if metadata.issuer != issuer {
            return Err(DiscoveryError::OtherIssuer(
                url.to_string(),
                metadata.issuer,
            ));
        }
        return Ok(metadata);
    }
    Err(last.map_or_else(
        || DiscoveryError::Missing(issuer.to_owned(), "metadata"),
        DiscoveryError::Fetch,
    ))
}

/// Where `issuer` publishes its metadata: RFC 8414's form (the well-known path inserted
/// before the issuer's path), then OpenID's (appended to it).
fn well_known(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_end_matches('/');
    let mut urls = Vec::with_capacity(2);
    for candidate in [
        format!("/.well-known/oauth-authorization-server{path}"),
        format!("{path}/.well-known/openid-configuration"),
    ] {
        let mut url = issuer.clone();
        url.set_path(&candidate);
        urls.push(url);
    }
    urls
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_well_known_documents_of_an_issuer_with_a_path() {
        let issuer = Url::parse("https://auth.example.com/tenant1").unwrap();
        let urls: Vec<String> = well_known(&issuer).iter().map(Url::to_string).collect();
        assert_eq!(
            urls,
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration",
            ]
        );
        let root = Url::parse("http://127.0.0.1:9000").unwrap();
        let urls: Vec<String> = well_known(&root).iter().map(Url::to_string).collect();
        assert_eq!(
            urls,
            [
                "http://127.0.0.1:9000/.well-known/oauth-authorization-server",
                "http://127.0.0.1:9000/.well-known/openid-configuration",
            ]
        );
    }
}
