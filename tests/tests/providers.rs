//! Issue 3, point 5: the provider adapters, against every fixture in tests/vectors/providers.

use std::fs;
use std::path::PathBuf;

use serde_json::{Value, json};
use tool_contract::providers::{
    Answer, Api, Correlation, EmitError, ProviderError, Turn, anthropic, gemini, interactions,
    openai,
};
use tool_contract::{
    Binder, CallContext, FailureKind, RawProvenance, RawResult, Registry, Status, ToolContract,
    ToolFailure,
};
use tool_contract_tests::kb::{
    GetWeather, alice, all_strings, binder, fixed_clock, keys, registry,
};

fn fixture(name: &str) -> Vec<u8> {
    fs::read(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("vectors/providers")
            .join(name),
    )
    .unwrap()
}

fn fixture_json(name: &str) -> Value {
    serde_json::from_slice(&fixture(name)).unwrap()
}

fn edited(name: &str, edit: impl FnOnce(&mut Value)) -> Vec<u8> {
    let mut value = fixture_json(name);
    edit(&mut value);
    serde_json::to_vec(&value).unwrap()
}

fn stream_lines(name: &str) -> Vec<Vec<u8>> {
    String::from_utf8(fixture(name))
        .unwrap()
        .lines()
        .map(|line| line.as_bytes().to_vec())
        .collect()
}

fn calls(turn: &Turn) -> Vec<(&str, &str, Value)> {
    turn.calls
        .iter()
        .map(|call| {
            (
                call.call_id.as_str(),
                call.name.as_str(),
                serde_json::from_slice(&call.arguments).unwrap(),
            )
        })
        .collect()
}

/// get_weather succeeds with 21 °C; get_time is rate limited.
fn answers(turn: &Turn) -> Vec<Answer> {
    turn.calls
        .iter()
        .map(|call| {
            let context = CallContext::new(call.clone(), format!("op-{}", call.call_id))
                .with_idempotency_key(format!("key-{}", call.call_id));
            let result = if call.name == "get_weather" {
                let input = GetWeather::parse_arguments(&call.arguments).unwrap();
                let raw = RawResult::new(
                    r#"{"temp_c":21}"#,
                    RawProvenance::new("weather-v1", "2026-08-22T10:00:00Z"),
                );
                binder().project_output(&alice(), &context, &input, raw)
            } else {
                let failure = ToolFailure::new(
                    FailureKind::RateLimited {
                        retry_after_ms: Some(2000),
                    },
                    "429 from clock API",
                );
                binder().project_failure(&alice(), &context, failure)
            };
            Answer { context, result }
        })
        .collect()
}

fn sorted_keys(value: &Value) -> Vec<String> {
    let mut keys: Vec<String> = value.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    keys
}

fn assert_no_audit(payload: &Value, answers: &[Answer]) {
    let strings = all_strings(payload);
    for answer in answers {
        let audit = &answer.result.audit;
        let secrets = [
            "acme",
            "alice@acme.example",
            "429 from clock API",
            audit.principal_ref.as_str(),
            audit.operation_id.as_str(),
            audit.idempotency_key.as_deref().unwrap(),
            audit.binding.request_sha256.as_str(),
            audit.binding.result_sha256.as_str(),
            audit.binding.call_binding_sha256.as_str(),
        ];
        for secret in secrets {
            assert!(
                strings.iter().all(|s| !s.contains(secret)),
                "payload carries {secret}"
            );
        }
        for key in [
            "binding",
            "principal_ref",
            "provider_context",
            "redactions",
            "downstream",
            "detail",
        ] {
            assert!(
                !strings
                    .iter()
                    .any(|s| s == key || s.contains(&format!("\"{key}\""))),
                "payload carries {key}"
            );
        }
    }
}

const WEATHER: (&str, &str) = ("get_weather", r#"{"city":"Paris"}"#);

// --- OpenAI Responses -------------------------------------------------------------------

#[test]
fn openai_calls_are_read_by_call_id_not_item_id() {
    let turn = openai::parse_response(&fixture("openai-responses-call.json")).unwrap();
    assert_eq!(
        turn.response_id.as_deref(),
        Some("resp_68a1f0c2d4e08190a1b2c3d4e5f60718")
    );
    assert_eq!(
        calls(&turn),
        [
            (
                "call_Qx7LrT2mWk9pBv3nZs8Hd1Fa",
                "get_weather",
                json!({"city": "Paris"})
            ),
            (
                "call_Jm4YcN8sUe2kRd6tXq0Lp5Gb",
                "get_time",
                json!({"timezone": "Europe/Paris"})
            )
        ]
    );
}

#[test]
fn openai_stream_deltas_are_joined_by_item_id() {
    let mut assembler = openai::StreamAssembler::new();
    for event in stream_lines("openai-responses-stream.jsonl") {
        assembler.push(&event).unwrap();
    }
    let turn = assembler.finish().unwrap();
    assert_eq!(
        calls(&turn),
        [(
            "call_Qx7LrT2mWk9pBv3nZs8Hd1Fa",
            WEATHER.0,
            json!({"city": "Paris"})
        )]
    );
}

#[test]
fn openai_incomplete_response_is_refused() {
    let bytes = edited("openai-responses-call.json", |r| {
        r["status"] = json!("incomplete");
        r["incomplete_details"] = json!({"reason": "max_output_tokens"});
    });
    assert!(
        matches!(openai::parse_response(&bytes), Err(ProviderError::Incomplete { reason, .. }) if reason == "max_output_tokens")
    );
}

#[test]
fn openai_incomplete_call_item_is_refused() {
    let bytes = edited("openai-responses-call.json", |r| {
        r["output"][2]["status"] = json!("incomplete")
    });
    assert!(matches!(
        openai::parse_response(&bytes),
        Err(ProviderError::Incomplete { .. })
    ));
}

#[test]
fn openai_duplicate_call_ids_are_refused() {
    let bytes = edited("openai-responses-call.json", |r| {
        r["output"][2]["call_id"] = r["output"][1]["call_id"].clone()
    });
    assert!(matches!(
        openai::parse_response(&bytes),
        Err(ProviderError::DuplicateCallId { .. })
    ));
}

/// Issue 14, finding 11: the stream assembler accepted call ids the whole-body parser
/// refuses; both read a call through one check now.
#[test]
fn openai_stream_refuses_the_call_ids_the_whole_body_refuses() {
    let long = "c".repeat(65);
    let whole = edited("openai-responses-call.json", |r| {
        r["output"][1]["call_id"] = json!(long)
    });
    assert!(matches!(
        openai::parse_response(&whole),
        Err(ProviderError::Malformed { .. })
    ));
    let mut assembler = openai::StreamAssembler::new();
    let mut refused = false;
    for event in stream_lines("openai-responses-stream.jsonl") {
        let event = String::from_utf8(event)
            .unwrap()
            .replace("call_Qx7LrT2mWk9pBv3nZs8Hd1Fa", &long);
        refused |= assembler.push(event.as_bytes()).is_err();
    }
    let finished = assembler.finish();
    assert!(
        refused || matches!(finished, Err(ProviderError::Malformed { .. })),
        "{finished:?}"
    );
}

#[test]
fn openai_stream_cut_before_completed_is_refused() {
    let mut assembler = openai::StreamAssembler::new();
    for event in stream_lines("openai-responses-stream.jsonl").iter().take(5) {
        assembler.push(event).unwrap();
    }
    assert!(matches!(
        assembler.finish(),
        Err(ProviderError::Incomplete { .. })
    ));
}

#[test]
fn openai_stream_delta_for_an_unseen_item_is_a_protocol_error() {
    let mut assembler = openai::StreamAssembler::new();
    let delta = br#"{"type":"response.function_call_arguments.delta","sequence_number":3,"item_id":"fc_unknown","output_index":0,"delta":"{"}"#;
    assert!(matches!(
        assembler.push(delta),
        Err(ProviderError::Protocol { .. })
    ));
}

#[test]
fn openai_stream_sequence_numbers_must_increase() {
    let events = stream_lines("openai-responses-stream.jsonl");
    let mut assembler = openai::StreamAssembler::new();
    assembler.push(&events[0]).unwrap();
    assembler.push(&events[1]).unwrap();
    assert!(matches!(
        assembler.push(&events[1]),
        Err(ProviderError::Protocol { .. })
    ));
}

#[test]
fn openai_stream_done_must_agree_with_the_deltas() {
    let mut events = stream_lines("openai-responses-stream.jsonl");
    let mut done: Value = serde_json::from_slice(&events[6]).unwrap();
    done["arguments"] = json!(r#"{"city":"Lyon"}"#);
    events[6] = serde_json::to_vec(&done).unwrap();
    let mut assembler = openai::StreamAssembler::new();
    let outcome = events.iter().try_for_each(|event| assembler.push(event));
    assert!(matches!(outcome, Err(ProviderError::Protocol { .. })));
}

#[test]
fn openai_results_are_function_call_outputs_with_the_canonical_json_string() {
    let turn = openai::parse_response(&fixture("openai-responses-call.json")).unwrap();
    let answers = answers(&turn);
    let payload = openai::function_call_outputs(&binder(), &alice(), &turn, &answers).unwrap();
    let expected = fixture_json("openai-responses-result.json")["input"].clone();
    let items = payload.as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert_eq!(expected.as_array().unwrap().len(), 2);
    for (ours, theirs) in items.iter().zip(expected.as_array().unwrap()) {
        assert_eq!(sorted_keys(ours), ["call_id", "output", "type"]);
        assert_eq!(ours["type"], theirs["type"]);
        assert_eq!(ours["call_id"], theirs["call_id"]);
    }
    let output = items[0]["output"].as_str().unwrap();
    assert_eq!(
        output.as_bytes(),
        answers[0].result.model.to_canonical_json()
    );
    assert_no_audit(&payload, &answers);
}

// --- Anthropic Messages -----------------------------------------------------------------

#[test]
fn anthropic_tool_use_blocks_are_read_with_their_input() {
    let turn = anthropic::parse_message(&fixture("anthropic-messages-call.json")).unwrap();
    assert_eq!(
        turn.response_id.as_deref(),
        Some("msg_01Hq8ZkV3rT6nW2yXb4cLd9E")
    );
    assert_eq!(
        calls(&turn),
        [
            (
                "toolu_01A7fK2pQ9xR4mT8vW3nY6bC",
                "get_weather",
                json!({"city": "Paris"})
            ),
            (
                "toolu_01B3gH5jL8sD1kP7qZ2wX9vN",
                "get_time",
                json!({"timezone": "Europe/Paris"})
            )
        ]
    );
}

#[test]
fn anthropic_stream_partial_json_is_joined_per_block_index() {
    let mut assembler = anthropic::StreamAssembler::new();
    for event in stream_lines("anthropic-messages-stream.jsonl") {
        assembler.push(&event).unwrap();
    }
    let turn = assembler.finish().unwrap();
    assert_eq!(
        calls(&turn),
        [(
            "toolu_01A7fK2pQ9xR4mT8vW3nY6bC",
            WEATHER.0,
            json!({"city": "Paris"})
        )]
    );
}

#[test]
fn anthropic_empty_partial_json_is_an_empty_object() {
    let events: [&[u8]; 5] = [
        br#"{"type":"message_start","message":{"id":"msg_1","content":[],"stop_reason":null}}"#,
        br#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"ping","input":{}}}"#,
        br#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":""}}"#,
        br#"{"type":"content_block_stop","index":0}"#,
        br#"{"type":"message_delta","delta":{"stop_reason":"tool_use"}}"#,
    ];
    let mut assembler = anthropic::StreamAssembler::new();
    for event in events {
        assembler.push(event).unwrap();
    }
    assembler.push(br#"{"type":"message_stop"}"#).unwrap();
    assert_eq!(assembler.finish().unwrap().calls[0].arguments, b"{}");
}

#[test]
fn anthropic_max_tokens_turn_is_refused() {
    let bytes = edited("anthropic-messages-call.json", |m| {
        m["stop_reason"] = json!("max_tokens")
    });
    assert!(matches!(
        anthropic::parse_message(&bytes),
        Err(ProviderError::Incomplete { .. })
    ));
    let mut events = stream_lines("anthropic-messages-stream.jsonl");
    events[7] = br#"{"type":"message_delta","delta":{"stop_reason":"max_tokens"}}"#.to_vec();
    let mut assembler = anthropic::StreamAssembler::new();
    for event in &events {
        assembler.push(event).unwrap();
    }
    assert!(matches!(
        assembler.finish(),
        Err(ProviderError::Incomplete { .. })
    ));
}

#[test]
fn anthropic_delta_after_block_stop_is_a_protocol_error() {
    let events = stream_lines("anthropic-messages-stream.jsonl");
    let mut assembler = anthropic::StreamAssembler::new();
    for event in &events[..7] {
        assembler.push(event).unwrap();
    }
    assert!(matches!(
        assembler.push(&events[4]),
        Err(ProviderError::Protocol { .. })
    ));
}

#[test]
fn anthropic_duplicate_ids_are_refused() {
    let bytes = edited("anthropic-messages-call.json", |m| {
        m["content"][2]["id"] = m["content"][1]["id"].clone()
    });
    assert!(matches!(
        anthropic::parse_message(&bytes),
        Err(ProviderError::DuplicateCallId { .. })
    ));
}

#[test]
fn anthropic_results_are_one_user_message_of_tool_result_blocks_first() {
    let turn = anthropic::parse_message(&fixture("anthropic-messages-call.json")).unwrap();
    let answers = answers(&turn);
    let message = anthropic::tool_results_message(&binder(), &alice(), &turn, &answers).unwrap();
    let expected = fixture_json("anthropic-messages-result.json")["messages"][2].clone();
    assert_eq!(message["role"], expected["role"]);
    let blocks = message["content"].as_array().unwrap();
    assert_eq!(blocks.len(), 2);
    for (ours, theirs) in blocks.iter().zip(expected["content"].as_array().unwrap()) {
        assert_eq!(ours["type"], "tool_result");
        assert_eq!(ours["tool_use_id"], theirs["tool_use_id"]);
        assert_eq!(ours["content"][0]["type"], "text");
    }
    assert!(blocks[0].get("is_error").is_none());
    assert_eq!(blocks[1]["is_error"], true);
    assert_eq!(
        blocks[1]["content"][0]["text"].as_str().unwrap().as_bytes(),
        answers[1].result.model.to_canonical_json()
    );
    assert_no_audit(&message, &answers);
}

// --- Gemini generateContent -------------------------------------------------------------

#[test]
fn gemini_function_calls_are_read_with_their_ids() {
    let turn = gemini::parse_response(&fixture("gemini-generate-call.json")).unwrap();
    assert_eq!(turn.response_id.as_deref(), Some("mJioaN6aB4Xx7M8Pj7q0-Ac"));
    assert_eq!(
        calls(&turn),
        [
            ("k3x9p2aa", "get_weather", json!({"city": "Paris"})),
            ("m7q1z4bb", "get_time", json!({"timezone": "Europe/Paris"}))
        ]
    );
}

#[test]
fn gemini_stream_chunks_are_concatenated() {
    for (name, expected) in [
        ("gemini-generate-stream.jsonl", 1),
        ("gemini-generate-stream-parallel.jsonl", 2),
    ] {
        let mut assembler = gemini::StreamAssembler::new();
        for chunk in stream_lines(name) {
            assembler.push(&chunk).unwrap();
        }
        let turn = assembler.finish().unwrap();
        assert_eq!(turn.calls.len(), expected, "{name}");
        assert_eq!(turn.calls[0].call_id, "k3x9p2aa");
    }
}

/// Found by the `gemini` fuzz target: a stream cut before any chunk carried a finish reason
/// was a turn without calls, though its calls may have been still to come.
#[test]
fn gemini_stream_cut_before_its_finish_reason_is_refused_even_without_calls() {
    let text_only = br#"{"candidates":[{"content":{"role":"model","parts":[{"text":"Let me"}]},"index":0}],"responseId":"r1"}"#;
    for chunks in [&[][..], &[&text_only[..]][..]] {
        let mut assembler = gemini::StreamAssembler::new();
        for chunk in chunks {
            assembler.push(chunk).unwrap();
        }
        assert!(
            matches!(assembler.finish(), Err(ProviderError::Incomplete { .. })),
            "{} chunks",
            chunks.len()
        );
    }
    // A whole response is one chunk: without calls it needs no finish reason (a blocked prompt).
    assert!(gemini::parse_response(text_only).unwrap().calls.is_empty());
}

/// Found by the `interactions` fuzz target: a stream cut before `interaction.completed` was
/// a turn without calls.
#[test]
fn interactions_stream_cut_before_completed_is_refused_even_without_calls() {
    let lines = stream_lines("gemini-interactions-stream.jsonl");
    // Up to the thought step's end: no call seen yet.
    for cut in [0, 4] {
        let mut assembler = interactions::StreamAssembler::new();
        for event in &lines[..cut] {
            assembler.push(event).unwrap();
        }
        assert!(
            matches!(assembler.finish(), Err(ProviderError::Incomplete { .. })),
            "cut after {cut} events"
        );
    }
}

/// Found by the `interactions` fuzz target: a stream that lost an `arguments_delta` joined
/// what was left into a call whose arguments are not JSON, and accepted it.
#[test]
fn interactions_stream_arguments_that_do_not_join_into_json_are_refused() {
    let lines = stream_lines("gemini-interactions-stream.jsonl");
    let mut assembler = interactions::StreamAssembler::new();
    let mut refused = None;
    for (at, event) in lines.iter().enumerate() {
        // The second arguments delta is lost.
        if at == 6 {
            continue;
        }
        if let Err(error) = assembler.push(event) {
            refused = Some(error);
            break;
        }
    }
    let refused = match refused {
        Some(error) => error,
        None => assembler.finish().unwrap_err(),
    };
    assert!(
        matches!(refused, ProviderError::Protocol { .. }),
        "{refused:?}"
    );
}

#[test]
fn gemini_calls_without_ids_are_matched_by_unique_names() {
    let bytes = edited("gemini-generate-call.json", |r| {
        for part in r["candidates"][0]["content"]["parts"]
            .as_array_mut()
            .unwrap()
        {
            part["functionCall"].as_object_mut().unwrap().remove("id");
        }
    });
    let turn = gemini::parse_response(&bytes).unwrap();
    assert!(
        turn.calls
            .iter()
            .all(|call| call.correlation == Correlation::Name && call.call_id == call.name)
    );
}

#[test]
fn gemini_calls_without_ids_and_a_shared_name_are_refused_never_matched_by_position() {
    let bytes = edited("gemini-generate-call.json", |r| {
        for part in r["candidates"][0]["content"]["parts"]
            .as_array_mut()
            .unwrap()
        {
            part["functionCall"].as_object_mut().unwrap().remove("id");
            part["functionCall"]["name"] = json!("get_weather");
        }
    });
    assert!(matches!(
        gemini::parse_response(&bytes),
        Err(ProviderError::Uncorrelatable { .. })
    ));
}

#[test]
fn gemini_max_tokens_turn_is_refused() {
    let bytes = edited("gemini-generate-call.json", |r| {
        r["candidates"][0]["finishReason"] = json!("MAX_TOKENS")
    });
    assert!(matches!(
        gemini::parse_response(&bytes),
        Err(ProviderError::Incomplete { .. })
    ));
}

#[test]
fn gemini_duplicate_ids_are_refused() {
    let bytes = edited("gemini-generate-call.json", |r| {
        r["candidates"][0]["content"]["parts"][1]["functionCall"]["id"] = json!("k3x9p2aa")
    });
    assert!(matches!(
        gemini::parse_response(&bytes),
        Err(ProviderError::DuplicateCallId { .. })
    ));
}

#[test]
fn gemini_results_are_function_responses_with_name_id_and_an_object() {
    let turn = gemini::parse_response(&fixture("gemini-generate-call.json")).unwrap();
    let answers = answers(&turn);
    let content = gemini::function_responses(&binder(), &alice(), &turn, &answers).unwrap();
    let expected = fixture_json("gemini-generate-result.json")["contents"][2].clone();
    assert_eq!(content["role"], expected["role"]);
    let parts = content["parts"].as_array().unwrap();
    assert_eq!(parts.len(), 2);
    assert_eq!(expected["parts"].as_array().unwrap().len(), 2);
    for (ours, theirs) in parts.iter().zip(expected["parts"].as_array().unwrap()) {
        assert_eq!(
            sorted_keys(&ours["functionResponse"]),
            ["id", "name", "response"]
        );
        assert_eq!(
            ours["functionResponse"]["id"],
            theirs["functionResponse"]["id"]
        );
        assert_eq!(
            ours["functionResponse"]["name"],
            theirs["functionResponse"]["name"]
        );
        assert_eq!(
            sorted_keys(&ours["functionResponse"]["response"]),
            sorted_keys(&theirs["functionResponse"]["response"])
        );
    }
    assert_eq!(
        parts[0]["functionResponse"]["response"]["output"],
        serde_json::to_value(&answers[0].result.model).unwrap()
    );
    assert_no_audit(&content, &answers);
}

#[test]
fn gemini_results_for_calls_without_ids_carry_no_id() {
    let bytes = edited("gemini-generate-call.json", |r| {
        for part in r["candidates"][0]["content"]["parts"]
            .as_array_mut()
            .unwrap()
        {
            part["functionCall"].as_object_mut().unwrap().remove("id");
        }
    });
    let turn = gemini::parse_response(&bytes).unwrap();
    let content = gemini::function_responses(&binder(), &alice(), &turn, &answers(&turn)).unwrap();
    assert!(
        content["parts"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["functionResponse"].get("id").is_none())
    );
}

// --- Gemini Interactions ----------------------------------------------------------------

#[test]
fn interactions_function_call_steps_are_read() {
    let turn = interactions::parse_interaction(&fixture("gemini-interactions-call.json")).unwrap();
    assert_eq!(turn.response_id.as_deref(), Some("int_7f3c2a9e41b84d0c"));
    assert_eq!(
        calls(&turn),
        [
            ("k3x9p2aa", "get_weather", json!({"city": "Paris"})),
            ("m7q1z4bb", "get_time", json!({"timezone": "Europe/Paris"}))
        ]
    );
}

#[test]
fn interactions_stream_arguments_deltas_are_joined_at_step_stop() {
    let mut assembler = interactions::StreamAssembler::new();
    for event in stream_lines("gemini-interactions-stream.jsonl") {
        assembler.push(&event).unwrap();
    }
    let turn = assembler.finish().unwrap();
    assert_eq!(
        calls(&turn),
        [("k3x9p2aa", WEATHER.0, json!({"city": "Paris"}))]
    );
    assert!(turn.anomalies.is_empty());
}

#[test]
fn interactions_stream_accepts_the_older_partial_arguments_field() {
    let events = stream_lines("gemini-interactions-stream.jsonl");
    let mut assembler = interactions::StreamAssembler::new();
    for event in events {
        let text = String::from_utf8(event).unwrap().replace(
            r#""arguments_delta","arguments""#,
            r#""arguments_delta","partial_arguments""#,
        );
        assembler.push(text.as_bytes()).unwrap();
    }
    assert_eq!(
        calls(&assembler.finish().unwrap())[0].2,
        json!({"city": "Paris"})
    );
}

#[test]
fn interactions_stream_delta_with_another_index_is_an_anomaly_bound_to_the_open_call() {
    let events = stream_lines("gemini-interactions-stream.jsonl");
    let mut assembler = interactions::StreamAssembler::new();
    for (number, event) in events.into_iter().enumerate() {
        let event = if number == 5 {
            String::from_utf8(event)
                .unwrap()
                .replace(r#""index":1"#, r#""index":0"#)
                .into_bytes()
        } else {
            event
        };
        assembler.push(&event).unwrap();
    }
    let turn = assembler.finish().unwrap();
    assert_eq!(calls(&turn)[0].2, json!({"city": "Paris"}));
    assert_eq!(turn.anomalies.len(), 1);
}

#[test]
fn interactions_stream_start_arguments_and_deltas_conflict() {
    let events = stream_lines("gemini-interactions-stream.jsonl");
    let mut assembler = interactions::StreamAssembler::new();
    let outcome = events.into_iter().try_for_each(|event| {
        let text = String::from_utf8(event)
            .unwrap()
            .replace(r#""arguments":{}"#, r#""arguments":{"city":"Rome"}"#);
        assembler.push(text.as_bytes())
    });
    assert!(matches!(outcome, Err(ProviderError::Protocol { .. })));
}

#[test]
fn interactions_not_requiring_action_is_refused() {
    let bytes = edited("gemini-interactions-call.json", |i| {
        i["status"] = json!("incomplete")
    });
    assert!(matches!(
        interactions::parse_interaction(&bytes),
        Err(ProviderError::Incomplete { .. })
    ));
}

#[test]
fn interactions_results_are_function_result_steps_by_call_id() {
    let turn = interactions::parse_interaction(&fixture("gemini-interactions-call.json")).unwrap();
    let answers = answers(&turn);
    let steps = interactions::function_results(&binder(), &alice(), &turn, &answers).unwrap();
    let expected = fixture_json("gemini-interactions-result.json")["input"].clone();
    let (ours, theirs) = (steps.as_array().unwrap(), expected.as_array().unwrap());
    assert_eq!((ours.len(), theirs.len()), (2, 2));
    for (ours, theirs) in ours.iter().zip(theirs) {
        assert_eq!(ours["type"], "function_result");
        assert_eq!(ours["call_id"], theirs["call_id"]);
        assert_eq!(ours["name"], theirs["name"]);
        assert_eq!(ours.get("is_error"), theirs.get("is_error"));
        // The fixture's error step carries its text in a content block; ours as a string.
        let their_text = theirs["result"]
            .as_str()
            .or_else(|| theirs["result"][0]["text"].as_str())
            .unwrap();
        let ours: Value = serde_json::from_str(ours["result"].as_str().unwrap()).unwrap();
        let theirs: Value = serde_json::from_str(their_text).unwrap();
        assert_eq!(ours["status"], theirs["status"], "{ours}");
    }
    assert_eq!(
        steps[1]["is_error"], true,
        "the failed call's step is marked"
    );
    assert_no_audit(&steps, &answers);
}

// --- Emission rules, shared by every adapter --------------------------------------------

fn openai_turn() -> Turn {
    openai::parse_response(&fixture("openai-responses-call.json")).unwrap()
}

#[test]
fn a_call_without_an_answer_is_refused() {
    let turn = openai_turn();
    let answers = answers(&turn);
    let outcome = openai::function_call_outputs(&binder(), &alice(), &turn, &answers[..1]);
    assert!(
        matches!(outcome, Err(EmitError::MissingAnswer(id)) if id == "call_Jm4YcN8sUe2kRd6tXq0Lp5Gb")
    );
}

#[test]
fn an_answer_for_an_unknown_call_id_is_refused() {
    let turn = openai_turn();
    let mut answers = answers(&turn);
    answers[1].context.call.call_id = "call_other".to_owned();
    let outcome = openai::function_call_outputs(&binder(), &alice(), &turn, &answers);
    assert!(matches!(outcome, Err(EmitError::UnknownCall(id)) if id == "call_other"));
}

#[test]
fn two_answers_for_one_call_are_refused() {
    let turn = openai_turn();
    let mut answers = answers(&turn);
    answers.push(answers[0].clone());
    assert!(matches!(
        openai::function_call_outputs(&binder(), &alice(), &turn, &answers),
        Err(EmitError::DuplicateAnswer(_))
    ));
}

#[test]
fn answers_are_written_in_call_order_whatever_order_they_come_in() {
    let turn = openai_turn();
    let mut answers = answers(&turn);
    answers.reverse();
    let payload = openai::function_call_outputs(&binder(), &alice(), &turn, &answers).unwrap();
    assert_eq!(payload[0]["call_id"], "call_Qx7LrT2mWk9pBv3nZs8Hd1Fa");
}

#[test]
fn an_answer_that_does_not_verify_is_never_written() {
    let turn = openai_turn();
    let mut answers = answers(&turn);
    answers[0].result.audit.binding.result_sha256 = "f".repeat(64);
    assert!(matches!(
        openai::function_call_outputs(&binder(), &alice(), &turn, &answers),
        Err(EmitError::Unverified { .. })
    ));
    let mallory = tool_contract::Principal::new("acme", "mallory");
    let answers = self::answers(&turn);
    assert!(matches!(
        openai::function_call_outputs(&binder(), &mallory, &turn, &answers),
        Err(EmitError::Unverified { .. })
    ));
}

#[test]
fn an_adapter_the_registry_has_not_registered_is_refused() {
    static BARE: std::sync::OnceLock<Registry> = std::sync::OnceLock::new();
    let bare = BARE.get_or_init(|| {
        tool_contract::registry![
            tool_contract_tests::kb::SearchKb,
            GetWeather,
            tool_contract_tests::kb::GetTime
        ]
        .into_builder()
        .adapter(anthropic::ADAPTER)
        .build()
    });
    let strict = Binder::new(bare, keys()).with_clock(fixed_clock);
    let turn = openai_turn();
    let answers = answers(&turn);
    let outcome = openai::function_call_outputs(&strict, &alice(), &turn, &answers);
    assert!(matches!(
        outcome,
        Err(EmitError::UnregisteredAdapter {
            api: Api::OpenAiResponses,
            ..
        })
    ));
    // An older revision of an accepted API is refused too.
    let mut old = turn.clone();
    old.calls
        .iter_mut()
        .for_each(|call| call.adapter_revision = "openai-responses/2025-01".to_owned());
    assert!(matches!(
        openai::function_call_outputs(&binder(), &alice(), &old, &answers),
        Err(EmitError::UnregisteredAdapter { .. })
    ));
    assert!(registry().accepts_adapter(Api::OpenAiResponses, openai::ADAPTER.revision));
}

#[test]
fn failed_results_are_marked_as_errors_where_the_provider_has_a_flag() {
    let turn = openai_turn();
    let answers = answers(&turn);
    assert_eq!(answers[1].result.model.status(), Status::Failed);
    let output: Value = serde_json::from_str(
        openai::function_call_outputs(&binder(), &alice(), &turn, &answers).unwrap()[1]["output"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(output["error"]["code"], "RATE_LIMIT");
    assert_eq!(output["error"]["retry_after_ms"], 2000);
}

#[test]
fn malformed_provider_bytes_are_errors_not_panics() {
    for bytes in [&b""[..], b"{", b"[]", b"\xff", br#"{"id":1}"#] {
        assert!(openai::parse_response(bytes).is_err());
        assert!(anthropic::parse_message(bytes).is_err());
        assert!(
            gemini::parse_response(bytes).is_err() || bytes == br#"{"id":1}"#,
            "{bytes:?}"
        );
        assert!(interactions::parse_interaction(bytes).is_err());
        assert!(openai::StreamAssembler::new().push(bytes).is_err());
        assert!(anthropic::StreamAssembler::new().push(bytes).is_err());
        assert!(interactions::StreamAssembler::new().push(bytes).is_err());
    }
    // A generateContent response without candidates (say, a blocked prompt) asks for nothing.
    assert!(
        gemini::parse_response(br#"{"id":1}"#)
            .unwrap()
            .calls
            .is_empty()
    );
}

#[test]
fn an_error_event_in_a_stream_stops_the_turn() {
    let event = br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let outcome = anthropic::StreamAssembler::new().push(event);
    assert!(
        matches!(outcome, Err(ProviderError::Reported { message, .. }) if message == "Overloaded")
    );
    let event = br#"{"event_type":"error","error":{"message":"quota"}}"#;
    let outcome = interactions::StreamAssembler::new().push(event);
    assert!(matches!(outcome, Err(ProviderError::Reported { message, .. }) if message == "quota"));
}

#[test]
fn stateless_replays_carry_the_same_calls_and_result_items() {
    // OpenAI store:false: the replayed function_call items read as the same calls, and our
    // outputs have the shape and ids of the fixture's.
    let replay = fixture_json("openai-responses-result-stateless.json")["input"].clone();
    let items: Vec<&Value> = replay.as_array().unwrap().iter().collect();
    let calls_in_replay: Vec<Value> = items
        .iter()
        .filter(|i| i["type"] == "function_call")
        .map(|i| (*i).clone())
        .collect();
    let response = json!({ "id": "resp_68a1f0c2d4e08190a1b2c3d4e5f60718", "status": "completed", "output": calls_in_replay });
    let turn = openai::parse_response(&serde_json::to_vec(&response).unwrap()).unwrap();
    assert_eq!(turn, openai_turn());
    let ours = openai::function_call_outputs(&binder(), &alice(), &turn, &answers(&turn)).unwrap();
    let theirs: Vec<&&Value> = items
        .iter()
        .filter(|i| i["type"] == "function_call_output")
        .collect();
    let ours = ours.as_array().unwrap();
    assert_eq!((ours.len(), theirs.len()), (2, 2));
    for (ours, theirs) in ours.iter().zip(theirs) {
        assert_eq!(sorted_keys(ours), sorted_keys(theirs));
        assert_eq!(ours["call_id"], theirs["call_id"]);
    }

    // Interactions store:false: likewise for function_call and function_result steps.
    let replay = fixture_json("gemini-interactions-result-stateless.json")["input"].clone();
    let steps: Vec<&Value> = replay.as_array().unwrap().iter().collect();
    let interaction = json!({
        "id": "int_7f3c2a9e41b84d0c", "status": "requires_action",
        "steps": steps.iter().filter(|s| s["type"] == "function_call").collect::<Vec<_>>(),
    });
    let turn = interactions::parse_interaction(&serde_json::to_vec(&interaction).unwrap()).unwrap();
    let original =
        interactions::parse_interaction(&fixture("gemini-interactions-call.json")).unwrap();
    assert_eq!(calls(&turn), calls(&original));
    let ours = interactions::function_results(&binder(), &alice(), &turn, &answers(&turn)).unwrap();
    let theirs: Vec<&&Value> = steps
        .iter()
        .filter(|s| s["type"] == "function_result")
        .collect();
    let ours = ours.as_array().unwrap();
    assert_eq!((ours.len(), theirs.len()), (2, 2));
    for (ours, theirs) in ours.iter().zip(theirs) {
        let mut keys = sorted_keys(ours);
        keys.retain(|key| key != "is_error");
        assert_eq!(keys, sorted_keys(theirs));
        assert_eq!(ours["call_id"], theirs["call_id"]);
    }
}
