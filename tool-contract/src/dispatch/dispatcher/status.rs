//! A read the model calls as a write's declared status query (`reconcile = ThisTool`): when
//! the call's operation holds that write's unknown outcome, the read runs under the write's
//! key, and what it finds settles the write.

use std::sync::atomic::AtomicU64;

use tokio::sync::watch;
use tracing::debug;

use super::execute::AttemptOutcome;
use super::write::{WriteKey, application_key};
use super::{Call, Dispatcher, Ended, Valid};
use crate::binder::FailureKind;
use crate::contract::ToolSpec;
use crate::control::{WriteEvent, WriteState};
use crate::results::{Delivery, ErrorCode, ModelError, ModelResult, Provenance, Status, Trust};

impl Dispatcher {
    /// A read: the status query of the unknown write its operation holds, if it is one's
    /// declared status tool; otherwise an ordinary read.
    pub(super) async fn read(&self, call: &mut Call<'_>, valid: &Valid<'_>) -> Ended {
        if !self.status_tools.contains_key(valid.spec.name()) {
            return self.execute(call, valid, None, None).await;
        }
        // On the heap: most reads are no status query, and their future would otherwise be
        // as large as one's.
        Box::pin(self.status_query(call, valid)).await
    }

    /// A read of a write's declared status tool: under the write's key when its operation
    /// holds the write's unknown outcome, otherwise an ordinary read.
    async fn status_query(&self, call: &mut Call<'_>, valid: &Valid<'_>) -> Ended {
        let Some(writes) = self.status_tools.get(valid.spec.name()) else {
            return self.execute(call, valid, None, None).await;
        };
        let ledger_key = self.ledger_key(call.principal, call.context);
        let record = match self.store.get(&ledger_key).await {
            Ok(Some(record))
                if record.state == WriteState::Unknown
                    && writes.iter().any(|write| *write == record.tool) =>
            {
                record
            }
            _ => return self.execute(call, valid, None, None).await,
        };
        let Some(write) = self.registry.get(&record.tool) else {
            return self.execute(call, valid, None, None).await;
        };
        let key = WriteKey {
            ledger_key,
            downstream_key: self
                .keys
                .downstream_key(call.principal, application_key(call.context)),
            request_sha256: record.request_sha256,
            lease: record.lease,
            seal: self.row_seal.clone(),
            lease_until_ms: AtomicU64::new(0),
            keeping: self.keeping(Some(write)),
            earlier_run: None,
        };
        debug!(
            stage = "reconcile",
            write = write.name(),
            "status query called by the model"
        );
        call.status_of = Some(write.name());
        let (_cancel_sender, cancel) = watch::channel(false);
        let attempted = self.attempts(call, valid, Some(&key), &cancel).await;
        let absent = matches!(
            &attempted.outcome,
            AttemptOutcome::Failure(failure) if failure.kind == FailureKind::NotFound
        );
        let attempts = attempted.attempts;
        let mut result = self.project(call, valid, attempted.outcome).result;
        let found = result.model.status() == Status::Succeeded;
        let settled = match (found, absent) {
            (true, _) => Some((WriteEvent::ReconcileFound, self.found(write, &result.model))),
            (false, true) => Some((WriteEvent::ReconcileAbsent, self.absent(write))),
            (false, false) => None,
        };
        let state = match settled {
            Some((event, model)) => {
                let stored = Some(self.stored(&key, &model));
                self.settle_unknown(&key, event, stored).await
            }
            None => Some(WriteState::Unknown),
        };
        let note = format!(
            "the status query of the unknown write {:?} of this operation: it is {}",
            write.name(),
            state.map_or("gone", WriteState::as_str)
        );
        result.audit.detail = Some(match result.audit.detail.take() {
            Some(detail) => format!("{note}; {detail}"),
            None => note,
        });
        let mut ended = Ended::new(result).in_state(state);
        ended.attempts = attempts;
        ended
    }

    /// The write's result from what its status query found: the same output (the builder
    /// checks the two tools share their output contract), as learned from a status query.
    fn found(&self, write: &ToolSpec, read: &ModelResult) -> ModelResult {
        let provenance = Provenance {
            source_label: write.source_label().to_owned(),
            producer_revision: write.producer_revision().to_owned(),
            ..read.provenance().clone()
        };
        let data = read.data_json().unwrap_or("null").to_owned();
        let truncated = read.execution().truncated;
        ModelResult::succeeded(data, Delivery::ReceiptReconciled, truncated, provenance)
    }

    /// The write's result when its status query found it never happened.
    fn absent(&self, write: &ToolSpec) -> ModelResult {
        let provenance = Provenance {
            source_label: write.source_label().to_owned(),
            producer_revision: write.producer_revision().to_owned(),
            resource_revision: None,
            observed_at: self.binder().now(),
            trust: Trust::UntrustedData,
        };
        let error = ModelError::new(ErrorCode::ToolError);
        ModelResult::failed(error, Delivery::Fresh, provenance)
    }
}
