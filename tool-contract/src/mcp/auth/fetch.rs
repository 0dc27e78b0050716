//! What the server asks its authorization servers: their metadata, their keys, and
//! introspection. Over HTTPS (rustls on ring, the platform's root certificates), or plain
//! HTTP to this machine only; within a time and a size; no redirect followed.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use url::Url;

use super::uri::fetchable;

/// The longest answer read: metadata and key sets are a few KiB.
const MAX_ANSWER_BYTES: usize = 256 * 1024;

/// How long one fetch may take, connection included.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a fetch gave nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum FetchError {
    #[error("{0} is neither https nor http on this machine")]
    Insecure(String),
    #[error("{0} answered {1}")]
    Status(String, u16),
    #[error("{0} could not be reached: {1}")]
    Transport(String, String),
    #[error("{0} answered more than {MAX_ANSWER_BYTES} bytes")]
    TooLarge(String),
    #[error("{0} did not answer within {FETCH_TIMEOUT:?}")]
    Timeout(String),
}

/// An HTTP client for the authorization servers.
#[derive(Clone)]
pub(super) struct Fetcher {
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
}

impl std::fmt::Debug for Fetcher {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("Fetcher")
    }
}

impl Fetcher {
    /// A client trusting the platform's root certificates. Without any, HTTPS fetches fail
    /// (and say so) while plain HTTP to this machine still works.
    pub(super) fn new() -> Result<Self, rustls::Error> {
        let ring = || Arc::new(rustls::crypto::ring::default_provider());
        let builder = match HttpsConnectorBuilder::new().with_provider_and_native_roots(ring()) {
            Ok(builder) => builder,
            Err(error) => {
                tracing::warn!(%error, "no root certificates: HTTPS fetches will fail");
                let config = rustls::ClientConfig::builder_with_provider(ring())
                    .with_safe_default_protocol_versions()?
                    .with_root_certificates(rustls::RootCertStore::empty())
                    .with_no_client_auth();
                HttpsConnectorBuilder::new().with_tls_config(config)
            }
        };
        let connector = builder.https_or_http().enable_http1().build();
        let client = Client::builder(TokioExecutor::new()).build(connector);
        Ok(Fetcher { client })
    }

    /// The body of a `GET url` answered `200`.
    pub(super) async fn get(&self, url: &Url) -> Result<Bytes, FetchError> {
        let request = Request::builder()
            .method(Method::GET)
            .uri(url.as_str())
            .header(header::ACCEPT, "application/json");
        self.send(url, request, Bytes::new()).await
    }

    /// The body of a `POST url` of the form `form`, with `authorization` as its
    /// `Authorization` header, answered `200`.
    pub(super) async fn post_form(
        &self,
        url: &Url,
        form: String,
        authorization: Option<&str>,
    ) -> Result<Bytes, FetchError> {
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(url.as_str())
            .header(header::ACCEPT, "application/json")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
        if let Some(authorization) = authorization {
            request = request.header(header::AUTHORIZATION, authorization);
        }
        self.send(url, request, Bytes::from(form)).await
    }

    async fn send(
        &self,
        url: &Url,
        request: http::request::Builder,
        body: Bytes,
    ) -> Result<Bytes, FetchError> {
        let at = || url.as_str().to_owned();
        if !fetchable(url) {
            return Err(FetchError::Insecure(at()));
        }
        let request = request
            .body(Full::new(body))
            .map_err(|error| FetchError::Transport(at(), error.to_string()))?;
        let exchange = async {
            let response = self
                .client
                .request(request)
                .await
                .map_err(|error| FetchError::Transport(at(), error.to_string()))?;
            if response.status() != StatusCode::OK {
                return Err(FetchError::Status(at(), response.status().as_u16()));
            }
            Limited::new(response.into_body(), MAX_ANSWER_BYTES)
                .collect()
                .await
                .map(http_body_util::Collected::to_bytes)
                .map_err(|error| {
                    if error.is::<http_body_util::LengthLimitError>() {
                        FetchError::TooLarge(at())
                    } else {
                        FetchError::Transport(at(), error.to_string())
                    }
                })
        };
        tokio::time::timeout(FETCH_TIMEOUT, exchange)
            .await
            .map_err(|_| FetchError::Timeout(at()))?
    }
}
