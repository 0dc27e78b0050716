//! Issue 4, point 8: traces carry ids, digests, decisions and budgets, but no secrets.
//!
//! One test in its own binary, with a global subscriber: tracing caches which callsites are
//! enabled process-wide, so a per-thread subscriber beside other tests' threads can miss
//! events.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use tool_contract::control::MemoryStore;
use tool_contract::dispatch::{Dispatcher, GateDecision, HandlerContext, Task};
use tool_contract::{
    AuditKeys, CallContext, FailureKind, Principal, RawProvenance, RawResult, SecretKey,
    ToolFailure,
};
use tool_contract_tests::tracker::{
    self, Fault, ReadDoc, Remote, builder, builder_with_keys, clock, context,
};

/// A writer the subscriber appends to, shared with the test.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    /// What was written since the last call.
    fn take(&self) -> String {
        String::from_utf8_lossy(&std::mem::take(&mut *self.0.lock().unwrap())).into_owned()
    }
}

const SECRETS: [&str; 12] = [
    "TENANT-SECRET-1",
    "SUBJECT-SECRET-2",
    "ARG-SECRET-3",
    "KEY-SECRET-4",
    "OUTPUT-SECRET-5",
    "DETAIL-SECRET-6",
    "GATE-SECRET-7",
    "RECEIPT-SECRET-8",
    "APPROVER-SECRET-9",
    "FIELD-SECRET-10",
    "TOOL-SECRET-11",
    "OP-SECRET-12",
];

fn planted_dispatcher(remote: &Arc<Remote>) -> Dispatcher {
    let audit_key = SecretKey::new(*b"AUDIT-KEY-SECRET-0123456789abcdef").unwrap();
    let digest_key = SecretKey::new(*b"DIGEST-KEY-SECRET-0123456789abcd").unwrap();
    builder_with_keys(
        remote,
        AuditKeys::new(audit_key).with_digest_key(digest_key),
    )
    .handler_with(
        |input: ReadDoc, _: HandlerContext| async move {
            if input.doc_id.contains("fail") {
                let mut failure =
                    ToolFailure::new(FailureKind::Failed, "DETAIL-SECRET-6 backend said no");
                failure.downstream.receipt = Some("RECEIPT-SECRET-8".to_owned());
                return Err(failure);
            }
            let output = json!({ "text": format!("OUTPUT-SECRET-5 {}", input.doc_id) });
            Ok(RawResult::new(
                output.to_string(),
                RawProvenance::new("docs-v1", "2026-08-22T10:00:00Z"),
            ))
        },
        tracker::OPTIONS,
    )
    .gate(|call: &tool_contract::dispatch::GateCall<'_>| {
        if call.arguments["doc_id"] == "ARG-SECRET-3-blocked" {
            GateDecision::Block {
                reason: "GATE-SECRET-7".to_owned(),
            }
        } else {
            GateDecision::Proceed
        }
    })
    .build()
    .unwrap()
}

#[tokio::test(start_paused = true)]
async fn traces_show_every_stage_and_budget_and_none_of_the_secrets() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::set_global_default(subscriber).unwrap();
    secrets_planted_in_every_field_stay_out_of_the_trace(&captured).await;
    budget_left_is_traced_before_each_attempt(&captured).await;
    a_dispatcher_built_with_the_development_keys_says_so(&captured);
}

fn a_dispatcher_built_with_the_development_keys_says_so(captured: &Captured) {
    captured.take();
    let remote = Remote::new();
    builder(&remote).build().unwrap();
    assert!(
        !captured.take().contains("development keys"),
        "keys of the application's own are not warned about"
    );
    let registry = tool_contract::registry![tracker::ReadDoc];
    tool_contract::dispatch::Dispatcher::for_development(registry)
        .handler(|input: tracker::ReadDoc| async move {
            let output = json!({ "text": input.doc_id });
            Ok::<_, ToolFailure>(RawResult::new(
                output.to_string(),
                RawProvenance::new("docs-v1", "2026-08-22T10:00:00Z"),
            ))
        })
        .build()
        .unwrap();
    let trace = captured.take();
    assert!(
        trace.contains("WARN") && trace.contains("holds the development keys"),
        "{trace}"
    );
}

async fn secrets_planted_in_every_field_stay_out_of_the_trace(captured: &Captured) {
    let remote = Remote::new();
    remote.script(&[Fault::CommitThenHang]);
    let dispatcher = planted_dispatcher(&remote);
    let principal = Principal::new("TENANT-SECRET-1", "SUBJECT-SECRET-2");
    let task = Task::unlimited();
    let secret_key = |call: CallContext| {
        let key = format!("KEY-SECRET-4-{}", call.call.call_id);
        call.with_idempotency_key(key)
    };
    let calls = [
        context(
            "c1",
            "read_doc",
            json!({ "doc_id": "ARG-SECRET-3" }),
            "OP-SECRET-12-1",
            "k",
        ),
        context(
            "c2",
            "read_doc",
            json!({ "doc_id": "ARG-SECRET-3-fail" }),
            "OP-SECRET-12-2",
            "k",
        ),
        context(
            "c3",
            "read_doc",
            json!({ "doc_id": "ARG-SECRET-3-blocked" }),
            "OP-SECRET-12-3",
            "k",
        ),
        context(
            "c4",
            "read_doc",
            json!({ "doc_id": "x", "FIELD-SECRET-10": "ARG-SECRET-3" }),
            "OP-SECRET-12-4",
            "k",
        ),
        context(
            "c5",
            "TOOL-SECRET-11",
            json!({ "q": "ARG-SECRET-3" }),
            "OP-SECRET-12-5",
            "k",
        ),
        context(
            "c6",
            "create_issue",
            json!({ "title": "ARG-SECRET-3", "body": "b" }),
            "OP-SECRET-12-6",
            "k",
        ),
        context(
            "c7",
            "file_issue",
            json!({ "title": "ARG-SECRET-3", "body": "b" }),
            "OP-SECRET-12-7",
            "k",
        ),
    ];
    let mut pending = None;
    for call in calls {
        let dispatch = dispatcher
            .dispatch(&principal, &secret_key(call), &task)
            .await;
        pending = pending.or(dispatch.pending_approval);
    }
    let pending = pending.expect("file_issue waits for approval");
    dispatcher
        .approve(
            &pending.approval_id,
            &pending.preview_sha256,
            "APPROVER-SECRET-9",
            clock() + Duration::from_secs(60),
        )
        .await
        .unwrap()
        .grant()
        .expect("one approver grants it");

    let trace = captured.take();
    for secret in SECRETS {
        assert!(
            !trace.contains(secret),
            "{secret} leaked into the trace:\n{trace}"
        );
    }
    assert!(!trace.contains("KEY-SECRET"), "audit keys never appear");
    for field in [
        "execute_tool{",
        "request_id=",
        "gen_ai.tool.name=\"read_doc\"",
        "gen_ai.tool.name=\"(unregistered)\"",
        "gen_ai.tool.call.id=c1",
        "operation_sha256=",
        "request_sha256=",
        "result_sha256=",
        "key_sha256=",
        "attempt=1",
        "duration_ms=",
        "state=\"unknown\"",
        "error_code=\"OUTCOME_UNKNOWN\"",
        "error_code=\"BLOCKED\"",
        "error_code=\"INVALID_ARGUMENTS\"",
        "error_code=\"APPROVAL_REQUIRED\"",
        "stop_reason=\"outcome_unknown\"",
        "stage=\"handler\"",
        "stage=\"gate\"",
        "stage=\"ledger\"",
        "stage=\"approval\"",
    ] {
        assert!(trace.contains(field), "the trace lacks {field}:\n{trace}");
    }
}

async fn budget_left_is_traced_before_each_attempt(captured: &Captured) {
    let remote = Remote::new();
    let dispatcher = builder(&remote)
        .store(Arc::new(MemoryStore::new()))
        .build()
        .unwrap();
    let task = Task::new(tool_contract::dispatch::Budget::default().with_tool_calls(1));
    let call = context("c1", "read_doc", json!({ "doc_id": "d" }), "op-1", "k-1");
    dispatcher.dispatch(&tracker::alice(), &call, &task).await;
    dispatcher.dispatch(&tracker::alice(), &call, &task).await;
    let trace = captured.take();
    assert!(trace.contains("tool_calls_left=0"), "{trace}");
    assert!(
        trace.contains("stop_reason=\"tool_calls_exhausted\""),
        "{trace}"
    );
}
