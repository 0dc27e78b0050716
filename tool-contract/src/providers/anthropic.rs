//! Anthropic Messages API: `tool_use` blocks in, one user message of `tool_result` blocks out.
//!
//! Wire shapes as of 2026-08 (anthropic-sdk-python `types`, the "Handle tool calls" and
//! "Streaming Messages" docs): calls run only when `stop_reason` is `tool_use`; ids match
//! `^[a-zA-Z0-9_-]+$`; streamed `partial_json` pieces are joined per block `index` and an
//! empty join is `{}`; the results all go, first, in the one user message that follows.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::ProviderApi;
use super::api::impl_provider_api;
use super::emit::{self, Answer};
use super::wire::{is_json, malformed, object_text, parse, protocol, reported};
use super::{ProviderError, Turn};
use crate::binder::{Binder, Verified};
use crate::vocabulary::call::Principal;
use crate::vocabulary::call::{Adapter, Api, Correlation};

/// This adapter.
pub const ADAPTER: Adapter = Adapter::ANTHROPIC_MESSAGES;

const API: Api = Api::AnthropicMessages;

#[derive(Deserialize)]
struct Message<'a> {
    id: String,
    #[serde(borrow, default)]
    content: Vec<&'a RawValue>,
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(borrow, default)]
    input: Option<&'a RawValue>,
}

/// Reads the calls of a non-streamed assistant `Message`.
///
/// # Errors
///
/// [`ProviderError`] when the message has `tool_use` blocks but did not stop for
/// `tool_use` (e.g. `max_tokens` cut the last one short), a block is malformed, or two share
/// an id.
pub fn parse_message(bytes: &[u8]) -> Result<Turn, ProviderError> {
    let message: Message<'_> = parse(API, bytes)?;
    let mut turn = Turn::new(API, Some(message.id));
    for raw in message.content {
        let block: Block<'_> = parse(API, raw.get().as_bytes())?;
        if block.kind != "tool_use" {
            continue;
        }
        let (id, name) = id_and_name(block.id, block.name)?;
        turn.push(ADAPTER, id, Correlation::Id, name, object_text(block.input))?;
    }
    check_stop_reason(&turn, message.stop_reason.as_deref())?;
    Ok(turn)
}

fn id_and_name(
    id: Option<String>,
    name: Option<String>,
) -> Result<(String, String), ProviderError> {
    let id = id.ok_or_else(|| malformed(API, "a tool_use block has no id"))?;
    let valid = !id.is_empty()
        && id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-');
    if !valid {
        return Err(malformed(API, "a tool_use id must match ^[a-zA-Z0-9_-]+$"));
    }
    let name = name.ok_or_else(|| malformed(API, "a tool_use block has no name"))?;
    Ok((id, name))
}

fn check_stop_reason(turn: &Turn, stop_reason: Option<&str>) -> Result<(), ProviderError> {
    if turn.calls.is_empty() || stop_reason == Some("tool_use") {
        return Ok(());
    }
    Err(ProviderError::Incomplete {
        api: API,
        reason: format!("stop_reason is {}", stop_reason.unwrap_or("missing")),
    })
}

/// Assembles a streamed message, event by event (each the JSON `data` of one SSE event).
///
/// ```
/// use tool_contract::providers::anthropic::StreamAssembler;
///
/// let events = [
///     r#"{"type":"message_start","message":{"id":"msg_1","content":[],"stop_reason":null}}"#,
///     r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_order","input":{}}}"#,
///     r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"order_ref\": \"ORD"}}"#,
///     r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"ER-7\"}"}}"#,
///     r#"{"type":"content_block_stop","index":0}"#,
///     r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"}}"#,
///     r#"{"type":"message_stop"}"#,
/// ];
/// let mut assembler = StreamAssembler::new();
/// for event in events {
///     assembler.push(event.as_bytes())?;
/// }
/// let turn = assembler.finish()?;
/// assert_eq!(turn.calls[0].arguments, br#"{"order_ref": "ORDER-7"}"#);
/// # Ok::<(), tool_contract::providers::ProviderError>(())
/// ```
#[derive(Debug, Default)]
pub struct StreamAssembler {
    message_id: Option<String>,
    blocks: Vec<StreamedBlock>,
    stop_reason: Option<String>,
    stopped: bool,
}

#[derive(Debug)]
struct StreamedBlock {
    index: u64,
    /// `Some` for `tool_use` blocks: id and name.
    call: Option<(String, String)>,
    partial_json: String,
    open: bool,
}

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    index: Option<u64>,
    #[serde(borrow, default)]
    message: Option<&'a RawValue>,
    #[serde(borrow, default)]
    content_block: Option<&'a RawValue>,
    #[serde(default)]
    delta: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

impl StreamAssembler {
    /// An assembler that has seen nothing.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one event. Unknown event types are tolerated, as the API reserves new ones.
    ///
    /// # Errors
    ///
    /// [`ProviderError`] for a malformed event, a delta for a block never started or already
    /// stopped, or an `error` event.
    pub fn push(&mut self, event: &[u8]) -> Result<(), ProviderError> {
        let event: Event<'_> = parse(API, event)?;
        match event.kind.as_str() {
            "message_start" => {
                let message = event
                    .message
                    .ok_or_else(|| malformed(API, "message_start has no message"))?;
                let message: Message<'_> = parse(API, message.get().as_bytes())?;
                self.message_id = Some(message.id);
            }
            "content_block_start" => {
                let index = event
                    .index
                    .ok_or_else(|| malformed(API, "a block has no index"))?;
                let block = event
                    .content_block
                    .ok_or_else(|| malformed(API, "content_block_start has no block"))?;
                self.block_started(index, block)?;
            }
            "content_block_delta" => {
                let block = self.open_block(event.index)?;
                let delta = event.delta.unwrap_or_default();
                if delta.get("type").and_then(Value::as_str) == Some("input_json_delta") {
                    if block.call.is_none() {
                        return Err(protocol(
                            API,
                            "input_json_delta on a block that is no tool_use",
                        ));
                    }
                    let piece = delta
                        .get("partial_json")
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    block.partial_json.push_str(piece);
                }
            }
            "content_block_stop" => self.open_block(event.index)?.open = false,
            "message_delta" => {
                if let Some(reason) = event
                    .delta
                    .as_ref()
                    .and_then(|delta| delta.get("stop_reason"))
                    .and_then(Value::as_str)
                {
                    self.stop_reason = Some(reason.to_owned());
                }
            }
            "message_stop" => self.stopped = true,
            "error" => return Err(reported(API, event.error.as_ref())),
            _ => {}
        }
        Ok(())
    }

    /// A content block starts at `index` (once only); a `tool_use` block is a call.
    fn block_started(&mut self, index: u64, block: &RawValue) -> Result<(), ProviderError> {
        if self.blocks.iter().any(|block| block.index == index) {
            return Err(protocol(API, format!("block {index} started twice")));
        }
        let block: Block<'_> = parse(API, block.get().as_bytes())?;
        let call = match block.kind.as_str() {
            "tool_use" => Some(id_and_name(block.id, block.name)?),
            _ => None,
        };
        self.blocks.push(StreamedBlock {
            index,
            call,
            partial_json: String::new(),
            open: true,
        });
        Ok(())
    }

    fn open_block(&mut self, index: Option<u64>) -> Result<&mut StreamedBlock, ProviderError> {
        self.blocks
            .iter_mut()
            .find(|block| Some(block.index) == index && block.open)
            .ok_or_else(|| protocol(API, "an event names a block that is not open"))
    }

    /// The calls of the stream, once it reached `message_stop` with `stop_reason` `tool_use`.
    ///
    /// # Errors
    ///
    /// [`ProviderError::Incomplete`] when the stream stopped early or for another reason
    /// (such as `max_tokens`); [`ProviderError::Protocol`] when a block's joined input is not
    /// JSON; [`ProviderError::DuplicateCallId`].
    pub fn finish(self) -> Result<Turn, ProviderError> {
        if !self.stopped || self.blocks.iter().any(|block| block.open) {
            return Err(ProviderError::Incomplete {
                api: API,
                reason: "the stream ended before message_stop".to_owned(),
            });
        }
        let mut turn = Turn::new(API, self.message_id);
        for block in self.blocks {
            let Some((id, name)) = block.call else {
                continue;
            };
            let input = if block.partial_json.is_empty() {
                "{}".to_owned()
            } else {
                block.partial_json
            };
            if !is_json(&input) {
                return Err(protocol(API, format!("the input of {id} is not JSON")));
            }
            turn.push(ADAPTER, id, Correlation::Id, name, input.into_bytes())?;
        }
        check_stop_reason(&turn, self.stop_reason.as_deref())?;
        Ok(turn)
    }
}

/// Anthropic Messages, as a [`ProviderApi`]: the calls this module's functions make.
#[derive(Debug, Clone, Copy, Default)]
pub struct AnthropicMessages;

impl_provider_api! {
    AnthropicMessages reads with parse_message;
    /// The next request's user message: one `tool_result` block per call of `turn`, in call
    /// order and before anything else, each with the verified model result's canonical JSON as a
    /// text block and `is_error` on failures.
    writes with tool_results_message;

    fn result_item(&self, verified: &Verified<'_>) -> Value {
        let block = json!({
            "type": "tool_result",
            "tool_use_id": verified.context().call.call_id,
            "content": [{ "type": "text", "text": verified.model_json_str() }],
        });
        emit::marked_if_failed(block, verified)
    }

    fn result_payload(&self, items: Vec<Value>) -> Value {
        json!({ "role": "user", "content": items })
    }

    fn result_items<'p>(&self, payload: &'p Value) -> &'p [Value] {
        emit::items_in(payload, Some("content"))
    }
}
