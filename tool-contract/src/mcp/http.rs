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

use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;

#[cfg(feature = "mcp-auth")]
use super::auth::Door;
use super::caller::Callers;
use super::capture::Kept;
use super::jsonrpc;
use super::reply::{self, Reply};
use super::server::{McpServeError, McpServer};
use super::sessions::{Opening, SessionBook, session_of};
use super::utility_transport::UtilitySessions;
use crate::results::{ErrorCode, ModelError};
use crate::vocabulary::Principal;
use crate::vocabulary::origin::origin_allowed;

type HttpService = StreamableHttpService<McpServer, UtilitySessions>;

impl McpServer {
    /// Serves the registry over MCP's Streamable HTTP transport on `listener`, one task per
    /// connection, until accepting fails. A request whose `Origin` is neither a loopback
    /// origin nor one of [`with_allowed_origins`](Self::with_allowed_origins) is refused with
    /// `403`, and a request body longer than the registry's largest argument limit and 64 KiB
    /// more with `413` before it is read further. Every accepted connection sets
    /// `TCP_NODELAY`: an answer written in parts (an event stream) leaves at once.
    ///
    /// A server of [`new`](Self::new) acts for its one principal, so it listens on a loopback
    /// address only (and accepts loopback `Host` headers only, against DNS rebinding), unless
    /// the application said a proxy in front authenticates every request
    /// ([`behind_authenticating_proxy`](Self::behind_authenticating_proxy)). A server of
    /// [`authenticated`](Self::authenticated) listens anywhere: every request proves its
    /// principal with a token, and the host of its resource URI is accepted besides loopback
    /// ones.
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
    /// [`McpServeError::Unprotected`] before anything is served, for a server that
    /// authenticates nobody on an address other than a loopback one;
    /// [`McpServeError::Accept`] when the listener fails.
    pub async fn serve_http(self, listener: TcpListener) -> Result<(), McpServeError> {
        let local = listener
            .local_addr()
            .map_err(|error| McpServeError::Accept(Box::new(error)))?;
        let mut config = StreamableHttpServerConfig::default();
        let mut hosts = config.allowed_hosts.clone();
        let book = Arc::new(SessionBook::new(self.sessions_per_principal));
        let transport_sessions = Arc::new(UtilitySessions::new(self.event_stream_hold));
        let front = Arc::new(Front {
            #[cfg(feature = "console")]
            console: self.console.clone(),
            max_body: self.max_message_bytes(),
            allowed_origins: self.allowed_origins.clone(),
            #[cfg(feature = "mcp-auth")]
            door: self.door(&book),
            one_principal: match &self.callers {
                Callers::One(principal) => Some(principal.clone()),
                #[cfg(feature = "mcp-auth")]
                Callers::Tokens(_) => None,
            },
            book,
            transport_sessions: transport_sessions.clone(),
        });
        if let Some(proxy_hosts) = &self.proxy_hosts {
            tracing::warn!(
                address = %local,
                "serving every request as one principal: a proxy in front is trusted to authenticate them"
            );
            hosts.extend(proxy_hosts.iter().cloned());
        } else if !front.authenticates() && !local.ip().is_loopback() {
            return Err(McpServeError::Unprotected(local));
        }
        #[cfg(feature = "mcp-auth")]
        if let Some(host) = self.resource_host() {
            hosts.push(host);
        }
        config.allowed_hosts = hosts;
        // A plain JSON answer for a plain call; rmcp falls back to a stream when the handler
        // sends anything first.
        config.json_response = true;
        config.max_request_body_bytes = front.max_body;
        // A replica that serves tasks takes over those whose replica died, while it serves.
        let _resuming = self.resuming_tasks();
        let template = self;
        let service: HttpService = StreamableHttpService::new(
            move || Ok(template.in_a_session()),
            transport_sessions,
            config,
        );
        loop {
            let (stream, _) = listener
                .accept()
                .await
                .map_err(|error| McpServeError::Accept(Box::new(error)))?;
            // An answer leaves in several writes (an event stream's headers, then its
            // events): with Nagle on, each after the first waits for the client's delayed
            // ACK, about 40 ms a call.
            if let Err(error) = stream.set_nodelay(true) {
                tracing::debug!(%error, "TCP_NODELAY not set on an accepted connection");
            }
            let service = service.clone();
            let front = front.clone();
            tokio::spawn(async move {
                let serve = hyper::service::service_fn(move |request: Request<Incoming>| {
                    let front = front.clone();
                    let service = service.clone();
                    async move { Ok::<_, Infallible>(front.serve(service, request).await) }
                });
                // A connection that fails (the client went away) ends only itself.
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), serve)
                    .await;
            });
        }
    }

    #[cfg(feature = "mcp-auth")]
    fn door(&self, book: &Arc<SessionBook>) -> Option<Arc<Door>> {
        match &self.callers {
            Callers::Tokens(resource) => Some(Arc::new(Door::new(
                resource.clone(),
                self.dispatcher.clone(),
                book.clone(),
            ))),
            Callers::One(_) => None,
        }
    }

    /// The `Host` an authenticated server's resource URI names.
    #[cfg(feature = "mcp-auth")]
    fn resource_host(&self) -> Option<String> {
        match &self.callers {
            Callers::Tokens(resource) => url::Url::parse(resource.resource())
                .ok()
                .and_then(|url| url.host_str().map(str::to_owned)),
            Callers::One(_) => None,
        }
    }
}

/// What stands before rmcp: the origin check, the door of an authenticated server, and the
/// body read once, its arguments kept.
struct Front {
    /// The approvals console on the same port, under its base path.
    #[cfg(feature = "console")]
    console: Option<(Arc<str>, axum::Router)>,
    max_body: usize,
    allowed_origins: Arc<Vec<String>>,
    #[cfg(feature = "mcp-auth")]
    door: Option<Arc<Door>>,
    /// The principal of every request, on a server that acts for one.
    one_principal: Option<Principal>,
    /// The handshake sessions each principal holds.
    book: Arc<SessionBook>,
    /// rmcp's sessions, asked whether a session the book counts still lives.
    transport_sessions: Arc<UtilitySessions>,
}

impl Front {
    fn authenticates(&self) -> bool {
        #[cfg(feature = "mcp-auth")]
        return self.door.is_some();
        #[cfg(not(feature = "mcp-auth"))]
        false
    }

    /// One request, answered by the front itself or by rmcp.
    async fn serve(&self, mut service: HttpService, request: Request<Incoming>) -> Reply {
        use tower_service::Service;

        #[cfg(feature = "console")]
        let request = match self.console_request(request) {
            Ok(answer) => return answer.await,
            Err(request) => request,
        };
        let (mut parts, body) = request.into_parts();
        #[cfg(feature = "mcp-auth")]
        if let Some(answer) = self
            .door
            .as_ref()
            .and_then(|door| door.answer_elsewhere(&parts))
        {
            return answer;
        }
        if !origin_allowed(&parts.headers, &self.allowed_origins) {
            return reply::text(StatusCode::FORBIDDEN, "the request's Origin is not allowed");
        }
        #[cfg(feature = "mcp-auth")]
        let caller = match &self.door {
            Some(door) => match door.admit(&parts).await {
                Ok(caller) => Some(caller),
                Err(refusal) => return refusal,
            },
            None => None,
        };
        let body = match Limited::new(body, self.max_body).collect().await {
            Ok(body) => body.to_bytes(),
            Err(error) if error.is::<LengthLimitError>() => {
                return reply::text(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "the request body is too large",
                );
            }
            Err(_) => return reply::text(StatusCode::BAD_REQUEST, "the request body broke off"),
        };
        let kept = Kept::of(&body);
        // A sessionless request (2026-07-28) of a method MCP defines, whose params that method
        // does not read: rmcp would take it for a method of the server's own, unknown (404).
        // A `tools/call` is read again only when what was kept of it does not read as one.
        let may_misread = kept
            .as_ref()
            .is_none_or(|kept| kept.tool().is_empty() || !kept.arguments().starts_with(b"{"));
        if may_misread
            && parts.method == http::Method::POST
            && session_of(&parts.headers).is_none()
            && let Some(misread) = jsonrpc::misread_request(&body)
        {
            return json_rpc_error(misread.id, jsonrpc::INVALID_PARAMS, &misread.reason);
        }
        let opening = if kept.is_none() && opens_session(&parts, &body) {
            #[cfg(feature = "mcp-auth")]
            let principal = caller
                .as_ref()
                .map(|caller| &caller.0.principal)
                .or(self.one_principal.as_ref());
            #[cfg(not(feature = "mcp-auth"))]
            let principal = self.one_principal.as_ref();
            match principal {
                Some(principal) => match self.open_session(principal).await {
                    Some(opening) => Some(opening),
                    None => return self.sessions_full(principal, &body),
                },
                None => None,
            }
        } else {
            None
        };
        if let Some(kept) = kept {
            #[cfg(feature = "mcp-auth")]
            if let (Some(door), Some(caller)) = (&self.door, &caller)
                && let Some(refusal) = door.refuse_call(caller, kept.tool(), kept.arguments())
            {
                return refusal;
            }
            parts.extensions.insert(kept);
        }
        let closes = (parts.method == http::Method::DELETE)
            .then(|| session_of(&parts.headers).map(str::to_owned))
            .flatten();
        #[cfg(feature = "mcp-auth")]
        if let Some(caller) = &caller {
            parts.extensions.insert(caller.clone());
        }
        let sends_json = sends_json(&parts.headers);
        let sent = body.clone();
        let answer = match service
            .call(Request::from_parts(parts, Full::new(body)))
            .await
        {
            Ok(answer) => answer,
            Err(never) => match never {},
        };
        // rmcp answers a JSON body it cannot read as one message with a plain-text 415.
        if answer.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE && sends_json {
            let (code, message, id) = jsonrpc::unreadable(&sent);
            return json_rpc_error(id, code, &message);
        }
        if answer.status().is_success() {
            if let (Some(opening), Some(id)) = (opening, session_of(answer.headers())) {
                opening.opened(id);
            }
            if let Some(id) = closes {
                self.book.closed(&id);
            }
        }
        answer
    }

    /// Counts a session `principal` opens, or `None` when it holds its limit.
    async fn open_session(&self, principal: &Principal) -> Option<Opening> {
        use rmcp::transport::streamable_http_server::session::SessionManager;

        let transport = &self.transport_sessions;
        self.book
            .open(principal, |id| async move {
                transport.has_session(&id.into()).await.unwrap_or(false)
            })
            .await
    }

    /// The answer to an `initialize` of a principal that holds every session it may:
    /// `429`, and a JSON-RPC error whose `data` is the catalog's `CALLER_LIMIT`.
    fn sessions_full(&self, principal: &Principal, body: &[u8]) -> Reply {
        tracing::info!(
            tenant = %principal.tenant,
            limit = self.book.per_principal(),
            "an initialize was refused: its principal holds every session it may"
        );
        let error = ModelError::new(ErrorCode::CallerLimit);
        let id = serde_json::from_slice::<Asked<'_>>(body)
            .ok()
            .and_then(|asked| asked.id)
            .and_then(|id| serde_json::from_str::<serde_json::Value>(id.get()).ok())
            .unwrap_or(serde_json::Value::Null);
        let answer = serde_json::json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {
                // JSON-RPC 2.0 leaves -32000 to -32099 to the server's own errors.
                "code": -32000,
                "message": format!(
                    "the principal holds {} sessions: close one, or retry later",
                    self.book.per_principal()
                ),
                "data": error,
            }
        });
        let mut reply = reply::body(
            StatusCode::TOO_MANY_REQUESTS,
            "application/json",
            bytes::Bytes::from(answer.to_string()),
        );
        if let Some(ms) = error.retry_after_ms() {
            reply.headers_mut().insert(
                http::header::RETRY_AFTER,
                http::HeaderValue::from(ms.div_ceil(1000)),
            );
        }
        reply
    }
}

/// A JSON-RPC error answering a request the transport could not take: `400`, a JSON body.
fn json_rpc_error(id: serde_json::Value, code: i32, message: &str) -> Reply {
    reply::body(
        StatusCode::BAD_REQUEST,
        "application/json",
        bytes::Bytes::from(jsonrpc::error_response(id, code, message)),
    )
}

/// Whether the request says its body is JSON (`Content-Type: application/json`, any
/// parameters), as rmcp requires before it reads one.
fn sends_json(headers: &http::HeaderMap) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            let essence = value.split_once(';').map_or(value, |(essence, _)| essence);
            essence.trim().eq_ignore_ascii_case("application/json")
        })
}

/// What the front reads of a request that is not a `tools/call`.
#[derive(serde::Deserialize)]
struct Asked<'a> {
    #[serde(borrow)]
    method: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    id: Option<&'a serde_json::value::RawValue>,
}

/// Whether the request opens a handshake session: an `initialize` posted outside any
/// session.
fn opens_session(parts: &http::request::Parts, body: &[u8]) -> bool {
    parts.method == http::Method::POST
        && session_of(&parts.headers).is_none()
        && serde_json::from_slice::<Asked<'_>>(body)
            .is_ok_and(|asked| asked.method.as_deref() == Some("initialize"))
}

#[cfg(feature = "console")]
impl Front {
    /// The console's answer to `request` when its path is under the console's base path;
    /// otherwise the request, for MCP.
    #[allow(clippy::result_large_err)]
    fn console_request(
        &self,
        request: Request<Incoming>,
    ) -> Result<impl Future<Output = Reply> + use<>, Request<Incoming>> {
        let Some((base, router)) = &self.console else {
            return Err(request);
        };
        let under = request
            .uri()
            .path()
            .strip_prefix(&**base)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'));
        if !under {
            return Err(request);
        }
        let mut router = router.clone();
        Ok(async move {
            use tower_service::Service;

            let answer = match router.call(request.map(axum::body::Body::new)).await {
                Ok(answer) => answer,
                Err(never) => match never {},
            };
            let (parts, body) = answer.into_parts();
            // The console's pages are small, and whole before they are sent.
            let bytes = match body.collect().await {
                Ok(collected) => collected.to_bytes(),
                Err(_) => {
                    return reply::text(StatusCode::INTERNAL_SERVER_ERROR, "the page broke off");
                }
            };
            Reply::from_parts(parts, Full::new(bytes).boxed())
        })
    }
}
