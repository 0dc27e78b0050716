//! What surrounds a write: the ledger's word on its key, approval, the claim, the record of
//! its end, and reconciliation of an unknown outcome.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;

use futures_util::FutureExt;
use time::format_description::well_known::Rfc3339;
use tracing::{debug, warn};

use super::{Dispatcher, Exit, Flow, PURGE_EVERY, Valid, duration_ms, prefix, sha256_hex};
use crate::audit::ApprovalRecord;
use crate::call::{CallContext, Principal};
use crate::catalog::{ErrorCode, ModelError};
use crate::dispatch::approval::{ApprovalCheck, Asked, PendingApproval, Preview};
use crate::dispatch::builder::ToolOptions;
use crate::dispatch::handler::{Reconciled, StatusRequest};
use crate::dispatch::ledger::{Advance, Advanced, Claim, Claimed, Record};
use crate::dispatch::state::{WriteEvent, WriteState};
use crate::project::{CallResult, FailureKind, ToolFailure};
use crate::result::{Delivery, ModelResult, Status};
use crate::spec::{Approval, Reconcile, ToolSpec};

/// A write's ledger identity.
pub(super) struct WriteKey {
    pub(super) ledger_key: String,
    pub(super) downstream_key: String,
    pub(super) request_sha256: String,
}

impl Dispatcher {
    /// A write: the ledger's word on the key first (replay, conflict, in flight, unknown), then
    /// approval, authorization again, the atomic claim, and the execution.
    pub(super) async fn write(&self, flow: &mut Flow<'_>, valid: &Valid<'_>) -> CallResult {
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
    pub(super) async fn settled(
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

    /// Moves the record from wherever this execution left it (executing, or
    /// cancel_requested); a confirmation that does not fit the state reads as "nothing
    /// happened".
    pub(super) async fn ledger_record(
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
    pub(super) fn unknown_result(
        &self,
        flow: &mut Flow<'_>,
        valid: &Valid<'_>,
        detail: &str,
    ) -> CallResult {
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

    pub(super) fn write_key(&self, flow: &Flow<'_>, spec: &ToolSpec) -> WriteKey {
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
    pub(super) fn ledger_key(&self, principal: &Principal, context: &CallContext) -> String {
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

    pub(super) fn advance(
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
