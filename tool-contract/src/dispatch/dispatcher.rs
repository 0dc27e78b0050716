//! The pipeline around every call: lookup, validation, gates, authorization, approval,
//! ledger, budget, handler, projection, audit. Each stage is one method named after it.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::FutureExt;
use rand::rngs::SmallRng;
use serde_json::Value;
use sha2::{Digest, Sha256};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tokio::sync::watch;
use tracing::{Instrument, Span, debug, info, warn};

use crate::audit::ApprovalRecord;
use crate::binding::AuditKeys;
use crate::call::{CallContext, Principal};
use crate::catalog::{ErrorCode, ModelError};
use crate::dispatch::approval::{
    ApprovalBook, ApprovalCheck, ApprovalError, ApprovalGrant, Asked, PendingApproval, Preview,
};
use crate::dispatch::audit_log::{AuditLogError, AuditSink};
use crate::dispatch::budget::{StopReason, Task};
use crate::dispatch::builder::{Authorizer, DispatcherBuilder, ToolOptions};
use crate::dispatch::gate::{Gate, GateCall, GateDecision};
use crate::dispatch::handler::{ErasedTool, HandlerContext, Reconciled, StatusRequest};
use crate::dispatch::ledger::{Advance, Advanced, Claim, Claimed, Ledger, LedgerError, Record};
use crate::dispatch::retry::{Transient, may_retry};
use crate::dispatch::state::{WriteEvent, WriteState};
use crate::project::{Binder, CallResult, FailureKind, RawResult, ToolFailure};
use crate::registry::Registry;
use crate::result::{Delivery, ModelResult, Status};
use crate::spec::{Approval, Reconcile, ToolSpec};

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

/// A write's ledger identity.
struct WriteKey {
    ledger_key: String,
    downstream_key: String,
    request_sha256: String,
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

    /// Lookup and exact argument validation, the first two stages of every call.
    fn lookup_and_validate<'s>(&'s self, flow: &Flow<'_>) -> Result<Valid<'s>, Exit> {
        let (spec, entry) = self.lookup(flow)?;
        self.validate(flow, spec, entry)
    }

    /// The tool, by the name the model gave (`UNKNOWN_TOOL` when the registry lacks it).
    fn lookup<'s>(&'s self, flow: &Flow<'_>) -> Result<(&'static ToolSpec, &'s ToolEntry), Exit> {
        let name = &flow.context.call.name;
        match (self.registry.get(name), self.tools.get(name.as_str())) {
            (Some(spec), Some(entry)) => Ok((spec, entry)),
            _ => {
                debug!(stage = "lookup", error_code = "UNKNOWN_TOOL");
                let error = ModelError::new(ErrorCode::UnknownTool);
                Err(Box::new(self.control(
                    flow,
                    error,
                    "no registered tool by that name",
                )))
            }
        }
    }

    /// The arguments, exactly, against the contract (`INVALID_ARGUMENTS` with every path).
    fn validate<'s>(
        &self,
        flow: &Flow<'_>,
        spec: &'static ToolSpec,
        entry: &'s ToolEntry,
    ) -> Result<Valid<'s>, Exit> {
        let arguments = &flow.context.call.arguments;
        if let Err(violations) = entry
            .tool
            .validate(arguments, self.registry.forbidden_keys())
        {
            debug!(
                stage = "validate",
                error_code = "INVALID_ARGUMENTS",
                violations = violations.len()
            );
            let detail = violations.to_string();
            let error = ModelError::invalid_arguments(&violations);
            return Err(Box::new(self.control(flow, error, &detail)));
        }
        // Validated arguments are well-formed JSON.
        let arguments = serde_json::from_slice(arguments).unwrap_or(Value::Null);
        debug!(stage = "validate", "arguments valid");
        Ok(Valid {
            spec,
            entry,
            arguments,
        })
    }

    /// Gates, in order; the first decision other than proceed wins.
    fn gates(&self, flow: &Flow<'_>, valid: &Valid<'_>) -> Result<(), Exit> {
        let call = GateCall {
            spec: valid.spec,
            principal: flow.principal,
            context: flow.context,
            arguments: &valid.arguments,
        };
        for (index, gate) in self.gates.iter().enumerate() {
            match gate.check(&call) {
                GateDecision::Proceed => {}
                GateDecision::Block { reason } => {
                    debug!(
                        stage = "gate",
                        gate = index,
                        decision = "block",
                        error_code = "BLOCKED"
                    );
                    let error = ModelError::new(ErrorCode::Blocked);
                    return Err(Box::new(self.control(
                        flow,
                        error,
                        &format!("gate {index}: {reason}"),
                    )));
                }
                GateDecision::Redirect { target, reason } => {
                    debug!(stage = "gate", gate = index, decision = "redirect", target);
                    let detail = format!("gate {index}: {reason}");
                    let error = if self.registry.get(target).is_some() {
                        ModelError::prerequisite(target)
                    } else {
                        // A redirect to nowhere must not send the model looking for it.
                        warn!(
                            stage = "gate",
                            gate = index,
                            "redirect to an unregistered tool"
                        );
                        ModelError::new(ErrorCode::Blocked)
                    };
                    return Err(Box::new(self.control(flow, error, &detail)));
                }
            }
        }
        Ok(())
    }

    /// Authorization: a refusal reads as `NOT_FOUND`, word for word.
    fn authorize(&self, flow: &Flow<'_>, valid: &Valid<'_>) -> Result<(), Exit> {
        let allowed = self.authorizer.as_ref().is_none_or(|authorizer| {
            authorizer.authorize(flow.principal, valid.spec, &valid.arguments)
        });
        if allowed {
            return Ok(());
        }
        debug!(
            stage = "authorize",
            error_code = "NOT_FOUND",
            "not authorized"
        );
        let failure = ToolFailure::new(FailureKind::Unauthorized, "the authorizer refused");
        Err(Box::new(self.project_failure(flow, failure)))
    }

    /// A write: the ledger's word on the key first (replay, conflict, in flight, unknown), then
    /// approval, authorization again, the atomic claim, and the execution.
    async fn write(&self, flow: &mut Flow<'_>, valid: &Valid<'_>) -> CallResult {
        if self.writes.fetch_add(1, Ordering::Relaxed) % PURGE_EVERY == PURGE_EVERY - 1 {
            // Housekeeping only: a failure here changes no answer.
            let _ = self.purge_expired().await;
        }
        let key = self.write_key(flow, valid.spec);
        debug!(
            stage = "ledger",
            request_sha256 = prefix(&key.request_sha256),
            key_sha256 = prefix(&sha256_hex(key.ledger_key.as_bytes()))
        );
        match self.ledger.get(&key.ledger_key).await {
            Err(error) => return self.ledger_failed(flow, &error),
            Ok(Some(record)) if !expired(&record, self.now_ms()) => {
                if let Some(result) = self.settled(flow, valid, &key, record).await {
                    return result;
                }
            }
            Ok(_) => {}
        }
        if valid.spec.approval() == Some(Approval::Required) {
            if let Err(result) = self.approval(flow, valid, &key) {
                return *result;
            }
            // Permission may have changed while the write waited for a person.
            if let Err(result) = self.authorize(flow, valid) {
                return *result;
            }
        }
        match self.ledger.claim(&self.claim(valid, &key)).await {
            Err(error) => self.ledger_failed(flow, &error),
            Ok(Claimed::Fresh) => {
                flow.write_state = Some(WriteState::Executing);
                debug!(stage = "ledger", state = "executing", "claimed");
                self.execute(flow, valid, Some(&key)).await
            }
            Ok(Claimed::Replay(record)) => self.answer_existing(flow, valid, &key, record),
            Ok(Claimed::Conflict(record)) => self.answer_existing(flow, valid, &key, record),
            Ok(Claimed::InFlight(record)) => self.answer_existing(flow, valid, &key, record),
            Ok(Claimed::Unknown(record)) => self.reconcile_unknown(flow, valid, &key, record).await,
        }
    }

    /// What an existing record settles before approval is asked: `None` when the write may go
    /// on to approval and claim.
    async fn settled(
        &self,
        flow: &mut Flow<'_>,
        valid: &Valid<'_>,
        key: &WriteKey,
        record: Record,
    ) -> Option<CallResult> {
        if record.state.is_in_flight() && record.lease_until_ms <= self.now_ms() {
            // A lapsed lease: the claim turns it to unknown, atomically, before anyone is
            // asked to approve a write that may already have happened.
            return match self.ledger.claim(&self.claim(valid, key)).await {
                Ok(Claimed::Unknown(record)) => {
                    Some(self.reconcile_unknown(flow, valid, key, record).await)
                }
                Ok(Claimed::Fresh) => {
                    // Purged between the two steps: give the key back and start over.
                    let _ = self.ledger.release(&key.ledger_key, &self.owner).await;
                    None
                }
                Ok(
                    Claimed::Replay(record) | Claimed::Conflict(record) | Claimed::InFlight(record),
                ) => Some(self.answer_existing(flow, valid, key, record)),
                Err(error) => Some(self.ledger_failed(flow, &error)),
            };
        }
        let same_request =
            record.request_sha256 == key.request_sha256 && record.tool == valid.spec.name();
        if same_request && record.state == WriteState::Unknown {
            return Some(self.reconcile_unknown(flow, valid, key, record).await);
        }
        Some(self.answer_existing(flow, valid, key, record))
    }

    /// The answer a record gives without running anything: replay, conflict, in flight.
    fn answer_existing(
        &self,
        flow: &mut Flow<'_>,
        valid: &Valid<'_>,
        key: &WriteKey,
        record: Record,
    ) -> CallResult {
        flow.write_state = Some(record.state);
        if record.request_sha256 != key.request_sha256 || record.tool != valid.spec.name() {
            debug!(stage = "ledger", error_code = "IDEMPOTENCY_CONFLICT");
            let error = ModelError::new(ErrorCode::IdempotencyConflict);
            return self.control(flow, error, "the key was used for another request");
        }
        if record.state.is_in_flight() {
            debug!(stage = "ledger", error_code = "OPERATION_IN_PROGRESS");
            let error = ModelError::new(ErrorCode::OperationInProgress);
            return self.control(flow, error, "another execution holds the key");
        }
        if record.state == WriteState::Unknown {
            return self.unknown_result(flow, valid, "the outcome is unknown");
        }
        debug!(
            stage = "ledger",
            state = record.state.as_str(),
            delivery = "local_replay"
        );
        match stored_result(&record) {
            Some(model) => self.reseal(flow, valid, model.delivered_as(Delivery::LocalReplay)),
            None => {
                let error = ModelError::new(ErrorCode::ToolError);
                self.control(flow, error, "a finished record without a stored result")
            }
        }
    }

    /// The approval stage: the grant for exactly this request, consumed; or a pending
    /// approval with a preview built from the validated arguments.
    fn approval(&self, flow: &mut Flow<'_>, valid: &Valid<'_>, key: &WriteKey) -> Result<(), Exit> {
        let principal_ref = self.keys.principal_ref(flow.principal);
        let asked = Asked {
            ledger_key: &key.ledger_key,
            request_sha256: &key.request_sha256,
            tool: valid.spec.name(),
            principal_ref: &principal_ref,
            operation_id: &flow.context.operation_id,
            now: (self.clock)(),
        };
        let pending = || {
            let preview = Preview {
                tool: valid.spec.name().to_owned(),
                description: valid.spec.description().to_owned(),
                effect: valid.spec.effect(),
                arguments: valid.arguments.clone(),
            };
            let preview_sha256 = preview.sha256();
            let approval_id = format!(
                "apr_{}",
                prefix(&sha256_hex(
                    format!(
                        "{}\n{}\n{}",
                        key.ledger_key,
                        key.request_sha256,
                        self.sequence.fetch_add(1, Ordering::Relaxed)
                    )
                    .as_bytes()
                ))
            );
            PendingApproval {
                approval_id,
                request_sha256: key.request_sha256.clone(),
                preview,
                preview_sha256,
                principal_ref: principal_ref.clone(),
                operation_id: flow.context.operation_id.clone(),
                ledger_key: key.ledger_key.clone(),
            }
        };
        match self.approvals.check(&asked, pending) {
            ApprovalCheck::Proceed(grant) => {
                debug!(stage = "approval", state = "approved", "approval consumed");
                flow.write_state = Some(WriteState::Approved);
                flow.approval = Some(ApprovalRecord {
                    approval_id: grant.approval_id.clone(),
                    approver: grant.approver.clone(),
                    request_sha256: grant.request_sha256.clone(),
                    preview_sha256: grant.preview_sha256.clone(),
                    expires_at: grant.expires_at.format(&Rfc3339).unwrap_or_default(),
                });
                Ok(())
            }
            ApprovalCheck::Required(pending) => Err(self.awaiting_approval(
                flow,
                pending,
                ErrorCode::ApprovalRequired,
                "waiting for approval",
            )),
            ApprovalCheck::Invalid(pending, why) => {
                Err(self.awaiting_approval(flow, pending, ErrorCode::ApprovalInvalid, why.as_str()))
            }
            ApprovalCheck::Rejected => {
                debug!(
                    stage = "approval",
                    state = "rejected",
                    error_code = "BLOCKED"
                );
                flow.write_state = Some(WriteState::Rejected);
                let error = ModelError::new(ErrorCode::Blocked);
                Err(Box::new(self.control(
                    flow,
                    error,
                    "the approver rejected this operation",
                )))
            }
        }
    }

    /// A write that waits for a person: `APPROVAL_REQUIRED` or `APPROVAL_INVALID`, with the
    /// pending approval for the application to show.
    fn awaiting_approval(
        &self,
        flow: &mut Flow<'_>,
        pending: PendingApproval,
        code: ErrorCode,
        detail: &str,
    ) -> Exit {
        debug!(
            stage = "approval",
            state = "pending_approval",
            error_code = code.as_str()
        );
        flow.write_state = Some(WriteState::PendingApproval);
        flow.pending_approval = Some(pending);
        Box::new(self.control(flow, ModelError::new(code), detail))
    }

    /// Budget, handler with timeout and cancellation, retries; then projection and, for a
    /// write, the ledger record.
    async fn execute(
        &self,
        flow: &mut Flow<'_>,
        valid: &Valid<'_>,
        key: Option<&WriteKey>,
    ) -> CallResult {
        let (cancel_sender, cancel_receiver) = watch::channel(false);
        // Dropped when this future ends or is dropped (a caller gave up, a timeout around
        // it): the signal never outlives the execution it belongs to.
        let _in_flight = key.map(|key| {
            self.in_flight_signals()
                .insert(key.ledger_key.clone(), cancel_sender);
            InFlight {
                signals: &self.in_flight,
                ledger_key: key.ledger_key.clone(),
            }
        });
        let mut waited = Duration::ZERO;
        let outcome = loop {
            if let Err(stop) = self.budget(flow, valid) {
                break AttemptOutcome::Stopped(stop);
            }
            let (transient, retry_after) =
                match self.attempt(flow, valid, key, &cancel_receiver).await {
                    Answer::Done(outcome) => break outcome,
                    Answer::Transient(transient, retry_after) => (transient, retry_after),
                };
            match self.retry_wait(flow, valid, transient, retry_after, waited) {
                Ok(wait) => {
                    tokio::time::sleep(wait).await;
                    waited += wait;
                }
                Err(stop) => break AttemptOutcome::GaveUp(transient, retry_after, stop),
            }
        };
        self.project(flow, valid, key, outcome).await
    }

    /// The budget and deadline, checked (and spent) before the attempt they pay for.
    fn budget(&self, flow: &mut Flow<'_>, valid: &Valid<'_>) -> Result<(), StopReason> {
        flow.task.spend_tool_call(valid.entry.options.cost_units)?;
        flow.attempts += 1;
        let remaining = flow.task.remaining();
        debug!(
            stage = "budget",
            attempt = flow.attempts,
            tool_calls_left = remaining.tool_calls,
            cost_units_left = remaining.cost_units,
        );
        Ok(())
    }

    /// One run of the handler, under the tool's timeout (or less, before the deadline), with
    /// the cancellation signal; a panic in it is caught and becomes an answer.
    async fn attempt(
        &self,
        flow: &Flow<'_>,
        valid: &Valid<'_>,
        key: Option<&WriteKey>,
        cancel: &watch::Receiver<bool>,
    ) -> Answer {
        let options = valid.entry.options;
        let timeout = flow
            .task
            .time_left()
            .map_or(options.timeout, |left| left.min(options.timeout));
        let context = HandlerContext {
            operation_id: flow.context.operation_id.clone(),
            idempotency_key: key.map_or_else(
                || flow.context.operation_id.clone(),
                |key| key.downstream_key.clone(),
            ),
            attempt: flow.attempts,
            cancel: cancel.clone(),
        };
        let started = tokio::time::Instant::now();
        let running = AssertUnwindSafe(valid.entry.tool.attempt(
            &flow.context.call.arguments,
            self.registry.forbidden_keys(),
            context,
        ))
        .catch_unwind();
        let answer = tokio::time::timeout(timeout, running).await;
        let duration_ms = duration_ms(started.elapsed());
        let attempt = flow.attempts;
        match answer {
            Ok(Ok(Ok(raw))) => {
                debug!(stage = "handler", attempt, duration_ms, "returned output");
                Answer::Done(AttemptOutcome::Output(raw))
            }
            Ok(Ok(Err(failure))) => {
                let reason = failure.kind.audit_reason();
                debug!(stage = "handler", attempt, duration_ms, failure = reason);
                match failure.kind {
                    FailureKind::NotSent => Answer::Transient(Transient::NotSent, None),
                    FailureKind::RateLimited { retry_after_ms } => Answer::Transient(
                        Transient::Refused,
                        retry_after_ms.map(Duration::from_millis),
                    ),
                    FailureKind::OutcomeUnknown => Answer::Transient(Transient::MayHaveActed, None),
                    _ => Answer::Done(AttemptOutcome::Failure(failure)),
                }
            }
            Ok(Err(_panic)) => {
                warn!(stage = "handler", attempt, duration_ms, "handler panicked");
                Answer::Done(AttemptOutcome::Panicked)
            }
            Err(_elapsed) => {
                debug!(stage = "handler", attempt, duration_ms, "timed out");
                Answer::Transient(Transient::TimedOutAfterSend, None)
            }
        }
    }

    /// How long to wait before the next attempt, or why there is none: the effect forbids it,
    /// the attempts are spent, or the wait would pass the call's allowance or the deadline.
    fn retry_wait(
        &self,
        flow: &Flow<'_>,
        valid: &Valid<'_>,
        transient: Transient,
        retry_after: Option<Duration>,
        waited: Duration,
    ) -> Result<Duration, StopReason> {
        let policy = valid.entry.options.retry;
        if !may_retry(valid.spec.effect(), transient) {
            return Err(StopReason::NotRetryable);
        }
        if flow.attempts >= policy.max_attempts {
            return Err(StopReason::AttemptsExhausted);
        }
        let wait = {
            let mut rng = self
                .rng
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            policy.wait(flow.attempts - 1, retry_after, &mut *rng)
        };
        if waited + wait > policy.max_total_wait {
            return Err(StopReason::RetryWaitExhausted);
        }
        if flow.task.time_left().is_some_and(|left| wait >= left) {
            return Err(StopReason::DeadlineReached);
        }
        debug!(
            stage = "retry",
            attempt = flow.attempts,
            wait_ms = duration_ms(wait)
        );
        Ok(wait)
    }

    /// Validation and projection of the last attempt's outcome, and a write's ledger record.
    async fn project(
        &self,
        flow: &mut Flow<'_>,
        valid: &Valid<'_>,
        key: Option<&WriteKey>,
        outcome: AttemptOutcome,
    ) -> CallResult {
        let effect = valid.spec.effect();
        let (result, event) = match outcome {
            AttemptOutcome::Output(raw) => {
                let result =
                    valid
                        .entry
                        .tool
                        .project(&flow.binder, flow.principal, flow.context, raw);
                // Output withheld by the contract: the write ran, but what it did is not known.
                let event = match result.model.status() {
                    Status::Succeeded => WriteEvent::Commit,
                    _ => WriteEvent::LoseTrack,
                };
                (result, Some(event))
            }
            AttemptOutcome::Failure(failure) => {
                let event = match failure.kind {
                    FailureKind::Cancelled => WriteEvent::ConfirmCancelled,
                    _ => WriteEvent::ConfirmNothingHappened,
                };
                let result = flow
                    .binder
                    .project_failure(flow.principal, flow.context, failure);
                (result, Some(event))
            }
            AttemptOutcome::Panicked if effect.is_write() => {
                flow.stop = Some(StopReason::OutcomeUnknown);
                let result = self.unknown_result(flow, valid, "the handler panicked mid-write");
                (result, Some(WriteEvent::LoseTrack))
            }
            AttemptOutcome::Panicked => {
                let failure = ToolFailure::new(FailureKind::Failed, "the handler panicked");
                (self.project_failure(flow, failure), None)
            }
            AttemptOutcome::Stopped(stop) => {
                flow.stop = Some(stop);
                let code = match stop {
                    StopReason::DeadlineReached => ErrorCode::TimeoutBeforeExecute,
                    _ => ErrorCode::BudgetExhausted,
                };
                info!(
                    stage = "budget",
                    stop_reason = stop.as_str(),
                    "stopped before the call"
                );
                let result = self.control(flow, ModelError::new(code), stop.as_str());
                // Nothing was sent: the key is free again.
                (result, None)
            }
            AttemptOutcome::GaveUp(transient, retry_after, stop) => {
                flow.stop = Some(stop);
                info!(stage = "retry", stop_reason = stop.as_str(), "gave up");
                match transient {
                    Transient::NotSent => {
                        let failure = ToolFailure::new(FailureKind::NotSent, stop.as_str());
                        (self.project_failure(flow, failure), None)
                    }
                    Transient::Refused => {
                        let failure = ToolFailure::new(
                            FailureKind::RateLimited {
                                retry_after_ms: retry_after.map(duration_ms),
                            },
                            stop.as_str(),
                        );
                        (self.project_failure(flow, failure), None)
                    }
                    Transient::TimedOutAfterSend | Transient::MayHaveActed if effect.is_write() => {
                        flow.stop = Some(StopReason::OutcomeUnknown);
                        let result =
                            self.unknown_result(flow, valid, "the write may have happened");
                        (result, Some(WriteEvent::LoseTrack))
                    }
                    // A read that timed out changed nothing.
                    Transient::TimedOutAfterSend | Transient::MayHaveActed => {
                        let failure = ToolFailure::new(FailureKind::NotSent, "read timed out");
                        (self.project_failure(flow, failure), None)
                    }
                }
            }
        };
        let Some(key) = key else {
            return result;
        };
        // The audit first: should the process die before the ledger record, the lease lapses,
        // the write turns unknown, and the audit already holds what happened.
        let mut result = result;
        self.audit(flow, &mut result);
        match event {
            None => {
                if let Err(error) = self.ledger.release(&key.ledger_key, &self.owner).await {
                    warn!(stage = "ledger", error = %error, "release failed");
                }
                flow.write_state = None;
            }
            Some(event) => {
                flow.write_state = self.ledger_record(key, event, &result).await;
            }
        }
        result
    }

    /// Moves the record from wherever this execution left it (executing, or
    /// cancel_requested); a confirmation that does not fit the state reads as "nothing
    /// happened".
    async fn ledger_record(
        &self,
        key: &WriteKey,
        event: WriteEvent,
        result: &CallResult,
    ) -> Option<WriteState> {
        let stored = serde_json::to_string(&result.model).ok();
        for from in [WriteState::Executing, WriteState::CancelRequested] {
            let event = match (from, event) {
                (WriteState::Executing, WriteEvent::ConfirmCancelled) => {
                    WriteEvent::ConfirmNothingHappened
                }
                _ => event,
            };
            let step = self.advance(&key.ledger_key, from, event, stored.clone());
            match self.ledger.advance(&step).await {
                Ok(Advanced::Applied(record)) => {
                    debug!(stage = "ledger", state = record.state.as_str(), "recorded");
                    return Some(record.state);
                }
                // Cancellation was asked for meanwhile: record from there.
                Ok(Advanced::Stale(Some(record)))
                    if from == WriteState::Executing
                        && record.state == WriteState::CancelRequested => {}
                Ok(Advanced::Stale(Some(record)))
                    if record.state == WriteState::Unknown && event == WriteEvent::Commit =>
                {
                    // Our lease lapsed and someone marked it unknown: our receipt settles it.
                    let step = self.advance(
                        &key.ledger_key,
                        WriteState::Unknown,
                        WriteEvent::ReconcileFound,
                        stored.clone(),
                    );
                    return match self.ledger.advance(&step).await {
                        Ok(Advanced::Applied(record)) => Some(record.state),
                        Ok(Advanced::Stale(record)) => record.map(|record| record.state),
                        Err(_) => Some(WriteState::Unknown),
                    };
                }
                Ok(Advanced::Stale(record)) => return record.map(|record| record.state),
                Err(error) => {
                    warn!(stage = "ledger", error = %error, "recording the outcome failed");
                    // The lease will lapse and the claim turn it to unknown: never lost.
                    return Some(WriteState::Unknown);
                }
            }
        }
        None
    }

    /// An unknown write: its status query, if the contract has one; otherwise a person.
    async fn reconcile_unknown(
        &self,
        flow: &mut Flow<'_>,
        valid: &Valid<'_>,
        key: &WriteKey,
        record: Record,
    ) -> CallResult {
        flow.write_state = Some(WriteState::Unknown);
        if record.request_sha256 != key.request_sha256 {
            return self.answer_existing(flow, valid, key, record);
        }
        let request = StatusRequest {
            operation_id: flow.context.operation_id.clone(),
            idempotency_key: key.downstream_key.clone(),
        };
        let query = valid.entry.tool.query_status(
            &flow.context.call.arguments,
            self.registry.forbidden_keys(),
            request,
        );
        let Some(query) = query else {
            return self.unknown_result(flow, valid, "no status query: a person must check");
        };
        if let Err(stop) = flow.task.spend_tool_call(valid.entry.options.cost_units) {
            flow.stop = Some(stop);
            return self.unknown_result(flow, valid, "no budget left for the status query");
        }
        let answer = tokio::time::timeout(
            valid.entry.options.timeout,
            AssertUnwindSafe(query).catch_unwind(),
        )
        .await;
        debug!(stage = "reconcile", answered = answer.is_ok());
        let (result, event) = match answer {
            Ok(Ok(Ok(Reconciled::Found(raw)))) => {
                let projected =
                    valid
                        .entry
                        .tool
                        .project(&flow.binder, flow.principal, flow.context, raw);
                if projected.model.status() != Status::Succeeded {
                    return projected;
                }
                let model = projected.model.delivered_as(Delivery::ReceiptReconciled);
                let downstream = projected.audit.downstream;
                let result = flow.binder.seal(
                    flow.principal,
                    flow.context,
                    Some(valid.spec),
                    model,
                    downstream,
                    Vec::new(),
                    None,
                );
                (result, WriteEvent::ReconcileFound)
            }
            Ok(Ok(Ok(Reconciled::Absent))) => {
                let failure = ToolFailure::new(
                    FailureKind::Failed,
                    "the status query confirms the write never happened",
                );
                (
                    self.project_failure(flow, failure),
                    WriteEvent::ReconcileAbsent,
                )
            }
            // Not known yet, failed, panicked, or timed out: still unknown.
            Ok(Ok(Ok(Reconciled::StillUnknown) | Err(_)) | Err(_)) | Err(_) => {
                return self.unknown_result(flow, valid, "the status query could not tell");
            }
        };
        let mut result = result;
        self.audit(flow, &mut result);
        let stored = serde_json::to_string(&result.model).ok();
        let step = self.advance(&key.ledger_key, WriteState::Unknown, event, stored);
        flow.write_state = match self.ledger.advance(&step).await {
            Ok(Advanced::Applied(record)) => Some(record.state),
            Ok(Advanced::Stale(record)) => record.map(|record| record.state),
            Err(_) => Some(WriteState::Unknown),
        };
        debug!(
            stage = "reconcile",
            state = flow.write_state.map(WriteState::as_str)
        );
        result
    }

    /// The unknown-outcome result a write's contract calls for: `OUTCOME_UNKNOWN` (query
    /// status) when a status query exists, `OUTCOME_UNCONFIRMED` (a person) otherwise.
    fn unknown_result(&self, flow: &mut Flow<'_>, valid: &Valid<'_>, detail: &str) -> CallResult {
        flow.write_state = Some(WriteState::Unknown);
        let code = match valid.spec.reconcile() {
            Some(Reconcile::Tool(_)) if valid.entry.tool.has_status_query() => {
                ErrorCode::OutcomeUnknown
            }
            _ => ErrorCode::OutcomeUnconfirmed,
        };
        debug!(
            stage = "outcome",
            state = "unknown",
            error_code = code.as_str()
        );
        self.control(flow, ModelError::new(code), detail)
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

    fn write_key(&self, flow: &Flow<'_>, spec: &ToolSpec) -> WriteKey {
        let context = flow.context;
        WriteKey {
            ledger_key: self.ledger_key(flow.principal, context),
            downstream_key: downstream_key(context).to_owned(),
            request_sha256: self.keys.request_digest(
                flow.principal,
                spec.name(),
                Some(spec),
                &context.call.arguments,
            ),
        }
    }

    /// The ledger key: the operation's key, scoped to the principal so tenants never meet.
    fn ledger_key(&self, principal: &Principal, context: &CallContext) -> String {
        format!(
            "{}:{}",
            self.keys.principal_ref(principal),
            downstream_key(context)
        )
    }

    fn claim(&self, valid: &Valid<'_>, key: &WriteKey) -> Claim {
        Claim {
            key: key.ledger_key.clone(),
            request_sha256: key.request_sha256.clone(),
            tool: valid.spec.name().to_owned(),
            owner: self.owner.clone(),
            now_ms: self.now_ms(),
            lease_ms: lease_ms(&valid.entry.options),
            retention_ms: duration_ms(self.retention),
        }
    }

    fn advance(
        &self,
        key: &str,
        from: WriteState,
        event: WriteEvent,
        result: Option<String>,
    ) -> Advance {
        Advance {
            key: key.to_owned(),
            owner: self.owner.clone(),
            from,
            event,
            result,
            now_ms: self.now_ms(),
            retention_ms: duration_ms(self.retention),
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

/// A write's cancellation signal, registered while it executes.
struct InFlight<'a> {
    signals: &'a Mutex<HashMap<String, watch::Sender<bool>>>,
    ledger_key: String,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.signals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&self.ledger_key);
    }
}

/// How the attempts ended.
enum AttemptOutcome {
    /// The handler returned output (not yet validated).
    Output(RawResult),
    /// The handler reported a failure that is not retried.
    Failure(ToolFailure),
    /// The budget stopped the next attempt before it started.
    Stopped(StopReason),
    /// A transient failure that may not, or can no longer, be retried.
    GaveUp(Transient, Option<Duration>, StopReason),
    /// The handler panicked: whatever it did is not known.
    Panicked,
}

/// What one attempt says about the next.
enum Answer {
    /// No retry: this is how it ends.
    Done(AttemptOutcome),
    /// A transient failure, with the server's retry-after if it gave one.
    Transient(Transient, Option<Duration>),
}

/// The key sent downstream: the idempotency key, or the operation id when there is none.
fn downstream_key(context: &CallContext) -> &str {
    context
        .idempotency_key
        .as_deref()
        .unwrap_or(&context.operation_id)
}

fn stored_result(record: &Record) -> Option<ModelResult> {
    serde_json::from_str(record.result.as_deref()?).ok()
}

fn expired(record: &Record, now_ms: u64) -> bool {
    record.state.is_terminal() && record.expires_at_ms <= now_ms
}

/// The lease covers every attempt, every wait, and a minute of slack.
fn lease_ms(options: &ToolOptions) -> u64 {
    let attempts = u64::from(options.retry.max_attempts.max(1));
    duration_ms(options.timeout)
        .saturating_mul(attempts)
        .saturating_add(duration_ms(options.retry.max_total_wait))
        .saturating_add(60_000)
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
