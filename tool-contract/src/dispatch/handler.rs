//! What the application plugs in per tool: the handler that does the work, and for writes
//! reconciled by a status query, the query.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;

use tokio::sync::watch;

use crate::binder::{Binder, CallResult, FailureKind, RawResult, ToolFailure};
use crate::contract::ToolContract;
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
        }
    }

    /// The write this read runs as the status query of (`reconcile = ThisTool`), when the
    /// model called it for an operation whose write's outcome is unknown. Then
    /// [`idempotency_key`](Self::idempotency_key) is that write's key: look the write up by
    /// it, and return its output if it happened, or [`FailureKind::NotFound`](crate::FailureKind)
    /// if it did not; the dispatcher settles the write by that answer.
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

/// Runs one tool: receives the validated input, returns the raw output with its provenance,
/// or a structured failure. Its output is untrusted: the dispatcher validates it.
///
/// Any `Fn(C, HandlerContext) -> impl Future<Output = Result<RawResult, ToolFailure>>` is a
/// handler.
pub trait Handler<C: ToolContract>: Send + Sync + 'static {
    /// Runs the tool once.
    fn call(
        &self,
        input: C,
        context: HandlerContext,
    ) -> impl Future<Output = Result<RawResult, ToolFailure>> + Send;
}

impl<C, F, Fut> Handler<C> for F
where
    C: ToolContract,
    F: Fn(C, HandlerContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<RawResult, ToolFailure>> + Send,
{
    fn call(
        &self,
        input: C,
        context: HandlerContext,
    ) -> impl Future<Output = Result<RawResult, ToolFailure>> + Send {
        self(input, context)
    }
}

/// What a status query is asked: which operation, under which key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusRequest {
    /// The logical operation.
    pub operation_id: String,
    /// The key the write was sent with ([`HandlerContext::idempotency_key`]).
    pub idempotency_key: String,
}

/// What a status query learned about a write whose outcome was unknown.
#[derive(Debug, Clone, PartialEq)]
pub enum Reconciled {
    /// It happened: the write's own output (validated against the write's contract).
    Found(RawResult),
    /// The remote confirms it never happened.
    Absent,
    /// The remote cannot tell yet.
    StillUnknown,
}

/// Asks the remote what became of a write of `W`: the status query behind the contract's
/// `reconcile = StatusTool`. It reads; it never repeats the write.
///
/// Any `Fn(W, StatusRequest) -> impl Future<Output = Result<Reconciled, ToolFailure>>` is one.
pub trait StatusQuery<W: ToolContract>: Send + Sync + 'static {
    /// Queries once.
    fn query(
        &self,
        input: W,
        request: StatusRequest,
    ) -> impl Future<Output = Result<Reconciled, ToolFailure>> + Send;
}

impl<W, F, Fut> StatusQuery<W> for F
where
    W: ToolContract,
    F: Fn(W, StatusRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Reconciled, ToolFailure>> + Send,
{
    fn query(
        &self,
        input: W,
        request: StatusRequest,
    ) -> impl Future<Output = Result<Reconciled, ToolFailure>> + Send {
        self(input, request)
    }
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

    /// Whether the tool was given a status query.
    fn has_status_query(&self) -> bool;

    /// Runs the status query, if the tool has one.
    fn query_status(
        &self,
        arguments: &[u8],
        forbidden: &ForbiddenKeys,
        request: StatusRequest,
    ) -> Option<BoxFuture<Result<Reconciled, ToolFailure>>>;
}

pub(crate) type ErasedQuery<C> =
    dyn Fn(C, StatusRequest) -> BoxFuture<Result<Reconciled, ToolFailure>> + Send + Sync;

pub(crate) struct TypedTool<C: ToolContract, H> {
    pub(crate) handler: Arc<H>,
    pub(crate) status_query: Option<Arc<ErasedQuery<C>>>,
    pub(crate) contract: PhantomData<fn() -> C>,
}

pub(crate) fn erase_query<W: ToolContract + Send, Q: StatusQuery<W>>(
    query: Q,
) -> Arc<ErasedQuery<W>> {
    let query = Arc::new(query);
    Arc::new(move |input, request| {
        let query = Arc::clone(&query);
        Box::pin(async move { query.query(input, request).await })
    })
}

impl<C: ToolContract + Send, H: Handler<C>> ErasedTool for TypedTool<C, H> {
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
        self.status_query.is_some()
    }

    fn query_status(
        &self,
        arguments: &[u8],
        forbidden: &ForbiddenKeys,
        request: StatusRequest,
    ) -> Option<BoxFuture<Result<Reconciled, ToolFailure>>> {
        let query = Arc::clone(self.status_query.as_ref()?);
        Some(match C::parse_arguments_with(arguments, forbidden) {
            Ok(input) => query(input, request),
            Err(violations) => {
                let failure = unparsable(&violations);
                Box::pin(async move { Err(failure) })
            }
        })
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
