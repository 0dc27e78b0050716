//! The session transports' part in MCP 2025-11-25's tasks utility (see [`super::utility`]):
//! the `tasks` capability declared in a 2025-11-25 session's `initialize` answer, and the
//! utility's requests handed to the server as requests of its own, since rmcp 3.11 would
//! read them as 2026-07-28's (or drop `params.task`). Over a byte stream [`UtilityStream`]
//! does it, over Streamable HTTP [`UtilitySessions`].

use std::future::Future;
use std::sync::Arc;

use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, CustomRequest, CustomResult, Extensions, ProtocolVersion,
    RequestId, ServerJsonRpcMessage, ServerResult,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::Transport;
use serde_json::{Value, json};

use super::capture::Captured;
#[cfg(feature = "mcp-http")]
use super::capture::Kept;
#[cfg(feature = "mcp-http")]
use futures_util::Stream;
#[cfg(feature = "mcp-http")]
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
#[cfg(feature = "mcp-http")]
use rmcp::transport::streamable_http_server::session::{
    EventStore, RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
};

/// Whether `request_context` is a session that negotiated 2025-11-25, the one revision with
/// the tasks utility.
pub(super) fn speaks_utility(request_context: &RequestContext<RoleServer>) -> bool {
    request_context.protocol_version() == Some(ProtocolVersion::V_2025_11_25)
}

/// `message` as the server is to read it in a 2025-11-25 session: `tools/list`, `tasks/get`,
/// `tasks/cancel`, and a `tools/call` that asks for a task (`asks_task`, from its bytes),
/// each as a request of its own under its method, which rmcp hands to
/// the server ([`super::utility`]) unread; anything else as it came.
pub(super) fn utility_request(
    message: ClientJsonRpcMessage,
    asks_task: impl FnOnce(&RequestId, &Extensions) -> bool,
) -> ClientJsonRpcMessage {
    let ClientJsonRpcMessage::Request(mut message) = message else {
        return message;
    };
    let own = |method: &str, params: Option<Value>, extensions: Extensions| {
        let mut request = CustomRequest::new(method, params);
        request.extensions = extensions;
        ClientRequest::CustomRequest(request)
    };
    let params = |params: Result<Value, serde_json::Error>| params.ok();
    message.request = match message.request {
        ClientRequest::ListToolsRequest(request) => own(
            "tools/list",
            params(serde_json::to_value(request.params)),
            request.extensions,
        ),
        ClientRequest::GetTaskRequest(request) => own(
            "tasks/get",
            params(serde_json::to_value(request.params)),
            request.extensions,
        ),
        ClientRequest::CancelTaskRequest(request) => own(
            "tasks/cancel",
            params(serde_json::to_value(request.params)),
            request.extensions,
        ),
        ClientRequest::CallToolRequest(request) if asks_task(&message.id, &request.extensions) => {
            own(
                "tools/call",
                params(serde_json::to_value(request.params)),
                request.extensions,
            )
        }
        request => request,
    };
    ClientJsonRpcMessage::Request(message)
}

/// `message`, with the tasks capability of 2025-11-25 declared when it is the `initialize`
/// answer of a 2025-11-25 session on a server that takes tasks; and whether it was.
pub(super) fn declare_utility(message: ServerJsonRpcMessage) -> (ServerJsonRpcMessage, bool) {
    let ServerJsonRpcMessage::Response(mut response) = message else {
        return (message, false);
    };
    let ServerResult::InitializeResult(initialized) = &response.result else {
        return (ServerJsonRpcMessage::Response(response), false);
    };
    let declares = initialized.protocol_version == ProtocolVersion::V_2025_11_25
        && initialized.capabilities.supports_tasks();
    if !declares {
        return (ServerJsonRpcMessage::Response(response), false);
    }
    let Ok(mut answer) = serde_json::to_value(initialized) else {
        return (ServerJsonRpcMessage::Response(response), false);
    };
    answer["capabilities"]["tasks"] = json!({
        "list": {},
        "cancel": {},
        "requests": { "tools": { "call": {} } }
    });
    response.result = ServerResult::CustomResult(CustomResult(answer));
    (ServerJsonRpcMessage::Response(response), true)
}

/// Whether `answer` is an `initialize` answer negotiating 2025-11-25.
#[cfg(feature = "mcp-http")]
fn of_2025_11_25(answer: &ServerJsonRpcMessage) -> bool {
    matches!(
        answer,
        ServerJsonRpcMessage::Response(response)
            if matches!(&response.result, ServerResult::InitializeResult(initialized)
                if initialized.protocol_version == ProtocolVersion::V_2025_11_25)
    )
}

/// A byte stream's transport, serving the tasks utility once the session negotiated
/// 2025-11-25 (see the [module docs](self)).
pub(super) struct UtilityStream<T> {
    inner: T,
    captured: Arc<Captured>,
    speaks: bool,
}

impl<T> UtilityStream<T> {
    pub(super) fn new(inner: T, captured: Arc<Captured>) -> Self {
        UtilityStream {
            inner,
            captured,
            speaks: false,
        }
    }
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for UtilityStream<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        message: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let (message, declared) = declare_utility(message);
        self.speaks |= declared;
        self.inner.send(message)
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        let message = self.inner.receive().await?;
        if !self.speaks {
            return Some(message);
        }
        let captured = &self.captured;
        Some(utility_request(message, |id, _| captured.asks_task(id)))
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// rmcp's sessions of Streamable HTTP, serving the tasks utility in those that negotiated
/// 2025-11-25 (see the [module docs](self)): their `initialize` answer declares it, and their
/// requests are read as the utility has them. In those sessions a call's event stream is
/// closed after the server's hold, for the client to poll ([`super::polling`]).
#[cfg(feature = "mcp-http")]
pub(super) struct UtilitySessions {
    sessions: LocalSessionManager,
    /// The sessions of 2025-11-25 remembered, each with whether its `initialize` answer
    /// declared the utility: those that did, and, when the server holds streams, all.
    remembered: std::sync::Mutex<std::collections::HashMap<SessionId, bool>>,
    /// How long a call's event stream stays open before the client is to poll for the rest.
    hold: Option<std::time::Duration>,
}

/// How many sessions of the utility are remembered before those rmcp has closed are
/// forgotten (a session that times out is never closed by its client).
#[cfg(feature = "mcp-http")]
const REMEMBERED_SESSIONS: usize = 256;

#[cfg(feature = "mcp-http")]
impl UtilitySessions {
    /// Sessions that close a call's event stream after `hold`, if there is one.
    pub(super) fn new(hold: Option<std::time::Duration>) -> Self {
        UtilitySessions {
            sessions: LocalSessionManager::default(),
            remembered: std::sync::Mutex::default(),
            hold,
        }
    }

    fn remembered(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<SessionId, bool>> {
        self.remembered
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Remembers that session `id` speaks 2025-11-25 (and the utility, if `utility`),
    /// forgetting first the sessions rmcp no longer has once many are remembered.
    async fn remember(&self, id: &SessionId, utility: bool) {
        let remembered: Vec<SessionId> = {
            let remembered = self.remembered();
            if remembered.len() < REMEMBERED_SESSIONS {
                Vec::new()
            } else {
                remembered.keys().cloned().collect()
            }
        };
        for earlier in remembered {
            if !self.sessions.has_session(&earlier).await.unwrap_or(false) {
                self.remembered().remove(&earlier);
            }
        }
        self.remembered().insert(id.clone(), utility);
    }

    /// `message` as the server is to read it in session `id`.
    fn read_in(&self, id: &SessionId, message: ClientJsonRpcMessage) -> ClientJsonRpcMessage {
        if self.remembered().get(id) != Some(&true) {
            return message;
        }
        utility_request(message, |request_id, extensions| {
            extensions
                .get::<http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<Kept>())
                .and_then(|kept| kept.of_request(request_id))
                .is_some_and(|kept| kept.task().is_some())
        })
    }
}

#[cfg(feature = "mcp-http")]
impl SessionManager for UtilitySessions {
    type Error = <LocalSessionManager as SessionManager>::Error;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.sessions.create_session().await
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        let answer = self.sessions.initialize_session(id, message).await?;
        let polls = self.hold.is_some() && of_2025_11_25(&answer);
        let (answer, declared) = declare_utility(answer);
        if declared || polls {
            self.remember(id, declared).await;
        }
        Ok(answer)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.sessions.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.remembered().remove(id);
        self.sessions.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let message = self.read_in(id, message);
        let hold = self.hold.filter(|_| self.remembered().contains_key(id));
        super::polling::request_stream(&self.sessions, id, message, hold).await
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.sessions.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.sessions.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.sessions.resume(id, last_event_id).await
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        self.sessions.restore_session(id).await
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.sessions.event_store()
    }
}
