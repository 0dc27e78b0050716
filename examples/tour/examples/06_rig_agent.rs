//! Already using rig: contracts as a rig agent's tools. rig's own agent loop drives the issue
//! tracker's three tools (`src/issue_tracker.rs`), over rig's OpenAI Responses wire answered
//! by recorded turns (`rig-agent/openai-turns.json`): a read and a label run, a close waits
//! for the maintainer; once approved outside the loop, the agent's next call closes the issue
//! once, and its repeat replays.
//! Run it: `cargo run --example 06_rig_agent --features rig`.

use std::sync::Arc;
use std::time::Duration;

use rig_agent::prelude::*;
use tool_contract::control::MemoryStore;
use tool_contract::prelude::*;
use tool_contract::rig::RigTools;
use tool_contract_tour::issue_tracker::{self, IssueState, Tracker};
use tool_contract_tour::recorded::{RecordedTurns, responses_model};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tracker = Tracker::with_issue_7();
    let store = Arc::new(MemoryStore::new());
    let dispatcher = Arc::new(issue_tracker::dispatcher(&tracker, store)?);
    let turns = RecordedTurns::from_json(include_str!("../rig-agent/openai-turns.json"))?;

    // What an application with a rig agent adds: its tools are the contracts'.
    let principal = Principal::new("acme", "agent:issue-desk");
    let tools = RigTools::new(Arc::clone(&dispatcher), principal).tools()?;
    let agent = AgentBuilder::new(responses_model(&turns, "gpt-5.5"))
        .preamble("You keep the issue tracker.")
        .dynamic_tools(tools)
        .default_max_turns(4)
        .build();

    let mut history = Vec::new();
    let asked = "Issue 7: label it printer and close it, the toner was replaced.";
    println!("agent: {}", agent.chat(asked, &mut history).await?.output());
    // A maintainer reads the preview and approves exactly it, outside the agent's loop.
    for pending in dispatcher.pending_approvals().await? {
        println!("maintainer approves:\n{}", pending.preview.to_text());
        dispatcher
            .approve_pending(&pending, "maintainer", Duration::from_secs(600))
            .await?;
    }
    let again = "The maintainer approved. Close issue 7.";
    println!("agent: {}", agent.chat(again, &mut history).await?.output());

    // The last request rig sent holds every result the model read.
    let told = turns.requests().pop().ok_or("rig sent no request")?;
    let results: Vec<serde_json::Value> = (told["input"].as_array().into_iter().flatten())
        .filter(|item| item["type"] == "function_call_output")
        .filter_map(|item| serde_json::from_str(item["output"].as_str()?).ok())
        .collect();
    for result in &results {
        println!(
            "  {}, {}",
            result["status"], result["execution"]["delivery"]
        );
    }
    let issue = tracker.issue(7).ok_or("issue 7 is gone")?;
    println!(
        "ran: {}; issue 7: {:?}",
        tracker.ran().join(", "),
        issue.state
    );

    assert_eq!(
        tracker.ran(),
        ["get_issue", "label_issue", "close_issue"],
        "the close ran once"
    );
    assert_eq!(issue.state, IssueState::Closed);
    let last = results
        .last()
        .map(|result| &result["execution"]["delivery"]);
    assert_eq!(last, Some(&"local_replay".into()), "its repeat replayed");
    Ok(())
}
