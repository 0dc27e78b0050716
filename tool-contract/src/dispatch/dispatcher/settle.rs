//! A person's word on a write the machine could not settle: an unknown outcome no status
//! query can tell, or a dispute.

use serde_json::Value;
use time::format_description::well_known::Rfc3339;
use tracing::{Instrument, info};

use super::{Call, Dispatcher, Ended};
use crate::binder::{FailureKind, RawProvenance, RawResult, ToolFailure};
use crate::control::{Advanced, Claimed, StoreError, WriteEvent, WriteState};
use crate::dispatch::budget::Task;
use crate::dispatch::outcome::Dispatch;
use crate::json::encoding::infallible;
use crate::results::{Delivery, ErrorCode, Status};
use crate::vocabulary::{CallContext, Principal};

/// What a person found out about a write the machine could not settle.
#[derive(Debug, Clone, PartialEq)]
pub enum Settlement {
    /// It happened, and this is what the tool returned: its output, checked against the
    /// tool's output contract (and this call's bound inputs) like any handler's.
    Done(Value),
    /// It never happened.
    NeverHappened,
}

/// Why a settlement was refused; nothing was recorded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettleError {
    /// The call is not one the registry runs as given (unknown tool, invalid arguments): the
    /// code its dispatch would read.
    #[error("the call is refused ({0:?})")]
    Refused(ErrorCode),
    /// The tool is not a write: there is nothing to settle.
    #[error("the tool is not a write")]
    NotAWrite,
    /// No record stands under the call's operation key.
    #[error("no write is recorded under this operation")]
    NoRecord,
    /// The record under the key is another request's.
    #[error("the operation's record is another request's")]
    OtherRequest,
    /// The write is not waiting for a person: only `unknown` and `disputed` writes are.
    #[error("the write is {0}, not unknown or disputed")]
    NotUnsettled(WriteState),
    /// The output given does not meet the tool's contract: the audit's detail of the refusal.
    #[error("the output does not meet the contract: {0}")]
    InvalidOutput(String),
    /// The record moved while the settlement was made (another replica settled it).
    #[error("the record moved meanwhile (now {0:?})")]
    Raced(Option<WriteState>),
    /// The store failed.
    #[error("the store failed")]
    Store(#[source] StoreError),
}

impl Dispatcher {
    /// Settles a write that waits for a person: one whose outcome is `unknown` and that no
    /// status query can tell (an `idempotent_write` whose handler was killed, a write with
    /// `reconcile = manual`), or one `disputed` (it may have acted after being settled as
    /// never having happened). `settled_by` names the person, for the audit. A write still
    /// marked running whose owner's lease lapsed is `unknown`, as a dispatch reads it: it is
    /// settled the same, with no call before.
    ///
    /// The settlement is audited like any call, as `receipt_reconciled` (done, with the output
    /// validated as the tool's) or a failure (never happened), and recorded as the write's end:
    /// every later call on any replica replays it, as it would a write the machine settled.
    ///
    /// # Errors
    ///
    /// [`SettleError`]; nothing is recorded then.
    pub async fn settle(
        &self,
        principal: &Principal,
        context: &CallContext,
        settlement: Settlement,
        settled_by: &str,
    ) -> Result<Dispatch, SettleError> {
        let span = self.span(context);
        async {
            let task = Task::unlimited();
            let call = self.call(principal, context, &task);
            let ended = self.settle_call(&call, settlement, settled_by).await?;
            Ok(self.finish(ended).await)
        }
        .instrument(span)
        .await
    }

    async fn settle_call(
        &self,
        call: &Call<'_>,
        settlement: Settlement,
        settled_by: &str,
    ) -> Result<Ended, SettleError> {
        let valid = self.lookup_and_validate(call).map_err(|refused| {
            let code = refused.model.error().map(|error| error.code());
            SettleError::Refused(code.unwrap_or(ErrorCode::Blocked))
        })?;
        if !valid.spec.effect().is_write() {
            return Err(SettleError::NotAWrite);
        }
        let key = self.write_key(call, valid.spec);
        let mut record = self
            .store
            .get(&key.ledger_key)
            .await
            .map_err(SettleError::Store)?
            .ok_or(SettleError::NoRecord)?;
        if record.request_sha256 != key.request_sha256 || record.tool != valid.spec.name() {
            return Err(SettleError::OtherRequest);
        }
        if self.lease_lapsed(&record) {
            // Still marked running, but its owner's lease lapsed (the owner died): `unknown`,
            // as a dispatch reads it. The claim turns it so atomically, fenced against the
            // owner, and settles nothing by itself.
            record = match self.store.claim(&self.claim(call, &valid, &key)).await {
                Ok(Claimed::Unknown(record)) => record,
                Ok(Claimed::Fresh) => {
                    // Purged between the two steps: give the key back.
                    let _ = self.store.release(&key.release(true)).await;
                    return Err(SettleError::NoRecord);
                }
                Ok(
                    Claimed::Replay(record) | Claimed::Conflict(record) | Claimed::InFlight(record),
                ) => record,
                Ok(Claimed::GrantSpent) => return Err(SettleError::Raced(None)),
                Err(error) => return Err(SettleError::Store(error)),
            };
        }
        if !matches!(record.state, WriteState::Unknown | WriteState::Disputed) {
            return Err(SettleError::NotUnsettled(record.state));
        }
        let note = format!("settled by a person ({settled_by})");
        let (mut result, event) = match settlement {
            Settlement::Done(output) => {
                let observed_at = infallible(
                    self.now().format(&Rfc3339),
                    "the dispatcher's clock writes as RFC 3339",
                );
                let bytes = infallible(serde_json::to_vec(&output), "a `Value` serializes");
                let provenance = RawProvenance::new(valid.spec.producer_revision(), &observed_at);
                let projected = valid.entry.tool.project(
                    &call.binder,
                    call.principal,
                    call.context,
                    RawResult::new(bytes, provenance),
                );
                if projected.model.status() != Status::Succeeded {
                    let detail = projected.audit.detail.unwrap_or_default();
                    return Err(SettleError::InvalidOutput(detail));
                }
                let settled = call.binder.redeliver(
                    call.principal,
                    call.context,
                    projected,
                    Delivery::ReceiptReconciled,
                    &note,
                );
                (settled, WriteEvent::ReconcileFound)
            }
            Settlement::NeverHappened => {
                let failure = ToolFailure::new(FailureKind::Failed, note.clone());
                (
                    self.project_failure(call, failure),
                    WriteEvent::ReconcileAbsent,
                )
            }
        };
        let step = self.advance(
            &key.ledger_key,
            &record.lease,
            key.keeping,
            record.state,
            event,
            Some(self.stored(&key, &result.model)),
        );
        let state = match self.store.advance(&step).await {
            Ok(Advanced::Applied(record)) => record.state,
            Ok(Advanced::Stale(record)) => {
                return Err(SettleError::Raced(record.map(|record| record.state)));
            }
            Err(error) => return Err(SettleError::Store(error)),
        };
        info!(
            stage = "settle",
            state = state.as_str(),
            "settled by a person"
        );
        let audit_error = self.audit(&mut result, None).await;
        let mut ended = Ended::new(result).in_state(Some(state));
        ended.audited = Some(audit_error);
        Ok(ended)
    }
}
