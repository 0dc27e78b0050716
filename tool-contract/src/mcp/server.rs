//! `McpServer`: a dispatcher's registry as an `rmcp` server handler.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequest,
    ElicitRequestParams, ElicitationAction, Implementation, InitializeRequestParams,
    InitializeResult, InputRequest, InputRequests, InputRequiredResult, JsonObject,
    ListToolsResult, MetaObject, PaginatedRequestParams, ProtocolVersion, RequestStateCodec,
    ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::model::{
    CancelTaskParams, CustomRequest, CustomResult, GetTaskParams, GetTaskResult, ServerRequest,
    UpdateTaskParams,
};
use rmcp::model::{
    CompleteRequestMethod, CompleteRequestParams, CompleteResult, GetPromptRequestMethod,
    GetPromptRequestParams, GetPromptResponse, ListPromptsRequestMethod, ListPromptsResult,
    ListResourceTemplatesRequestMethod, ListResourceTemplatesResult, ListResourcesRequestMethod,
    ListResourcesResult, ReadResourceRequestMethod, ReadResourceRequestParams,
    ReadResourceResponse, SetLevelRequestMethod, SubscribeRequestMethod, SubscribeRequestParams,
    UnsubscribeRequestMethod, UnsubscribeRequestParams,
};
use rmcp::service::{
    ElicitationMode, RequestContext, RoleServer, RunningService, ServerInitializeError,
};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{ErrorData, Peer, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use tracing::Instrument;

use super::ADAPTER;
use super::approval::{
    ApprovalState, CONFIRMATION_KEY, Decision, Expected, Question, StateRefusal, console_link,
    console_page,
};
use super::beside::{Beside, merged, subscribes};
use super::caller::{Callers, Verified};
use super::capture::{Captured, Capturing, kept_over_http};
use super::content::{ContentView, blocks};
use super::progress::{SessionLogLevel, listen, log_level_of, while_sending};
use super::questions::{AnswersState, Asking, QuestionRule, answers_in, open_requests};
use super::task_options::{TaskChoice, TaskOptions, TaskSupport};
use super::utility_transport::UtilityStream;
use crate::contract::ToolSpec;
use crate::control::Changed;
use crate::control::{
    ApprovalError, ApproverIdentity, PendingApproval, RejectionReason, later_by, unix_ms,
};
use crate::dispatch::{ClientSide, Credentials, Dispatch, Dispatcher, SAFETY_POLL, Task};
use crate::results::Status;
use crate::vocabulary::{CallContext, Principal};
use crate::vocabulary::{Correlation, ToolCall};
use crate::vocabulary::{Effect, Operation};

/// The `_meta` key under which a client names the logical operation of a `tools/call` of an
/// `operation = per_call` write (the retries of one call); every other rule is the contract's,
/// and the key is ignored there.
pub const OPERATION_ID_META: &str = "tool-contract/operation_id";

/// The `_meta` key of a result that waits for an approval the client could not be asked for.
const PENDING_APPROVAL_META: &str = "tool-contract/pending_approval";

/// What a `tools/call` message may hold around its arguments: the longest line read is the
/// registry's largest argument limit and this.
const ENVELOPE_BYTES: usize = 64 * 1024;

/// One `tools/call` as the server received it: who asks, the request and its context, and
/// the call as the dispatcher sees it.
#[derive(Clone, Copy)]
pub(super) struct Received<'a> {
    pub(super) principal: &'a Principal,
    pub(super) request: &'a CallToolRequestParams,
    pub(super) request_context: &'a RequestContext<RoleServer>,
    pub(super) context: &'a CallContext,
}

/// How many rounds of questions a session's call is asked before it is given up.
const QUESTION_ROUNDS: usize = 8;

/// What a 2026-07-28 call's state and responses say, before anything runs.
enum Gathered {
    /// The tool's questions still open, asked of the client.
    Asking(InputRequiredResult),
    /// The answers to the tool's questions, all given (or none asked).
    Answers(JsonObject),
    /// An approval's state came back with the person's decision; the answers it carried.
    ApprovalAnswer { answers: JsonObject, sealed: String },
}

/// What the server's request-state key is derived for, from the dispatcher's keys.
const REQUEST_STATE_PURPOSE: &str = "mcp/request-state";

/// A dispatcher's registry served over MCP; see the [module docs](super).
///
/// ```no_run
/// # use std::sync::Arc;
/// # use tool_contract::Principal;
/// # use tool_contract::dispatch::Dispatcher;
/// # use tool_contract::mcp::McpServer;
/// # async fn run(dispatcher: Dispatcher) -> Result<(), Box<dyn std::error::Error>> {
/// // The registry accepts MCP calls: `.adapter(tool_contract::mcp::ADAPTER)` or `.all_adapters()`.
/// let server = McpServer::new(Arc::new(dispatcher), Principal::new("acme", "desk@acme.example"))
///     .with_server_info("refund-desk", "1.0.0");
/// server.serve_stdio().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct McpServer {
    pub(super) dispatcher: Arc<Dispatcher>,
    pub(super) callers: Callers,
    pub(super) task: Arc<Task>,
    implementation: Implementation,
    pub(super) approval_ttl: Duration,
    /// Where a person gives a signed approval, `{approval_id}` standing for the approval's id.
    pub(super) approvals_console: Option<Arc<str>>,
    /// Seals and opens the `requestState` of a 2026-07-28 approval.
    pub(super) request_state: RequestStateCodec,
    /// Which calls become tasks, and how tasks are kept; `None`: no call does.
    pub(super) tasks: Option<TaskOptions>,
    /// The application's own handler of what is served beside the tools, if it has one.
    beside: Option<Arc<dyn Beside>>,
    /// The application's view of verified data as content blocks, if it has one.
    content: Option<ContentView>,
    /// What the tools ask the client before they run, if they ask anything.
    pub(super) questions: Option<QuestionRule>,
    /// The arguments as the client sent them, once the server reads its own session.
    captured: Option<Arc<Captured>>,
    /// The least level of the tools' log messages the session's client listens for, once
    /// it set one (a server is cloned for each session: see [`McpServer::in_a_session`]).
    log_level: Arc<SessionLogLevel>,
    /// The browser origins Streamable HTTP accepts besides loopback ones, lowercase.
    pub(super) allowed_origins: Arc<Vec<String>>,
    /// The `Host` names an authenticating proxy in front forwards, once the application says
    /// one is there.
    pub(super) proxy_hosts: Option<Arc<Vec<String>>>,
    /// How many handshake sessions one principal may hold over Streamable HTTP.
    #[cfg(feature = "mcp-http")]
    pub(super) sessions_per_principal: usize,
    /// How long a 2025-11-25 call's event stream stays open before its client is to poll.
    #[cfg(feature = "mcp-http")]
    pub(super) event_stream_hold: Option<Duration>,
    /// The approvals console served on the same port over HTTP, under its base path.
    #[cfg(all(feature = "console", feature = "mcp-http"))]
    pub(super) console: Option<(Arc<str>, axum::Router)>,
}

/// Why a server stopped before its client closed the session cleanly.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpServeError {
    /// The MCP handshake failed; rmcp's error is the source.
    #[error("the MCP session did not start")]
    Initialize(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The session's task ended abnormally (it panicked or was aborted).
    #[error("the MCP session ended abnormally")]
    Session(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The HTTP listener stopped accepting connections.
    #[error("the MCP HTTP listener failed")]
    Accept(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// A listener on an address other than a loopback one, for a server that authenticates
    /// nobody: refused before anything is served.
    #[error(
        "refusing to serve {0} without authorization: use McpServer::authenticated, or \
         McpServer::behind_authenticating_proxy when a proxy authenticates every request"
    )]
    Unprotected(std::net::SocketAddr),
    /// A server that authenticates each request by its bearer token, asked to serve a byte
    /// stream (stdio), which carries no token.
    #[error("a server that authenticates requests by their tokens serves HTTP only")]
    TokensOverStream,
}

impl McpServer {
    /// Serves `dispatcher`'s registry, every call on behalf of `principal`, with no budget
    /// (see [`with_task`](Self::with_task)), and approval forms open, and approvals valid, for
    /// 10 minutes.
    ///
    /// One principal for every request fits a local process over stdio and a loopback
    /// listener; over HTTP to others, [`authenticated`](Self::authenticated) (feature
    /// `mcp-auth`) takes each request's principal from its token.
    #[must_use]
    pub fn new(dispatcher: Arc<Dispatcher>, principal: Principal) -> Self {
        Self::serving(dispatcher, Callers::One(principal))
    }

    /// Serves `dispatcher`'s registry over HTTP as the OAuth 2.1 resource server `resource`:
    /// each request's principal is the one its bearer token proves (see
    /// [`auth`](super::auth)), otherwise as [`new`](Self::new).
    ///
    /// # Errors
    ///
    /// [`AuthConfigError`](super::auth::AuthConfigError) when `resource`'s configuration has a
    /// mistake: a scope that is not one, or scopes named for a tool the registry lacks.
    #[cfg(feature = "mcp-auth")]
    pub fn authenticated(
        dispatcher: Arc<Dispatcher>,
        resource: super::auth::ResourceServer,
    ) -> Result<Self, super::auth::AuthConfigError> {
        if let Some(mistake) = resource.mistake(dispatcher.registry()) {
            return Err(mistake);
        }
        Ok(Self::serving(
            dispatcher,
            Callers::Tokens(Arc::new(resource)),
        ))
    }

    fn serving(dispatcher: Arc<Dispatcher>, callers: Callers) -> Self {
        let key = dispatcher
            .binder()
            .keys()
            .derived_key(REQUEST_STATE_PURPOSE);
        // A derived key is 32 bytes, the codec's shortest.
        let request_state = RequestStateCodec::new_unchecked(key.to_vec());
        McpServer {
            dispatcher,
            callers,
            task: Arc::new(Task::unlimited()),
            implementation: Implementation::new("tool-contract", env!("CARGO_PKG_VERSION")),
            approval_ttl: Duration::from_secs(600),
            approvals_console: None,
            #[cfg(all(feature = "console", feature = "mcp-http"))]
            console: None,
            request_state,
            tasks: None,
            beside: None,
            content: None,
            questions: None,
            captured: None,
            log_level: Arc::default(),
            allowed_origins: Arc::new(Vec::new()),
            proxy_hosts: None,
            #[cfg(feature = "mcp-http")]
            sessions_per_principal: super::sessions::SESSIONS_PER_PRINCIPAL,
            #[cfg(feature = "mcp-http")]
            event_stream_hold: None,
        }
    }

    /// The browser origins (`scheme://host[:port]`, as a browser sends them in `Origin`) whose
    /// pages may call this server over Streamable HTTP, besides loopback ones. A request with
    /// any other `Origin` is refused with `403` before it is read (MCP's transport requires
    /// the check, against DNS rebinding); a request without one (not from a browser) is
    /// served.
    #[must_use]
    pub fn with_allowed_origins(
        mut self,
        origins: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        let origins = origins
            .into_iter()
            .map(|origin| crate::vocabulary::origin::normalized(&origin.into()))
            .collect();
        self.allowed_origins = Arc::new(origins);
        self
    }

    /// Says that an authenticating proxy stands in front of this server and forwards only
    /// requests it has authenticated, with a `Host` of `hosts`: [`serve_http`](Self::serve_http)
    /// then listens on addresses other than loopback ones and serves every request as the
    /// one principal given to [`new`](Self::new). Nothing here checks the proxy's word: any
    /// process that reaches the listener acts as that principal. Prefer
    /// [`authenticated`](Self::authenticated).
    #[must_use]
    pub fn behind_authenticating_proxy(
        mut self,
        hosts: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.proxy_hosts = Some(Arc::new(hosts.into_iter().map(Into::into).collect()));
        self
    }

    /// How many handshake sessions (2025-11-25 and before) one principal may hold open over
    /// Streamable HTTP: [`SESSIONS_PER_PRINCIPAL`](crate::mcp::SESSIONS_PER_PRINCIPAL) unless
    /// said here. An `initialize` past it is answered `429` with a JSON-RPC error whose
    /// `data` is the catalog's `CALLER_LIMIT`, and opens nothing; a session its client closed
    /// (`DELETE`) or the transport ended (its keep-alive lapsed) frees its place. A server of
    /// [`new`](Self::new) counts every client as its one principal.
    #[cfg(feature = "mcp-http")]
    #[must_use]
    pub fn with_sessions_per_principal(mut self, limit: usize) -> Self {
        self.sessions_per_principal = limit;
        self
    }

    /// How long [`serve_http`](Self::serve_http) keeps a call's event stream open in a
    /// 2025-11-25 session before it closes it for the client to poll (SEP-1699): the stream
    /// ends after an event telling the client to come back in half a second, the client
    /// resumes it with `GET` and `Last-Event-ID`, and what the call sends after, its answer
    /// included, reaches it from the session's cache. A call that waits long (for an
    /// approval, for the console) then holds no connection. Without it, a stream stays open
    /// until its call answers; sessions of earlier revisions, which have no polling, always
    /// keep theirs.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use std::time::Duration;
    /// # use tool_contract::Principal;
    /// # use tool_contract::dispatch::Dispatcher;
    /// # use tool_contract::mcp::McpServer;
    /// # fn build(dispatcher: Arc<Dispatcher>, principal: Principal) -> McpServer {
    /// McpServer::new(dispatcher, principal).with_event_stream_hold(Duration::from_secs(30))
    /// # }
    /// ```
    #[cfg(feature = "mcp-http")]
    #[must_use]
    pub fn with_event_stream_hold(mut self, hold: Duration) -> Self {
        self.event_stream_hold = Some(hold);
        self
    }

    /// The budget every call of the session draws on.
    #[must_use]
    pub fn with_task(mut self, task: Task) -> Self {
        self.task = Arc::new(task);
        self
    }

    /// The name and version the server gives at the handshake.
    #[must_use]
    pub fn with_server_info(mut self, name: &str, version: &str) -> Self {
        self.implementation = Implementation::new(name, version);
        self
    }

    /// The page where a person gives a signed approval: `url` with `{approval_id}` standing
    /// for the approval's id (`https://desk.example.com/approvals/{approval_id}`). A write
    /// that needs approvals signed by passkeys, which no answer through the client can give,
    /// sends the person there:
    ///
    /// - a client that declared URL-mode elicitation at the handshake (2025-11-25) is asked
    ///   `elicitation/create` with `mode: "url"` and that page; once the person goes there,
    ///   the call waits for the signed approvals (up to the approval lifetime, woken by the
    ///   store when they are given), then runs, or answers as the decision says;
    /// - a 2026-07-28 request declaring URL-mode elicitation is answered `input_required` with
    ///   that URL request and a sealed state; the same call sent back runs once the
    ///   signatures are in, and reads `APPROVAL_REQUIRED` while they are not;
    /// - any other client's confirmation form names the page, and its answer is not counted.
    #[must_use]
    pub fn with_approvals_console(mut self, url: &str) -> Self {
        self.approvals_console = Some(Arc::from(url));
        self
    }

    /// Serves `router` (an application's pages, e.g. the approvals console) on the same port
    /// as MCP over Streamable HTTP, for every path under `base`: those requests never reach
    /// MCP's transport.
    #[cfg(all(feature = "console", feature = "mcp-http"))]
    pub(crate) fn with_routes(mut self, base: &str, router: axum::Router) -> Self {
        self.console = Some((Arc::from(base), router));
        self
    }

    /// How long an approval given through elicitation stays valid, and how long the form
    /// waits for an answer.
    #[must_use]
    pub fn with_approval_ttl(mut self, ttl: Duration) -> Self {
        self.approval_ttl = ttl;
        self
    }

    /// Answers the calls of the tools `rule` names as tasks (the 2026-07-28 tasks extension,
    /// `io.modelcontextprotocol/tasks`, and in a 2025-11-25 session that revision's tasks
    /// utility, `params.task`), kept in the dispatcher's control store: created
    /// there before the answer names them, polled, answered and cancelled through any replica
    /// sharing the store, and only by the principal that asked. A write waiting for an
    /// approval is a task in `input_required`, asking by the console's page or the
    /// confirmation form; when the decision is recorded, on any replica, the work goes on.
    /// Served by [`serve_http`](Self::serve_http), the server takes over, every 10 s, the
    /// tasks whose replica died ([`resume_tasks`](Self::resume_tasks)).
    /// Kept a day after their creation and polled every second unless
    /// [`with_task_ttl`](Self::with_task_ttl) and
    /// [`with_task_poll_interval`](Self::with_task_poll_interval) say otherwise.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use tool_contract::Principal;
    /// # use tool_contract::dispatch::Dispatcher;
    /// use tool_contract::Effect;
    /// use tool_contract::mcp::{McpServer, TaskSupport};
    /// # fn build(dispatcher: Arc<Dispatcher>, principal: Principal) -> McpServer {
    /// // Writes become tasks when the client takes them; reads are answered at once.
    /// McpServer::new(dispatcher, principal).with_tasks(|spec| match spec.effect() {
    ///     Effect::Pure | Effect::ReadOnly => TaskSupport::Forbidden,
    ///     _ => TaskSupport::Optional,
    /// })
    /// # }
    /// ```
    #[must_use]
    pub fn with_tasks(
        mut self,
        rule: impl Fn(&ToolSpec) -> TaskSupport + Send + Sync + 'static,
    ) -> Self {
        self.task_options().rule = Arc::new(rule);
        self
    }

    /// How long after its creation a task is kept (`None`: until purged by hand); past it, it
    /// reads as absent and the store's purge removes it. Takes effect with
    /// [`with_tasks`](Self::with_tasks).
    #[must_use]
    pub fn with_task_ttl(mut self, ttl: Option<Duration>) -> Self {
        self.task_options().ttl = ttl;
        self
    }

    /// How many open tasks (neither ended nor expired) one principal may hold:
    /// [`OPEN_TASKS_PER_PRINCIPAL`](crate::mcp::OPEN_TASKS_PER_PRINCIPAL) unless said here. A
    /// call that would make one more is answered `CALLER_LIMIT` (retry after a wait) and
    /// makes no task; the stores of this crate count and create under one lock, so a flood of
    /// calls at once never passes it. Takes effect with [`with_tasks`](Self::with_tasks).
    #[must_use]
    pub fn with_open_tasks_per_principal(mut self, limit: usize) -> Self {
        self.task_options().open_per_principal = limit;
        self
    }

    /// How often a client is asked to poll a task. Takes effect with
    /// [`with_tasks`](Self::with_tasks).
    #[must_use]
    pub fn with_task_poll_interval(mut self, interval: Duration) -> Self {
        self.task_options().poll_interval = interval;
        self
    }

    /// Serves `handler`'s resources, prompts and completions beside the contracts' tools, on
    /// this one server: the capabilities `handler` declares for them are declared, and
    /// `resources/*`, `prompts/*` and `completion/complete` go to it, as rmcp hands them to
    /// any `ServerHandler`. The tools, tasks
    /// and everything the pipeline answers stay the server's; `handler`'s own tools are
    /// never listed or called.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use tool_contract::Principal;
    /// # use tool_contract::dispatch::Dispatcher;
    /// use rmcp::model::{
    ///     ListResourcesResult, PaginatedRequestParams, Resource, ServerCapabilities, ServerConfig,
    /// };
    /// use rmcp::service::{RequestContext, RoleServer};
    /// use rmcp::{ErrorData, ServerHandler};
    /// use tool_contract::mcp::McpServer;
    ///
    /// /// The desk's policy documents, as resources.
    /// struct Policies;
    ///
    /// impl ServerHandler for Policies {
    ///     fn get_info(&self) -> ServerConfig {
    ///         ServerConfig::new(ServerCapabilities::builder().enable_resources().build())
    ///     }
    ///
    ///     async fn list_resources(
    ///         &self,
    ///         _request: Option<PaginatedRequestParams>,
    ///         _context: RequestContext<RoleServer>,
    ///     ) -> Result<ListResourcesResult, ErrorData> {
    ///         let refunds = Resource::new("policy://refunds", "refunds");
    ///         Ok(ListResourcesResult::with_all_items(vec![refunds]))
    ///     }
    /// }
    ///
    /// # fn build(dispatcher: Arc<Dispatcher>, principal: Principal) -> McpServer {
    /// McpServer::new(dispatcher, principal).with_handler(Policies)
    /// # }
    /// ```
    #[must_use]
    pub fn with_handler(mut self, handler: impl ServerHandler + 'static) -> Self {
        self.beside = Some(Arc::new(handler));
        self
    }

    /// Shows a succeeded call's verified data as the content blocks `view` makes of it (an
    /// image, audio, an embedded resource, a sentence), when it makes some: `view` is given
    /// the tool's contract and the result's `data`, exactly as verified, and `None` keeps
    /// the default, the result's canonical JSON as text. `structuredContent` stays the whole
    /// verified result, and a failure is always its catalog answer, its recovery included.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use tool_contract::Principal;
    /// # use tool_contract::dispatch::Dispatcher;
    /// use rmcp::model::ContentBlock;
    /// use tool_contract::mcp::McpServer;
    ///
    /// # fn build(dispatcher: Arc<Dispatcher>, principal: Principal) -> McpServer {
    /// // `render_chart` answers `{ "png_base64": "..." }`: the client is shown the image.
    /// McpServer::new(dispatcher, principal).with_content(|spec, data| {
    ///     let png = data.get("png_base64")?.as_str()?;
    ///     (spec.name() == "render_chart").then(|| vec![ContentBlock::image(png, "image/png")])
    /// })
    /// # }
    /// ```
    #[must_use]
    pub fn with_content(
        mut self,
        view: impl Fn(&ToolSpec, &Value) -> Option<Vec<ContentBlock>> + Send + Sync + 'static,
    ) -> Self {
        self.content = Some(Arc::new(view));
        self
    }

    /// Lets the tools ask the client for input before they run (SEP-2322): `rule` is given
    /// the call's tool, the answers so far and the client's declared capabilities, and
    /// returns the requests still open (a form, a sampling request, the client's roots),
    /// each under a key of its own; none, and the call runs, its handler reading each
    /// answer with [`HandlerContext::client_answer`](crate::dispatch::HandlerContext::client_answer).
    ///
    /// - On 2026-07-28 the call answers `resultType: "input_required"` with the requests and
    ///   a sealed `requestState` holding the answers so far, bound to the principal, the tool,
    ///   the exact arguments and a lifetime (as an approval's is); the client sends the call
    ///   again with its responses and the state, round after round, each state valid for the
    ///   approval lifetime ([`with_approval_ttl`](Self::with_approval_ttl)). A state that was
    ///   edited, expired, or comes back for another call is refused (`-32602`, nothing runs);
    ///   a response that is not an object is refused too. Only responses to what the last
    ///   round asked count (without a state, to what a first round asks); a request asked
    ///   again drops the answer it had.
    /// - On the handshake revisions the server asks the client mid-call, round by round, and
    ///   gives up after 8 rounds (an internal error; nothing runs).
    /// - A request the client did not declare it can answer (elicitation, sampling, roots)
    ///   refuses the call with `-32021` naming the capability; a rule that should not,
    ///   checks [`Asking::client_can_answer`](super::Asking::client_can_answer) first.
    /// - Inside a task ([`Asking::in_task`](super::Asking::in_task)), the task waits in
    ///   `input_required` with the requests, answered by `tasks/update`, one or all at once.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use tool_contract::Principal;
    /// # use tool_contract::dispatch::Dispatcher;
    /// use rmcp::model::{InputRequest, InputRequests};
    /// use tool_contract::mcp::McpServer;
    ///
    /// # fn build(dispatcher: Arc<Dispatcher>, principal: Principal) -> McpServer {
    /// // `plan_trip` asks the person where they are going, once.
    /// McpServer::new(dispatcher, principal).with_questions(|asking| {
    ///     let mut asked = InputRequests::new();
    ///     if asking.tool().name() == "plan_trip" && !asking.answered("destination") {
    ///         let form = serde_json::json!({
    ///             "method": "elicitation/create",
    ///             "params": {
    ///                 "mode": "form",
    ///                 "message": "Where to?",
    ///                 "requestedSchema": {
    ///                     "type": "object",
    ///                     "properties": { "city": { "type": "string" } },
    ///                     "required": ["city"]
    ///                 }
    ///             }
    ///         });
    ///         let form: InputRequest = serde_json::from_value(form).expect("a form");
    ///         asked.insert("destination".to_owned(), form);
    ///     }
    ///     asked
    /// })
    /// # }
    /// ```
    #[must_use]
    pub fn with_questions(
        mut self,
        rule: impl Fn(&Asking<'_>) -> InputRequests + Send + Sync + 'static,
    ) -> Self {
        self.questions = Some(Arc::new(rule));
        self
    }

    fn task_options(&mut self) -> &mut TaskOptions {
        self.tasks.get_or_insert_with(TaskOptions::none)
    }

    /// Seals and opens 2026-07-28 approval states with `codec` (for example one with a
    /// keyring, to rotate keys) instead of the key derived from the dispatcher's audit keys.
    /// Every replica that may receive an answer must open what the others sealed.
    #[must_use]
    pub fn with_request_state_codec(mut self, codec: RequestStateCodec) -> Self {
        self.request_state = codec;
        self
    }

    /// The tools as `tools/list` gives them, in registry order.
    #[must_use]
    pub fn tools(&self) -> Vec<Tool> {
        self.dispatcher.registry().tools().map(tool).collect()
    }

    /// Serves one session over this process's stdin and stdout, until the client closes it.
    ///
    /// # Errors
    ///
    /// [`McpServeError`] when the handshake fails or the session ends abnormally.
    pub async fn serve_stdio(self) -> Result<(), McpServeError> {
        let running = match self.serve_io(tokio::io::stdin(), tokio::io::stdout()).await {
            Ok(running) => running,
            // A 2026-07-28 client has no handshake: one that sent `server/discover` (and any
            // stateless requests) and closed its end has ended its session cleanly.
            Err(McpServeError::Initialize(error))
                if matches!(
                    error.downcast_ref::<ServerInitializeError>(),
                    Some(ServerInitializeError::ConnectionClosed(_))
                ) =>
            {
                return Ok(());
            }
            Err(error) => return Err(error),
        };
        running
            .waiting()
            .await
            .map_err(|error| McpServeError::Session(Box::new(error)))?;
        Ok(())
    }

    /// Serves one session read from `read` and written to `write` (newline-delimited
    /// JSON-RPC), keeping each call's arguments as the client sent them (see the
    /// [module docs](super)). Returns once the handshake is done; the session runs on.
    ///
    /// # Errors
    ///
    /// [`McpServeError::Initialize`] when the handshake fails.
    pub async fn serve_io<R, W>(
        mut self,
        read: R,
        write: W,
    ) -> Result<RunningService<RoleServer, McpServer>, McpServeError>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        if !matches!(self.callers, Callers::One(_)) {
            return Err(McpServeError::TokensOverStream);
        }
        let max_line = self.max_message_bytes();
        let captured = Arc::new(Captured::default());
        self.captured = Some(captured.clone());
        let read = Capturing::new(read, captured.clone(), max_line);
        let transport = AsyncRwTransport::new(read, write).with_max_line_length(max_line);
        let transport = UtilityStream::new(transport, captured);
        self.serve(transport)
            .await
            .map_err(|error| McpServeError::Initialize(Box::new(error)))
    }

    /// This server for one more session: the same in all, but what a session sets for
    /// itself (its log level).
    #[cfg(feature = "mcp-http")]
    pub(super) fn in_a_session(&self) -> McpServer {
        let mut server = self.clone();
        server.log_level = Arc::default();
        server
    }

    /// The longest message read: the registry's largest argument limit and an envelope.
    pub(super) fn max_message_bytes(&self) -> usize {
        let largest = self.dispatcher.registry().tools();
        let largest = largest.map(|spec| spec.argument_limits().max_bytes).max();
        largest.unwrap_or(0).saturating_add(ENVELOPE_BYTES)
    }

    /// One `tools/call`, from the request to the verified result.
    async fn call(
        &self,
        request: CallToolRequestParams,
        request_context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let registry = self.dispatcher.registry();
        if !registry.accepts_adapter(ADAPTER.api, ADAPTER.revision) {
            // As the provider writers refuse: nothing runs for a caller the registry does not
            // accept.
            return Err(ErrorData::internal_error(
                "the registry names its adapters, and not MCP's: add tool_contract::mcp::ADAPTER",
                None,
            ));
        }
        let (principal, caller) = self.callers.of(request_context)?;
        let peer = &request_context.peer;
        let kept = self
            .captured
            .as_ref()
            .and_then(|captured| captured.take(&request_context.id))
            .or_else(|| kept_over_http(request_context))
            .ok_or_else(|| {
                ErrorData::invalid_request(
                    "the call's arguments were not read from the client's bytes (a repeated \
                     member on the way to them, more than 64 calls in flight on one session, \
                     or a server not run by serve_io or serve_stdio): nothing ran",
                    None,
                )
            })?;
        let asked_task = kept.task();
        let arguments = kept.into_arguments();
        if !kept_as_read(&arguments, request.arguments.as_ref()) {
            // A kept line rmcp refused, under an id this request reuses, or any other
            // difference between the two readings: nothing runs on bytes that may not be
            // this request's.
            return Err(ErrorData::invalid_request(
                "the call's arguments as kept from the client's bytes are not the arguments \
                 of this request: nothing ran",
                None,
            ));
        }
        if let (Some(verified), Some(spec)) = (&caller, registry.get(&request.name)) {
            // The door refused this already with a step-up challenge; a call that reached here
            // another way is refused all the same.
            verified.allows(spec, &arguments, registry.forbidden_keys())?;
        }
        let context = self.context(&request, request_context, arguments);
        // What this caller's token may ask: a person's edit does not reach past it.
        let reach = |spec: &ToolSpec, arguments: &[u8]| {
            caller.as_ref().is_none_or(|verified| {
                verified
                    .allows(spec, arguments, registry.forbidden_keys())
                    .is_ok()
            })
        };
        let credentials = Credentials {
            reach: &reach,
            scopes: caller.as_ref().map(Verified::scopes),
        };
        let stateless = without_handshake(request_context);
        // On 2026-07-28 the tool's questions are asked first, by `input_required`, before
        // any task is made; the answers travel in the sealed state.
        let (mut answers, approval_state) = if stateless {
            match self.gather(&principal, &request, request_context, &context)? {
                Gathered::Asking(asked) => return Ok(CallToolResponse::InputRequired(asked)),
                Gathered::Answers(answers) => (answers, None),
                Gathered::ApprovalAnswer { answers, sealed } => (answers, Some(sealed)),
            }
        } else {
            (JsonObject::new(), None)
        };
        let received = Received {
            principal: &principal,
            request: &request,
            request_context,
            context: &context,
        };
        // Each step that waits on something large is boxed: a future holds its largest
        // step's, and is copied whole at every move (`while_sending` takes it by value).
        match self.task_choice(&request.name, request_context, asked_task) {
            TaskChoice::Inline => {}
            TaskChoice::Refused(error) => return Err(error),
            TaskChoice::Task { options, ttl } => {
                let made = self.call_as_task(&received, caller.as_ref(), (options, ttl), &answers);
                return Box::pin(made).await;
            }
        }
        // Reports a handler makes go to a client that asked for them, before the answer.
        let log_level = (!stateless).then_some(&self.log_level);
        let (progress, log, listening) = match listen(request_context, log_level, &request.name) {
            Some((progress, log, listening)) => (progress, log, Some(listening)),
            None => (None, None, None),
        };
        let answering = async {
            if !stateless {
                answers = Box::pin(self.ask_in_session(&request, peer)).await?;
            }
            let client = ClientSide {
                progress,
                log,
                answers: Arc::new(answers),
            };
            if stateless {
                return Box::pin(self.call_stateless(
                    &received,
                    &credentials,
                    &client,
                    approval_state.as_deref(),
                ))
                .await;
            }
            Box::pin(self.call_with_session(&principal, &context, peer, &credentials, &client))
                .await
        };
        while_sending(listening, peer, answering).await
    }

    /// What the sealed state and the client's responses of a 2026-07-28 call say: the
    /// answers to the tool's questions so far, and either the questions still open, or,
    /// when the state was an approval's, the answer to it.
    fn gather(
        &self,
        principal: &Principal,
        request: &CallToolRequestParams,
        request_context: &RequestContext<RoleServer>,
        context: &CallContext,
    ) -> Result<Gathered, ErrorData> {
        let responses = || {
            answers_in(request.input_responses.as_ref()).map_err(|key| {
                ErrorData::invalid_params(
                    format!("the input response {key} is not an object: nothing ran"),
                    None,
                )
            })
        };
        if request.request_state.is_none() && self.questions.is_none() {
            // Nothing to open and nothing asked: no digest is made, no response counts.
            return responses().map(|_| Gathered::Answers(JsonObject::new()));
        }
        let binder = self.dispatcher.binder();
        let keys = binder.keys();
        let spec = self.dispatcher.registry().get(&request.name);
        let principal_ref = keys.principal_ref(principal);
        let request_sha256 =
            keys.request_digest(principal, &request.name, spec, &context.call.arguments);
        let expected = Expected {
            principal_ref: &principal_ref,
            tool: &request.name,
            request_sha256: &request_sha256,
            now_ms: unix_ms(self.dispatcher.now()),
        };
        // The answers of earlier rounds, and the keys the last round asked.
        let (mut answers, asked_last) = match request.request_state.as_deref() {
            None => (JsonObject::new(), None),
            Some(sealed) => {
                match AnswersState::open(&self.request_state, sealed, &expected).map_err(refused)? {
                    Some(state) => (state.answers, Some(state.open)),
                    None => {
                        // An approval's state: the responses are the person's decision.
                        let state = ApprovalState::open(&self.request_state, sealed, &expected)
                            .map_err(refused)?;
                        return Ok(Gathered::ApprovalAnswer {
                            answers: state.answers,
                            sealed: sealed.to_owned(),
                        });
                    }
                }
            }
        };
        let responses = responses()?;
        let (Some(rule), Some(spec)) = (&self.questions, spec) else {
            return Ok(Gathered::Answers(answers));
        };
        let declared = request_context.client_capabilities();
        let declared = declared.as_ref();
        // Only a response to what was asked counts: without a state, to what a first round
        // asks.
        let asked_last = match asked_last {
            Some(keys) => keys,
            None => {
                let first = Asking::before_task(spec, &answers, declared);
                open_requests(rule, &first)?.into_keys().collect()
            }
        };
        for (key, answer) in responses {
            if asked_last.contains(&key) {
                answers.insert(key, answer);
            }
        }
        let asked = open_requests(rule, &Asking::before_task(spec, &answers, declared))?;
        if asked.is_empty() {
            return Ok(Gathered::Answers(answers));
        }
        // A request asked again is asked anew: an answer the client gave it is not kept.
        answers.retain(|key, _| !asked.contains_key(key));
        let expires_at_ms = unix_ms(later_by(self.dispatcher.now(), self.approval_ttl));
        let sealed = AnswersState::of(&expected, answers, &asked, expires_at_ms)
            .seal(&self.request_state)
            .ok_or_else(|| {
                ErrorData::internal_error("the request state could not be sealed", None)
            })?;
        Ok(Gathered::Asking(InputRequiredResult::new(
            Some(asked),
            Some(sealed),
        )))
    }

    /// On a revision with a handshake: the tool's questions asked of the client mid-call, round
    /// by round, until the rule asks nothing more.
    async fn ask_in_session(
        &self,
        request: &CallToolRequestParams,
        peer: &Peer<RoleServer>,
    ) -> Result<JsonObject, ErrorData> {
        let mut answers = JsonObject::new();
        let (Some(rule), Some(spec)) = (
            &self.questions,
            self.dispatcher.registry().get(&request.name),
        ) else {
            return Ok(answers);
        };
        let declared = peer.peer_info().map(|info| info.capabilities.clone());
        for _round in 0..QUESTION_ROUNDS {
            let asking = Asking::before_task(spec, &answers, declared.as_ref());
            let asked = open_requests(rule, &asking)?;
            if asked.is_empty() {
                return Ok(answers);
            }
            for (key, asked) in asked {
                let request = server_request(&key, asked)?;
                let answer = peer.send_request(request).await.map_err(|error| {
                    ErrorData::internal_error(
                        format!("the client did not answer {key}: {error}; nothing ran"),
                        None,
                    )
                })?;
                let answer = serde_json::to_value(answer)
                    .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
                answers.insert(key, answer);
            }
        }
        Err(ErrorData::internal_error(
            format!("the tool's questions went on past {QUESTION_ROUNDS} rounds: nothing ran"),
            None,
        ))
    }

    /// A `tools/call` of a revision with a handshake: a write that needs a person asks them
    /// mid-call, by the console's page or the confirmation form.
    async fn call_with_session(
        &self,
        principal: &Principal,
        context: &CallContext,
        peer: &Peer<RoleServer>,
        credentials: &Credentials<'_>,
        client: &ClientSide,
    ) -> Result<CallToolResponse, ErrorData> {
        let mut dispatch = self
            .dispatcher
            .dispatch_within(principal, context, &self.task, credentials, client)
            .await;
        let mut pending = dispatch.pending_approval.take();
        if let Some(asked) = pending.take() {
            // A rule of signed approvals sends the person to the console when the client can
            // go there; otherwise the form asks them.
            let decided = match self.console_page(&asked) {
                Some(page) if sends_to_console(peer) => {
                    self.await_console(peer, &asked, page).await
                }
                _ if asks_by_elicitation(peer) => {
                    self.elicit_approval(principal, peer, &asked).await
                }
                _ => false,
            };
            if decided {
                // Granted or rejected: the dispatcher acts on the decision.
                dispatch = self
                    .dispatcher
                    .dispatch_within(principal, context, &self.task, credentials, client)
                    .await;
                pending = dispatch.pending_approval.take();
            } else {
                pending = Some(asked);
            }
        }
        self.answer(principal, context, &dispatch, pending.as_ref())
            .map(CallToolResponse::from)
    }

    /// A `tools/call` of 2026-07-28: a write that needs a person answers `input_required` with
    /// the confirmation and a sealed state; the same call sent back with the answer and the
    /// state records the decision in the store, then runs (or not) as the decision says.
    async fn call_stateless(
        &self,
        received: &Received<'_>,
        credentials: &Credentials<'_>,
        client: &ClientSide,
        approval_state: Option<&str>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Received {
            principal,
            request,
            request_context,
            context,
        } = *received;
        let answered = match approval_state {
            Some(sealed) => {
                self.record_answer(principal, sealed, request, context)
                    .await?;
                true
            }
            None => false,
        };
        let mut dispatch = self
            .dispatcher
            .dispatch_within(principal, context, &self.task, credentials, client)
            .await;
        let pending = dispatch.pending_approval.take();
        // Asked once per call: a dismissed form is not asked again in a loop.
        if let Some(pending) = pending.as_ref()
            && !answered
        {
            let question = match self.console_page(pending) {
                Some(page) if declares_url_elicitation(request_context) => {
                    Some((Question::Console, console_link(pending, page)))
                }
                _ if declares_form_elicitation(request_context) => {
                    super::approval::confirmation(pending, self.approvals_console.as_deref())
                        .map(|form| (Question::Form, form))
                }
                _ => None,
            };
            if let Some(asked) = question.and_then(|(kind, params)| {
                self.input_required(pending, kind, params, &client.answers)
            }) {
                return Ok(CallToolResponse::InputRequired(asked));
            }
        }
        self.answer(principal, context, &dispatch, pending.as_ref())
            .map(CallToolResponse::from)
    }

    /// The page where `pending`'s signed approvals are given, if it needs them and a console
    /// is set.
    pub(super) fn console_page(&self, pending: &PendingApproval) -> Option<String> {
        console_page(pending, self.approvals_console.as_deref())
    }

    /// Sends the person at the client to `page` by URL-mode elicitation and, once they went,
    /// waits until `pending` is decided there (it leaves `pending`) or its lifetime ends.
    /// `true` when it was decided: the dispatcher then acts on the decision.
    async fn await_console(
        &self,
        peer: &Peer<RoleServer>,
        pending: &PendingApproval,
        page: String,
    ) -> bool {
        let link = console_link(pending, page);
        let asked = peer.create_elicitation_with_timeout(link, Some(self.approval_ttl));
        match asked.await {
            Ok(answer) if answer.action == ElicitationAction::Accept => {}
            _ => return false,
        }
        let deadline = tokio::time::Instant::now() + self.approval_ttl;
        let waiter = self.dispatcher.waiter(
            &[Changed::Approval(pending.approval_id.clone())],
            Some(SAFETY_POLL),
        );
        loop {
            match self.dispatcher.pending_approval(&pending.approval_id).await {
                Ok(None) => return true,
                // The store will say why when the call is dispatched again; nothing is
                // decided here.
                Err(_) => return false,
                Ok(Some(_)) if tokio::time::Instant::now() >= deadline => return false,
                // At the deadline, looked at once more.
                Ok(Some(_)) => {
                    let _ = tokio::time::timeout_at(deadline, waiter.next()).await;
                }
            }
        }
    }

    /// `params` asked of the person at the client for `pending`, with its state sealed for
    /// an approval lifetime.
    fn input_required(
        &self,
        pending: &PendingApproval,
        question: Question,
        params: ElicitRequestParams,
        answers: &JsonObject,
    ) -> Option<InputRequiredResult> {
        let expires_at_ms = unix_ms(later_by(self.dispatcher.now(), self.approval_ttl));
        let mut state = ApprovalState::of(pending, question, expires_at_ms);
        state.answers = answers.clone();
        let sealed = state.seal(&self.request_state)?;
        let mut requests = InputRequests::new();
        requests.insert(
            CONFIRMATION_KEY.to_owned(),
            InputRequest::Elicitation(ElicitRequest::new(params)),
        );
        Some(
            InputRequiredResult::new(Some(requests), Some(sealed)).with_meta(pending_meta(pending)),
        )
    }

    /// Opens the state an answer came back with, checks it against this call, and records
    /// the person's decision; the approval leaves `pending` once, whichever replica records it.
    async fn record_answer(
        &self,
        principal: &Principal,
        sealed: &str,
        request: &CallToolRequestParams,
        context: &CallContext,
    ) -> Result<(), ErrorData> {
        let keys = self.dispatcher.binder().keys().clone();
        let spec = self.dispatcher.registry().get(&request.name);
        let principal_ref = keys.principal_ref(principal);
        let request_sha256 =
            keys.request_digest(principal, &request.name, spec, &context.call.arguments);
        let now = self.dispatcher.now();
        let expected = Expected {
            principal_ref: &principal_ref,
            tool: &request.name,
            request_sha256: &request_sha256,
            now_ms: unix_ms(now),
        };
        let state = ApprovalState::open(&self.request_state, sealed, &expected).map_err(refused)?;
        self.record_decision(
            principal,
            &state,
            Decision::among(request.input_responses.as_ref()),
        )
        .await
    }

    /// Records what the person at the client decided about the approval `state` names; an
    /// answer to a question that sent them to the console decides nothing.
    pub(super) async fn record_decision(
        &self,
        principal: &Principal,
        state: &ApprovalState,
        decision: Decision,
    ) -> Result<(), ErrorData> {
        if state.question == Question::Console {
            // The person was sent to the console: what the client answers decides nothing.
            return Ok(());
        }
        let now = self.dispatcher.now();
        let recorded = match decision {
            Decision::Approve => {
                if self
                    .approved_already(&state.approval_id, &approver(principal))
                    .await
                {
                    // This principal answered this approval already: whatever the client
                    // calls itself, a second answer is not a second person.
                    return Err(refused(StateRefusal::Replayed));
                }
                let approved = self
                    .dispatcher
                    .approve_as_caller(
                        principal,
                        &state.approval_id,
                        &state.preview_sha256,
                        later_by(now, self.approval_ttl),
                    )
                    .await;
                match approved {
                    // Only passkeys, or someone other than the caller, can meet this rule:
                    // the call reads APPROVAL_REQUIRED again.
                    Err(ApprovalError::SignatureRequired | ApprovalError::CallerCannotApprove) => {
                        Ok(())
                    }
                    approved => approved.map(drop),
                }
            }
            Decision::Reject(reason) => self.reject(&state.approval_id, reason).await,
            Decision::Undecided => Ok(()),
        };
        recorded.map_err(|error| match error {
            ApprovalError::NotPending => refused(StateRefusal::Replayed),
            ApprovalError::PreviewMismatch => refused(StateRefusal::ChangedArguments),
            ApprovalError::Expired => refused(StateRefusal::Expired),
            other => ErrorData::internal_error(
                format!("the answer could not be recorded: {other}; nothing ran"),
                None,
            ),
        })
    }

    /// The call as the dispatcher sees it: an MCP call with the request id as its id.
    fn context(
        &self,
        request: &CallToolRequestParams,
        request_context: &RequestContext<RoleServer>,
        arguments: Vec<u8>,
    ) -> CallContext {
        // rmcp moves the request's `_meta` into the context; a hand-built request keeps it.
        let named = |meta: &JsonObject| {
            meta.get(OPERATION_ID_META)
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let request_id = &request_context.id;
        let call = ToolCall {
            api: ADAPTER.api,
            adapter_revision: ADAPTER.revision.to_owned(),
            response_id: None,
            call_id: format!("mcp-{request_id}"),
            correlation: Correlation::Id,
            name: request.name.to_string(),
            arguments,
        };
        let per_call = self
            .dispatcher
            .registry()
            .get(&request.name)
            .and_then(ToolSpec::operation)
            == Some(Operation::PerCall);
        // Only a `per_call` write's operation is the client's to name: each call of it is its
        // own action, and the name identifies the retries of one. Every other rule is the
        // contract's ([fields], key_rule, same_arguments), and no name a client chooses can
        // make two of its operations out of one.
        let operation_id = if per_call {
            named(&request_context.meta)
                .or_else(|| request.meta.as_deref().and_then(|meta| named(meta)))
                .map(|named| format!("{}:client:{named}", request.name))
                .or_else(|| {
                    // The call sent back with an answer is the call that was asked about.
                    let sealed = request.request_state.as_deref()?;
                    ApprovalState::operation_of(&self.request_state, sealed)
                })
                // A request id is the session's, not the model's: no name for the call
                // outlives this request, so each call is its own operation.
                .unwrap_or_else(|| self.dispatcher.fresh_operation_id(&request.name))
        } else {
            self.dispatcher.operation_id(&call)
        };
        CallContext::new(call, operation_id.clone()).with_idempotency_key(operation_id)
    }

    /// Asks the person at the client to approve `pending`, and records their decision:
    /// accept with `approve: true` approves it (granted once as many people as it needs
    /// have), decline (or accept with `false`) rejects it.
    /// `false` when nothing was decided (the form was dismissed, or the client failed to
    /// answer): the approval stays pending.
    async fn elicit_approval(
        &self,
        principal: &Principal,
        peer: &Peer<RoleServer>,
        pending: &PendingApproval,
    ) -> bool {
        let Some(params) =
            super::approval::confirmation(pending, self.approvals_console.as_deref())
        else {
            return false;
        };
        // A question nobody answers is closed when an answer would have expired anyway.
        let asked = peer.create_elicitation_with_timeout(params, Some(self.approval_ttl));
        let Ok(answer) = asked.await else {
            return false;
        };
        match Decision::of(&answer) {
            Decision::Approve => {
                let expires_at = later_by(self.dispatcher.now(), self.approval_ttl);
                self.dispatcher
                    .approve_as_caller(
                        principal,
                        &pending.approval_id,
                        &pending.preview_sha256,
                        expires_at,
                    )
                    .await
                    .is_ok()
            }
            Decision::Reject(reason) => self.reject(&pending.approval_id, reason).await.is_ok(),
            Decision::Undecided => false,
        }
    }

    /// Whether `approver` has approved the pending approval `approval_id` already.
    async fn approved_already(&self, approval_id: &str, approver: &str) -> bool {
        let Ok(pending) = self.dispatcher.pending_approvals().await else {
            // The store will refuse the approval itself, and say why.
            return false;
        };
        pending
            .iter()
            .filter(|pending| pending.approval_id == approval_id)
            .flat_map(|pending| &pending.approvals)
            .any(|given| ApproverIdentity::of(&given.approver) == ApproverIdentity::of(approver))
    }

    /// Records a person's rejection, for `reason` if they gave one.
    async fn reject(
        &self,
        approval_id: &str,
        reason: Option<RejectionReason>,
    ) -> Result<(), ApprovalError> {
        match reason {
            Some(reason) => self.dispatcher.reject_because(approval_id, reason).await,
            None => self.dispatcher.reject(approval_id).await,
        }
    }

    /// The verified result as MCP content; an internal error if it does not verify, since
    /// nothing unverified may reach the client.
    pub(super) fn answer(
        &self,
        principal: &Principal,
        context: &CallContext,
        dispatch: &Dispatch,
        pending: Option<&PendingApproval>,
    ) -> Result<CallToolResult, ErrorData> {
        let binder = self.dispatcher.binder();
        let verified = binder
            .verify(principal, context, &dispatch.result)
            .map_err(|error| {
                ErrorData::internal_error(format!("the result did not verify: {error}"), None)
            })?;
        // From `str`: canonical JSON is UTF-8 already, and is not checked again.
        let structured: Value = serde_json::from_str(verified.model_json_str())
            .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
        let succeeded = verified.model().status() == Status::Succeeded;
        let spec = self.dispatcher.registry().get(&context.call.name);
        let content = blocks(
            self.content.as_ref(),
            spec,
            succeeded,
            &structured,
            verified.model_json_str(),
        );
        let mut result = if succeeded {
            CallToolResult::success(content)
        } else {
            CallToolResult::error(content)
        };
        result.structured_content = Some(structured);
        if let Some(pending) = pending {
            result.meta = Some(pending_meta(pending));
        }
        Ok(result)
    }
}

/// The pending approval as a result's `_meta` carries it, for a host to show.
fn pending_meta(pending: &PendingApproval) -> MetaObject {
    let mut meta = MetaObject::default();
    meta.0.insert(
        PENDING_APPROVAL_META.to_owned(),
        json!({
            "approval_id": pending.approval_id,
            "preview": pending.preview,
            "preview_text": pending.preview.to_text(),
            "preview_sha256": pending.preview_sha256,
            "approvals_required": pending.approvals_required,
            "approvals_still_needed": pending.approvals_still_needed(),
        }),
    );
    meta
}

/// The approver an MCP answer is recorded under: the principal the session acts for, never
/// the name the client gives itself (`clientInfo.name` is the client's to choose). Until
/// approvers are authenticated, every answer over one session is one approval by that
/// principal, so one principal never supplies two of the approvals a rule needs.
fn approver(principal: &Principal) -> String {
    format!("mcp:{}/{}", principal.tenant, principal.subject)
}

/// A refused `requestState`, as the JSON-RPC error the client reads.
pub(super) fn refused(refusal: StateRefusal) -> ErrorData {
    ErrorData::invalid_params(
        format!(
            "{refusal}: nothing was recorded and nothing ran; send the call again without requestState to be asked again"
        ),
        Some(json!({ "reason": refusal.code() })),
    )
}

/// Whether the request is of a revision without the `initialize` handshake (2026-07-28 on):
/// such a server may not ask the client anything mid-call.
/// What a tool asks the client (`key`), as the request the server sends it in a session.
pub(super) fn server_request(key: &str, asked: InputRequest) -> Result<ServerRequest, ErrorData> {
    match asked {
        InputRequest::Elicitation(request) => Ok(ServerRequest::ElicitRequest(request)),
        InputRequest::CreateMessage(request) => Ok(ServerRequest::CreateMessageRequest(request)),
        InputRequest::ListRoots(request) => Ok(ServerRequest::ListRootsRequest(request)),
        _ => Err(ErrorData::internal_error(
            format!("the request {key} is of a kind this server cannot send"),
            None,
        )),
    }
}

pub(super) fn without_handshake(request_context: &RequestContext<RoleServer>) -> bool {
    request_context
        .protocol_version()
        .is_some_and(|version| !version.has_initialize())
}

/// Whether a 2026-07-28 request declares form elicitation in its `_meta` capabilities (an
/// elicitation capability naming no mode means form, as the spec keeps for compatibility).
pub(super) fn declares_form_elicitation(request_context: &RequestContext<RoleServer>) -> bool {
    request_context
        .client_capabilities()
        .and_then(|capabilities| capabilities.elicitation)
        .is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none())
}

/// Whether a 2026-07-28 request declares URL-mode elicitation in its `_meta` capabilities.
pub(super) fn declares_url_elicitation(request_context: &RequestContext<RoleServer>) -> bool {
    request_context
        .client_capabilities()
        .and_then(|capabilities| capabilities.elicitation)
        .is_some_and(|elicitation| elicitation.url.is_some())
}

/// Whether the client declared URL-mode elicitation, so a person can be sent to a page
/// mid-call.
fn sends_to_console(peer: &Peer<RoleServer>) -> bool {
    peer.supported_elicitation_modes()
        .contains(&ElicitationMode::Url)
}

/// Whether the client declared form elicitation, so a person can be asked mid-call.
fn asks_by_elicitation(peer: &Peer<RoleServer>) -> bool {
    peer.supported_elicitation_modes()
        .contains(&ElicitationMode::Form)
}

/// Whether the kept bytes say what rmcp read of the same request: the same value once a
/// repeated member keeps its last value and numbers are read as doubles, as rmcp reads them
/// (the exact reading of the bytes comes after, in validation).
fn kept_as_read(kept: &[u8], read: Option<&JsonObject>) -> bool {
    let empty = JsonObject::new();
    if super::same::reads_as(kept, read.unwrap_or(&empty)) == Some(true) {
        return true;
    }
    // A difference, or a repeated member: the full reading decides.
    let read = read.cloned().map_or_else(|| json!({}), Value::Object);
    crate::json::depth::from_slice::<Value>(kept).is_ok_and(|kept| kept == read)
}

/// A registry entry as an MCP tool.
fn tool(spec: &'static ToolSpec) -> Tool {
    let input_schema = object(spec.input_schema().clone());
    let output_schema = object(spec.model_result_schema());
    let effect = spec.effect();
    let mut annotations = ToolAnnotations::new()
        .read_only(!effect.is_write())
        .open_world(false);
    // The spec gives the two hints meaning only when `readOnlyHint` is false (2025-06-18 on,
    // `ToolAnnotations`): a read lists neither. A write is destructive unless its contract
    // says it only adds (MCP's default is `true` too).
    if effect.is_write() {
        annotations = annotations
            .destructive(!spec.is_additive())
            .idempotent(effect != Effect::NonIdempotentWrite);
    }
    Tool::new_with_raw(
        spec.name(),
        Some(Cow::Borrowed(spec.description())),
        Arc::new(input_schema),
    )
    .with_raw_output_schema(Arc::new(output_schema))
    .with_annotations(annotations)
}

fn object(schema: Value) -> JsonObject {
    match schema {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder().enable_tools();
        // The extension is declared when some tool's calls may become tasks (and, in a
        // 2025-11-25 session, the utility, by the session's transport).
        let capabilities = if self.takes_tasks() {
            capabilities.enable_tasks()
        } else {
            capabilities
        };
        let capabilities = match &self.beside {
            Some(beside) => merged(capabilities.build(), beside.as_ref()),
            None => capabilities.build(),
        };
        ServerConfig::new(capabilities)
            .with_server_info(self.implementation.clone())
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    /// The handshake: what `get_info` declares, and what only the handshake revisions have
    /// (2026-07-28 deprecates both, SEP-2577): the logging utility, which a tool's
    /// [`log`](crate::dispatch::HandlerContext::log) messages reach, and resource
    /// subscriptions when the handler beside serves them.
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        let mut answer = self.negotiate_initialize(&request)?;
        answer.capabilities.logging = Some(JsonObject::new());
        if let (Some(beside), Some(resources)) = (&self.beside, &mut answer.capabilities.resources)
            && subscribes(beside.as_ref())
        {
            resources.subscribe = Some(true);
        }
        Ok(answer)
    }

    /// Every revision to 2026-07-28: those with the `initialize` handshake ask for approvals
    /// mid-call by elicitation, 2026-07-28 by `input_required` results.
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2026_07_28))
    }

    /// The tools, or with authenticated requests the tools the request's token may call.
    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let (_, verified) = self.callers.of(&context)?;
        let tools = self
            .dispatcher
            .registry()
            .tools()
            .filter(|spec| {
                verified
                    .as_ref()
                    .is_none_or(|verified| verified.shows(spec))
            })
            .map(tool)
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let span = super::telemetry::tools_call(self.dispatcher.registry(), &request, &context);
        // The caller's pseudonym is a keyed digest: made only for a span that is recorded.
        if !span.is_disabled()
            && let Ok((principal, _)) = self.callers.of(&context)
        {
            let principal_ref = self.dispatcher.binder().keys().principal_ref(&principal);
            super::telemetry::record_caller(&span, &principal_ref);
        }
        // Boxed: the call holds a whole dispatch, and rmcp moves the handler's future by value
        // as it spawns and polls it (see `on_custom_request`).
        let answer = Box::pin(self.call(request, &context))
            .instrument(span.clone())
            .await;
        super::telemetry::record_answer(&span, &answer);
        answer
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        match &self.beside {
            Some(beside) => beside.list_resources(request, context).await,
            None => Err(ErrorData::method_not_found::<ListResourcesRequestMethod>()),
        }
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        match &self.beside {
            Some(beside) => beside.list_resource_templates(request, context).await,
            None => Err(ErrorData::method_not_found::<
                ListResourceTemplatesRequestMethod,
            >()),
        }
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        match &self.beside {
            Some(beside) => beside.read_resource(request, context).await,
            None => Err(ErrorData::method_not_found::<ReadResourceRequestMethod>()),
        }
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        match &self.beside {
            Some(beside) => beside.subscribe(request, context).await,
            None => Err(ErrorData::method_not_found::<SubscribeRequestMethod>()),
        }
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        match &self.beside {
            Some(beside) => beside.unsubscribe(request, context).await,
            None => Err(ErrorData::method_not_found::<UnsubscribeRequestMethod>()),
        }
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        match &self.beside {
            Some(beside) => beside.list_prompts(request, context).await,
            None => Err(ErrorData::method_not_found::<ListPromptsRequestMethod>()),
        }
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        match &self.beside {
            Some(beside) => beside.get_prompt(request, context).await,
            None => Err(ErrorData::method_not_found::<GetPromptRequestMethod>()),
        }
    }

    /// The handshake revisions' logging utility: the session's client listens for the tools'
    /// log messages at `request.level` and above. 2026-07-28 has none (SEP-2577).
    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if without_handshake(&context) {
            return Err(ErrorData::method_not_found::<SetLevelRequestMethod>());
        }
        self.log_level.set(log_level_of(request.level));
        Ok(())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        match &self.beside {
            Some(beside) => beside.complete(request, context).await,
            None => Err(ErrorData::method_not_found::<CompleteRequestMethod>()),
        }
    }

    /// The requests of 2025-11-25's tasks utility, in a session of that revision on a server
    /// that takes tasks; any other method is not found.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        // Boxed, as every handler here that waits on the store: rmcp's future for a request
        // is as large as its largest handler's, and it moves that future by value as it
        // spawns each request, whatever the request.
        Box::pin(self.answer_utility(request, context)).await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        Box::pin(self.get_task_of(&request.task_id, &context)).await
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Box::pin(self.update_task_of(&request, &context)).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Box::pin(self.cancel_task_of(&request, &context)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of the future `make` returns, never polled nor made.
    fn future_size<Args, Made: Future>(_: impl FnOnce(Args) -> Made) -> usize {
        size_of::<Made>()
    }

    /// rmcp moves the future of every request by value as it spawns it (about 60k
    /// instructions a call at 11.5 KB, when the tasks' handlers were not boxed): a handler
    /// that waits on anything large boxes it, so every request's future stays small.
    #[test]
    fn a_requests_future_stays_small_whatever_the_request() {
        use rmcp::Service;

        let size = future_size(
            |(server, request, context): (
                McpServer,
                rmcp::model::ClientRequest,
                RequestContext<RoleServer>,
            )| async move { server.handle_request(request, context).await },
        );
        // 4.3 KB in a debug build (futures are larger there than in a release one), 12 KB
        // with `get_task` unboxed.
        assert!(size <= 6 * 1024, "{size} bytes");
    }

    fn read(value: Value) -> JsonObject {
        match value {
            Value::Object(object) => object,
            _ => unreachable!("an object"),
        }
    }

    #[test]
    fn kept_bytes_of_another_request_never_stand_in_for_this_one() {
        let this = read(json!({ "order_ref": "ORDER-2" }));
        assert!(!kept_as_read(br#"{"order_ref":"ORDER-1"}"#, Some(&this)));
        assert!(!kept_as_read(br#"{"order_ref":"ORDER-1"}"#, None));
        assert!(!kept_as_read(b"{", Some(&this)));
    }

    #[test]
    fn kept_bytes_rmcp_read_loosely_are_still_this_request_and_left_to_validation() {
        // rmcp kept the last of a repeated member and read 1e-400 as 0: the same request,
        // which validation then refuses for what the bytes say.
        let loose = read(json!({ "a": 2, "x": 0.0 }));
        assert!(kept_as_read(br#"{"a":1,"a":2,"x":1e-400}"#, Some(&loose)));
        assert!(kept_as_read(b"{}", None));
    }
}
