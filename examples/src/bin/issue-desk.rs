//! A three-tool issue-tracker assistant (`issue_tracker`: a read, an idempotent write, and a
//! non-idempotent write a maintainer approves). Two recorded OpenAI Responses turns run through the whole
//! pipeline on an SQLite store: the first asks for the close, the maintainer approves it in
//! one call, and the model's next identical call runs it.

use std::sync::Arc;
use std::time::Duration;

use tool_contract::control::SqliteStore;
use tool_contract::prelude::*;
use tool_contract_tour::issue_tracker::{self, IssueState, Tracker};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tracker = Tracker::with_issue_7();
    let store = std::env::temp_dir().join(format!("issue-desk-{}.sqlite", std::process::id()));
    let tools = tool_declarations(&issue_tracker::registry(), Api::OpenAiResponses)?;
    println!("tools for OpenAI: {tools}");
    let dispatcher = issue_tracker::dispatcher(&tracker, Arc::new(SqliteStore::open(&store)?))?;
    let principal = Principal::new("acme", "agent:issue-desk");
    let turns: Vec<Box<serde_json::value::RawValue>> =
        serde_json::from_str(include_str!("../../issue-desk/openai-turns.json"))?;
    for (number, body) in turns.iter().enumerate() {
        println!("\nturn {}", number + 1);
        let turn = OpenAiResponses.parse(body.get().as_bytes())?;
        let dispatched = dispatcher
            .dispatch_turn(&principal, &turn, &Task::unlimited())
            .await;
        for (answer, dispatch) in &dispatched {
            println!("  {}: {}", answer.context.call.name, answer.result.model);
            if let Some(pending) = &dispatch.pending_approval {
                // The maintainer reads the preview and approves exactly it, in one call.
                println!("  maintainer approves:\n{}", pending.preview.to_text());
                let ten_minutes = Duration::from_secs(600);
                dispatcher
                    .approve_pending(pending, "maintainer", ten_minutes)
                    .await?;
            }
        }
        let answers = dispatched.answers();
        let next =
            OpenAiResponses.write_results(&dispatcher.binder(), &principal, &turn, answers)?;
        println!("  next turn's input: {next}");
    }
    let issue = tracker.issue(7).ok_or("issue 7 is gone")?;
    assert_eq!(issue.state, IssueState::Closed);
    println!(
        "\nissue 7: {:?} at revision {}",
        issue.state, issue.revision
    );
    std::fs::remove_file(&store)?;
    Ok(())
}
