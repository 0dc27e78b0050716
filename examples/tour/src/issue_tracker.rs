//! The issue tracker the `issue-desk` and `rig-agent` examples serve: three contracts (a read,
//! an idempotent write, and a non-idempotent write a maintainer approves), their handlers, and
//! the dispatcher around them.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tool_contract::control::ControlStore;
use tool_contract::dispatch::BuildErrors;
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
#[tool_contract(output = Issue, effect = idempotent_write, operation = key_rule, approval = not_required,
                source_label = "tracker", producer_revision = "tracker-1")]
pub struct LabelIssue {
    #[tool_contract(maximum = 1000000)]
    pub number: u32,
    #[tool_contract(pattern = "^[a-z][a-z0-9-]{0,30}$")]
    pub label: String,
}

/// Close an issue at the revision read; a maintainer approves it first.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Issue, effect = non_idempotent_write, operation = key_rule, approval = by_caller,
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

/// The tracker the handlers share, and which of them ran, in order.
pub struct Tracker {
    issues: Mutex<BTreeMap<u32, Issue>>,
    ran: Mutex<Vec<&'static str>>,
}

impl Tracker {
    /// A tracker holding one open issue, number 7 at revision 1.
    pub fn with_issue_7() -> Arc<Self> {
        let issue = Issue {
            number: 7,
            title: "Printer on floor 3 is out of toner".into(),
            state: IssueState::Open,
            labels: vec![],
            revision: 1,
        };
        Arc::new(Tracker {
            issues: Mutex::new(BTreeMap::from([(7, issue)])),
            ran: Mutex::new(Vec::new()),
        })
    }

    /// The issue `number`, as the tracker holds it now.
    pub fn issue(&self, number: u32) -> Option<Issue> {
        self.issues.lock().unwrap().get(&number).cloned()
    }

    /// The handlers that ran, by tool name, in order.
    pub fn ran(&self) -> Vec<&'static str> {
        self.ran.lock().unwrap().clone()
    }

    fn run(&self, tool: &'static str) -> std::sync::MutexGuard<'_, BTreeMap<u32, Issue>> {
        self.ran.lock().unwrap().push(tool);
        self.issues.lock().unwrap()
    }
}

type IssueResult = Result<Issue, ToolFailure>;

async fn get_issue(tracker: Arc<Tracker>, input: GetIssue, cx: HandlerContext) -> IssueResult {
    let issue = tracker.run("get_issue").get(&input.number).cloned();
    match issue {
        // Asked as a close's status query: an open issue means the close never happened.
        Some(issue) if cx.reconciling().is_some() && issue.state == IssueState::Open => {
            Err(not_found())
        }
        Some(issue) => Ok(issue),
        None => Err(not_found()),
    }
}

async fn label_issue(tracker: Arc<Tracker>, input: LabelIssue) -> IssueResult {
    let mut issues = tracker.run("label_issue");
    let issue = issues.get_mut(&input.number).ok_or_else(not_found)?;
    if !issue.labels.contains(&input.label) {
        issue.labels.push(input.label);
        issue.revision += 1;
    }
    Ok(issue.clone())
}

async fn close_issue(tracker: Arc<Tracker>, input: CloseIssue) -> IssueResult {
    let mut issues = tracker.run("close_issue");
    let issue = issues.get_mut(&input.number).ok_or_else(not_found)?;
    issue.state = IssueState::Closed;
    issue.revision += 1;
    Ok(issue.clone())
}

fn not_found() -> ToolFailure {
    ToolFailure::new(FailureKind::NotFound, "no such issue")
}

/// The registry of the three contracts.
pub fn registry() -> Registry {
    registry![GetIssue, LabelIssue, CloseIssue]
}

/// The dispatcher over `tracker`, keeping its ledger and approvals in `store`.
///
/// # Errors
///
/// What [`DispatcherBuilder::build`] refuses.
pub fn dispatcher(
    tracker: &Arc<Tracker>,
    store: Arc<dyn ControlStore>,
) -> Result<Dispatcher, BuildErrors> {
    builder(registry(), tracker, store).build()
}

/// The dispatcher's builder, over `registry` (the three contracts, accepting the adapters it
/// names).
pub fn builder(
    registry: Registry,
    tracker: &Arc<Tracker>,
    store: Arc<dyn ControlStore>,
) -> DispatcherBuilder {
    // The development keys: a demo's, which anyone can compute.
    Dispatcher::for_development(registry)
        .handler(typed(tracker, get_issue))
        .handler(typed(tracker, label_issue))
        .write_handler(
            typed(tracker, close_issue),
            |close: &CloseIssue| GetIssue {
                number: close.number,
            },
            ToolOptions::DEFAULT,
        )
        .operation_key(|label: &LabelIssue| format!("{}:{}", label.number, label.label))
        // The revision read is part of the intent: reopened and closed again is a new close.
        .operation_key(|close: &CloseIssue| format!("{}:rev-{}", close.number, close.revision))
        .store(store)
}
