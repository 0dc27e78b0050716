//! What the application plugs in per tool: the handler that does the work, and for writes
//! reconciled by a status tool, how to ask it.

use std::any::Any;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;

use serde::Serialize;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tokio::sync::watch;

use crate::binder::{Binder, CallResult, FailureKind, RawProvenance, RawResult, ToolFailure};
use crate::contract::{ReconciledBy, ToolContract};
use crate::dispatch::client_side::{ClientSide, LogLevel, Progress};
use crate::dispatch::options::ToolOptions;
use crate::vocabulary::{CallContext, ForbiddenKeys, Principal, Violations};

/// What a handler knows of the call besides its input.
#[derive(Debug, Clone)]
pub struct HandlerContext {
    pub(crate) operation_id: String,
    pub(crate) idempotency_key: String,
    pub(crate) attempt: u32,
    pub(crate) cancel: watch::Receiver<bool>,
    pub(crate) reconciling: Option<&'static str>,
    pub(crate) clock: fn() -> OffsetDateTime,
    /// For a write, the lease its execution holds the record under.
    pub(crate) lease: Option<HeldLease>,
    /// What the client gave besides the input: a progress listener, answers.
    pub(crate) client: ClientSide,
}

/// The lease a write's execution holds: until when, and the claim's fencing token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HeldLease {
    pub(crate) until: OffsetDateTime,
    pub(crate) fencing_token: u64,
}

impl HandlerContext {
    /// A context for calling a handler outside a dispatcher (its own tests, a bench): attempt
    /// 1, never cancelled.
    #[must_use]
    pub fn detached(operation_id: impl Into<String>, idempotency_key: impl Into<String>) -> Self {
        let (_, cancel) = watch::channel(false);
        HandlerContext {
            operation_id: operation_id.into(),
            idempotency_key: idempotency_key.into(),
            attempt: 1,
            cancel,
            reconciling: None,
            clock: OffsetDateTime::now_utc,
            lease: None,
            client: ClientSide::default(),
        }
    }

    /// Now, by the dispatcher's clock
    /// ([`DispatcherBuilder::clock`](crate::dispatch::DispatcherBuilder::clock)): what a
    /// result's `observed_at` is stamped with.
    #[must_use]
    pub fn now(&self) -> OffsetDateTime {
        (self.clock)()
    }

    /// The write this read runs as the status query of (`reconcile = ThisTool`): when the
    /// dispatcher reconciles a write whose outcome is unknown, or the model calls this tool
    /// for such an operation. Then [`idempotency_key`](Self::idempotency_key) is that write's
    /// key: look the write up by it, and return its output if it happened, or
    /// [`FailureKind::NotFound`](crate::FailureKind) if it did not; the dispatcher settles
    /// the write by that answer, and any other failure leaves it unknown.
    #[must_use]
    pub fn reconciling(&self) -> Option<&str> {
        self.reconciling
    }

    /// The logical operation this call serves.
    #[must_use]
    pub fn operation_id(&self) -> &str {
        &self.operation_id
    }

    /// The key to send downstream so the remote applies the operation once: the call's
    /// idempotency key, or its operation id when it has none, scoped to the principal
    /// ([`AuditKeys::downstream_key`](crate::AuditKeys::downstream_key)), so two tenants
    /// never share one. Every retry sends the same.
    #[must_use]
    pub fn idempotency_key(&self) -> &str {
        &self.idempotency_key
    }

    /// Which attempt this is, from 1.
    #[must_use]
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// For a write, until when its execution holds the record (by the dispatcher's clock).
    /// Past it another replica may find the lease lapsed, mark the write unknown and settle
    /// it by its status query, so a handler that has not acted yet should stop rather than
    /// act late: a write that acts after being settled as never having happened is
    /// `disputed`, for a person. `None` for reads and status queries.
    ///
    /// ```
    /// # use tool_contract::{FailureKind, ToolFailure};
    /// # use tool_contract::dispatch::HandlerContext;
    /// fn still_mine(cx: &HandlerContext) -> Result<(), ToolFailure> {
    ///     match cx.lease_deadline() {
    ///         Some(until) if cx.now() >= until => Err(ToolFailure::new(
    ///             FailureKind::Failed,
    ///             "the lease lapsed before the write was sent: nothing was done",
    ///         )),
    ///         _ => Ok(()),
    ///     }
    /// }
    /// assert!(still_mine(&HandlerContext::detached("op", "key")).is_ok());
    /// ```
    #[must_use]
    pub fn lease_deadline(&self) -> Option<OffsetDateTime> {
        self.lease.map(|lease| lease.until)
    }

    /// For a write, the fencing token of its execution: the lease generation of its claim,
    /// which grows with every claim of the operation's record (each later execution's is
    /// higher, for as long as the store keeps the record). Send it with the write; a
    /// downstream that keeps the highest token it has seen for the operation and refuses a
    /// lower one turns away a writer that stalled past its lease after a newer execution
    /// began (Kleppmann's fencing tokens). `None` for reads and status queries.
    #[must_use]
    pub fn fencing_token(&self) -> Option<u64> {
        self.lease.map(|lease| lease.fencing_token)
    }

    /// Tells whoever called how far the work has come (an MCP client that asked for
    /// progress is sent `notifications/progress`); nothing when nobody listens. Reports are
    /// delivered in order, before the call's answer.
    ///
    /// ```
    /// use tool_contract::dispatch::{HandlerContext, Progress};
    ///
    /// let cx = HandlerContext::detached("op-1", "key-1");
    /// for page in 1..=3 {
    ///     cx.report_progress(Progress::of(f64::from(page), 3.0).with_message("reading pages"));
    /// }
    /// ```
    pub fn report_progress(&self, progress: Progress) {
        if let Some(sink) = &self.client.progress {
            sink.tell(progress);
        }
    }

    /// Sends `message` to the call's client as a log message at `level`, when the client
    /// listens at that level or a lower one: an MCP client in a session of a handshake
    /// revision (2024-11-05 to 2025-11-25) that set one with `logging/setLevel`, for a call
    /// answered in its request (not a task), as `notifications/message` with the tool's name
    /// as its logger; over Streamable HTTP on the session's own stream (`GET`), where rmcp
    /// sends what names no request. Otherwise it goes nowhere. MCP 2026-07-28 has no logging
    /// (SEP-2577 deprecates it): use `tracing` for what operators read.
    ///
    /// The message goes to the client's host, for people; it is no part of the model's result
    /// and no contract checks it. Keep secrets and untrusted data out of it.
    ///
    /// ```
    /// use tool_contract::dispatch::{HandlerContext, LogLevel};
    ///
    /// let cx = HandlerContext::detached("op-1", "key-1");
    /// cx.log(LogLevel::Info, "reading the catalogue");
    /// ```
    pub fn log(&self, level: LogLevel, message: impl Into<String>) {
        if let Some(sink) = &self.client.log {
            sink.tell(level, message.into());
        }
    }

    /// The client's answer to what the tool asked it under `key`, exactly as the client
    /// sent it (an MCP `elicitation/create`'s `ElicitResult`, a `sampling/createMessage`'s
    /// `CreateMessageResult`, a `roots/list`'s `ListRootsResult`): what an MCP server's
    /// [`with_questions`](crate::mcp::McpServer::with_questions) rule asked before the call
    /// ran. `None` when it asked nothing under `key`. Untrusted, as the input is: check it
    /// before acting on it.
    #[cfg_attr(not(feature = "mcp"), allow(rustdoc::broken_intra_doc_links))]
    #[must_use]
    pub fn client_answer(&self, key: &str) -> Option<&serde_json::Value> {
        self.client.answers.get(key)
    }

    /// Whether someone asked to cancel the call.
    #[must_use]
    pub fn is_cancel_requested(&self) -> bool {
        *self.cancel.borrow()
    }

    /// Resolves when someone asks to cancel the call (never, if nobody does). A handler that
    /// stops before acting confirms it with [`FailureKind::Cancelled`](crate::FailureKind);
    /// until it does, the call is only `cancel_requested`.
    pub async fn cancel_requested(&mut self) {
        // An error means the dispatcher is gone: then nobody will ask either.
        if self.cancel.wait_for(|asked| *asked).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// Runs one tool: receives the validated input, returns its output, or a structured failure.
/// What it returns is untrusted: the dispatcher validates it against the contract.
///
/// Four shapes are handlers, told apart by their signature (`M` is inferred, never written):
///
/// - an async function of the input returning the typed output,
///   `async fn(input: C) -> Result<C::Output, ToolFailure>`, or of the input and the
///   [`HandlerContext`], when it needs the call's operation, key, lease or cancellation;
/// - the same with shared state first, wrapped by [`typed`]: `typed(&state, handler)` with
///   `async fn(state: Arc<S>, input: C) -> Result<C::Output, ToolFailure>` (or with the
///   context last);
/// - an async function returning the raw bytes a service sent, with their provenance,
///   `async fn(input: C) -> Result<RawResult, ToolFailure>` (or with the context last): a
///   proxy that forwards a third party's body.
///
/// A typed output is serialized and stamped with the contract's producer revision and the
/// time it was returned ([`HandlerContext::now`]), then validated like any other.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tool handler",
    label = "not a tool handler",
    note = "a handler is `async fn(input: Contract) -> Result<Output, ToolFailure>`, where \
            `Output` is the contract's output; it may take `cx: HandlerContext` after the \
            input, and return `RawResult` (bytes and provenance) instead",
    note = "one that takes shared state first is wrapped: `typed(&state, handler)`, with \
            `async fn handler(state: Arc<S>, input: Contract) -> Result<Output, ToolFailure>`"
)]
pub trait Handler<C: ToolContract, M>: Send + Sync + 'static {
    /// Runs the tool once.
    fn call(
        &self,
        input: C,
        context: HandlerContext,
    ) -> impl Future<Output = Result<RawResult, ToolFailure>> + Send;
}

/// The markers that tell [`Handler`]'s shapes apart: inferred from a handler's signature,
/// never written.
pub mod handler_shape {
    /// Returns the raw bytes and their provenance ([`RawResult`](crate::RawResult)).
    #[derive(Debug)]
    pub struct Raw;
    /// Returns the contract's typed output.
    #[derive(Debug)]
    pub struct Typed;
    /// Takes shared state first ([`typed`](super::typed)), returns the typed output.
    #[derive(Debug)]
    pub struct Stateful;
}

// Not recommended: a handler of another shape reads the trait\'s own words, not these.
#[diagnostic::do_not_recommend]
impl<C, F, Fut> Handler<C, (handler_shape::Raw, HandlerContext)> for F
where
    C: ToolContract,
    F: Fn(C, HandlerContext) -> Fut + Send + Sync + 'static,
    Fut: Future + Send,
    Fut::Output: HandlerResult,
{
    fn call(
        &self,
        input: C,
        context: HandlerContext,
    ) -> impl Future<Output = Result<RawResult, ToolFailure>> + Send {
        let running = self(input, context);
        async move { running.await.into_result() }
    }
}

// Not recommended: a handler of another shape reads the trait\'s own words, not these.
#[diagnostic::do_not_recommend]
impl<C, F, Fut> Handler<C, (handler_shape::Raw,)> for F
where
    C: ToolContract,
    F: Fn(C) -> Fut + Send + Sync + 'static,
    Fut: Future + Send,
    Fut::Output: HandlerResult,
{
    fn call(
        &self,
        input: C,
        _: HandlerContext,
    ) -> impl Future<Output = Result<RawResult, ToolFailure>> + Send {
        let running = self(input);
        async move { running.await.into_result() }
    }
}

// Not recommended: a handler of another shape reads the trait\'s own words, not these.
#[diagnostic::do_not_recommend]
impl<C, F, Fut> Handler<C, (handler_shape::Typed, HandlerContext)> for F
where
    C: ToolContract,
    C::Output: Serialize,
    F: Fn(C, HandlerContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<C::Output, ToolFailure>> + Send,
{
    fn call(
        &self,
        input: C,
        context: HandlerContext,
    ) -> impl Future<Output = Result<RawResult, ToolFailure>> + Send {
        let clock = context.clock;
        let running = self(input, context);
        async move { stamped::<C>(running.await, clock) }
    }
}

// Not recommended: a handler of another shape reads the trait\'s own words, not these.
#[diagnostic::do_not_recommend]
impl<C, F, Fut> Handler<C, (handler_shape::Typed,)> for F
where
    C: ToolContract,
    C::Output: Serialize,
    F: Fn(C) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<C::Output, ToolFailure>> + Send,
{
    fn call(
        &self,
        input: C,
        context: HandlerContext,
    ) -> impl Future<Output = Result<RawResult, ToolFailure>> + Send {
        let running = self(input);
        async move { stamped::<C>(running.await, context.clock) }
    }
}

/// What a raw handler's future resolves to: `Result<RawResult, ToolFailure>`, and nothing
/// else (sealed). It exists so that a handler of another shape is told which one is expected.
#[diagnostic::on_unimplemented(
    message = "a raw handler's future resolves to `Result<RawResult, ToolFailure>`, not `{Self}`",
    label = "this handler returns `{Self}`",
    note = "a handler that returns the contract's typed output needs no wrapping; one that \
            takes shared state first is `typed(&state, handler)`",
    note = "to return the service's bytes: `Ok(RawResult::new(bytes, RawProvenance::new(..)))`"
)]
pub trait HandlerResult: sealed::Sealed + Send {
    #[doc(hidden)]
    fn into_result(self) -> Result<RawResult, ToolFailure>;
}

impl HandlerResult for Result<RawResult, ToolFailure> {
    fn into_result(self) -> Result<RawResult, ToolFailure> {
        self
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for Result<super::RawResult, super::ToolFailure> {}
}

/// A handler of `C` from an async function of the shared `state` and the typed input (and,
/// when it needs it, the context last), returning the typed output: the shape of axum's and
/// rmcp's handlers. The dispatcher hands each call its own `Arc` of the state (no clone to
/// write).
///
/// ```
/// use std::sync::Arc;
/// use tool_contract::dispatch::{Dispatcher, typed};
/// use tool_contract::{ToolContract, ToolFailure, ToolOutput};
///
/// /// Read an issue.
/// #[derive(serde::Deserialize, ToolContract)]
/// #[tool_contract(output = Issue, effect = read_only)]
/// struct GetIssue { #[tool_contract(maximum = 100000)] number: u32 }
///
/// #[derive(serde::Serialize, ToolOutput)]
/// struct Issue { #[tool_output(bound = number)] number: u32, #[tool_output(max_len = 200)] title: String }
///
/// struct Tracker { titles: Vec<String> }
///
/// async fn get_issue(tracker: Arc<Tracker>, input: GetIssue) -> Result<Issue, ToolFailure> {
///     let title = tracker.titles.get(input.number as usize).cloned().unwrap_or_default();
///     Ok(Issue { number: input.number, title })
/// }
///
/// let tracker = Arc::new(Tracker { titles: vec!["Printer on fire".into()] });
/// let dispatcher = Dispatcher::for_development(tool_contract::registry![GetIssue])
///     .handler(typed(&tracker, get_issue))
///     .build()?;
/// # Ok::<(), tool_contract::dispatch::BuildErrors>(())
/// ```
pub fn typed<S, F>(state: &Arc<S>, handler: F) -> StateHandler<S, F> {
    StateHandler {
        state: Arc::clone(state),
        handler,
    }
}

/// A handler of the typed output that takes shared state first: made by [`typed`].
pub struct StateHandler<S, F> {
    state: Arc<S>,
    handler: F,
}

impl<S, F> std::fmt::Debug for StateHandler<S, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateHandler").finish_non_exhaustive()
    }
}

// Not recommended: a handler of another shape reads the trait\'s own words, not these.
#[diagnostic::do_not_recommend]
impl<C, S, F, Fut> Handler<C, (handler_shape::Stateful, HandlerContext)> for StateHandler<S, F>
where
    C: ToolContract,
    C::Output: Serialize,
    S: Send + Sync + 'static,
    F: Fn(Arc<S>, C, HandlerContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<C::Output, ToolFailure>> + Send,
{
    fn call(
        &self,
        input: C,
        context: HandlerContext,
    ) -> impl Future<Output = Result<RawResult, ToolFailure>> + Send {
        let clock = context.clock;
        let running = (self.handler)(Arc::clone(&self.state), input, context);
        async move { stamped::<C>(running.await, clock) }
    }
}

// Not recommended: a handler of another shape reads the trait\'s own words, not these.
#[diagnostic::do_not_recommend]
impl<C, S, F, Fut> Handler<C, (handler_shape::Stateful,)> for StateHandler<S, F>
where
    C: ToolContract,
    C::Output: Serialize,
    S: Send + Sync + 'static,
    F: Fn(Arc<S>, C) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<C::Output, ToolFailure>> + Send,
{
    fn call(
        &self,
        input: C,
        context: HandlerContext,
    ) -> impl Future<Output = Result<RawResult, ToolFailure>> + Send {
        let running = (self.handler)(Arc::clone(&self.state), input);
        async move { stamped::<C>(running.await, context.clock) }
    }
}

/// A typed handler's answer as the dispatcher reads any: the output serialized, stamped with
/// the contract's producer revision and `clock`'s now.
fn stamped<C>(
    output: Result<C::Output, ToolFailure>,
    clock: fn() -> OffsetDateTime,
) -> Result<RawResult, ToolFailure>
where
    C: ToolContract,
    C::Output: Serialize,
{
    let bytes = serde_json::to_vec(&output?).map_err(|error| {
        // A write acted before its output failed to encode: say so.
        let kind = if C::spec().effect().is_write() {
            FailureKind::OutcomeUnknown
        } else {
            FailureKind::Failed
        };
        ToolFailure::new(kind, format!("the output did not serialize: {error}"))
    })?;
    let observed_at = clock().format(&Rfc3339).unwrap_or_default();
    let provenance = RawProvenance::new(C::spec().producer_revision(), observed_at);
    Ok(RawResult::new(bytes, provenance))
}

/// One registered tool as the dispatcher runs it: its handler (type erased) and options.
pub(crate) struct ToolEntry {
    pub(crate) tool: Box<dyn ErasedTool>,
    pub(crate) options: ToolOptions,
}

pub(crate) type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// One registered tool with its contract type erased: the dispatcher's view of it.
pub(crate) trait ErasedTool: Send + Sync {
    /// Reads the arguments exactly.
    fn validate(&self, arguments: &[u8], forbidden: &ForbiddenKeys) -> Result<(), Violations>;

    /// Runs the handler once on the arguments (already validated).
    fn attempt(
        &self,
        arguments: &[u8],
        forbidden: &ForbiddenKeys,
        context: HandlerContext,
    ) -> BoxFuture<Result<RawResult, ToolFailure>>;

    /// Projects a handler's output for the call.
    fn project(
        &self,
        binder: &Binder<'_>,
        principal: &Principal,
        context: &CallContext,
        raw: RawResult,
    ) -> CallResult;

    /// Whether the write was given the input of its status tool.
    fn has_status_query(&self) -> bool;

    /// The input of the write's status tool for these arguments, if the write was given one.
    fn status_input(
        &self,
        arguments: &[u8],
        forbidden: &ForbiddenKeys,
    ) -> Option<Result<StatusInput, ToolFailure>>;

    /// Runs the handler once on an input already typed: this tool run as a write's status
    /// query, on the input [`status_input`](Self::status_input) built.
    fn attempt_input(
        &self,
        input: StatusInput,
        context: HandlerContext,
    ) -> BoxFuture<Result<RawResult, ToolFailure>>;
}

/// Whether a rule of the application's holds of a write's arguments (already validated): a
/// predicate over the typed input, with the contract type erased.
pub(crate) type ArgumentRule = Arc<dyn Fn(&[u8], &ForbiddenKeys) -> bool + Send + Sync>;

/// What the application says of one tool's approvals, within its contract's `approval =
/// by_caller` or `by_another`.
#[derive(Clone, Default)]
pub(crate) struct ApprovalPolicy {
    /// A person is asked only when this holds (`approval_when`); without it, always.
    pub(crate) ask_when: Option<ArgumentRule>,
    /// This many different people when the rule holds (`approvers_when`): the most that
    /// any rule that holds asks for.
    pub(crate) approvers: Vec<(u32, ArgumentRule)>,
    /// Only signed approvals count when any of these holds (`signed_approvals_when`).
    pub(crate) signed: Vec<ArgumentRule>,
}

/// The application's operation key for a tool's call, from its arguments (already
/// validated): a function of the typed input, with the contract type erased.
pub(crate) type KeyRule = Arc<dyn Fn(&[u8], &ForbiddenKeys) -> Option<String> + Send + Sync>;

/// A status tool's typed input, on its way from the write's tool to the status tool's.
pub(crate) type StatusInput = Box<dyn Any + Send>;

/// Builds a status tool's input from a write's.
pub(crate) type ErasedStatusInput<W> = dyn Fn(&W) -> StatusInput + Send + Sync;

pub(crate) struct TypedTool<C: ToolContract, H, M> {
    pub(crate) handler: Arc<H>,
    pub(crate) status_input: Option<Arc<ErasedStatusInput<C>>>,
    pub(crate) contract: PhantomData<fn() -> (C, M)>,
}

pub(crate) fn erase_status_input<W>(
    status_input: impl Fn(&W) -> W::StatusTool + Send + Sync + 'static,
) -> Arc<ErasedStatusInput<W>>
where
    W: ReconciledBy,
    W::StatusTool: Send + 'static,
{
    Arc::new(move |write| Box::new(status_input(write)))
}

impl<C: ToolContract + Send, H: Handler<C, M>, M: 'static> ErasedTool for TypedTool<C, H, M> {
    fn validate(&self, arguments: &[u8], forbidden: &ForbiddenKeys) -> Result<(), Violations> {
        C::parse_arguments_with(arguments, forbidden).map(drop)
    }

    fn attempt(
        &self,
        arguments: &[u8],
        forbidden: &ForbiddenKeys,
        context: HandlerContext,
    ) -> BoxFuture<Result<RawResult, ToolFailure>> {
        let handler = Arc::clone(&self.handler);
        // Validated before; parsed again so the handler owns its input.
        match C::parse_arguments_with(arguments, forbidden) {
            Ok(input) => Box::pin(async move { handler.call(input, context).await }),
            Err(violations) => {
                let failure = unparsable(&violations);
                Box::pin(async move { Err(failure) })
            }
        }
    }

    fn project(
        &self,
        binder: &Binder<'_>,
        principal: &Principal,
        context: &CallContext,
        raw: RawResult,
    ) -> CallResult {
        match C::parse_arguments_with(&context.call.arguments, binder.registry.forbidden_keys()) {
            Ok(input) => binder.project_output(principal, context, &input, raw),
            Err(violations) => binder.project_failure(principal, context, unparsable(&violations)),
        }
    }

    fn has_status_query(&self) -> bool {
        self.status_input.is_some()
    }

    fn status_input(
        &self,
        arguments: &[u8],
        forbidden: &ForbiddenKeys,
    ) -> Option<Result<StatusInput, ToolFailure>> {
        let status_input = self.status_input.as_ref()?;
        Some(
            C::parse_arguments_with(arguments, forbidden)
                .map(|write| status_input(&write))
                .map_err(|violations| unparsable(&violations)),
        )
    }

    fn attempt_input(
        &self,
        input: StatusInput,
        context: HandlerContext,
    ) -> BoxFuture<Result<RawResult, ToolFailure>> {
        let handler = Arc::clone(&self.handler);
        match input.downcast::<C>() {
            Ok(input) => Box::pin(async move { handler.call(*input, context).await }),
            // `ReconciledBy` ties the write to this very type; this is only reached if not.
            Err(_) => Box::pin(async {
                Err(ToolFailure::new(
                    FailureKind::Failed,
                    "the status query was given another tool's input",
                ))
            }),
        }
    }
}

// Arguments that validated once validate again; this is only reached if they did not.
fn unparsable(violations: &Violations) -> ToolFailure {
    ToolFailure::new(
        FailureKind::Failed,
        format!(
            "arguments no longer parse: {} violation(s)",
            violations.len()
        ),
    )
}
