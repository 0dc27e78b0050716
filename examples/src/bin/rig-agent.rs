//! Already using rig: the issue tracker's three contracts as a rig agent's tools. rig's own
//! agent loop drives them, over rig's OpenAI Responses wire answered by recorded turns
//! (`examples/rig-agent/openai-turns.json`): a read and an idempotent write run, a close waits
//! for the maintainer's approval; once approved from outside, the agent's next identical call
//! runs it once, and its repeat replays.

use std::sync::Arc;
use std::time::Duration;

use rig_agent::prelude::*;
use tool_contract::control::MemoryStore;
use tool_contract::prelude::*;
use tool_contract::rig::RigTools;
use tool_contract_examples::issue_tracker::{self, Tracker};
use tool_contract_examples::recorded::{RecordedTurns, responses_model};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tracker = Tracker::with_issue_7();
    let dispatcher = Arc::new(issue_tracker::dispatcher(
        &tracker,
        Arc::new(MemoryStore::new()),
    )?);
    let turns = RecordedTurns::from_json(include_str!("../../rig-agent/openai-turns.json"))?;

    // The dozen lines an application with a rig agent adds: its tools are the contracts'.
    let principal = Principal::new("acme", "agent:issue-desk");
    let tools = RigTools::new(Arc::clone(&dispatcher), principal).tools()?;
    let agent = AgentBuilder::new(responses_model(&turns, "gpt-5.5"))
        .preamble("You keep the issue tracker.")
        .dynamic_tools(tools)
        .default_max_turns(4)
        .build();

    let mut history = Vec::new();
    let asked = "Issue 7: label it printer and close it, the toner was replaced.";
    let answer = agent.chat(asked, &mut history).await?;
    println!("agent: {}", answer.output());

    // A maintainer reads the preview and approves exactly it, outside the agent's loop.
    for pending in dispatcher.pending_approvals().await? {
        println!("maintainer approves:\n{}", pending.preview.to_text());
        let ten_minutes = Duration::from_secs(600);
        dispatcher
            .approve_pending(&pending, "maintainer", ten_minutes)
            .await?;
    }
    let answer = agent
        .chat("The maintainer approved. Close issue 7.", &mut history)
        .await?;
    println!("agent: {}", answer.output());

    // The last request rig sent holds the whole conversation: every result the model read.
    let told = turns.requests().pop().ok_or("rig sent no request")?;
    let input = told["input"].as_array().cloned().unwrap_or_default();
    let named = |call_id: &serde_json::Value| {
        let call = input.iter().find(|item| item["call_id"] == *call_id);
        call.and_then(|call| call["name"].as_str()).unwrap_or("?")
    };
    for item in input
        .iter()
        .filter(|item| item["type"] == "function_call_output")
    {
        let result: serde_json::Value =
            serde_json::from_str(item["output"].as_str().unwrap_or("{}"))?;
        let text = |value: &serde_json::Value| value.as_str().unwrap_or("?").to_owned();
        let code = result["error"]["code"]
            .as_str()
            .map(|code| format!(", {code}"));
        println!(
            "  {}: {}{}, delivery {}",
            named(&item["call_id"]),
            text(&result["status"]),
            code.unwrap_or_default(),
            text(&result["execution"]["delivery"])
        );
    }
    println!("ran: {}", tracker.ran().join(", "));
    let issue = tracker.issue(7).ok_or("issue 7 is gone")?;
    println!("issue 7: {:?} at revision {}", issue.state, issue.revision);
    Ok(())
}
