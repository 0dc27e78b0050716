//! Keys from the contract: `DispatcherBuilder::operation_key` names a call's operation (and
//! its idempotency key) from the typed arguments, and `Dispatcher::context` owns the
//! plumbing of reading them.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use tool_contract::control::MemoryAuditLog;
use tool_contract::dispatch::{BuildError, Dispatcher, HandlerContext, Task, typed};
use tool_contract::providers::ToolCall;
use tool_contract::results::Delivery;
use tool_contract::{ErrorCode, Status, ToolContract, ToolFailure, ToolOutput};
use tool_contract_tests::tracker::{FindIssue, alice, audit_key, keys};

/// Close an issue at the revision the user saw.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Closed, effect = idempotent_write, approval = not_required,
                source_label = "tracker", producer_revision = "tracker-1")]
struct CloseIssue {
    #[tool_contract(maximum = 100000)]
    number: u32,
    #[tool_contract(maximum = 1000000)]
    revision: u32,
    /// Why, in the user's words: not part of the intent's key.
    #[tool_contract(max_len = 200)]
    note: String,
}

#[derive(Debug, serde::Serialize, ToolOutput)]
struct Closed {
    #[tool_output(bound = number)]
    number: u32,
}

struct Tracker {
    closes: AtomicU32,
}

async fn close(
    tracker: Arc<Tracker>,
    input: CloseIssue,
    _: HandlerContext,
) -> Result<Closed, ToolFailure> {
    tracker.closes.fetch_add(1, Ordering::Relaxed);
    Ok(Closed {
        number: input.number,
    })
}

fn dispatcher(tracker: &Arc<Tracker>, keyed: bool) -> Dispatcher {
    let builder = Dispatcher::builder(tool_contract::registry![CloseIssue], keys())
        .handler::<CloseIssue>(typed(tracker, close))
        .audit_sink(Arc::new(MemoryAuditLog::new(audit_key())));
    let builder = if keyed {
        builder
            .operation_key(|close: &CloseIssue| format!("{}:rev-{}", close.number, close.revision))
    } else {
        builder
    };
    builder.build().unwrap()
}

fn call(call_id: &str, arguments: &str) -> ToolCall {
    tool_contract_tests::kb::call(call_id, "close_issue", arguments)
}

#[tokio::test]
async fn the_rule_names_the_operation_so_a_retry_replays_and_a_later_action_runs() {
    let tracker = Arc::new(Tracker {
        closes: AtomicU32::new(0),
    });
    let dispatcher = dispatcher(&tracker, true);
    let task = Task::unlimited();
    let first = dispatcher.context(call("c1", r#"{"number":42,"revision":7,"note":"fixed"}"#));
    assert_eq!(first.operation_id, "close_issue:42:rev-7");
    assert_eq!(
        first.idempotency_key.as_deref(),
        Some("close_issue:42:rev-7")
    );
    let ran = dispatcher.dispatch(&alice(), &first, &task).await;
    assert_eq!(ran.result.model.status(), Status::Succeeded, "{ran:?}");

    // The model's retry, in another call: replayed, not run again.
    let retry = dispatcher.context(call("c2", r#"{"number":42,"revision":7,"note":"fixed"}"#));
    assert_eq!(retry.operation_id, first.operation_id);
    let replayed = dispatcher.dispatch(&alice(), &retry, &task).await;
    assert_eq!(
        replayed.result.model.execution().delivery,
        Delivery::LocalReplay
    );
    // Other arguments under the same intent's key are a conflict, never a second close.
    let reworded = dispatcher.context(call("c3", r#"{"number":42,"revision":7,"note":"done"}"#));
    let conflict = dispatcher.dispatch(&alice(), &reworded, &task).await;
    assert_eq!(
        conflict.result.model.error().map(|error| error.code()),
        Some(ErrorCode::IdempotencyConflict)
    );
    assert_eq!(tracker.closes.load(Ordering::Relaxed), 1);

    // Reopened (revision 8) and closed again: a new action, which runs.
    let again = dispatcher.context(call("c4", r#"{"number":42,"revision":8,"note":"again"}"#));
    let ran = dispatcher.dispatch(&alice(), &again, &task).await;
    assert_eq!(ran.result.model.execution().delivery, Delivery::Fresh);
    assert_eq!(tracker.closes.load(Ordering::Relaxed), 2);
}

#[tokio::test]
async fn without_a_rule_a_writes_operation_is_its_exact_arguments() {
    let tracker = Arc::new(Tracker {
        closes: AtomicU32::new(0),
    });
    let dispatcher = dispatcher(&tracker, false);
    let one = dispatcher.context(call("c1", r#"{"number":42,"revision":7,"note":"a"}"#));
    let same = dispatcher.context(call("c2", r#"{ "note":"a", "revision":7, "number":42 }"#));
    let other = dispatcher.context(call("c3", r#"{"number":42,"revision":7,"note":"b"}"#));
    assert_eq!(
        one.operation_id, same.operation_id,
        "the same arguments, written otherwise"
    );
    assert_ne!(one.operation_id, other.operation_id);
    assert!(one.operation_id.starts_with("close_issue:"));
}

#[test]
fn a_key_for_a_tool_the_registry_lacks_does_not_build() {
    let tracker = Arc::new(Tracker {
        closes: AtomicU32::new(0),
    });
    let Err(errors) = Dispatcher::builder(tool_contract::registry![CloseIssue], keys())
        .handler::<CloseIssue>(typed(&tracker, close))
        .operation_key(|find: &FindIssue| find.title.clone())
        .audit_sink(Arc::new(MemoryAuditLog::new(audit_key())))
        .build()
    else {
        panic!("built");
    };
    assert!(
        errors.contains(&BuildError::UnregisteredKey("find_issue")),
        "{errors:?}"
    );
}
