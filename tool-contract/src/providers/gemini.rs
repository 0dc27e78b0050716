//! Gemini `generateContent`: `functionCall` parts in, one user content of `functionResponse`
//! parts out.
//!
//! Wire shapes as of 2026-08 (python-genai `types.py`, the function-calling docs): a turn asks
//! for tools by carrying `functionCall` parts (its `finishReason` is plain `STOP`; any other
//! reason with calls present means they may be cut short); `args` is an object; `id` is
//! optional in the schema. A call without an id is matched by name only when every name in
//! the turn is unique, otherwise the turn is refused: never by position. Streamed chunks are
//! whole responses whose parts are concatenated.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::ProviderApi;
use super::api::impl_provider_api;
use super::emit::{self, Answer};
use super::wire::{malformed, object_text, parse};
use super::{ProviderError, Turn};
use crate::binder::{Binder, Verified};
use crate::json::depth;
use crate::json::encoding::infallible;
use crate::results::execution::Status;
use crate::vocabulary::call::Principal;
use crate::vocabulary::call::{Adapter, Api, Correlation};

/// This adapter.
pub const ADAPTER: Adapter = Adapter::GEMINI_GENERATE_CONTENT;

const API: Api = Api::GeminiGenerateContent;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Response<'a> {
    #[serde(default)]
    response_id: Option<String>,
    #[serde(borrow, default)]
    candidates: Vec<Candidate<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate<'a> {
    #[serde(borrow, default)]
    content: Option<Content<'a>>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Content<'a> {
    #[serde(borrow, default)]
    parts: Vec<Part<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Part<'a> {
    #[serde(borrow, default)]
    function_call: Option<FunctionCall<'a>>,
}

#[derive(Deserialize)]
struct FunctionCall<'a> {
    #[serde(default)]
    id: Option<String>,
    name: String,
    #[serde(borrow, default)]
    args: Option<&'a RawValue>,
}

struct PendingCall {
    id: Option<String>,
    name: String,
    arguments: Vec<u8>,
}

/// Reads the calls of a non-streamed `GenerateContentResponse` (its first candidate).
///
/// # Errors
///
/// [`ProviderError`] when calls are present but `finishReason` is not `STOP`, a call is
/// malformed, two share an id, or a call without an id shares its name with another.
///
/// ```
/// use tool_contract::providers::{Correlation, gemini};
///
/// // No ids, unique names: matched by name.
/// let response = br#"{"candidates":[{"finishReason":"STOP","content":{"parts":[
///   {"functionCall":{"name":"get_order","args":{"order_ref":"ORDER-7"}}}]}}]}"#;
/// let turn = gemini::parse_response(response)?;
/// assert_eq!(turn.calls[0].correlation, Correlation::Name);
///
/// // No ids, one name twice: refused, never matched by position.
/// let ambiguous = br#"{"candidates":[{"finishReason":"STOP","content":{"parts":[
///   {"functionCall":{"name":"get_order","args":{}}},{"functionCall":{"name":"get_order","args":{}}}]}}]}"#;
/// assert!(gemini::parse_response(ambiguous).is_err());
/// # Ok::<(), tool_contract::providers::ProviderError>(())
/// ```
pub fn parse_response(bytes: &[u8]) -> Result<Turn, ProviderError> {
    let mut assembler = StreamAssembler::new();
    assembler.push(bytes)?;
    // A whole response without a finish reason and without calls (a blocked prompt) is a
    // turn with nothing to run; a stream must end with one.
    assembler.turn(false)
}

/// Assembles `streamGenerateContent` chunks (each a whole response) in order.
#[derive(Default)]
pub struct StreamAssembler {
    response_id: Option<String>,
    calls: Vec<PendingCall>,
    finish_reason: Option<String>,
}

impl std::fmt::Debug for StreamAssembler {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("StreamAssembler")
            .field("response_id", &self.response_id)
            .field("calls", &self.calls.len())
            .field("finish_reason", &self.finish_reason)
            .finish()
    }
}

impl StreamAssembler {
    /// An assembler that has seen nothing.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one chunk.
    ///
    /// # Errors
    ///
    /// [`ProviderError`] for a malformed chunk, or one of another response.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), ProviderError> {
        let response: Response<'_> = parse(API, chunk)?;
        if let Some(id) = response.response_id {
            match &self.response_id {
                Some(seen) if *seen != id => {
                    return Err(malformed(API, "chunks of two responses are mixed"));
                }
                _ => self.response_id = Some(id),
            }
        }
        let Some(candidate) = response.candidates.into_iter().next() else {
            return Ok(());
        };
        for part in candidate
            .content
            .map(|content| content.parts)
            .unwrap_or_default()
        {
            if let Some(call) = part.function_call {
                if call.name.is_empty() {
                    return Err(malformed(API, "a functionCall has no name"));
                }
                self.calls.push(PendingCall {
                    id: call.id,
                    name: call.name,
                    arguments: object_text(call.args),
                });
            }
        }
        if candidate.finish_reason.is_some() {
            self.finish_reason = candidate.finish_reason;
        }
        Ok(())
    }

    /// The calls of the turn, once a chunk carried its finish reason.
    ///
    /// # Errors
    ///
    /// As [`parse_response`], and [`ProviderError::Incomplete`] when no chunk carried a
    /// finish reason.
    pub fn finish(self) -> Result<Turn, ProviderError> {
        self.turn(true)
    }

    /// The turn; `stream`: the chunks were a stream, which is cut short until one carries a
    /// finish reason, even with no calls so far (they may have been still to come).
    fn turn(self, stream: bool) -> Result<Turn, ProviderError> {
        let ended = self.finish_reason.is_some() || !stream;
        if !ended || (!self.calls.is_empty() && self.finish_reason.as_deref() != Some("STOP")) {
            return Err(ProviderError::Incomplete {
                api: API,
                reason: format!(
                    "finishReason is {}",
                    self.finish_reason.as_deref().unwrap_or("missing")
                ),
            });
        }
        let matched_by_name = self
            .calls
            .iter()
            .any(|call| call.id.as_deref().is_none_or(str::is_empty));
        let response_id = match self.response_id {
            None if matched_by_name => Some(content_id(&self.calls)),
            response_id => response_id,
        };
        let mut turn = Turn::new(API, response_id);
        for (index, call) in self.calls.iter().enumerate() {
            let (call_id, correlation) = match &call.id {
                Some(id) if !id.is_empty() => (id.clone(), Correlation::Id),
                _ => {
                    let shared = self
                        .calls
                        .iter()
                        .enumerate()
                        .any(|(other, pending)| other != index && pending.name == call.name);
                    if shared {
                        return Err(ProviderError::Uncorrelatable {
                            api: API,
                            name: call.name.clone(),
                        });
                    }
                    (call.name.clone(), Correlation::Name)
                }
            };
            turn.push(
                ADAPTER,
                call_id,
                correlation,
                call.name.clone(),
                call.arguments.clone(),
            )?;
        }
        Ok(turn)
    }
}

/// The id of a turn whose response has no `responseId` and whose calls are matched by name:
/// `sha256:` and the SHA-256 of its calls (each name and argument bytes, in order), so that the
/// same turn read again names each call's operation alike (one write, however often the turn
/// is dispatched), where a fresh name per dispatch would run it again. Two turns with the same
/// calls are one turn then: a provider that sends `responseId` tells them apart.
fn content_id(calls: &[PendingCall]) -> String {
    let mut digest = Sha256::new();
    for call in calls {
        for part in [call.name.as_bytes(), &call.arguments] {
            digest.update(part.len().to_be_bytes());
            digest.update(part);
        }
    }
    format!("sha256:{}", hex::encode(digest.finalize()))
}

/// Gemini `generateContent`, as a [`ProviderApi`]: the calls this module's functions make.
#[derive(Debug, Clone, Copy, Default)]
pub struct GeminiGenerateContent;

impl_provider_api! {
    GeminiGenerateContent reads with parse_response;
    /// The next request's user content: one `functionResponse` part per call of `turn`, in call
    /// order, with the call's `name`, its `id` (left out for a call that had none), and
    /// `response` an object: `{"output": result}` on success, `{"error": result}` otherwise.
    writes with function_responses;

    fn result_item(&self, verified: &Verified<'_>) -> Value {
        let call = &verified.context().call;
        // Read back from the verified canonical bytes, so the object is exactly what was
        // verified.
        let model = infallible(
            depth::from_slice::<Value>(verified.model_json()),
            "a verified model result is canonical JSON within its contract's depth",
        );
        let key = match verified.model().status() {
            Status::Succeeded => "output",
            Status::Failed | Status::Unknown => "error",
        };
        let mut response = json!({ "name": call.name, "response": { key: model } });
        if call.correlation == Correlation::Id {
            response["id"] = Value::String(call.call_id.clone());
        }
        json!({ "functionResponse": response })
    }

    fn result_payload(&self, items: Vec<Value>) -> Value {
        json!({ "role": "user", "parts": items })
    }

    fn result_items<'p>(&self, payload: &'p Value) -> &'p [Value] {
        emit::items_in(payload, Some("parts"))
    }
}
