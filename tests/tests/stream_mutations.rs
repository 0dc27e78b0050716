//! Each provider's recorded stream, with every single event dropped, every event delivered
//! twice, and every two neighbours swapped: the assembler refuses the stream, or reads calls
//! that the API's protocol cannot tell from the original, never invented ones.
//!
//! What each protocol can tell: OpenAI numbers its events and repeats whole arguments at the
//! end, so an accepted stream has exactly the original calls. Anthropic and Interactions send
//! argument text in unnumbered pieces, so a lost or repeated piece may still join into JSON:
//! only then may arguments differ, and ids and names never. Gemini's chunks stand alone, so a
//! lost chunk loses its calls and a swap reorders them: the calls read are the original's, some
//! perhaps missing, each once.

use std::fs;
use std::path::PathBuf;

use serde_json::Value;
use tool_contract::providers::{ProviderApi, Turn, provider_api};
use tool_contract::vocabulary::Api;

fn lines(name: &str) -> Vec<Vec<u8>> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("vectors/providers")
        .join(name);
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| line.as_bytes().to_vec())
        .collect()
}

fn read(api: &dyn ProviderApi, events: &[Vec<u8>]) -> Option<Turn> {
    let mut stream = api.stream();
    for event in events {
        stream.push(event).ok()?;
    }
    stream.finish().ok()
}

type Call = (String, String, Value);

fn calls(turn: &Turn) -> Vec<Call> {
    turn.calls
        .iter()
        .map(|call| {
            let arguments = serde_json::from_slice(&call.arguments).unwrap_or(Value::Null);
            (call.call_id.clone(), call.name.clone(), arguments)
        })
        .collect()
}

/// Every stream one event away from `events`, with the index of the event changed.
fn mutations(events: &[Vec<u8>]) -> Vec<(String, usize, Vec<Vec<u8>>)> {
    let mut all = Vec::new();
    for at in 0..events.len() {
        let mut dropped = events.to_vec();
        dropped.remove(at);
        all.push((format!("event {at} dropped"), at, dropped));
        let mut doubled = events.to_vec();
        doubled.insert(at, events[at].clone());
        all.push((format!("event {at} twice"), at, doubled));
        if at + 1 < events.len() {
            let mut swapped = events.to_vec();
            swapped.swap(at, at + 1);
            all.push((format!("events {at} and {} swapped", at + 1), at, swapped));
        }
    }
    all
}

fn is_argument_piece(event: &[u8]) -> bool {
    let event: Value = serde_json::from_slice(event).unwrap();
    let delta = &event["delta"];
    delta["type"] == "input_json_delta" || delta["type"] == "arguments_delta"
}

fn check(api: Api, fixture: &str) {
    let api = provider_api(api).unwrap();
    let events = lines(fixture);
    let original = calls(&read(api, &events).expect("the recorded stream reads"));
    assert!(!original.is_empty(), "{fixture} has calls");
    for (what, at, changed) in mutations(&events) {
        let Some(turn) = read(api, &changed) else {
            continue;
        };
        let read = calls(&turn);
        let pieces = is_argument_piece(&events[at])
            || events
                .get(at + 1)
                .is_some_and(|next| is_argument_piece(next));
        match fixture {
            "openai-responses-stream.jsonl" => assert_eq!(read, original, "{fixture}: {what}"),
            "gemini-generate-stream.jsonl" | "gemini-generate-stream-parallel.jsonl" => {
                // Chunks carry no order either: a swap reorders calls, each still itself.
                let mut rest = original.clone();
                for call in &read {
                    let found = rest.iter().position(|kept| kept == call);
                    let found = found.unwrap_or_else(|| panic!("{fixture}: {what}: {call:?}"));
                    rest.remove(found);
                }
            }
            _ if pieces => {
                let heads = |calls: &[Call]| -> Vec<(String, String)> {
                    calls
                        .iter()
                        .map(|(id, name, _)| (id.clone(), name.clone()))
                        .collect()
                };
                assert_eq!(heads(&read), heads(&original), "{fixture}: {what}");
            }
            _ => assert_eq!(read, original, "{fixture}: {what}"),
        }
    }
}

#[test]
fn an_openai_stream_one_event_away_reads_the_original_calls_or_nothing() {
    check(Api::OpenAiResponses, "openai-responses-stream.jsonl");
}

#[test]
fn an_anthropic_stream_one_event_away_never_changes_a_calls_id_or_name() {
    check(Api::AnthropicMessages, "anthropic-messages-stream.jsonl");
}

#[test]
fn a_gemini_stream_one_chunk_away_reads_only_original_calls() {
    check(Api::GeminiGenerateContent, "gemini-generate-stream.jsonl");
    check(
        Api::GeminiGenerateContent,
        "gemini-generate-stream-parallel.jsonl",
    );
}

#[test]
fn an_interactions_stream_one_event_away_never_changes_a_calls_id_or_name() {
    check(Api::GeminiInteractions, "gemini-interactions-stream.jsonl");
}
