//! Provider turns for the fuzz targets: a plan of calls written as each API's whole body and as
//! its stream of events, so that a target can compare the two readers; and the invariants of
//! any turn a reader accepted.
//!
//! The wire shapes are the providers' own (see `tests/vectors/providers/` and PROVIDERS.md).

use std::collections::HashSet;

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use serde_json::{Map, Value, json};
use tool_contract::json::canonical;
use tool_contract::providers::{ProviderApi, ProviderError, Turn};

/// What a target reads: bytes as they come (seeded from the fixtures), or a planned turn.
#[derive(Arbitrary, Debug)]
pub enum Input {
    /// A whole body, and the same bytes split at newlines as a stream's events.
    Raw(Vec<u8>),
    /// A turn written both ways.
    Planned(Plan),
}

/// A turn: some calls, maybe a text part, how finely argument text is split into deltas, and
/// one change made to the stream.
#[derive(Arbitrary, Debug)]
pub struct Plan {
    /// The calls, in order.
    pub calls: Vec<PlannedCall>,
    /// Text before the calls.
    pub text: Option<String>,
    /// Argument text is sent in pieces of `split % 7 + 1` characters (or more, for long text).
    pub split: u8,
    /// What happens to the stream on its way.
    pub change: Option<Change>,
}

/// One call.
#[derive(Arbitrary, Debug)]
pub struct PlannedCall {
    /// Its id's number (equal numbers make equal ids).
    pub id: u8,
    /// Which of three names.
    pub name: u8,
    /// Its arguments: keys from a small set, so that they repeat.
    pub arguments: Vec<(u8, Argument)>,
}

/// One argument value.
#[derive(Arbitrary, Debug)]
pub enum Argument {
    /// A string.
    Text(String),
    /// A number.
    Number(i32),
    /// A fraction.
    Fraction(i16, u8),
    /// A switch.
    Flag(bool),
    /// Nothing.
    Null,
    /// A list.
    List(Vec<i16>),
}

/// A change to the stream's events.
#[derive(Arbitrary, Debug)]
pub enum Change {
    /// One event lost.
    Drop(u8),
    /// One event delivered twice.
    Duplicate(u8),
    /// Two neighbours delivered out of order.
    Swap(u8),
    /// The stream cut after this many events.
    Cut(u8),
}

const NAMES: [&str; 3] = ["get_weather", "get_time", "search_kb"];
const KEYS: [&str; 5] = ["city", "timezone", "q", "n", "opts"];

impl PlannedCall {
    /// The tool's name.
    pub fn name(&self) -> &'static str {
        NAMES[usize::from(self.name) % NAMES.len()]
    }

    /// The arguments as a JSON object.
    pub fn arguments(&self) -> Value {
        let mut object = Map::new();
        for (key, value) in &self.arguments {
            let value = match value {
                Argument::Text(text) => json!(text),
                Argument::Number(number) => json!(number),
                Argument::Fraction(whole, part) => {
                    json!(f64::from(*whole) + f64::from(*part) / 256.0)
                }
                Argument::Flag(flag) => json!(flag),
                Argument::Null => Value::Null,
                Argument::List(items) => json!(items),
            };
            object.insert(KEYS[usize::from(*key) % KEYS.len()].to_owned(), value);
        }
        Value::Object(object)
    }

    /// The arguments as JSON text.
    pub fn arguments_text(&self) -> String {
        self.arguments().to_string()
    }
}

impl Plan {
    /// The calls written: at most four, so that an execution stays cheap.
    pub fn calls(&self) -> &[PlannedCall] {
        &self.calls[..self.calls.len().min(4)]
    }

    /// `text` in the pieces a stream sends it in (never empty: one empty piece), at most
    /// about four, so that an execution stays cheap.
    pub fn pieces(&self, text: &str) -> Vec<String> {
        let chars: Vec<char> = text.chars().collect();
        let size = (usize::from(self.split % 7) + 1).max(chars.len().div_ceil(4));
        if chars.is_empty() {
            return vec![String::new()];
        }
        chars
            .chunks(size)
            .map(|piece| piece.iter().collect())
            .collect()
    }
}

/// One API's writing of a plan: its whole body, and its events in order.
pub type Write = fn(&Plan) -> (Value, Vec<Value>);

/// Reads `input` both ways with `api`; see the module docs. `json_arguments`: the API sends
/// arguments as JSON (not as a string the model wrote), so accepted ones must be JSON.
pub fn check(api: &dyn ProviderApi, input: &Input, write: Write, json_arguments: bool) {
    match input {
        Input::Raw(bytes) => {
            if let Ok(turn) = api.parse(bytes) {
                assert_sound(&turn, json_arguments);
            }
            let events: Vec<&[u8]> = bytes.split(|&byte| byte == b'\n').collect();
            if let Ok(turn) = stream(api, &events) {
                assert_sound(&turn, json_arguments);
            }
        }
        Input::Planned(plan) => {
            let (body, events) = write(plan);
            let body = serde_json::to_vec(&body).unwrap();
            let events: Vec<Vec<u8>> = events
                .iter()
                .map(|event| serde_json::to_vec(event).unwrap())
                .collect();
            let whole = api.parse(&body);
            let streamed = stream(api, &events);
            match (&whole, &streamed) {
                (Ok(whole), Ok(streamed)) => {
                    assert_sound(whole, json_arguments);
                    assert_eq!(calls(whole), calls(streamed), "stream and body disagree");
                }
                (Err(_), Err(_)) => {}
                _ => panic!("one reader accepted what the other refused: {whole:?} / {streamed:?}"),
            }
            if let Some(change) = &plan.change {
                check_changed(api, &events, change, whole.is_ok(), json_arguments);
            }
        }
    }
}

fn check_changed(
    api: &dyn ProviderApi,
    events: &[Vec<u8>],
    change: &Change,
    whole_ok: bool,
    json_arguments: bool,
) {
    let mut changed: Vec<Vec<u8>> = events.to_vec();
    let at = |index: u8| usize::from(index) % events.len().max(1);
    match *change {
        Change::Drop(index) if !events.is_empty() => {
            changed.remove(at(index));
        }
        Change::Duplicate(index) if !events.is_empty() => {
            changed.insert(at(index), events[at(index)].clone());
        }
        Change::Swap(index) if events.len() > 1 => {
            let first = usize::from(index) % (events.len() - 1);
            changed.swap(first, first + 1);
        }
        Change::Cut(length) => {
            let length = usize::from(length) % events.len().max(1);
            changed.truncate(length);
            // A stream cut before its last event never yields a turn.
            if whole_ok {
                assert!(
                    stream(api, &changed).is_err(),
                    "a stream cut after {length} of {} events was accepted",
                    events.len()
                );
            }
        }
        _ => return,
    }
    if let Ok(turn) = stream(api, &changed) {
        assert_sound(&turn, json_arguments);
    }
}

fn stream(api: &dyn ProviderApi, events: &[impl AsRef<[u8]>]) -> Result<Turn, ProviderError> {
    let mut assembler = api.stream();
    for event in events {
        assembler.push(event.as_ref())?;
    }
    assembler.finish()
}

/// What holds of every turn a reader accepted: each call has an id of its own and a name;
/// where the API sends arguments as JSON, they are one JSON text (a model's own text may be
/// anything: the dispatcher refuses it per call).
pub fn assert_sound(turn: &Turn, json_arguments: bool) {
    let mut ids = HashSet::new();
    for call in &turn.calls {
        assert!(!call.call_id.is_empty(), "a call without an id");
        assert!(
            ids.insert(call.call_id.as_str()),
            "two calls share the id {}",
            call.call_id
        );
        assert!(!call.name.is_empty(), "a call without a name");
        if json_arguments {
            assert!(
                is_json(&call.arguments),
                "arguments that are not JSON: {:?}",
                String::from_utf8_lossy(&call.arguments)
            );
        }
    }
}

/// Whether `bytes` are one JSON text, at any depth.
fn is_json(bytes: &[u8]) -> bool {
    use serde::Deserialize;
    let mut reader = serde_json::Deserializer::from_slice(bytes);
    reader.disable_recursion_limit();
    serde::de::IgnoredAny::deserialize(&mut reader).is_ok() && reader.end().is_ok()
}

/// Each call's id, name and canonical arguments.
fn calls(turn: &Turn) -> Vec<(String, String, Vec<u8>)> {
    turn.calls
        .iter()
        .map(|call| {
            let arguments = canonical::canonicalize(&call.arguments).unwrap_or_default();
            (call.call_id.clone(), call.name.clone(), arguments)
        })
        .collect()
}

/// OpenAI Responses: output items; the stream's items added, argument deltas, done events, and
/// `response.completed` carrying the whole response.
pub fn openai(plan: &Plan) -> (Value, Vec<Value>) {
    let mut output = Vec::new();
    let mut events = Vec::new();
    let mut sequence = 0_u32;
    let mut event = |mut value: Value, events: &mut Vec<Value>| {
        value["sequence_number"] = json!(sequence);
        sequence += 1;
        events.push(value);
    };
    event(
        json!({"type": "response.created", "response": {"id": "resp_1", "object": "response", "status": "in_progress", "output": []}}),
        &mut events,
    );
    if let Some(text) = &plan.text {
        let index = output.len();
        let item = json!({"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]});
        event(
            json!({"type": "response.output_item.added", "output_index": index,
            "item": {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress", "content": []}}),
            &mut events,
        );
        event(
            json!({"type": "response.output_item.done", "output_index": index, "item": item}),
            &mut events,
        );
        output.push(item);
    }
    for (number, call) in plan.calls().iter().enumerate() {
        let index = output.len();
        let item_id = format!("fc_{number}");
        let arguments = call.arguments_text();
        let call_id = format!("call_{}", call.id);
        event(
            json!({"type": "response.output_item.added", "output_index": index,
            "item": {"id": item_id, "type": "function_call", "status": "in_progress",
                     "call_id": call_id, "name": call.name(), "arguments": ""}}),
            &mut events,
        );
        for piece in plan.pieces(&arguments) {
            event(
                json!({"type": "response.function_call_arguments.delta", "item_id": item_id,
                "output_index": index, "delta": piece}),
                &mut events,
            );
        }
        event(
            json!({"type": "response.function_call_arguments.done", "item_id": item_id,
            "output_index": index, "name": call.name(), "arguments": arguments}),
            &mut events,
        );
        let item = json!({"id": item_id, "type": "function_call", "status": "completed",
            "call_id": call_id, "name": call.name(), "arguments": arguments});
        event(
            json!({"type": "response.output_item.done", "output_index": index, "item": item}),
            &mut events,
        );
        output.push(item);
    }
    let body = json!({"id": "resp_1", "object": "response", "status": "completed", "error": null,
        "incomplete_details": null, "output": output});
    event(
        json!({"type": "response.completed", "response": body}),
        &mut events,
    );
    (body, events)
}

/// Anthropic Messages: content blocks; the stream's block starts, deltas and stops.
pub fn anthropic(plan: &Plan) -> (Value, Vec<Value>) {
    let stop_reason = if plan.calls().is_empty() {
        "end_turn"
    } else {
        "tool_use"
    };
    let mut content = Vec::new();
    let mut events = vec![
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
        "role": "assistant", "content": [], "stop_reason": null}}),
    ];
    if let Some(text) = &plan.text {
        let index = content.len();
        events.push(json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}));
        for piece in plan.pieces(text) {
            events.push(json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}}));
        }
        events.push(json!({"type": "content_block_stop", "index": index}));
        content.push(json!({"type": "text", "text": text}));
    }
    for call in plan.calls() {
        let index = content.len();
        let id = format!("toolu_{}", call.id);
        events.push(json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "tool_use", "id": id, "name": call.name(), "input": {}}}));
        for piece in plan.pieces(&call.arguments_text()) {
            events.push(json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": piece}}));
        }
        events.push(json!({"type": "content_block_stop", "index": index}));
        content.push(
            json!({"type": "tool_use", "id": id, "name": call.name(), "input": call.arguments()}),
        );
    }
    events.push(json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null}}));
    events.push(json!({"type": "message_stop"}));
    let body = json!({"id": "msg_1", "type": "message", "role": "assistant", "content": content,
        "stop_reason": stop_reason, "stop_sequence": null});
    (body, events)
}

/// Gemini generateContent: parts of one candidate; the stream sends one part per chunk, the
/// last with the finish reason.
pub fn gemini(plan: &Plan) -> (Value, Vec<Value>) {
    let mut parts = Vec::new();
    if let Some(text) = &plan.text {
        parts.push(json!({"text": text}));
    }
    for call in plan.calls() {
        parts.push(
            json!({"functionCall": {"id": format!("g{}", call.id), "name": call.name(),
            "args": call.arguments()}}),
        );
    }
    let chunk = |parts: Vec<Value>, last: bool| {
        let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
        if last {
            candidate["finishReason"] = json!("STOP");
        }
        json!({"candidates": [candidate], "responseId": "r1"})
    };
    let body = chunk(parts.clone(), true);
    let count = parts.len();
    let events = if count == 0 {
        vec![chunk(Vec::new(), true)]
    } else {
        parts
            .into_iter()
            .enumerate()
            .map(|(index, part)| chunk(vec![part], index + 1 == count))
            .collect()
    };
    (body, events)
}

/// Gemini Interactions: steps; the stream's step starts, argument deltas and stops, then the
/// interaction's end.
pub fn interactions(plan: &Plan) -> (Value, Vec<Value>) {
    let status = if plan.calls().is_empty() {
        "completed"
    } else {
        "requires_action"
    };
    let mut steps = Vec::new();
    let mut events = Vec::new();
    let event = |mut value: Value, events: &mut Vec<Value>| {
        value["event_id"] = json!(format!("evt_{}", events.len()));
        events.push(value);
    };
    event(
        json!({"event_type": "interaction.created", "interaction": {"id": "int_1", "status": "in_progress"}}),
        &mut events,
    );
    if let Some(text) = &plan.text {
        let index = steps.len();
        event(
            json!({"event_type": "step.start", "index": index, "step": {"type": "thought"}}),
            &mut events,
        );
        event(
            json!({"event_type": "step.delta", "index": index, "delta": {"type": "thought_signature", "signature": text}}),
            &mut events,
        );
        event(
            json!({"event_type": "step.stop", "index": index}),
            &mut events,
        );
        steps.push(json!({"type": "thought", "signature": text}));
    }
    for call in plan.calls() {
        let index = steps.len();
        let id = format!("s{}", call.id);
        event(
            json!({"event_type": "step.start", "index": index,
            "step": {"type": "function_call", "id": id, "name": call.name(), "arguments": {}}}),
            &mut events,
        );
        for piece in plan.pieces(&call.arguments_text()) {
            event(
                json!({"event_type": "step.delta", "index": index,
                "delta": {"type": "arguments_delta", "arguments": piece}}),
                &mut events,
            );
        }
        event(
            json!({"event_type": "step.stop", "index": index}),
            &mut events,
        );
        steps.push(json!({"type": "function_call", "id": id, "name": call.name(), "arguments": call.arguments()}));
    }
    event(
        json!({"event_type": "interaction.completed", "interaction": {"id": "int_1", "status": status}}),
        &mut events,
    );
    let body = json!({"id": "int_1", "status": status, "steps": steps});
    (body, events)
}
