//! What every adapter does before it writes a result: correlate by call id, re-verify.

use serde_json::Value;

use super::Turn;
use crate::binder::{Binder, CallResult, Verified, VerifyError};
use crate::results::Status;
use crate::vocabulary::call::{Api, CallContext, Principal};

/// One call's trusted context with the result made for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The call and the ids the application gave its operation.
    pub context: CallContext,
    /// Both halves of its result.
    pub result: CallResult,
}

/// Why the next turn's result items could not be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EmitError {
    /// The registry does not accept the adapter (API and revision) that read the calls.
    #[error(
        "the registry does not accept the {api} adapter revision {revision:?}: accept it with \
         `RegistryBuilder::adapter` or `RegistryBuilder::all_adapters`"
    )]
    UnregisteredAdapter {
        /// The API.
        api: Api,
        /// The adapter revision.
        revision: String,
    },
    /// An answer is for a call that is not in the turn (another id, turn or API).
    #[error("an answer is for the call {0:?}, which is not in this turn")]
    UnknownCall(String),
    /// Two answers are for one call.
    #[error("the call {0:?} has two answers")]
    DuplicateAnswer(String),
    /// A call of the turn has no answer; providers refuse a turn with one missing.
    #[error("the call {0:?} has no answer")]
    MissingAnswer(String),
    /// An answer did not verify.
    #[error("the answer to {call_id:?} does not verify")]
    Unverified {
        /// The call.
        call_id: String,
        /// Why.
        #[source]
        error: VerifyError,
    },
}

/// Every call of `turn` with its one verified answer, in call order.
pub(super) fn verified_in_call_order<'a>(
    binder: &Binder<'_>,
    principal: &Principal,
    turn: &Turn,
    answers: &'a [Answer],
) -> Result<Vec<Verified<'a>>, EmitError> {
    for call in &turn.calls {
        if !binder
            .registry()
            .accepts_adapter(call.api, &call.adapter_revision)
        {
            return Err(EmitError::UnregisteredAdapter {
                api: call.api,
                revision: call.adapter_revision.clone(),
            });
        }
    }
    for (index, answer) in answers.iter().enumerate() {
        let call = &answer.context.call;
        if !turn.calls.contains(call) {
            return Err(EmitError::UnknownCall(call.call_id.clone()));
        }
        if answers[..index]
            .iter()
            .any(|earlier| earlier.context.call.call_id == call.call_id)
        {
            return Err(EmitError::DuplicateAnswer(call.call_id.clone()));
        }
    }
    turn.calls
        .iter()
        .map(|call| {
            let answer = answers
                .iter()
                .find(|answer| answer.context.call == *call)
                .ok_or_else(|| EmitError::MissingAnswer(call.call_id.clone()))?;
            binder
                .verify(principal, &answer.context, &answer.result)
                .map_err(|error| EmitError::Unverified {
                    call_id: call.call_id.clone(),
                    error,
                })
        })
        .collect()
}

/// `item` with `"is_error": true` when the verified result is not a success (the marker
/// Anthropic and Interactions results carry).
pub(super) fn marked_if_failed(mut item: Value, verified: &Verified<'_>) -> Value {
    if verified.model().status() != Status::Succeeded {
        item["is_error"] = Value::Bool(true);
    }
    item
}

/// The items of a payload that is an array of them, or that holds one under `member`.
pub(super) fn items_in<'p>(payload: &'p Value, member: Option<&str>) -> &'p [Value] {
    let list = match member {
        Some(member) => &payload[member],
        None => payload,
    };
    list.as_array().map_or(&[], Vec::as_slice)
}
