//! Which provider adapters' calls a registry takes: every adapter this crate ships by
//! default, so a registry built without naming any serves an OpenAI turn end to end; and a
//! call of an adapter it does not accept runs nothing, before any handler, since no result
//! of it could be written.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use tool_contract::control::MemoryAuditLog;
use tool_contract::dispatch::{Dispatcher, HandlerContext, Task};
use tool_contract::providers::{Answer, anthropic, openai};
use tool_contract::{CallContext, ErrorCode, RawProvenance, RawResult, Registry, Status};
use tool_contract_tests::tracker::{FindIssue, alice, audit_key, code, context, keys};

/// A dispatcher over `registry` (`find_issue` only) whose handler counts its runs.
fn dispatcher(registry: Registry, runs: &Arc<AtomicU32>) -> Dispatcher {
    let runs = runs.clone();
    Dispatcher::builder(registry, keys())
        .handler(move |_: FindIssue, _: HandlerContext| {
            runs.fetch_add(1, Ordering::Relaxed);
            async {
                let provenance = RawProvenance::new("tracker-v1", "2026-12-01T00:00:00Z");
                Ok(RawResult::new(br#"{"number":7}"#.to_vec(), provenance))
            }
        })
        .audit_sink(Arc::new(MemoryAuditLog::new(audit_key())))
        .build()
        .expect("every tool has its handler")
}

const TURN: &[u8] = br#"{"id":"resp_1","status":"completed","output":[
  {"type":"function_call","id":"fc_1","call_id":"call_1","name":"find_issue",
   "arguments":"{\"title\":\"Printer on fire\"}","status":"completed"}]}"#;

#[tokio::test]
async fn a_registry_that_names_no_adapter_serves_an_openai_turn_end_to_end() {
    let runs = Arc::new(AtomicU32::new(0));
    let dispatcher = dispatcher(tool_contract::registry![FindIssue], &runs);
    let turn = openai::parse_response(TURN).expect("the turn reads");
    let context = CallContext::new(turn.calls[0].clone(), "op-1");
    let dispatch = dispatcher
        .dispatch(&alice(), &context, &Task::unlimited())
        .await;
    assert_eq!(dispatch.result.model.status(), Status::Succeeded);
    let answers = [Answer {
        context,
        result: dispatch.result,
    }];
    let next = openai::function_call_outputs(&dispatcher.binder(), &alice(), &turn, &answers)
        .expect("the next turn is written for a call of a shipped adapter");
    assert_eq!(next.as_array().map(Vec::len), Some(1), "{next}");
    assert_eq!(runs.load(Ordering::Relaxed), 1);
}

#[tokio::test]
async fn a_call_of_an_adapter_the_registry_does_not_accept_runs_nothing() {
    let runs = Arc::new(AtomicU32::new(0));
    let only_openai = tool_contract::registry![FindIssue]
        .into_builder()
        .adapter(openai::ADAPTER)
        .build();
    let dispatcher = dispatcher(only_openai, &runs);
    // The tracker's calls are read by the Anthropic adapter.
    let call = context(
        "toolu_1",
        "find_issue",
        serde_json::json!({ "title": "Printer on fire" }),
        "op-1",
        "op-1",
    );
    assert_eq!(call.call.adapter_revision, anthropic::ADAPTER.revision);
    let dispatch = dispatcher
        .dispatch(&alice(), &call, &Task::unlimited())
        .await;
    assert_eq!(code(&dispatch), Some(ErrorCode::Blocked), "{dispatch:?}");
    assert_eq!(runs.load(Ordering::Relaxed), 0, "no handler ran");
    let detail = dispatch.result.audit.detail.unwrap_or_default();
    assert!(detail.contains("does not accept calls read by"), "{detail}");
}
