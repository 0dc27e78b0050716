//! Running the handler: budget, attempts under a timeout with cancellation, retries, and the
//! projection of how the attempts ended.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures_util::FutureExt;
use tokio::sync::watch;
use tracing::{debug, info, warn};

use super::write::WriteKey;
use super::{Call, Dispatcher, Ended, Valid, duration_ms};
use crate::binder::{CallResult, FailureKind, RawResult, ToolFailure};
use crate::control::{WriteEvent, WriteState};
use crate::dispatch::budget::StopReason;
use crate::dispatch::handler::{HandlerContext, HeldLease};
use crate::dispatch::retry::{Transient, may_retry};
use crate::dispatch::telemetry::{self, Guardrail, Verdict};
use crate::results::{ApprovalRecord, ErrorCode, ModelError, Status};

impl Dispatcher {
    /// Budget, handler with timeout and cancellation, retries; then projection and, for a
    /// write (`key`), the audit and the ledger record of its end.
    pub(super) async fn execute(
        &self,
        call: &Call<'_>,
        valid: &Valid<'_>,
        key: Option<&WriteKey>,
        approval: Option<ApprovalRecord>,
    ) -> Ended {
        let (cancel_sender, cancel) = watch::channel(false);
        // Registered until the write's end is recorded, and dropped when this future ends or
        // is dropped (a caller gave up, a timeout around it): the signal never outlives the
        // execution it belongs to, and while it is there the lease is this process's.
        let _in_flight = key.map(|key| {
            self.in_flight_signals()
                .insert(key.ledger_key.clone(), cancel_sender);
            InFlight {
                signals: &self.in_flight,
                ledger_key: key.ledger_key.clone(),
            }
        });
        let attempted = self.attempts(call, valid, key, &cancel).await;
        let projected = if attempted.may_have_acted && !attempted.outcome.is_final_word() {
            // A write is judged over all its attempts: once one may have acted, nothing a
            // later attempt says (not sent, refused, stopped, failed) undoes that.
            let result = self.unknown_result(call, valid, "an earlier attempt may have acted");
            Projected::recorded(result, WriteEvent::LoseTrack).stopped(StopReason::OutcomeUnknown)
        } else {
            self.project(call, valid, attempted.outcome)
        };
        let attempts = attempted.attempts;
        let mut ended = Ended::new(projected.result)
            .stopped(projected.stop)
            .approved(approval);
        ended.result.audit.policies.clone_from(&valid.policies);
        ended.attempts = attempts;
        ended.handler_panicked = projected.handler_panicked;
        let Some(key) = key else {
            return ended;
        };
        // On the heap: a read never takes these steps, and its future would otherwise be as
        // large as theirs (some 4 KB more), copied whole wherever it is moved.
        Box::pin(self.record_write(call, valid, key, ended, projected.event)).await
    }

    /// A write's end after its attempts: the audit, then its record in the ledger (or its
    /// key given back, when nothing was sent).
    async fn record_write(
        &self,
        call: &Call<'_>,
        valid: &Valid<'_>,
        key: &WriteKey,
        mut ended: Ended,
        event: Option<WriteEvent>,
    ) -> Ended {
        let attempts = ended.attempts;
        if event.is_none()
            && attempts == 0
            && let Some(approval) = ended.approval.as_mut()
        {
            // Nothing was tried: the release below gives the grant back, unspent.
            approval.redeemed = Some(false);
        }
        // The audit first: should the process die before the ledger record, the lease lapses,
        // the write turns unknown, and the audit already holds what happened.
        ended.audited = Some(
            self.audit(&mut ended.result, ended.approval.as_deref())
                .await,
        );
        // An edited call: the record, and the model, hold what the model is told on its own
        // call; the audit holds both.
        let told_call = call
            .edited_from
            .map(|original| self.call(call.principal, original, call.task));
        if let Some(told_call) = &told_call {
            let mut told = self.told_of_edit(told_call, &ended.result);
            told.audit.policies.clone_from(&valid.policies);
            let audit_error = self.audit(&mut told, ended.approval.as_deref()).await;
            let first_error = ended.audited.take().flatten();
            ended.audited = Some(first_error.or(audit_error));
            ended.result = told;
        }
        let call = told_call.as_ref().unwrap_or(call);
        ended.write_state = match event {
            None => {
                // Nothing was sent: the key is free again. The grant is spent by any attempt.
                if let Err(error) = self.store.release(&key.release(attempts == 0)).await {
                    warn!(stage = "ledger", error = %error, "release failed");
                }
                None
            }
            Some(event) => {
                let state = self.ledger_record(key, event, &ended.result).await;
                let may_have_acted = matches!(event, WriteEvent::Commit | WriteEvent::LoseTrack);
                let settled_otherwise = matches!(
                    state,
                    None | Some(WriteState::Failed | WriteState::Cancelled | WriteState::Disputed)
                );
                if may_have_acted && settled_otherwise {
                    // On the heap: rare, and a third of this future's size otherwise.
                    return Box::pin(self.settled_otherwise(call, key, ended, state)).await;
                }
                state
            }
        };
        ended
    }

    /// A write that may have acted (committed, or timed out after sending) and ended after
    /// its record was settled otherwise (its lease lapsed and it was reconciled as never
    /// having happened, or the record is gone): `STATUS_CONFLICT` for a person, and the record
    /// `disputed`, so that no later call reads "never happened" while the effect may exist.
    /// Its output is not dropped: the audit already holds it, and now holds the conflict too.
    async fn settled_otherwise(
        &self,
        call: &Call<'_>,
        key: &WriteKey,
        mut ended: Ended,
        state: Option<WriteState>,
    ) -> Ended {
        let settled = state.map_or("gone", WriteState::as_str);
        warn!(
            stage = "ledger",
            state = settled,
            "a write that may have acted ended after it was settled"
        );
        let detail = format!(
            "the write may have acted after its record was settled otherwise ({settled}); \
             what it did is the audit record before this one: a person must reconcile the two"
        );
        let error = ModelError::new(ErrorCode::StatusConflict);
        let mut conflict = self.control(call, error, &detail);
        conflict
            .audit
            .policies
            .clone_from(&ended.result.audit.policies);
        let audit_error = self.audit(&mut conflict, ended.approval.as_deref()).await;
        let first_error = ended.audited.take().flatten();
        ended.audited = Some(first_error.or(audit_error));
        ended.write_state = match state {
            Some(from @ (WriteState::Failed | WriteState::Cancelled)) => {
                self.dispute(key, from, &conflict).await
            }
            other => other,
        };
        ended.result = conflict;
        ended
    }

    /// Attempts until one ends the call or none may follow: how they ended, how many there
    /// were, and whether any of a write's may have acted.
    pub(super) async fn attempts(
        &self,
        call: &Call<'_>,
        valid: &Valid<'_>,
        key: Option<&WriteKey>,
        cancel: &watch::Receiver<bool>,
    ) -> Attempted {
        let mut attempted = Attempted {
            outcome: AttemptOutcome::Panicked,
            attempts: 0,
            may_have_acted: false,
        };
        let mut waited = Duration::ZERO;
        loop {
            if let Err(stop) = self.budget(call, valid, attempted.attempts + 1) {
                attempted.outcome = AttemptOutcome::Stopped(stop);
                return attempted;
            }
            attempted.attempts += 1;
            let answer = self
                .attempt(call, valid, key, cancel, attempted.attempts)
                .await;
            let (transient, retry_after) = match answer {
                AttemptAnswer::Done(outcome) => {
                    attempted.outcome = *outcome;
                    return attempted;
                }
                AttemptAnswer::Transient(transient, retry_after) => (transient, retry_after),
            };
            attempted.may_have_acted |= valid.spec.effect().is_write()
                && matches!(
                    transient,
                    Transient::TimedOutAfterSend | Transient::MayHaveActed
                );
            let attempts = attempted.attempts;
            match self.retry_wait(call, valid, transient, retry_after, waited, attempts) {
                Ok(wait) => {
                    tokio::time::sleep(wait).await;
                    waited += wait;
                }
                Err(stop) => {
                    attempted.outcome = AttemptOutcome::GaveUp(transient, retry_after, stop);
                    return attempted;
                }
            }
        }
    }

    /// The budget and deadline, checked (and spent) before attempt number `attempt`.
    fn budget(&self, call: &Call<'_>, valid: &Valid<'_>, attempt: u32) -> Result<(), StopReason> {
        call.task.spend_tool_call(valid.entry.options.cost_units)?;
        let remaining = call.task.remaining();
        debug!(
            stage = "budget",
            attempt,
            tool_calls_left = remaining.tool_calls,
            cost_units_left = remaining.cost_units,
        );
        Ok(())
    }

    /// One run of the handler, under the tool's timeout (or less, before the deadline), with
    /// the cancellation signal; a panic in it is caught and becomes an answer.
    async fn attempt(
        &self,
        call: &Call<'_>,
        valid: &Valid<'_>,
        key: Option<&WriteKey>,
        cancel: &watch::Receiver<bool>,
        attempt: u32,
    ) -> AttemptAnswer {
        let options = valid.entry.options;
        let timeout = call
            .task
            .time_left()
            .map_or(options.timeout, |left| left.min(options.timeout));
        let context = HandlerContext {
            operation_id: call.context.operation_id.clone(),
            idempotency_key: key.map_or_else(
                || {
                    let operation = &call.context.operation_id;
                    self.keys.downstream_key(call.principal, operation)
                },
                |key| key.downstream_key.clone(),
            ),
            attempt,
            cancel: cancel.clone(),
            reconciling: call.status_of,
            clock: self.clock,
            // A write's own execution holds a lease; a status query only reads.
            lease: key
                .filter(|_| call.status_of.is_none())
                .map(|key| HeldLease {
                    until: at_ms(key.lease_until_ms.load(Ordering::Relaxed)),
                    fencing_token: key.lease.generation,
                }),
            client: call.client.cloned().unwrap_or_default(),
        };
        let started = tokio::time::Instant::now();
        let running = AssertUnwindSafe(valid.entry.tool.attempt(
            &call.context.call.arguments,
            self.registry.forbidden_keys(),
            context,
        ))
        .catch_unwind();
        let answer = tokio::time::timeout(timeout, running).await;
        let duration_ms = duration_ms(started.elapsed());
        match answer {
            Ok(Ok(Ok(raw))) => {
                debug!(stage = "handler", attempt, duration_ms, "returned output");
                AttemptAnswer::Done(Box::new(AttemptOutcome::Output(raw)))
            }
            Ok(Ok(Err(failure))) => {
                let reason = failure.kind.audit_reason();
                debug!(stage = "handler", attempt, duration_ms, failure = reason);
                failure_answer(valid, failure)
            }
            Ok(Err(_panic)) => {
                warn!(stage = "handler", attempt, duration_ms, "handler panicked");
                AttemptAnswer::Done(Box::new(AttemptOutcome::Panicked))
            }
            Err(_elapsed) => {
                debug!(stage = "handler", attempt, duration_ms, "timed out");
                AttemptAnswer::Transient(Transient::TimedOutAfterSend, None)
            }
        }
    }

    /// How long to wait before the next attempt, or why there is none: the effect forbids it,
    /// the attempts are spent, or the wait would pass the call's allowance or the deadline.
    fn retry_wait(
        &self,
        call: &Call<'_>,
        valid: &Valid<'_>,
        transient: Transient,
        retry_after: Option<Duration>,
        waited: Duration,
        attempts: u32,
    ) -> Result<Duration, StopReason> {
        let policy = valid.entry.options.retry;
        if !may_retry(valid.spec.effect(), transient) {
            return Err(StopReason::NotRetryable);
        }
        if attempts >= policy.max_attempts {
            return Err(StopReason::AttemptsExhausted);
        }
        let wait = {
            let mut rng = self
                .rng
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            policy.wait(attempts - 1, retry_after, &mut *rng)
        };
        if waited + wait > policy.max_total_wait {
            return Err(StopReason::RetryWaitExhausted);
        }
        if call.task.time_left().is_some_and(|left| wait >= left) {
            return Err(StopReason::DeadlineReached);
        }
        debug!(
            stage = "retry",
            attempt = attempts,
            wait_ms = duration_ms(wait)
        );
        Ok(wait)
    }

    /// The result the attempts' outcome calls for: the validated output, the failure's catalog
    /// error, or an unknown outcome; and for a write, the event its ledger record takes.
    pub(super) fn project(
        &self,
        call: &Call<'_>,
        valid: &Valid<'_>,
        outcome: AttemptOutcome,
    ) -> Projected {
        let effect = valid.spec.effect();
        match outcome {
            AttemptOutcome::Output(raw) => {
                let guardrail = Guardrail::Output.span(call.context);
                let result = guardrail.in_scope(|| {
                    valid
                        .entry
                        .tool
                        .project(&call.binder, call.principal, call.context, raw)
                });
                let passed = result.model.status() == Status::Succeeded;
                telemetry::verdict(
                    &guardrail,
                    if passed {
                        Verdict::Allow
                    } else {
                        Verdict::Deny
                    },
                );
                // Output withheld by the contract: the write ran, but what it did is not known.
                let event = match result.model.status() {
                    Status::Succeeded => WriteEvent::Commit,
                    _ => WriteEvent::LoseTrack,
                };
                Projected::recorded(result, event)
            }
            AttemptOutcome::Failure(failure) => {
                let event = match failure.kind {
                    FailureKind::Cancelled => WriteEvent::ConfirmCancelled,
                    _ => WriteEvent::ConfirmNothingHappened,
                };
                Projected::recorded(self.project_failure(call, failure), event)
            }
            AttemptOutcome::Panicked if effect.is_write() => {
                let result = self.unknown_result(call, valid, "the handler panicked mid-write");
                Projected::recorded(result, WriteEvent::LoseTrack)
                    .stopped(StopReason::OutcomeUnknown)
                    .panicked()
            }
            AttemptOutcome::Panicked => {
                let failure = ToolFailure::new(FailureKind::Failed, "the handler panicked");
                Projected::released(self.project_failure(call, failure)).panicked()
            }
            AttemptOutcome::Stopped(stop) => {
                let code = match stop {
                    StopReason::DeadlineReached => ErrorCode::TimeoutBeforeExecute,
                    _ => ErrorCode::BudgetExhausted,
                };
                info!(
                    stage = "budget",
                    stop_reason = stop.as_str(),
                    "stopped before the call"
                );
                let result = self.control(call, ModelError::new(code), stop.as_str());
                Projected::released(result).stopped(stop)
            }
            AttemptOutcome::GaveUp(transient, retry_after, stop) => {
                info!(stage = "retry", stop_reason = stop.as_str(), "gave up");
                self.gave_up(call, valid, transient, retry_after, stop)
            }
        }
    }

    /// The result of a transient failure that may not, or can no longer, be retried.
    fn gave_up(
        &self,
        call: &Call<'_>,
        valid: &Valid<'_>,
        transient: Transient,
        retry_after: Option<Duration>,
        stop: StopReason,
    ) -> Projected {
        let failed = |kind| {
            let failure = ToolFailure::new(kind, stop.as_str());
            Projected::released(self.project_failure(call, failure)).stopped(stop)
        };
        match transient {
            Transient::NotSent => failed(FailureKind::NotSent),
            Transient::Refused => failed(FailureKind::RateLimited {
                retry_after_ms: retry_after.map(duration_ms),
            }),
            Transient::TimedOutAfterSend | Transient::MayHaveActed
                if valid.spec.effect().is_write() =>
            {
                let result = self.unknown_result(call, valid, "the write may have happened");
                Projected::recorded(result, WriteEvent::LoseTrack)
                    .stopped(StopReason::OutcomeUnknown)
            }
            // A read that timed out ran and changed nothing: its source did not answer in
            // time (never "before the tool ran").
            Transient::TimedOutAfterSend | Transient::MayHaveActed => {
                let failure = ToolFailure::new(FailureKind::Timeout, "read timed out");
                Projected::released(self.project_failure(call, failure)).stopped(stop)
            }
        }
    }
}

/// What one handler failure says about the next attempt.
fn failure_answer(valid: &Valid<'_>, failure: ToolFailure) -> AttemptAnswer {
    match failure.kind {
        FailureKind::NotSent => AttemptAnswer::Transient(Transient::NotSent, None),
        FailureKind::RateLimited { retry_after_ms } => AttemptAnswer::Transient(
            Transient::Refused,
            retry_after_ms.map(Duration::from_millis),
        ),
        FailureKind::OutcomeUnknown => AttemptAnswer::Transient(Transient::MayHaveActed, None),
        // A write whose source failed after the request may have gone out may have acted: it
        // is reconciled, never reported as nothing having happened.
        kind if valid.spec.effect().is_write() && kind.may_have_acted() => {
            AttemptAnswer::Transient(Transient::MayHaveActed, None)
        }
        // Fail fast: a read whose source failed says so at once, with its kind.
        _ => AttemptAnswer::Done(Box::new(AttemptOutcome::Failure(failure))),
    }
}

/// The result the attempts led to, and what becomes of a write's ledger record.
pub(super) struct Projected {
    pub(super) result: CallResult,
    /// The event the record takes; `None` gives the key back (nothing was sent).
    event: Option<WriteEvent>,
    stop: Option<StopReason>,
    /// Whether the handler panicked.
    handler_panicked: bool,
}

impl Projected {
    fn recorded(result: CallResult, event: WriteEvent) -> Self {
        Projected {
            result,
            event: Some(event),
            stop: None,
            handler_panicked: false,
        }
    }

    fn released(result: CallResult) -> Self {
        Projected {
            result,
            event: None,
            stop: None,
            handler_panicked: false,
        }
    }

    fn panicked(mut self) -> Self {
        self.handler_panicked = true;
        self
    }

    fn stopped(mut self, stop: StopReason) -> Self {
        self.stop = Some(stop);
        self
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

/// What the attempts of one dispatch came to.
pub(super) struct Attempted {
    /// How the last one ended.
    pub(super) outcome: AttemptOutcome,
    /// How many ran.
    pub(super) attempts: u32,
    /// Whether one of a write's attempts may have acted (timed out after sending, or said
    /// it may have).
    may_have_acted: bool,
}

/// How the attempts ended.
pub(super) enum AttemptOutcome {
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

impl AttemptOutcome {
    /// Whether this ending says for itself what happened, whatever came before: output the
    /// contract checks, or a panic (already an unknown outcome for a write).
    fn is_final_word(&self) -> bool {
        matches!(self, AttemptOutcome::Output(_) | AttemptOutcome::Panicked)
    }
}

/// What one attempt says about the next.
enum AttemptAnswer {
    /// No retry: this is how it ends (boxed: an output is large, and serde_json's
    /// `preserve_order`, which any crate of a build may turn on, makes it larger).
    Done(Box<AttemptOutcome>),
    /// A transient failure, with the server's retry-after if it gave one.
    Transient(Transient, Option<Duration>),
}

/// The instant `ms` milliseconds after the Unix epoch (the epoch itself if out of range).
fn at_ms(ms: u64) -> time::OffsetDateTime {
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH)
}
