//! Running the handler: budget, attempts under a timeout with cancellation, retries, and the
//! projection of how the attempts ended.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::Mutex;
use std::time::Duration;

use futures_util::FutureExt;
use tokio::sync::watch;
use tracing::{debug, info, warn};

use super::write::WriteKey;
use super::{Dispatcher, Flow, Valid, duration_ms};
use crate::catalog::{ErrorCode, ModelError};
use crate::dispatch::budget::StopReason;
use crate::dispatch::handler::HandlerContext;
use crate::dispatch::retry::{Transient, may_retry};
use crate::dispatch::state::WriteEvent;
use crate::project::{CallResult, FailureKind, RawResult, ToolFailure};
use crate::result::Status;

impl Dispatcher {
    /// Budget, handler with timeout and cancellation, retries; then projection and, for a
    /// write, the ledger record.
    pub(super) async fn execute(
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
                    // A write whose source failed after the request may have gone out may
                    // have acted: it is reconciled, never reported as nothing having happened.
                    kind if valid.spec.effect().is_write() && kind.may_have_acted() => {
                        Answer::Transient(Transient::MayHaveActed, None)
                    }
                    // Fail fast: a read whose source failed says so at once, with its kind.
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
