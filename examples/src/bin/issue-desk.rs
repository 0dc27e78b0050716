//! A three-tool issue-tracker assistant: a read, an idempotent write, and a non-idempotent
//! write a maintainer approves. Two recorded OpenAI Responses turns run through the whole
//! pipeline on an SQLite store: the first asks for the close, the maintainer approves it in
//! one call, and the model's next identical call runs it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tool_contract::control::SqliteStore;
use tool_contract::prelude::*;

// -- contracts --
/// Read an issue: its title, state, labels and revision.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Issue, effect = read_only, source_label = "tracker",
                producer_revision = "tracker-1")]
pub struct GetIssue {
    #[tool_contract(maximum = 1000000)]
    pub number: u32,
}

/// Put a label on an issue (one label is applied once).
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Issue, effect = idempotent_write, approval = not_required,
                source_label = "tracker", producer_revision = "tracker-1")]
pub struct LabelIssue {
    #[tool_contract(maximum = 1000000)]
    pub number: u32,
    #[tool_contract(pattern = "^[a-z][a-z0-9-]{0,30}$")]
    pub label: String,
}

/// Close an issue at the revision read; a maintainer approves it first.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Issue, effect = non_idempotent_write, approval = required,
                reconcile = GetIssue, source_label = "tracker", producer_revision = "tracker-1")]
pub struct CloseIssue {
    #[tool_contract(maximum = 1000000)]
    pub number: u32,
    #[tool_contract(maximum = 1000000)]
    pub revision: u32,
    #[tool_contract(min_len = 3, max_len = 200)]
    pub resolution: String,
}

#[derive(Debug, Clone, serde::Serialize, ToolOutput)]
pub struct Issue {
    #[tool_output(bound = number)]
    pub number: u32,
    #[tool_output(max_len = 200)]
    pub title: String,
    pub state: IssueState,
    #[tool_output(max_items = 20)]
    pub labels: Vec<String>,
    #[tool_output(maximum = 1000000)]
    pub revision: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, ToolOutput)]
#[serde(rename_all = "snake_case")]
pub enum IssueState {
    Open,
    Closed,
}
// -- end of contracts --

/// The tracker the handlers share.
struct Tracker(Mutex<BTreeMap<u32, Issue>>);

type IssueResult = Result<Issue, ToolFailure>;

async fn get_issue(tracker: Arc<Tracker>, input: GetIssue, cx: HandlerContext) -> IssueResult {
    let issue = tracker.0.lock().unwrap().get(&input.number).cloned();
    match issue {
        // Asked as a close's status query: an open issue means the close never happened.
        Some(issue) if cx.reconciling().is_some() && issue.state == IssueState::Open => {
            Err(not_found())
        }
        Some(issue) => Ok(issue),
        None => Err(not_found()),
    }
}

async fn label_issue(tracker: Arc<Tracker>, input: LabelIssue, _: HandlerContext) -> IssueResult {
    let mut issues = tracker.0.lock().unwrap();
    let issue = issues.get_mut(&input.number).ok_or_else(not_found)?;
    if !issue.labels.contains(&input.label) {
        issue.labels.push(input.label);
        issue.revision += 1;
    }
    Ok(issue.clone())
}

async fn close_issue(tracker: Arc<Tracker>, input: CloseIssue, _: HandlerContext) -> IssueResult {
    let mut issues = tracker.0.lock().unwrap();
    let issue = issues.get_mut(&input.number).ok_or_else(not_found)?;
    issue.state = IssueState::Closed;
    issue.revision += 1;
    Ok(issue.clone())
}

fn not_found() -> ToolFailure {
    ToolFailure::new(FailureKind::NotFound, "no such issue")
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let issue = Issue {
        number: 7,
        title: "Printer on floor 3 is out of toner".into(),
        state: IssueState::Open,
        labels: vec![],
        revision: 1,
    };
    let tracker = Arc::new(Tracker(Mutex::new(BTreeMap::from([(7, issue)]))));
    let store = std::env::temp_dir().join(format!("issue-desk-{}.sqlite", std::process::id()));
    let registry = registry![GetIssue, LabelIssue, CloseIssue];
    let tools = tool_declarations(&registry, Api::OpenAiResponses)?;
    println!("tools for OpenAI: {tools}");
    let keys = AuditKeys::new(SecretKey::from(*b"issue desk demo key, not secret!"));
    let dispatcher = Dispatcher::builder(registry, keys)
        .handler::<GetIssue>(typed(&tracker, get_issue))
        .handler::<LabelIssue>(typed(&tracker, label_issue))
        .write_handler::<CloseIssue>(
            typed(&tracker, close_issue),
            |close: &CloseIssue| GetIssue {
                number: close.number,
            },
            ToolOptions::DEFAULT,
        )
        .operation_key(|label: &LabelIssue| format!("{}:{}", label.number, label.label))
        // The revision read is part of the intent: reopened and closed again is a new close.
        .operation_key(|close: &CloseIssue| format!("{}:rev-{}", close.number, close.revision))
        .store(Arc::new(SqliteStore::open(&store)?))
        .audit_sink(Arc::new(MemoryAuditLog::new(SecretKey::from([9; 32]))))
        .build()?;
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
    let issue = tracker.0.lock().unwrap()[&7].clone();
    println!(
        "\nissue 7: {:?} at revision {}",
        issue.state, issue.revision
    );
    std::fs::remove_file(&store)?;
    Ok(())
}
