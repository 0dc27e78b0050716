//! The reconcile pass an application runs on a schedule: every write whose owner never
//! recorded its end (its lease lapsed: the process died, the store was down when the outcome
//! came) or whose outcome is unknown is settled by its status query, without anyone calling
//! it again.

use serde::{Deserialize, Serialize};

use tracing::warn;

use super::{Call, Dispatcher, prefix, sha256_hex};
use crate::control::StoreError;
use crate::dispatch::budget::Task;
use crate::dispatch::outcome::Dispatch;
use crate::json::encoding::infallible;
use crate::vocabulary::{Api, CallContext, Correlation, Principal, ToolCall};

/// What a ledger record keeps of the call that claimed it: enough to ask its status query
/// again. Its request digest and ledger key bind it: a call written here that is not the
/// record's own reconciles nothing.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredCall {
    tenant: String,
    subject: String,
    api: Api,
    adapter_revision: String,
    response_id: Option<String>,
    call_id: String,
    correlation: Correlation,
    name: String,
    /// The arguments as the call gave them (UTF-8 JSON; a call whose arguments are not UTF-8
    /// never reaches a claim).
    arguments: String,
    operation_id: String,
    idempotency_key: Option<String>,
}

/// The call of `call`, as a record keeps it.
pub(super) fn stored_call(call: &Call<'_>) -> Option<String> {
    stored_call_of(call.principal, call.context)
}

/// `principal`'s call `context`, as a record (or a task) keeps it; `None` for arguments
/// that are not UTF-8.
pub(super) fn stored_call_of(principal: &Principal, context: &CallContext) -> Option<String> {
    let tool_call = &context.call;
    let stored = StoredCall {
        tenant: principal.tenant.clone(),
        subject: principal.subject.clone(),
        api: tool_call.api,
        adapter_revision: tool_call.adapter_revision.clone(),
        response_id: tool_call.response_id.clone(),
        call_id: tool_call.call_id.clone(),
        correlation: tool_call.correlation,
        name: tool_call.name.clone(),
        arguments: String::from_utf8(tool_call.arguments.clone()).ok()?,
        operation_id: context.operation_id.clone(),
        idempotency_key: context.idempotency_key.clone(),
    };
    Some(infallible(
        serde_json::to_string(&stored),
        "a stored call is strings and an enum",
    ))
}

/// The principal and call a record keeps, if it keeps one this build can read.
pub(super) fn read_call(stored: &str) -> Option<(Principal, CallContext)> {
    let stored: StoredCall = crate::json::depth::from_slice(stored.as_bytes()).ok()?;
    let call = ToolCall {
        api: stored.api,
        adapter_revision: stored.adapter_revision,
        response_id: stored.response_id,
        call_id: stored.call_id,
        correlation: stored.correlation,
        name: stored.name,
        arguments: stored.arguments.into_bytes(),
    };
    let context = CallContext {
        call,
        operation_id: stored.operation_id,
        idempotency_key: stored.idempotency_key,
    };
    Some((Principal::new(stored.tenant, stored.subject), context))
}

impl Dispatcher {
    /// Settles, by their status queries, the writes nobody will call again: every record in
    /// flight whose lease has lapsed (its owner died, or could not record the end because
    /// the store was busy or down) and every `unknown` one. Each is reconciled as
    /// [`reconcile`](Self::reconcile) would (admitted, never run again), under `task`; a write
    /// without a status query stays unknown, for a person
    /// ([`settle`](Self::settle)). Run it on a schedule, on any replica.
    ///
    /// Returns what each reconciliation came to, in ledger-key order. A record written before
    /// the store kept calls (schema version 3), or whose call does not read, is passed over
    /// (a warning in the trace); it waits for a call of its own or a person.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store cannot list them.
    pub async fn reconcile_stale(&self, task: &Task) -> Result<Vec<Dispatch>, StoreError> {
        let stale = self.store.stale(self.now_ms()).await?;
        let mut reconciled = Vec::with_capacity(stale.len());
        for record in stale {
            let Some((principal, context)) = record.call.as_deref().and_then(read_call) else {
                // Written before records kept their call, or not readable: it waits for a
                // call of its own, or a person.
                warn!(
                    stage = "reconcile",
                    key_sha256 = prefix(&sha256_hex(record.key.as_bytes())),
                    "a stale record keeps no readable call; passed over"
                );
                continue;
            };
            reconciled.push(self.reconcile(&principal, &context, task).await);
        }
        Ok(reconciled)
    }
}
