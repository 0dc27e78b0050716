//! An issue tracker behind the dispatcher, with a fake remote whose faults a test scripts:
//! the fixtures of the dispatch tests.

use std::cell::Cell;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use time::OffsetDateTime;
use tool_contract::control::{ControlStore, MemoryAuditLog, PendingApproval};
use tool_contract::dispatch::{
    Dispatch, Dispatcher, DispatcherBuilder, HandlerContext, RetryPolicy, Task, ToolOptions,
};
use tool_contract::providers::{Api, Correlation, ToolCall};
use tool_contract::{
    AuditKeys, CallContext, FailureKind, Principal, RawProvenance, RawResult, Registry, SecretKey,
    ToolContract, ToolFailure, ToolOutput,
};

/// Open an issue in the tracker.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = IssueRef, effect = non_idempotent_write, operation = same_arguments, approval = not_required,
                reconcile = FindIssue, source_label = "tracker", producer_revision = "tracker-v1")]
pub struct CreateIssue {
    /// The title.
    #[tool_contract(min_len = 1, max_len = 200)]
    pub title: String,
    /// The body.
    #[tool_contract(max_len = 5000)]
    pub body: String,
}

/// Find an issue by its title.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = IssueRef, effect = read_only, source_label = "tracker",
                producer_revision = "tracker-v1")]
pub struct FindIssue {
    /// The title.
    #[tool_contract(min_len = 1, max_len = 200)]
    pub title: String,
}

/// Open an issue in the legacy tracker, which knows no idempotency keys and no status query.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = IssueRef, effect = non_idempotent_write, operation = same_arguments, approval = by_caller,
                reconcile = manual, source_label = "legacy-tracker", producer_revision = "tracker-v1")]
pub struct FileIssue {
    /// The title.
    #[tool_contract(min_len = 1, max_len = 200)]
    pub title: String,
    /// The body.
    #[tool_contract(max_len = 5000)]
    pub body: String,
}

/// Put a label on an issue (the tracker applies one key once).
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = IssueRef, effect = idempotent_write, operation = same_arguments, approval = not_required,
                source_label = "tracker", producer_revision = "tracker-v1")]
pub struct LabelIssue {
    /// The issue.
    #[tool_contract(maximum = 1000000)]
    pub number: u32,
    /// The label.
    #[tool_contract(min_len = 1, max_len = 50)]
    pub label: String,
}

/// Send a message to an address outside the organisation.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = IssueRef, effect = non_idempotent_write, operation = same_arguments, approval = by_caller,
                reconcile = manual, source_label = "mail", producer_revision = "tracker-v1")]
pub struct SendMessage {
    /// The recipient.
    #[tool_contract(max_len = 200)]
    pub to: String,
    /// The text.
    #[tool_contract(max_len = 5000)]
    pub text: String,
}

/// Read a document from the knowledge base.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Document, effect = read_only, source_label = "docs",
                producer_revision = "docs-v1")]
pub struct ReadDoc {
    /// The document.
    #[tool_contract(max_len = 64)]
    pub doc_id: String,
}

/// Find advisors at the candidate schools.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Advisors, effect = read_only, source_label = "advisors",
                producer_revision = "advisors-v1")]
pub struct DiscoverAdvisors {
    /// The candidate schools.
    #[tool_contract(max_items = 20)]
    pub schools: Vec<String>,
}

/// Build the list of candidate schools.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Advisors, effect = read_only, source_label = "advisors",
                producer_revision = "advisors-v1")]
pub struct ListCandidateSchools {
    /// The field of study.
    #[tool_contract(max_len = 100)]
    pub field: String,
}

/// An issue's number.
#[derive(Debug, PartialEq, serde::Serialize, ToolOutput)]
pub struct IssueRef {
    /// The issue number.
    #[tool_output(maximum = 1000000)]
    pub number: u32,
}

/// A document's text.
#[derive(Debug, PartialEq, serde::Serialize, ToolOutput)]
pub struct Document {
    /// The text.
    #[tool_output(max_len = 5000)]
    pub text: String,
}

/// Names.
#[derive(Debug, PartialEq, serde::Serialize, ToolOutput)]
pub struct Advisors {
    /// The names.
    #[tool_output(max_items = 20)]
    pub names: Vec<String>,
}

/// Every tool above, accepting every shipped adapter.
pub fn registry() -> Registry {
    tool_contract::registry![
        CreateIssue,
        FindIssue,
        FileIssue,
        LabelIssue,
        SendMessage,
        ReadDoc,
        DiscoverAdvisors,
        ListCandidateSchools
    ]
    .into_builder()
    .all_adapters()
    .build()
}

/// The key of the tests' audit logs.
pub fn audit_key() -> SecretKey {
    SecretKey::new([0x17; 32]).unwrap()
}

/// The audit keys of the tests.
pub fn keys() -> AuditKeys {
    AuditKeys::new(SecretKey::new([0x42; 32]).unwrap())
}

thread_local! {
    static NOW_MS: Cell<i64> = const { Cell::new(1_787_392_800_000) };
}

/// A wall clock each test thread moves by hand (tokio's paused clock does not move it).
pub fn clock() -> OffsetDateTime {
    let ms = NOW_MS.with(Cell::get);
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

/// Moves this thread's wall clock on.
pub fn advance_clock(by: Duration) {
    NOW_MS.with(|now| now.set(now.get() + by.as_millis() as i64));
}

/// The key the remote sees for `alice`'s operation key `key`: scoped to her.
pub fn sent(key: &str) -> String {
    keys().downstream_key(&alice(), key)
}

/// The principal of the tests.
pub fn alice() -> Principal {
    Principal::new("acme", "alice")
}

/// A call of `name` with `arguments`, for operation `operation` under key `key`.
pub fn context(
    call_id: &str,
    name: &str,
    arguments: serde_json::Value,
    operation: &str,
    key: &str,
) -> CallContext {
    let call = ToolCall {
        api: Api::AnthropicMessages,
        adapter_revision: tool_contract::providers::anthropic::ADAPTER
            .revision
            .to_owned(),
        response_id: Some("msg_1".to_owned()),
        call_id: call_id.to_owned(),
        correlation: Correlation::Id,
        name: name.to_owned(),
        arguments: arguments.to_string().into_bytes(),
    };
    CallContext::new(call, operation).with_idempotency_key(key)
}

/// A `send_message` call of "hello" to `to`, its own operation and key (`id`).
pub fn message(id: &str, to: &str) -> CallContext {
    context(
        id,
        "send_message",
        serde_json::json!({ "to": to, "text": "hello" }),
        id,
        id,
    )
}

/// The catalog code a dispatch ended with, if it failed.
pub fn code(dispatch: &Dispatch) -> Option<tool_contract::ErrorCode> {
    dispatch.result.model.error().map(|error| error.code())
}

/// A `create_issue` call.
pub fn create(call_id: &str, title: &str, body: &str, key: &str) -> CallContext {
    context(
        call_id,
        "create_issue",
        json!({ "title": title, "body": body }),
        &format!("op-{key}"),
        key,
    )
}

/// What the fake remote does with the next request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Answers at once.
    None,
    /// Commits, then does not answer before the dispatcher's timeout.
    CommitThenHang,
    /// Never gets the request (connection refused).
    NotSent,
    /// Refuses for now, with a retry-after in ms.
    RateLimit(u64),
    /// Hangs without committing.
    HangBeforeCommit,
    /// Waits for a cancellation, then confirms it never acted.
    HonourCancel,
    /// Works this long (within the timeout), then commits and answers.
    CommitAfter(Duration),
}

/// The remote tracker: issues by key, every request counted.
#[derive(Debug, Default)]
pub struct Remote {
    state: Mutex<RemoteState>,
}

#[derive(Debug, Default)]
struct RemoteState {
    next_number: u32,
    issues: HashMap<String, u32>,
    requests: HashMap<String, u32>,
    creations: HashMap<String, u32>,
    arrivals: Vec<String>,
    faults: VecDeque<Fault>,
    status_queries: u32,
    /// Whether a status query cannot be answered now (the tracker unreachable for it).
    status_unreachable: bool,
    reads: u32,
}

/// How long a hung request hangs: far past every timeout the tests set.
pub const HANG: Duration = Duration::from_secs(3600);

impl Remote {
    /// A remote whose next issue is #241.
    pub fn new() -> Arc<Self> {
        let remote = Remote::default();
        remote.state().next_number = 241;
        Arc::new(remote)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, RemoteState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Scripts the next requests' faults (then `Fault::None`), replacing what was left.
    pub fn script(&self, faults: &[Fault]) {
        let mut state = self.state();
        state.faults.clear();
        state.faults.extend(faults);
    }

    /// Requests the remote received under `key` (sent, whatever became of them).
    pub fn requests(&self, key: &str) -> u32 {
        self.state().requests.get(key).copied().unwrap_or(0)
    }

    /// Requests received under every key.
    pub fn all_requests(&self) -> u32 {
        self.state().requests.values().sum()
    }

    /// How many times a create under `key` took effect (at most 1 when nothing runs twice).
    pub fn creations(&self, key: &str) -> u32 {
        self.state().creations.get(key).copied().unwrap_or(0)
    }

    /// Whether a write under `key` took effect (an issue created or a label applied).
    pub fn committed(&self, key: &str) -> bool {
        self.state().issues.contains_key(key)
    }

    /// What every create request that arrived asked for, in order.
    pub fn arrivals(&self) -> Vec<String> {
        self.state().arrivals.clone()
    }

    /// The number of the first issue created under `key`.
    pub fn created(&self, key: &str) -> Option<u32> {
        self.state().issues.get(key).copied()
    }

    /// Makes the status query unreachable (`true`) or answer again: while unreachable, it
    /// cannot tell whether a write happened.
    pub fn status_unreachable(&self, unreachable: bool) {
        self.state().status_unreachable = unreachable;
    }

    /// Status queries answered.
    pub fn status_queries(&self) -> u32 {
        self.state().status_queries
    }

    /// Reads answered.
    pub fn reads(&self) -> u32 {
        self.state().reads
    }

    /// The write itself, as a non-idempotent remote does it: every request that arrives
    /// creates an issue.
    pub async fn create(
        &self,
        key: &str,
        what: &str,
        cx: &mut HandlerContext,
    ) -> Result<RawResult, ToolFailure> {
        let fault = self.state().faults.pop_front().unwrap_or(Fault::None);
        if fault == Fault::NotSent {
            return Err(ToolFailure::new(FailureKind::NotSent, "connection refused"));
        }
        {
            let mut state = self.state();
            *state.requests.entry(key.to_owned()).or_default() += 1;
            state.arrivals.push(what.to_owned());
        }
        match fault {
            Fault::RateLimit(ms) => {
                return Err(ToolFailure::new(
                    FailureKind::RateLimited {
                        retry_after_ms: Some(ms),
                    },
                    "429",
                ));
            }
            Fault::HangBeforeCommit => {
                tokio::time::sleep(HANG).await;
            }
            Fault::CommitAfter(work) => {
                tokio::time::sleep(work).await;
            }
            Fault::HonourCancel => {
                cx.cancel_requested().await;
                return Err(ToolFailure::new(
                    FailureKind::Cancelled,
                    "stopped before sending",
                ));
            }
            _ => {}
        }
        let number = {
            let mut state = self.state();
            let number = state.next_number;
            state.next_number += 1;
            // A second create under one key is a second issue: keep the first for lookups.
            state.issues.entry(key.to_owned()).or_insert(number);
            *state.creations.entry(key.to_owned()).or_default() += 1;
            number
        };
        if fault == Fault::CommitThenHang {
            tokio::time::sleep(HANG).await;
        }
        Ok(issue(number))
    }

    /// An idempotent write: one key is applied once, whatever arrives.
    pub async fn label(&self, key: &str, number: u32) -> Result<RawResult, ToolFailure> {
        let fault = self.state().faults.pop_front().unwrap_or(Fault::None);
        if fault == Fault::NotSent {
            return Err(ToolFailure::new(FailureKind::NotSent, "connection refused"));
        }
        *self.state().requests.entry(key.to_owned()).or_default() += 1;
        if let Fault::RateLimit(ms) = fault {
            return Err(ToolFailure::new(
                FailureKind::RateLimited {
                    retry_after_ms: Some(ms),
                },
                "429",
            ));
        }
        self.state().issues.entry(key.to_owned()).or_insert(number);
        if matches!(fault, Fault::CommitThenHang | Fault::HangBeforeCommit) {
            tokio::time::sleep(HANG).await;
        }
        Ok(issue(number))
    }

    /// The status query by key: the issue, or `NotFound`.
    pub async fn find_by_key(&self, key: &str) -> Result<RawResult, ToolFailure> {
        let mut state = self.state();
        state.status_queries += 1;
        if state.status_unreachable {
            return Err(ToolFailure::new(FailureKind::NotSent, "connection refused"));
        }
        match state.issues.get(key) {
            Some(number) => Ok(issue(*number)),
            None => Err(ToolFailure::new(
                FailureKind::NotFound,
                "no issue under that key",
            )),
        }
    }

    /// A read, with the scripted fault.
    pub async fn read(&self, text: &str) -> Result<RawResult, ToolFailure> {
        let fault = self.state().faults.pop_front().unwrap_or(Fault::None);
        self.state().reads += 1;
        match fault {
            Fault::RateLimit(ms) => Err(ToolFailure::new(
                FailureKind::RateLimited {
                    retry_after_ms: Some(ms),
                },
                "429",
            )),
            Fault::NotSent => Err(ToolFailure::new(FailureKind::NotSent, "connection refused")),
            Fault::HangBeforeCommit | Fault::CommitThenHang => {
                tokio::time::sleep(HANG).await;
                Ok(document(text))
            }
            _ => Ok(document(text)),
        }
    }
}

fn issue(number: u32) -> RawResult {
    RawResult::new(
        json!({ "number": number }).to_string(),
        RawProvenance::new("tracker-v1", "2026-08-22T10:00:00Z"),
    )
}

fn document(text: &str) -> RawResult {
    RawResult::new(
        json!({ "text": text }).to_string(),
        RawProvenance::new("docs-v1", "2026-08-22T10:00:00Z"),
    )
}

/// Options the tests run tools with: 5 s per attempt, three attempts, no cost.
pub const OPTIONS: ToolOptions = ToolOptions::DEFAULT
    .with_timeout(Duration::from_secs(5))
    .with_retry(
        RetryPolicy::DEFAULT
            .with_max_attempts(3)
            .with_base(Duration::from_millis(100))
            .with_cap(Duration::from_secs(2))
            .with_max_total_wait(Duration::from_secs(10)),
    )
    .with_cost_units(1);

/// A dispatcher over [`registry`] with every handler wired to `remote`, before `build`.
pub fn builder(remote: &Arc<Remote>) -> DispatcherBuilder {
    builder_with_keys(remote, keys())
}

/// [`builder`] sealing with `keys`.
pub fn builder_with_keys(remote: &Arc<Remote>, keys: AuditKeys) -> DispatcherBuilder {
    let (r1, r2, r3, r4, r5, r6, r7) = (
        remote.clone(),
        remote.clone(),
        remote.clone(),
        remote.clone(),
        remote.clone(),
        remote.clone(),
        remote.clone(),
    );
    Dispatcher::builder(registry(), keys)
        .clock(clock)
        .audit_sink(Arc::new(MemoryAuditLog::new(audit_key())))
        .write_handler(
            move |input: CreateIssue, mut cx: HandlerContext| {
                let remote = r1.clone();
                async move {
                    let key = cx.idempotency_key().to_owned();
                    remote
                        .create(&key, &format!("{}|{}", input.title, input.body), &mut cx)
                        .await
                }
            },
            |write: &CreateIssue| FindIssue {
                title: write.title.clone(),
            },
            OPTIONS,
        )
        .handler_with(
            move |input: FindIssue, cx: HandlerContext| {
                let remote = r2.clone();
                async move {
                    // Run as a write's status query: look the write up by its key.
                    if cx.reconciling().is_some() {
                        return remote.find_by_key(cx.idempotency_key()).await;
                    }
                    let _ = remote.read(&input.title).await?;
                    Err(ToolFailure::new(
                        FailureKind::NotFound,
                        "no issue by that title",
                    ))
                }
            },
            OPTIONS,
        )
        .handler_with(
            move |input: FileIssue, mut cx: HandlerContext| {
                let remote = r3.clone();
                async move {
                    let key = cx.idempotency_key().to_owned();
                    remote
                        .create(&key, &format!("{}|{}", input.title, input.body), &mut cx)
                        .await
                }
            },
            OPTIONS,
        )
        .handler_with(
            move |input: LabelIssue, cx: HandlerContext| {
                let remote = r4.clone();
                async move { remote.label(cx.idempotency_key(), input.number).await }
            },
            OPTIONS,
        )
        .handler_with(
            move |input: SendMessage, mut cx: HandlerContext| {
                let remote = r5.clone();
                async move {
                    let key = cx.idempotency_key().to_owned();
                    remote
                        .create(&key, &format!("{}|{}", input.to, input.text), &mut cx)
                        .await
                }
            },
            OPTIONS,
        )
        .handler_with(
            move |input: ReadDoc, _cx: HandlerContext| {
                let remote = r6.clone();
                async move { remote.read(&format!("document {}", input.doc_id)).await }
            },
            OPTIONS,
        )
        .handler_with(
            move |input: DiscoverAdvisors, _cx: HandlerContext| {
                let remote = r7.clone();
                async move {
                    let _ = remote.read("advisors").await?;
                    let names: Vec<String> = input
                        .schools
                        .iter()
                        .map(|school| format!("advisor at {school}"))
                        .collect();
                    Ok(RawResult::new(
                        json!({ "names": names }).to_string(),
                        RawProvenance::new("advisors-v1", "2026-08-22T10:00:00Z"),
                    ))
                }
            },
            OPTIONS,
        )
        .handler_with(
            |_input: ListCandidateSchools, _cx: HandlerContext| async move {
                Ok(RawResult::new(
                    json!({ "names": ["Lund", "Uppsala"] }).to_string(),
                    RawProvenance::new("advisors-v1", "2026-08-22T10:00:00Z"),
                ))
            },
            OPTIONS,
        )
}

/// Dispatches `call` for [`alice`], with no budget limit.
pub async fn run(dispatcher: &Dispatcher, call: &CallContext) -> Dispatch {
    dispatcher
        .dispatch(&alice(), call, &Task::unlimited())
        .await
}

/// The approval receipt a dispatch's audit holds: the one its execution redeemed.
pub fn receipt_of(dispatch: &Dispatch) -> tool_contract::results::SignedReceipt {
    dispatch
        .result
        .audit
        .approval
        .as_ref()
        .and_then(|approval| approval.receipt.clone())
        .expect("the redeeming execution's audit holds a receipt")
}

/// The audit's internal detail of a dispatch (empty when it has none).
pub fn detail(dispatch: &Dispatch) -> &str {
    dispatch.result.audit.detail.as_deref().unwrap_or_default()
}

/// Dispatches `call`, a write that must wait for approval, and returns what is pending.
pub async fn pending_approval(dispatcher: &Dispatcher, call: &CallContext) -> PendingApproval {
    run(dispatcher, call)
        .await
        .pending_approval
        .expect("the write waits for approval")
}

/// Dispatches `call` and approves what it waits for, as `approver`, for an hour.
pub async fn approve(
    dispatcher: &Dispatcher,
    call: &CallContext,
    approver: &str,
) -> PendingApproval {
    let pending = pending_approval(dispatcher, call).await;
    let expires = clock() + Duration::from_secs(3600);
    dispatcher
        .approve(
            &pending.approval_id,
            &pending.preview_sha256,
            approver,
            expires,
        )
        .await
        .expect("the pending approval is approved")
        .grant()
        .expect("one approver grants it");
    pending
}

/// [`builder`] with `ledger`, built.
pub fn dispatcher(remote: &Arc<Remote>, ledger: Arc<dyn ControlStore>) -> Dispatcher {
    builder(remote)
        .store(ledger)
        .build()
        .expect("every tool has its handler")
}

/// `calls` reads of alice's dispatched with `sink` as the audit sink: records for a log.
///
/// # Panics
///
/// When a record is not kept.
pub async fn dispatch_reads(sink: Arc<dyn tool_contract::control::AuditSink>, calls: usize) {
    let remote = Remote::new();
    let dispatcher = builder(&remote).audit_sink(sink).build().unwrap();
    for index in 0..calls {
        dispatch_read(&dispatcher, index).await;
    }
}

/// Alice's read number `index` (call `c<index>`, document `d<index>`), dispatched by
/// `dispatcher`.
///
/// # Panics
///
/// When its record is not kept.
pub async fn dispatch_read(dispatcher: &Dispatcher, index: usize) {
    let call = context(
        &format!("c{index}"),
        "read_doc",
        serde_json::json!({ "doc_id": format!("d{index}") }),
        "op",
        "k",
    );
    let dispatch = dispatcher
        .dispatch(&alice(), &call, &Task::unlimited())
        .await;
    assert!(dispatch.audit_error.is_none(), "{:?}", dispatch.audit_error);
}
