//! OpenAI Responses API: `function_call` output items in, `function_call_output` items out.
//!
//! Wire shapes as of 2026-08 (openai-python `types/responses`, openai-openapi
//! `FunctionToolCall` and `FunctionCallOutputItemParam`): the correlation key is `call_id`,
//! not the item `id`; `arguments` is a JSON string; a call is run only from a `completed`
//! response and only when its item is `completed`. Streamed argument deltas carry only
//! `item_id`; the `call_id` comes from `response.output_item.added`.

use serde::Deserialize;
use serde_json::{Value, json};

use super::ProviderApi;
use super::api::impl_provider_api;
use super::emit::{self, Answer};
use super::wire::{malformed, parse, protocol, unreadable};
use super::{ProviderError, Turn};
use crate::binder::{Binder, Verified};
use crate::vocabulary::call::Principal;
use crate::vocabulary::call::{Adapter, Api, Correlation};

/// This adapter.
pub const ADAPTER: Adapter = Adapter::OPENAI_RESPONSES;

const API: Api = Api::OpenAiResponses;

#[derive(Deserialize)]
struct Response {
    id: String,
    status: Option<String>,
    #[serde(default)]
    incomplete_details: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    output: Vec<Value>,
}

#[derive(Deserialize)]
struct FunctionCall {
    #[serde(default)]
    id: Option<String>,
    call_id: String,
    name: String,
    arguments: String,
    #[serde(default)]
    status: Option<String>,
}

/// Reads the calls of a non-streamed `Response`.
///
/// # Errors
///
/// [`ProviderError`] when the response is not `completed`, a call item is not `completed`,
/// a call is malformed, or two calls share a `call_id`.
///
/// ```
/// use tool_contract::providers::openai;
///
/// let response = br#"{"id":"resp_1","status":"completed","output":[
///   {"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_order",
///    "arguments":"{\"order_ref\":\"ORDER-7\"}","status":"completed"}]}"#;
/// let turn = openai::parse_response(response)?;
/// assert_eq!(turn.calls[0].call_id, "call_1");
/// assert_eq!(turn.calls[0].arguments, br#"{"order_ref":"ORDER-7"}"#);
///
/// let cut_short = br#"{"id":"resp_2","status":"incomplete","output":[]}"#;
/// assert!(openai::parse_response(cut_short).is_err());
/// # Ok::<(), tool_contract::providers::ProviderError>(())
/// ```
pub fn parse_response(bytes: &[u8]) -> Result<Turn, ProviderError> {
    let response: Response = parse(API, bytes)?;
    check_status(&response)?;
    let mut turn = Turn::new(API, Some(response.id));
    for item in response.output {
        if item.get("type").and_then(Value::as_str) != Some("function_call") {
            continue;
        }
        let call: FunctionCall =
            serde_json::from_value(item).map_err(|error| unreadable(API, error))?;
        push_call(&mut turn, call)?;
    }
    Ok(turn)
}

fn check_status(response: &Response) -> Result<(), ProviderError> {
    match response.status.as_deref() {
        Some("completed") => Ok(()),
        Some("failed") => Err(ProviderError::Reported {
            api: API,
            message: response
                .error
                .as_ref()
                .and_then(|error| error.get("message"))
                .and_then(Value::as_str)
                .unwrap_or("the response failed")
                .to_owned(),
        }),
        other => {
            let reason = response
                .incomplete_details
                .as_ref()
                .and_then(|details| details.get("reason"))
                .and_then(Value::as_str)
                .or(other)
                .unwrap_or("no status");
            Err(ProviderError::Incomplete {
                api: API,
                reason: reason.to_owned(),
            })
        }
    }
}

fn push_call(turn: &mut Turn, call: FunctionCall) -> Result<(), ProviderError> {
    if !matches!(call.status.as_deref(), None | Some("completed")) {
        return Err(ProviderError::Incomplete {
            api: API,
            reason: format!(
                "call item {} is {}",
                call.call_id,
                call.status.unwrap_or_default()
            ),
        });
    }
    push_call_of(turn, call.call_id, call.name, call.arguments)
}

/// Adds a call to `turn`, whole or streamed alike: its `call_id` has 1 to 64 characters.
fn push_call_of(
    turn: &mut Turn,
    call_id: String,
    name: String,
    arguments: String,
) -> Result<(), ProviderError> {
    if call_id.is_empty() || call_id.len() > 64 {
        return Err(malformed(API, "a call_id must have 1 to 64 characters"));
    }
    turn.push(
        ADAPTER,
        call_id,
        Correlation::Id,
        name,
        arguments.into_bytes(),
    )
}

/// Assembles a streamed response, event by event (each the JSON `data` of one SSE event).
#[derive(Debug, Default)]
pub struct StreamAssembler {
    response_id: Option<String>,
    last_sequence: Option<u64>,
    calls: Vec<StreamedCall>,
    completed: bool,
}

#[derive(Debug)]
struct StreamedCall {
    item_id: String,
    call_id: String,
    name: String,
    arguments: String,
    done: bool,
}

#[derive(Deserialize)]
struct Event {
    #[serde(rename = "type")]
    kind: String,
    sequence_number: Option<u64>,
    #[serde(default)]
    response: Option<Response>,
    #[serde(default)]
    item: Option<Value>,
    #[serde(default)]
    item_id: Option<String>,
    #[serde(default)]
    delta: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
    #[serde(default)]
    message: Option<String>,
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
    /// [`ProviderError`] for a malformed event, a sequence number that does not increase, a
    /// delta for an item never added, arguments that disagree with their deltas, an error
    /// event, or an incomplete or failed response.
    pub fn push(&mut self, event: &[u8]) -> Result<(), ProviderError> {
        let event: Event = parse(API, event)?;
        if let Some(sequence) = event.sequence_number {
            if self.last_sequence.is_some_and(|last| sequence <= last) {
                return Err(protocol(API, "sequence_number did not increase"));
            }
            self.last_sequence = Some(sequence);
        }
        match event.kind.as_str() {
            "response.created" | "response.in_progress" => {
                if let Some(response) = event.response {
                    self.response_id = Some(response.id);
                }
            }
            "response.output_item.added" => {
                if let Some(item) = event.item.filter(is_function_call) {
                    self.item_added(item)?;
                }
            }
            "response.function_call_arguments.delta" => {
                let call = self.open_call(event.item_id.as_deref())?;
                call.arguments.push_str(&event.delta.unwrap_or_default());
            }
            "response.function_call_arguments.done" => {
                let call = self.open_call(event.item_id.as_deref())?;
                if event.arguments.as_deref() != Some(call.arguments.as_str()) {
                    return Err(protocol(API, "arguments.done disagrees with the deltas"));
                }
            }
            "response.output_item.done" => {
                if let Some(item) = event.item.filter(is_function_call) {
                    self.item_done(item)?;
                }
            }
            "response.completed" | "response.incomplete" | "response.failed" => {
                let response = event
                    .response
                    .ok_or_else(|| malformed(API, "a terminal event has no response"))?;
                check_status(&response)?;
                self.response_id = Some(response.id);
                self.completed = true;
            }
            "error" => {
                return Err(ProviderError::Reported {
                    api: API,
                    message: event.message.unwrap_or_default(),
                });
            }
            _ => {}
        }
        Ok(())
    }

    /// A `function_call` item opens: its call id and name, and arguments so far.
    fn item_added(&mut self, item: Value) -> Result<(), ProviderError> {
        let call: FunctionCall =
            serde_json::from_value(item).map_err(|error| unreadable(API, error))?;
        let item_id = call
            .id
            .ok_or_else(|| malformed(API, "an added function_call has no item id"))?;
        self.calls.push(StreamedCall {
            item_id,
            call_id: call.call_id,
            name: call.name,
            arguments: call.arguments,
            done: false,
        });
        Ok(())
    }

    /// A `function_call` item closes: it must agree with its deltas, and be complete.
    fn item_done(&mut self, item: Value) -> Result<(), ProviderError> {
        let done: FunctionCall =
            serde_json::from_value(item).map_err(|error| unreadable(API, error))?;
        let call = self.open_call(done.id.as_deref())?;
        if done.arguments != call.arguments || done.call_id != call.call_id {
            return Err(protocol(API, "output_item.done disagrees with the deltas"));
        }
        if done.status.as_deref() != Some("completed") {
            return Err(ProviderError::Incomplete {
                api: API,
                reason: format!("call item {} did not complete", done.call_id),
            });
        }
        call.done = true;
        Ok(())
    }

    fn open_call(&mut self, item_id: Option<&str>) -> Result<&mut StreamedCall, ProviderError> {
        self.calls
            .iter_mut()
            .find(|call| Some(call.item_id.as_str()) == item_id && !call.done)
            .ok_or_else(|| protocol(API, "an event names a call item that is not open"))
    }

    /// The calls of the stream, once it ended with `response.completed`.
    ///
    /// # Errors
    ///
    /// [`ProviderError::Incomplete`] when the stream stopped before that, or a call never
    /// finished; [`ProviderError::DuplicateCallId`].
    pub fn finish(self) -> Result<Turn, ProviderError> {
        if !self.completed || self.calls.iter().any(|call| !call.done) {
            return Err(ProviderError::Incomplete {
                api: API,
                reason: "the stream ended before response.completed".to_owned(),
            });
        }
        let mut turn = Turn::new(API, self.response_id);
        for call in self.calls {
            push_call_of(&mut turn, call.call_id, call.name, call.arguments)?;
        }
        Ok(turn)
    }
}

fn is_function_call(item: &Value) -> bool {
    item.get("type").and_then(Value::as_str) == Some("function_call")
}

/// OpenAI Responses, as a [`ProviderApi`]: the calls this module's functions make.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenAiResponses;

impl_provider_api! {
    OpenAiResponses reads with parse_response;
    /// The next request's `input` items: one `function_call_output` per call of `turn`, in call
    /// order, each `output` the verified model result's canonical JSON.
    writes with function_call_outputs;

    fn result_item(&self, verified: &Verified<'_>) -> Value {
        json!({
            "type": "function_call_output",
            "call_id": verified.context().call.call_id,
            "output": verified.model_json_str(),
        })
    }

    fn result_payload(&self, items: Vec<Value>) -> Value {
        Value::Array(items)
    }

    fn result_items<'p>(&self, payload: &'p Value) -> &'p [Value] {
        emit::items_in(payload, None)
    }
}
