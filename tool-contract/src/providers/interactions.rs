//! Gemini Interactions API: `function_call` steps in, `function_result` steps out.
//!
//! Wire shapes as of 2026-08 (python-genai `_gaos/types/interactions`, the May 2026
//! migration guide, a July 2026 wire capture): an interaction waiting for results has status
//! `requires_action`; `arguments` is an object. Streamed argument pieces arrive as
//! `step.delta` `arguments_delta` (field `arguments`, formerly `partial_arguments`) and are
//! bound to the currently open `function_call` step; a delta whose `index` names another step
//! is recorded as an anomaly rather than starting a nameless call.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::ProviderApi;
use super::api::impl_provider_api;
use super::emit::{self, Answer};
use super::wire::{is_json, is_nonempty_object, malformed, object_text, parse, protocol, reported};
use super::{ProviderError, Turn};
use crate::binder::{Binder, Verified};
use crate::json::encoding::infallible;
use crate::vocabulary::call::Principal;
use crate::vocabulary::call::{Adapter, Api, Correlation};

/// This adapter.
pub const ADAPTER: Adapter = Adapter::GEMINI_INTERACTIONS;

const API: Api = Api::GeminiInteractions;

#[derive(Deserialize)]
struct Interaction<'a> {
    id: String,
    #[serde(default)]
    status: Option<String>,
    #[serde(borrow, default)]
    steps: Vec<Step<'a>>,
}

#[derive(Deserialize)]
struct Step<'a> {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
}

/// Reads the calls of a non-streamed `Interaction`.
///
/// # Errors
///
/// [`ProviderError`] when calls are present but the status is not `requires_action`, a step
/// is malformed, or two calls share an id.
///
/// ```
/// use tool_contract::providers::interactions;
///
/// let interaction = br#"{"id":"int_1","status":"requires_action","steps":[
///   {"type":"thought","signature":"opaque"},
///   {"type":"function_call","id":"fc1","name":"get_order","arguments":{"order_ref":"ORDER-7"}}]}"#;
/// let turn = interactions::parse_interaction(interaction)?;
/// assert_eq!((turn.calls[0].call_id.as_str(), turn.response_id.as_deref()), ("fc1", Some("int_1")));
/// # Ok::<(), tool_contract::providers::ProviderError>(())
/// ```
pub fn parse_interaction(bytes: &[u8]) -> Result<Turn, ProviderError> {
    let interaction: Interaction<'_> = parse(API, bytes)?;
    let mut turn = Turn::new(API, Some(interaction.id));
    for step in interaction.steps {
        if step.kind != "function_call" {
            continue;
        }
        let (id, name) = id_and_name(step.id, step.name)?;
        turn.push(
            ADAPTER,
            id,
            Correlation::Id,
            name,
            object_text(step.arguments),
        )?;
    }
    check_status(&turn, interaction.status.as_deref())?;
    Ok(turn)
}

fn id_and_name(
    id: Option<String>,
    name: Option<String>,
) -> Result<(String, String), ProviderError> {
    match (id, name) {
        (Some(id), Some(name)) if !id.is_empty() && !name.is_empty() => Ok((id, name)),
        _ => Err(malformed(
            API,
            "a function_call step needs an id and a name",
        )),
    }
}

fn check_status(turn: &Turn, status: Option<&str>) -> Result<(), ProviderError> {
    match status {
        _ if turn.calls.is_empty() => Ok(()),
        Some("requires_action") => Ok(()),
        Some("failed") => Err(ProviderError::Reported {
            api: API,
            message: "the interaction failed".to_owned(),
        }),
        other => Err(ProviderError::Incomplete {
            api: API,
            reason: format!("status is {}", other.unwrap_or("missing")),
        }),
    }
}

/// Assembles a streamed interaction, event by event (each the JSON `data` of one SSE event).
#[derive(Debug, Default)]
pub struct StreamAssembler {
    interaction_id: Option<String>,
    status: Option<String>,
    /// Whether `interaction.completed` arrived: a stream cut before it is no turn, even one
    /// without calls so far (they may have been still to come).
    completed: bool,
    open: Option<OpenCall>,
    calls: Vec<(String, String, String)>,
    anomalies: Vec<String>,
}

#[derive(Debug)]
struct OpenCall {
    index: u64,
    id: String,
    name: String,
    start_arguments: String,
    deltas: Option<String>,
}

#[derive(Deserialize)]
struct Event<'a> {
    event_type: String,
    #[serde(default)]
    index: Option<u64>,
    #[serde(borrow, default)]
    step: Option<Step<'a>>,
    #[serde(default)]
    delta: Option<Value>,
    #[serde(borrow, default)]
    interaction: Option<&'a RawValue>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct InteractionHead {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    status: Option<String>,
}

impl StreamAssembler {
    /// An assembler that has seen nothing.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one event.
    ///
    /// # Errors
    ///
    /// [`ProviderError`] for a malformed event, an argument delta with no open call, a call
    /// whose start carries arguments and which also gets deltas, or an `error` event.
    pub fn push(&mut self, event: &[u8]) -> Result<(), ProviderError> {
        let event: Event<'_> = parse(API, event)?;
        match event.event_type.as_str() {
            "interaction.created" | "interaction.completed" | "interaction.status_update" => {
                self.completed |= event.event_type == "interaction.completed";
                if let Some(raw) = event.interaction {
                    let head: InteractionHead = parse(API, raw.get().as_bytes())?;
                    self.interaction_id = head.id.or(self.interaction_id.take());
                    if event.event_type == "interaction.completed" {
                        self.status = head.status;
                    }
                }
            }
            "step.start" => {
                let step = event
                    .step
                    .ok_or_else(|| malformed(API, "step.start has no step"))?;
                if step.kind == "function_call" {
                    self.call_started(step, event.index.unwrap_or_default())?;
                }
            }
            "step.delta" => {
                let delta = event.delta.unwrap_or_default();
                if delta.get("type").and_then(Value::as_str) == Some("arguments_delta") {
                    self.arguments_delta(&delta, event.index)?;
                }
            }
            "step.stop" => {
                if let Some(open) = self.open.take_if(|open| Some(open.index) == event.index) {
                    self.call_stopped(open)?;
                }
            }
            "error" => return Err(reported(API, event.error.as_ref())),
            _ => {}
        }
        Ok(())
    }

    /// A `function_call` step starts, at step `index`: no other call may be open.
    fn call_started(&mut self, step: Step<'_>, index: u64) -> Result<(), ProviderError> {
        if let Some(open) = &self.open {
            return Err(protocol(API, format!("call {} never stopped", open.id)));
        }
        let (id, name) = id_and_name(step.id, step.name)?;
        let start_arguments = infallible(
            String::from_utf8(object_text(step.arguments)),
            "JSON text read from a `str` is UTF-8",
        );
        self.open = Some(OpenCall {
            index,
            id,
            name,
            start_arguments,
            deltas: None,
        });
        Ok(())
    }

    /// A piece of the open call's arguments, bound to it whatever step index it names (an
    /// index that differs is recorded as an anomaly).
    fn arguments_delta(&mut self, delta: &Value, index: Option<u64>) -> Result<(), ProviderError> {
        let piece = delta
            .get("arguments")
            .or_else(|| delta.get("partial_arguments"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let open = self
            .open
            .as_mut()
            .ok_or_else(|| protocol(API, "an arguments_delta with no open call"))?;
        if index != Some(open.index) {
            self.anomalies.push(format!(
                "arguments_delta index {index:?} bound to the open call {} at index {}",
                open.id, open.index
            ));
        }
        open.deltas.get_or_insert_with(String::new).push_str(piece);
        Ok(())
    }

    /// The open call stops: its arguments came at its start or in deltas, never both.
    fn call_stopped(&mut self, open: OpenCall) -> Result<(), ProviderError> {
        let arguments = match open.deltas {
            Some(_) if is_nonempty_object(&open.start_arguments) => {
                return Err(protocol(
                    API,
                    format!("call {} has arguments at start and in deltas", open.id),
                ));
            }
            Some(deltas) if !is_json(&deltas) => {
                return Err(protocol(
                    API,
                    format!("the arguments of call {} are not JSON", open.id),
                ));
            }
            Some(deltas) => deltas,
            None => open.start_arguments,
        };
        self.calls.push((open.id, open.name, arguments));
        Ok(())
    }

    /// The calls of the stream, once `interaction.completed` said `requires_action`.
    ///
    /// # Errors
    ///
    /// [`ProviderError::Incomplete`] when the stream ended before `interaction.completed`, a
    /// call never stopped, or the interaction ended otherwise;
    /// [`ProviderError::DuplicateCallId`].
    pub fn finish(self) -> Result<Turn, ProviderError> {
        if !self.completed {
            return Err(ProviderError::Incomplete {
                api: API,
                reason: "the stream ended before interaction.completed".to_owned(),
            });
        }
        if let Some(open) = self.open {
            return Err(ProviderError::Incomplete {
                api: API,
                reason: format!("call {} never stopped", open.id),
            });
        }
        let mut turn = Turn::new(API, self.interaction_id);
        turn.anomalies = self.anomalies;
        for (id, name, arguments) in self.calls {
            turn.push(ADAPTER, id, Correlation::Id, name, arguments.into_bytes())?;
        }
        check_status(&turn, self.status.as_deref())?;
        Ok(turn)
    }
}

/// Gemini Interactions, as a [`ProviderApi`]: the calls this module's functions make.
#[derive(Debug, Clone, Copy, Default)]
pub struct GeminiInteractions;

impl_provider_api! {
    GeminiInteractions reads with parse_interaction;
    /// The next request's `input`: one `function_result` step per call of `turn`, in call order,
    /// with the call's id and name, the verified model result's canonical JSON as `result`, and
    /// `is_error` on failures.
    writes with function_results;

    fn result_item(&self, verified: &Verified<'_>) -> Value {
        let call = &verified.context().call;
        let step = json!({
            "type": "function_result",
            "call_id": call.call_id,
            "name": call.name,
            "result": verified.model_json_str(),
        });
        emit::marked_if_failed(step, verified)
    }

    fn result_payload(&self, items: Vec<Value>) -> Value {
        Value::Array(items)
    }

    fn result_items<'p>(&self, payload: &'p Value) -> &'p [Value] {
        emit::items_in(payload, None)
    }
}
