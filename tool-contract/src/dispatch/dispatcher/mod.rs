//! The pipeline around every call: lookup, validation, gates, authorization, approval,
//! ledger, budget, handler, projection, audit. Each stage is one method named after it, in
//! the file of its part: `admit` (may it run), `write` (ledger and approval), `execute`
//! (handler and projection).

mod admit;
mod execute;
mod write;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::rngs::SmallRng;
use serde_json::Value;
use sha2::{Digest, Sha256};
use time::OffsetDateTime;
use tokio::sync::watch;
use tracing::{Instrument, Span, debug, info, warn};

use crate::audit::ApprovalRecord;
use crate::binding::AuditKeys;
use crate::call::{CallContext, Principal};
use crate::catalog::{ErrorCode, ModelError};
use crate::dispatch::approval::{ApprovalBook, ApprovalError, ApprovalGrant, PendingApproval};
use crate::dispatch::audit_log::{AuditLogError, AuditSink};
use crate::dispatch::budget::{StopReason, Task};
use crate::dispatch::builder::{Authorizer, DispatcherBuilder, ToolOptions};
use crate::dispatch::gate::Gate;
use crate::dispatch::handler::ErasedTool;
use crate::dispatch::ledger::{Advanced, Ledger, LedgerError};
use crate::dispatch::state::{WriteEvent, WriteState};
use crate::project::{Binder, CallResult, ToolFailure};
use crate::registry::Registry;
use crate::result::ModelResult;
use crate::spec::ToolSpec;

/// A stage's early exit: the call's final result (boxed: results are large, exits rare).
type Exit = Box<CallResult>;

/// One registered tool as the dispatcher runs it.
pub(crate) struct ToolEntry {
    pub(crate) tool: Box<dyn ErasedTool>,
    pub(crate) options: ToolOptions,
}

/// Runs every call through the trusted pipeline; see the [module docs](crate::dispatch).
pub struct Dispatcher {
    pub(crate) registry: Registry,
    pub(crate) keys: AuditKeys,
    pub(crate) clock: fn() -> OffsetDateTime,
    pub(crate) tools: HashMap<&'static str, ToolEntry>,
    pub(crate) gates: Vec<Box<dyn Gate>>,
    pub(crate) authorizer: Option<Box<dyn Authorizer>>,
    pub(crate) ledger: Arc<dyn Ledger>,
    pub(crate) approvals: ApprovalBook,
    pub(crate) audit_sink: Arc<dyn AuditSink>,
    pub(crate) owner: String,
    pub(crate) retention: Duration,
    pub(crate) in_flight: Mutex<HashMap<String, watch::Sender<bool>>>,
    pub(crate) rng: Mutex<SmallRng>,
    pub(crate) sequence: AtomicU64,
    pub(crate) writes: AtomicU64,
}

/// How many writes pass between two purges of expired ledger keys.
pub const PURGE_EVERY: u64 = 256;

impl std::fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatcher")
            .field("tools", &self.tools.keys().collect::<Vec<_>>())
            .field("gates", &self.gates.len())
            .field("owner", &self.owner)
            .finish_non_exhaustive()
    }
}

/// What one dispatch did: the call's result (model half and audit half), and what the
/// application needs to go on.
#[derive(Debug)]
#[non_exhaustive]
pub struct Dispatch {
    /// The result, sealed: send `result.model` on through a provider adapter.
    pub result: CallResult,
    /// For writes, where the operation stands after this dispatch.
    pub write_state: Option<WriteState>,
    /// For writes that wait for a person: what to show them and approve.
    pub pending_approval: Option<PendingApproval>,
    /// Handler attempts made by this dispatch.
    pub attempts: u32,
    /// Why the dispatcher stopped short, if it did.
    pub stop: Option<StopReason>,
    /// The audit sink's failure, if it failed (the result stands; the audit is missing).
    pub audit_error: Option<AuditLogError>,
}

/// Where a dispatch stands as it moves through the stages.
struct Flow<'a> {
    principal: &'a Principal,
    context: &'a CallContext,
    task: &'a Task,
    binder: Binder<'a>,
    write_state: Option<WriteState>,
    pending_approval: Option<PendingApproval>,
    approval: Option<ApprovalRecord>,
    attempts: u32,
    stop: Option<StopReason>,
    audited: bool,
    audit_error: Option<AuditLogError>,
}

/// A registered, validated call.
struct Valid<'a> {
    spec: &'static ToolSpec,
    entry: &'a ToolEntry,
    arguments: Value,
}

impl Dispatcher {
    /// Starts a dispatcher for `registry`'s tools, sealing results with `keys`.
    ///
    /// ```
    /// # use tool_contract::{ToolContract, ToolOutput};
    /// use std::sync::Arc;
    /// use tool_contract::dispatch::{Dispatcher, HandlerContext, MemoryAuditLog, Task};
    /// use tool_contract::providers::{Api, Correlation, ToolCall};
    /// use tool_contract::{AuditKeys, CallContext, Principal, RawProvenance, RawResult, SecretKey, Status, ToolFailure};
    ///
    /// /// Echo a word.
    /// #[derive(serde::Deserialize, ToolContract)]
    /// #[tool_contract(output = Echoed, effect = pure, source_label = "echo", producer_revision = "echo-1")]
    /// struct Echo { word: String }
    ///
    /// #[derive(serde::Serialize, ToolOutput)]
    /// struct Echoed { word: String }
    ///
    /// async fn echo(input: Echo, _: HandlerContext) -> Result<RawResult, ToolFailure> {
    ///     let output = serde_json::json!({ "word": input.word });
    ///     Ok(RawResult::new(output.to_string(), RawProvenance::new("echo-1", "2026-08-22T10:00:00Z")))
    /// }
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dispatcher = Dispatcher::builder(tool_contract::registry![Echo], AuditKeys::new(SecretKey::new([7; 32])?))
    ///     .handler::<Echo>(echo)
    ///     .audit_sink(Arc::new(MemoryAuditLog::new()))
    ///     .build()
    ///     .map_err(|errors| format!("{errors:?}"))?;
    /// let call = ToolCall {
    ///     api: Api::OpenAiResponses,
    ///     adapter_revision: tool_contract::providers::openai::ADAPTER.revision.to_owned(),
    ///     response_id: Some("resp_1".into()),
    ///     call_id: "call_1".into(),
    ///     correlation: Correlation::Id,
    ///     name: "echo".into(),
    ///     arguments: br#"{"word":"hi"}"#.to_vec(),
    /// };
    /// let context = CallContext::new(call, "op-1");
    /// let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build()?;
    /// let dispatch = runtime.block_on(dispatcher.dispatch(&Principal::new("acme", "alice"), &context, &Task::unlimited()));
    /// assert_eq!(dispatch.result.model.status(), Status::Succeeded);
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn builder(registry: Registry, keys: AuditKeys) -> DispatcherBuilder {
        DispatcherBuilder::new(registry, keys)
    }

    /// The registry.
    #[must_use]
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// A binder over the dispatcher's registry and keys, to verify results with.
    #[must_use]
    pub fn binder(&self) -> Binder<'_> {
        Binder::new(&self.registry, self.keys.clone()).with_clock(self.clock)
    }

    /// The time by the dispatcher's clock ([`DispatcherBuilder::clock`]): what approval
    /// expiries are measured against.
    #[must_use]
    pub fn now(&self) -> OffsetDateTime {
        (self.clock)()
    }

    /// This dispatcher's owner id in the ledger (one per process).
    #[must_use]
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// Runs one call through the whole pipeline. Every exit is a sealed result: the tool's
    /// validated output, or a catalog error; nothing panics on any input.
    pub async fn dispatch(
        &self,
        principal: &Principal,
        context: &CallContext,
        task: &Task,
    ) -> Dispatch {
        let span = self.span(context);
        self.dispatch_in_span(principal, context, task)
            .instrument(span)
            .await
    }

    /// Asks what became of a write whose outcome is unknown, through the write's status query,
    /// without ever running the write again. A write already finished answers from the ledger.
    pub async fn reconcile(
        &self,
        principal: &Principal,
        context: &CallContext,
        task: &Task,
    ) -> Dispatch {
        let span = self.span(context);
        async {
            let mut flow = self.flow(principal, context, task);
            let valid = match self.lookup_and_validate(&flow) {
                Ok(valid) => valid,
                Err(result) => return self.finish(flow, *result),
            };
            if !valid.spec.effect().is_write() {
                let error = ModelError::new(ErrorCode::ToolError);
                let result = self.control(&flow, error, "reconcile asked of a read");
                return self.finish(flow, result);
            }
            let key = self.write_key(&flow, valid.spec);
            let settled = match self.ledger.get(&key.ledger_key).await {
                Ok(Some(record)) => self.settled(&mut flow, &valid, &key, record).await,
                Ok(None) => None,
                Err(error) => Some(self.ledger_failed(&flow, &error)),
            };
            let result = settled.unwrap_or_else(|| {
                let error = ModelError::new(ErrorCode::NotFound);
                self.control(&flow, error, "no operation under this key")
            });
            self.finish(flow, result)
        }
        .instrument(span)
        .await
    }

    /// Approves a pending write: the person saw `preview_sha256` and approves until
    /// `expires_at`. The approval covers exactly that request, tool, principal and operation,
    /// and is consumed by the one execution it allows.
    ///
    /// # Errors
    ///
    /// [`ApprovalError`] when nothing is pending under that id (decided, or superseded by a
    /// changed request), the preview is not the one pending, or the expiry has passed.
    pub fn approve(
        &self,
        approval_id: &str,
        preview_sha256: &str,
        approver: &str,
        expires_at: OffsetDateTime,
    ) -> Result<ApprovalGrant, ApprovalError> {
        let grant = self.approvals.approve(
            approval_id,
            preview_sha256,
            approver,
            expires_at,
            (self.clock)(),
        )?;
        info!(stage = "approval", state = "approved", "write approved");
        Ok(grant)
    }

    /// Rejects a pending write; its operation is refused from then on.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::NotPending`] when nothing is pending under that id.
    pub fn reject(&self, approval_id: &str) -> Result<(), ApprovalError> {
        self.approvals.reject(approval_id, (self.clock)())?;
        info!(stage = "approval", state = "rejected", "write rejected");
        Ok(())
    }

    /// Asks a running write to stop. The answer is `cancel_requested` until the handler
    /// confirms it never acted (then the dispatch reports `cancelled`); a cancellation is
    /// never reported as "did not happen" on its own. For a write not running, its state.
    ///
    /// # Errors
    ///
    /// [`LedgerError`] when the ledger fails.
    pub async fn cancel(
        &self,
        principal: &Principal,
        context: &CallContext,
    ) -> Result<Option<WriteState>, LedgerError> {
        let ledger_key = self.ledger_key(principal, context);
        let Some(record) = self.ledger.get(&ledger_key).await? else {
            return Ok(None);
        };
        if record.state != WriteState::Executing || record.owner != self.owner {
            return Ok(Some(record.state));
        }
        let step = self.advance(
            &ledger_key,
            WriteState::Executing,
            WriteEvent::RequestCancel,
            None,
        );
        let state = match self.ledger.advance(&step).await? {
            Advanced::Applied(record) => record.state,
            Advanced::Stale(record) => return Ok(record.map(|record| record.state)),
        };
        if let Some(signal) = self.in_flight_signals().get(&ledger_key) {
            signal.send_replace(true);
        }
        info!(stage = "cancel", state = state.as_str(), "cancel requested");
        Ok(Some(state))
    }

    /// Removes the ledger's finished records whose retention has passed (and forgets lapsed
    /// grants, and pending approvals and rejections older than the retention); returns how
    /// many ledger records went.
    /// The dispatcher also does this on its own, once every [`PURGE_EVERY`] writes.
    ///
    /// # Errors
    ///
    /// [`LedgerError`] when the ledger fails.
    pub async fn purge_expired(&self) -> Result<u64, LedgerError> {
        let forgotten = self.approvals.purge((self.clock)(), self.retention);
        let purged = self.ledger.purge_expired(self.now_ms()).await?;
        debug!(
            stage = "ledger",
            purged, forgotten, "expired keys and approvals purged"
        );
        Ok(purged)
    }

    /// Where the write of `context` stands in the ledger: `unknown` for one still marked
    /// running whose lease has lapsed.
    ///
    /// # Errors
    ///
    /// [`LedgerError`] when the ledger fails.
    pub async fn write_state(
        &self,
        principal: &Principal,
        context: &CallContext,
    ) -> Result<Option<WriteState>, LedgerError> {
        let ledger_key = self.ledger_key(principal, context);
        let now_ms = self.now_ms();
        Ok(self.ledger.get(&ledger_key).await?.map(|record| {
            // Nobody holds a lapsed lease any more: what it was doing is unknown.
            if record.state.is_in_flight() && record.lease_until_ms <= now_ms {
                WriteState::Unknown
            } else {
                record.state
            }
        }))
    }

    async fn dispatch_in_span(
        &self,
        principal: &Principal,
        context: &CallContext,
        task: &Task,
    ) -> Dispatch {
        let mut flow = self.flow(principal, context, task);
        let valid = match self.lookup_and_validate(&flow) {
            Ok(valid) => valid,
            Err(result) => return self.finish(flow, *result),
        };
        if let Err(result) = self.gates(&flow, &valid) {
            return self.finish(flow, *result);
        }
        if let Err(result) = self.authorize(&flow, &valid) {
            return self.finish(flow, *result);
        }
        let result = if valid.spec.effect().is_write() {
            self.write(&mut flow, &valid).await
        } else {
            self.execute(&mut flow, &valid, None).await
        };
        self.finish(flow, result)
    }

    fn flow<'a>(
        &'a self,
        principal: &'a Principal,
        context: &'a CallContext,
        task: &'a Task,
    ) -> Flow<'a> {
        Flow {
            principal,
            context,
            task,
            binder: self.binder(),
            write_state: None,
            pending_approval: None,
            approval: None,
            attempts: 0,
            stop: None,
            audited: false,
            audit_error: None,
        }
    }

    fn span(&self, context: &CallContext) -> Span {
        let sequence = self.sequence.fetch_add(1, Ordering::Relaxed);
        // The model may name anything; only a registered name is worth a trace field.
        let tool = self
            .registry
            .get(&context.call.name)
            .map_or("(unregistered)", ToolSpec::name);
        tracing::info_span!(
            "tool_call",
            request_id = %format_args!("{}-{sequence}", self.owner),
            tool,
            call_id = %context.call.call_id,
            operation_id = %context.operation_id,
        )
    }

    fn project_failure(&self, flow: &Flow<'_>, failure: ToolFailure) -> CallResult {
        flow.binder
            .project_failure(flow.principal, flow.context, failure)
    }

    /// A stored model result sealed again for this call (its own call id and digests).
    fn reseal(&self, flow: &Flow<'_>, valid: &Valid<'_>, model: ModelResult) -> CallResult {
        flow.binder.seal(
            flow.principal,
            flow.context,
            Some(valid.spec),
            model,
            crate::audit::Downstream::default(),
            Vec::new(),
            Some("replayed from the idempotency ledger".to_owned()),
        )
    }

    fn control(&self, flow: &Flow<'_>, error: ModelError, detail: &str) -> CallResult {
        flow.binder
            .control(flow.principal, flow.context, error, Some(detail.to_owned()))
    }

    fn ledger_failed(&self, flow: &Flow<'_>, error: &LedgerError) -> CallResult {
        warn!(stage = "ledger", error = %error, "ledger failed; nothing was run");
        let error_text = error.to_string();
        self.control(
            flow,
            ModelError::new(ErrorCode::TimeoutBeforeExecute),
            &error_text,
        )
    }

    /// Sends the result to the audit sink and closes the dispatch.
    /// Sends the result to the audit sink (once per dispatch).
    fn audit(&self, flow: &mut Flow<'_>, result: &mut CallResult) {
        if flow.audited {
            return;
        }
        // Not part of any digest: the approval is kept beside the binding, for auditors.
        result.audit.approval.clone_from(&flow.approval);
        flow.audited = true;
        flow.audit_error = self.audit_sink.append(&result.model, &result.audit).err();
        if let Some(error) = &flow.audit_error {
            warn!(stage = "audit", error = %error, "audit sink failed");
        }
    }

    /// Closes the dispatch: the audit sink (if the write path has not sent it yet) and the
    /// last trace event.
    fn finish(&self, mut flow: Flow<'_>, mut result: CallResult) -> Dispatch {
        self.audit(&mut flow, &mut result);
        let binding = &result.audit.binding;
        info!(
            stage = "done",
            status = result.model.status().as_str(),
            error_code = result.model.error().map(|error| error.code().as_str()),
            state = flow.write_state.map(WriteState::as_str),
            attempts = flow.attempts,
            stop_reason = flow.stop.map(StopReason::as_str),
            request_sha256 = prefix(&binding.request_sha256),
            result_sha256 = prefix(&binding.result_sha256),
            call_binding_sha256 = prefix(&binding.call_binding_sha256),
        );
        Dispatch {
            result,
            write_state: flow.write_state,
            pending_approval: flow.pending_approval,
            attempts: flow.attempts,
            stop: flow.stop,
            audit_error: flow.audit_error,
        }
    }

    fn now_ms(&self) -> u64 {
        let nanos = (self.clock)().unix_timestamp_nanos() / 1_000_000;
        u64::try_from(nanos).unwrap_or(0)
    }

    fn in_flight_signals(&self) -> std::sync::MutexGuard<'_, HashMap<String, watch::Sender<bool>>> {
        self.in_flight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn duration_ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The first 12 hex digits: enough to correlate traces, too few to matter as a digest.
fn prefix(digest: &str) -> &str {
    digest.get(..12).unwrap_or(digest)
}
