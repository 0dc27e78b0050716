//! A contract registry as a rig agent's tools, driven by rig's own agent loop: rig-agent's
//! `Agent` over rig-core's OpenAI Responses wire, answered by recorded turns. What the model
//! was told is each request rig sent; what ran is the tracker's own record.

use std::sync::Arc;
use std::time::Duration;

use rig_agent::prelude::*;
use serde_json::{Value, json};
use tool_contract::contract::Registry;
use tool_contract::control::MemoryStore;
use tool_contract::json::canonical;
use tool_contract::providers::Adapter;
use tool_contract::rig::{PendingApprovalNotice, RigTools, RigToolsError};
use tool_contract::{ModelResult, Principal, ToolContract};
use tool_contract_tour::issue_tracker::{
    self, CloseIssue, GetIssue, IssueState, LabelIssue, Tracker,
};
use tool_contract_tour::recorded::{RecordedTurns, responses_model};

/// The tracker, its dispatcher, and a rig agent with its tools answered by `turns`.
struct Desk {
    tracker: Arc<Tracker>,
    dispatcher: Arc<tool_contract::dispatch::Dispatcher>,
    turns: RecordedTurns,
    agent: Agent,
}

fn principal() -> Principal {
    Principal::new("acme", "agent:issue-desk")
}

fn desk(turns: &str) -> Desk {
    let tracker = Tracker::with_issue_7();
    let dispatcher = Arc::new(
        issue_tracker::dispatcher(&tracker, Arc::new(MemoryStore::new())).expect("builds"),
    );
    let turns = RecordedTurns::from_json(turns).expect("recorded turns");
    let tools = RigTools::new(Arc::clone(&dispatcher), principal())
        .tools()
        .expect("the registry accepts rig's calls");
    let agent = AgentBuilder::new(responses_model(&turns, "gpt-5.5"))
        .dynamic_tools(tools)
        .default_max_turns(4)
        .build();
    Desk {
        tracker,
        dispatcher,
        turns,
        agent,
    }
}

/// The tool results of one request rig sent, in order: each call's tool name and the
/// output the model read, as text.
fn told(request: &Value) -> Vec<(String, String)> {
    let input = request["input"].as_array().expect("an input list");
    let name_of = |call_id: &Value| {
        input
            .iter()
            .find(|item| item["type"] == "function_call" && item["call_id"] == *call_id)
            .and_then(|call| call["name"].as_str())
            .expect("every output answers a call of the same input")
            .to_owned()
    };
    input
        .iter()
        .filter(|item| item["type"] == "function_call_output")
        .map(|item| {
            let output = item["output"].as_str().expect("output is text").to_owned();
            (name_of(&item["call_id"]), output)
        })
        .collect()
}

/// The model result a tool output is, checked to be exactly its RFC 8785 text.
fn model_result(output: &str) -> ModelResult {
    let parsed: Value = serde_json::from_str(output).expect("JSON");
    assert_eq!(
        canonical::to_vec(&parsed).expect("canonical"),
        output.as_bytes(),
        "the model reads the canonical JSON the digests cover"
    );
    ModelResult::from_json(output.as_bytes()).expect("a tool-model-result-v2")
}

/// `status[/code]/delivery` of a model result, to read a whole turn at a glance.
fn summary(output: &str) -> String {
    let result: Value = serde_json::from_str(output).expect("JSON");
    let mut line = result["status"].as_str().unwrap_or("?").to_owned();
    if let Some(code) = result["error"]["code"].as_str() {
        line = format!("{line}/{code}");
    }
    format!(
        "{line}/{}",
        result["execution"]["delivery"].as_str().unwrap_or("?")
    )
}

const ISSUE_DESK_TURNS: &str = include_str!("../tour/rig-agent/openai-turns.json");

#[tokio::test]
async fn a_rig_agent_reads_writes_and_runs_an_approved_write_once_then_replays_it() {
    let Desk {
        tracker,
        dispatcher,
        turns,
        agent,
    } = desk(ISSUE_DESK_TURNS);
    let mut history = Vec::new();

    let answer = agent
        .chat("Label issue 7 printer and close it.", &mut history)
        .await
        .expect("the first run ends with the model's text");
    assert_eq!(
        answer.output(),
        "Issue 7 is labelled printer. Closing it waits for a maintainer's approval."
    );
    assert_eq!(tracker.ran(), ["get_issue", "label_issue"]);
    let requests = turns.requests();
    let first_turn: Vec<_> = told(&requests[1])
        .iter()
        .map(|(name, output)| (name.clone(), summary(output)))
        .collect();
    assert_eq!(
        first_turn,
        [
            ("get_issue".into(), "succeeded/fresh".into()),
            ("label_issue".into(), "succeeded/fresh".into()),
            (
                "close_issue".into(),
                "failed/APPROVAL_REQUIRED/fresh".into()
            ),
        ]
    );
    let (_, asked) = &told(&requests[1])[2];
    let asked = model_result(asked);
    assert_eq!(
        serde_json::to_value(asked.error().expect("an error").recovery()).unwrap(),
        "request_approval"
    );

    // Approved from outside the agent's loop, for exactly the previewed call.
    let pending = dispatcher.pending_approvals().await.expect("store");
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].preview.tool, "close_issue");
    assert_eq!(
        pending[0].principal_ref,
        tool_contract::AuditKeys::development().principal_ref(&principal()),
        "the call was made for the principal the tools were built for"
    );
    dispatcher
        .approve_pending(&pending[0], "maintainer", Duration::from_secs(600))
        .await
        .expect("approved");

    let answer = agent
        .chat("The maintainer approved. Close issue 7.", &mut history)
        .await
        .expect("the second run ends with the model's text");
    assert_eq!(answer.output(), "Issue 7 is closed: toner replaced.");
    assert_eq!(
        tracker.ran(),
        ["get_issue", "label_issue", "close_issue"],
        "the approved close ran once; its repeat did not run"
    );
    let last = turns.requests().last().cloned().expect("requests");
    let closes: Vec<String> = told(&last)
        .iter()
        .filter(|(name, _)| name == "close_issue")
        .map(|(_, output)| summary(output))
        .collect();
    assert_eq!(
        closes,
        [
            "failed/APPROVAL_REQUIRED/fresh",
            "succeeded/fresh",
            "succeeded/local_replay"
        ]
    );
    let issue = tracker.issue(7).expect("issue 7");
    assert_eq!((issue.state, issue.revision), (IssueState::Closed, 3));
    assert_eq!(turns.remaining(), 0, "every recorded turn was asked for");
}

#[tokio::test]
async fn the_model_is_told_exactly_the_model_result_and_nothing_of_the_audit() {
    let Desk { turns, agent, .. } = desk(ISSUE_DESK_TURNS);
    agent
        .chat("Label issue 7 printer and close it.", &mut Vec::new())
        .await
        .expect("ends with text");
    for (name, output) in told(&turns.requests()[1]) {
        let result = model_result(&output);
        let text = output.to_lowercase();
        for secret in [
            "acme",
            "agent:issue-desk",
            "sha256",
            "principal",
            "operation",
        ] {
            assert!(!text.contains(secret), "{name} told the model {secret:?}");
        }
        assert_eq!(
            serde_json::to_value(result.execution()).unwrap()["complete"],
            result.status() == tool_contract::Status::Succeeded
        );
    }
}

#[tokio::test]
async fn each_tool_is_declared_with_its_contracts_name_description_and_input_schema() {
    let Desk { turns, agent, .. } = desk(ISSUE_DESK_TURNS);
    agent
        .chat("Label issue 7 printer and close it.", &mut Vec::new())
        .await
        .expect("ends with text");
    let declared = turns.requests()[0]["tools"].clone();
    let declared = declared.as_array().expect("tools");
    let specs = [GetIssue::spec(), LabelIssue::spec(), CloseIssue::spec()];
    assert_eq!(declared.len(), specs.len());
    for spec in specs {
        let tool = declared
            .iter()
            .find(|tool| tool["name"] == spec.name())
            .unwrap_or_else(|| panic!("{} is declared", spec.name()));
        assert_eq!(tool["description"], spec.description());
        assert_eq!(&tool["parameters"], spec.input_schema());
    }
}

#[tokio::test]
async fn arguments_outside_the_contract_are_refused_with_their_paths_and_nothing_runs() {
    let turns = json!([
        {"id": "resp_bad_1", "object": "response", "created_at": 1764756001,
         "status": "completed", "model": "gpt-5.5",
         "output": [
            {"type": "function_call", "id": "fc_bad_1", "call_id": "call_bad",
             "name": "label_issue", "status": "completed",
             "arguments": "{\"number\":7,\"label\":\"Not A Label\",\"force\":true}"}],
         "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}},
        {"id": "resp_bad_2", "object": "response", "created_at": 1764756002,
         "status": "completed", "model": "gpt-5.5",
         "output": [
            {"type": "message", "id": "msg_bad", "status": "completed", "role": "assistant",
             "content": [{"type": "output_text", "text": "I could not label it.",
                          "annotations": []}]}],
         "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}
    ]);
    let Desk {
        tracker,
        turns,
        agent,
        ..
    } = desk(&turns.to_string());
    let answer = agent
        .chat("Label issue 7.", &mut Vec::new())
        .await
        .expect("ends with text");
    assert_eq!(answer.output(), "I could not label it.");
    assert!(tracker.ran().is_empty(), "{:?}", tracker.ran());
    let told = told(&turns.requests()[1]);
    assert_eq!(told.len(), 1);
    let result = model_result(&told[0].1);
    let error = result.error().expect("refused");
    assert_eq!(error.code(), tool_contract::ErrorCode::InvalidArguments);
    let paths: Vec<String> = serde_json::to_value(error).unwrap()["paths"]
        .as_array()
        .expect("paths")
        .iter()
        .map(|path| path.as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(paths.contains(&"/label".to_owned()), "{paths:?}");
    assert!(paths.contains(&"/force".to_owned()), "{paths:?}");
}

#[test]
fn a_registry_that_does_not_accept_rigs_calls_gives_no_tools() {
    let openai_only: Registry = Registry::builder()
        .push::<GetIssue>()
        .push::<LabelIssue>()
        .push::<CloseIssue>()
        .adapter(Adapter::OPENAI_RESPONSES)
        .build();
    let dispatcher = issue_tracker::builder(
        openai_only,
        &Tracker::with_issue_7(),
        Arc::new(MemoryStore::new()),
    )
    .build()
    .expect("builds");
    let refused = RigTools::new(Arc::new(dispatcher), principal())
        .tools()
        .unwrap_err();
    assert_eq!(refused, RigToolsError::AdapterNotAccepted);
    assert!(refused.to_string().contains("RegistryBuilder::adapter"));
}

#[tokio::test]
async fn the_tools_count_their_calls_against_the_task_they_were_given() {
    let tracker = Tracker::with_issue_7();
    let dispatcher = Arc::new(
        issue_tracker::dispatcher(&tracker, Arc::new(MemoryStore::new())).expect("builds"),
    );
    let task = Arc::new(tool_contract::dispatch::Task::new(
        tool_contract::dispatch::Budget::default().with_tool_calls(1),
    ));
    let tools = RigTools::new(dispatcher, principal())
        .with_task(Arc::clone(&task))
        .tools()
        .expect("tools");
    let get_issue = tools
        .iter()
        .find(|tool| tool.name().as_str() == "get_issue")
        .expect("get_issue");
    let first = get_issue.execute(json!({"number": 7})).await.expect("runs");
    assert_eq!(summary(first.as_text().expect("text")), "succeeded/fresh");
    let refused = get_issue.execute(json!({"number": 7})).await.unwrap_err();
    assert_eq!(refused.code(), Some("BUDGET_EXHAUSTED"));
    let told = refused.model_output().as_text().expect("the model result");
    assert_eq!(
        model_result(told).error().expect("error").code(),
        tool_contract::ErrorCode::BudgetExhausted
    );
    assert_eq!(tracker.ran(), ["get_issue"]);
}

#[tokio::test]
async fn a_write_waiting_for_approval_leaves_its_preview_to_the_host_and_not_to_the_model() {
    let tracker = Tracker::with_issue_7();
    let dispatcher = Arc::new(
        issue_tracker::dispatcher(&tracker, Arc::new(MemoryStore::new())).expect("builds"),
    );
    let tools = RigTools::new(Arc::clone(&dispatcher), principal())
        .tools()
        .expect("tools");
    let tool = |name: &str| {
        tools
            .iter()
            .find(|tool| tool.name().as_str() == name)
            .expect("declared")
    };
    let mut context = rig_core::tool::ToolContext::new();
    let close = json!({"number": 7, "revision": 1, "resolution": "Toner replaced"});
    let refused = tool("close_issue")
        .execute_with(&mut context, close.clone())
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Some("APPROVAL_REQUIRED"));
    let notice: PendingApprovalNotice = context
        .result()
        .expect("decodes")
        .expect("a notice for the host");
    let pending = dispatcher.pending_approvals().await.expect("store");
    assert_eq!(notice.approval_id, pending[0].approval_id);
    assert_eq!(notice.preview, pending[0].preview);
    assert_eq!(notice.preview.arguments, close);
    assert_eq!(notice.approvals_still_needed, 1);
    let told = refused.model_output().as_text().expect("the model result");
    assert!(!told.contains(&notice.approval_id), "{told}");
    assert!(!told.contains(&notice.preview_sha256), "{told}");

    let mut read = rig_core::tool::ToolContext::new();
    tool("get_issue")
        .execute_with(&mut read, json!({"number": 7}))
        .await
        .expect("a read runs");
    assert_eq!(
        read.result::<PendingApprovalNotice>().expect("decodes"),
        None
    );
}
