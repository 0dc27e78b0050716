//! MCP's Streamable HTTP transport (feature `mcp-http`): rmcp's tower service behind an
//! HTTP/1.1 server, with each POST body read first so that a `tools/call`'s arguments are
//! validated from the client's own bytes, as over stdio.
//!
//! On 2026-07-28 every request stands alone, so any replica behind a load balancer may answer
//! any request; what they must share is the control-plane store and the keys (the sealed
//! approval states open on every replica that derives the same key). Clients of the handshake
//! revisions get a session of rmcp's on the replica that took their `initialize`.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;

use super::capture::Kept;
use super::server::{McpServeError, McpServer};

type HttpService = StreamableHttpService<McpServer, LocalSessionManager>;

impl McpServer {
    /// Serves the registry over MCP's Streamable HTTP transport on `listener`, one task per
    /// connection, until accepting fails. Only loopback `Host` headers are accepted (rmcp's
    /// default, against DNS rebinding), and a request whose `Origin` is neither a loopback
    /// origin nor one of [`with_allowed_origins`](Self::with_allowed_origins) is refused with
    /// `403`; put a proxy that authenticates in front of anything else. A request body longer
    /// than the registry's largest argument limit and 64 KiB more is refused with `413` before
    /// it is read further.
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// # use tool_contract::Principal;
    /// # use tool_contract::dispatch::Dispatcher;
    /// # use tool_contract::mcp::McpServer;
    /// # async fn run(dispatcher: Dispatcher) -> Result<(), Box<dyn std::error::Error>> {
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:8931").await?;
    /// McpServer::new(Arc::new(dispatcher), Principal::new("acme", "desk@acme.example"))
    ///     .serve_http(listener)
    ///     .await?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`McpServeError::Accept`] when the listener fails.
    pub async fn serve_http(self, listener: TcpListener) -> Result<(), McpServeError> {
        let max_body = self.max_message_bytes();
        let allowed_origins = self.allowed_origins.clone();
        let mut config = StreamableHttpServerConfig::default();
        // A plain JSON answer for a plain call; rmcp falls back to a stream when the handler
        // sends anything first.
        config.json_response = true;
        config.max_request_body_bytes = max_body;
        let template = self;
        let service: HttpService = StreamableHttpService::new(
            move || Ok(template.clone()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        loop {
            let (stream, _) = listener
                .accept()
                .await
                .map_err(|error| McpServeError::Accept(Box::new(error)))?;
            let service = service.clone();
            let allowed_origins = allowed_origins.clone();
            tokio::spawn(async move {
                let serve = hyper::service::service_fn(move |request: Request<Incoming>| {
                    let service = service.clone();
                    let allowed_origins = allowed_origins.clone();
                    async move {
                        if !origin_allowed(&request, &allowed_origins) {
                            return Ok::<_, Infallible>(refusal(
                                StatusCode::FORBIDDEN,
                                "the request's Origin is not allowed",
                            ));
                        }
                        Ok(kept_then(service, request, max_body).await)
                    }
                });
                // A connection that fails (the client went away) ends only itself.
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), serve)
                    .await;
            });
        }
    }
}

/// Reads the body of `request` (at most `max_body` bytes), keeps a `tools/call`'s arguments
/// as sent in the request's extensions, and hands the request on to rmcp.
async fn kept_then(
    mut service: HttpService,
    request: Request<Incoming>,
    max_body: usize,
) -> Response<BoxBody<Bytes, Infallible>> {
    use tower_service::Service;

    let (mut parts, body) = request.into_parts();
    let body = match Limited::new(body, max_body).collect().await {
        Ok(body) => body,
        Err(error) if error.is::<LengthLimitError>() => {
            return refusal(
                StatusCode::PAYLOAD_TOO_LARGE,
                "the request body is too large",
            );
        }
        Err(_) => return refusal(StatusCode::BAD_REQUEST, "the request body broke off"),
    };
    let body = body.to_bytes();
    if let Some(kept) = Kept::of(&body) {
        parts.extensions.insert(kept);
    }
    match service
        .call(Request::from_parts(parts, Full::new(body)))
        .await
    {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

/// Whether `request` may be served by its `Origin`: none (not from a browser), a loopback
/// origin, or one of `allowed` (lowercase, without a trailing `/`).
fn origin_allowed(request: &Request<Incoming>, allowed: &[String]) -> bool {
    let Some(origin) = request.headers().get(http::header::ORIGIN) else {
        return true;
    };
    let Ok(origin) = origin.to_str() else {
        return false;
    };
    let origin = origin.trim_end_matches('/').to_ascii_lowercase();
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

fn refusal(status: StatusCode, text: &'static str) -> Response<BoxBody<Bytes, Infallible>> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *response.status_mut() = status;
    response
}
