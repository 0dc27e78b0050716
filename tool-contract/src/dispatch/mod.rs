//! The dispatch pipeline: every tool call from lookup to a sealed result, over the state the
//! [`control`](crate::control) plane keeps.
//!
//! [`Dispatcher::dispatch`] takes one call from lookup to a sealed result, in this order:
//!
//! 1. lookup of the tool in the registry (`UNKNOWN_TOOL`);
//! 2. the arguments, exactly, against the contract (`INVALID_ARGUMENTS`);
//! 3. gates, in order: proceed, block (`BLOCKED`) or redirect to the tool that must run first
//!    (`PREREQUISITE_REQUIRED`, with `next_tool`);
//! 4. authorization: a refusal reads as `NOT_FOUND`, so nothing can be probed;
//! 5. for writes: the ledger's word on the operation's key first: a finished operation is
//!    replayed (`local_replay`, no second dispatch), a key used for another request is
//!    `IDEMPOTENCY_CONFLICT`, a running one `OPERATION_IN_PROGRESS`, an unknown one goes to
//!    reconciliation; then approval (a grant for exactly this request digest, tool, principal
//!    and operation, consumed once; else `APPROVAL_REQUIRED` with a fresh
//!    [`Preview`](crate::control::Preview), or `APPROVAL_INVALID` when a grant stands for other
//!    arguments, which it keeps), authorization again, and the atomic claim of the key;
//! 6. budget and deadline, checked before each attempt they would pay for
//!    (`BUDGET_EXHAUSTED`, `TIMEOUT_BEFORE_EXECUTE`);
//! 7. the handler, under a timeout, with a cancellation signal, its panics caught; transient
//!    failures retried as the effect allows ([`RetryPolicy`]): reads always,
//!    `idempotent_write` under the same key, `non_idempotent_write` only when nothing was sent;
//! 8. output validation, projection and binding ([`Binder`](crate::Binder));
//! 9. the audit sink, then the ledger record of a write's end.
//!
//! A write that may have happened (timeout after dispatch, crash, withheld output) is
//! `unknown`, and is never run again by the dispatcher: its status query (the contract's
//! `reconcile = StatusTool`) settles it, with delivery `receipt_reconciled`; with
//! `reconcile = manual` the model reads `OUTCOME_UNCONFIRMED` and a person checks.
//!
//! Traces: one `tool_call` span per dispatch (request id, tool, call id, operation id) with
//! an event per stage (attempt, state, duration, error code, budget left, stop reason).
//! Arguments, results and keys appear only as 12-digit digest prefixes; principals and
//! secrets never.

mod budget;
mod builder;
mod client_side;
mod dispatcher;
#[cfg(feature = "mcp")]
pub(crate) use dispatcher::Credentials;
#[cfg(feature = "mcp")]
pub(crate) use dispatcher::{Awaits, SAFETY_POLL};
mod gate;
mod handler;
mod operation;
mod options;
mod outcome;
mod retry;
mod telemetry;

pub use budget::{Budget, Remaining, StopReason, Task};
pub use builder::{
    BuildError, BuildErrors, DEFAULT_STATEMENT_LIFETIME, DispatcherBuilder,
    PENDING_APPROVALS_PER_PRINCIPAL,
};
pub(crate) use client_side::ClientSide;
pub use client_side::{LogLevel, Progress};
#[cfg(feature = "mcp")]
pub(crate) use client_side::{LogSink, ProgressSink};
pub use dispatcher::{
    Dispatcher, PURGE_EVERY, SettleError, Settlement, SignedDecision, TASK_LEASE,
};
#[cfg(feature = "passkeys")]
pub use dispatcher::{Enrollment, SigningRequest};
pub use gate::{Gate, GateCall, GateDecision, RequireNonEmpty};
pub use handler::{Handler, HandlerContext, HandlerResult, StateHandler, handler_shape, typed};
pub use options::{Authorizer, ToolOptions};
pub use outcome::{Dispatch, DispatchedTurn};
pub use retry::RetryPolicy;
pub use telemetry::UNREGISTERED_TOOL;
