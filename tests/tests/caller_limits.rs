//! Bounds on what one caller holds: a principal holds at most its server's open tasks
//! (`with_open_tasks_per_principal`) and its dispatcher's pending approvals
//! (`pending_approvals_per_principal`); a call past them is answered `CALLER_LIMIT` and makes
//! nothing, however many arrive at once; another principal is answered as before.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, CancelTaskParams, TaskStatus};
use serde_json::{Value, json};
use tool_contract::ErrorCode;
use tool_contract::Principal;
use tool_contract::dispatch::Task;
use tool_contract::mcp::McpServer;
use tool_contract_tests::backends::Backend;
use tool_contract_tests::on_every_store;
use tool_contract_tests::task_client::{Started, message, server, session, start, until};
use tool_contract_tests::tracker::{self, Remote, alice, builder, dispatcher};

/// The code a call's answer carries, if it is an error.
fn code(answer: &Started) -> Option<&str> {
    match answer {
        Started::Answered(result) => result.pointer("/error/code").and_then(Value::as_str),
        Started::Task(_) => None,
    }
}

/// A read, answered at once by a server that makes no tasks.
fn read() -> CallToolRequestParams {
    let Value::Object(arguments) = json!({ "doc_id": "d1" }) else {
        unreachable!("an object")
    };
    CallToolRequestParams::new("read_doc").with_arguments(arguments)
}

/// Three open tasks at a limit of three: the fourth call is `CALLER_LIMIT`, retry after a
/// wait, and makes no task; once one ends, a call makes one again.
async fn a_call_past_the_open_tasks_limit_is_answered_caller_limit_and_makes_nothing(
    backend: &impl Backend,
) {
    let remote = Remote::new();
    let dispatcher = Arc::new(dispatcher(&remote, backend.open().await));
    let client = session(server(dispatcher, alice()).with_open_tasks_per_principal(3)).await;
    let mut open = Vec::new();
    for index in 0..3 {
        match start(client.peer(), message(index)).await {
            Started::Task(task_id) => open.push(task_id),
            answered => panic!("expected a task, got {answered:?}"),
        }
    }
    let refused = start(client.peer(), message(3)).await;
    assert_eq!(code(&refused), Some("CALLER_LIMIT"), "{refused:?}");
    let Started::Answered(result) = &refused else {
        unreachable!()
    };
    assert_eq!(result["error"]["recovery"], "retry_after", "{result}");
    assert_eq!(result["execution"]["outcome"], "not_started", "{result}");

    // Waiting for a person, its work not begun: a cancellation ends it (one that comes while
    // its worker is between beginning and asking is acknowledged, and the task goes on).
    until(client.peer(), &open[0], TaskStatus::InputRequired).await;
    client
        .cancel_task(CancelTaskParams::new(&open[0]))
        .await
        .expect("tasks/cancel");
    let again = start(client.peer(), message(3)).await;
    assert!(matches!(again, Started::Task(_)), "{again:?}");
    assert_eq!(remote.all_requests(), 0, "nothing ran");
}

/// One principal sends 300 task calls at once over six sessions, at a limit of 20, while
/// another reads: exactly
/// 20 tasks are made and 280 calls answered `CALLER_LIMIT`, and the other principal's read
/// is answered (its time printed beside the same read's with nobody flooding).
async fn a_flood_of_one_principal_makes_no_more_than_its_limit_and_another_is_answered(
    backend: &impl Backend,
) {
    const FLOOD: usize = 300;
    const LIMIT: usize = 20;
    let remote = Remote::new();
    let dispatcher = Arc::new(dispatcher(&remote, backend.open().await));
    // Six sessions of 50 calls in flight each (one session keeps the bytes of 64 at most).
    let mut flooders = Vec::new();
    for _ in 0..6 {
        let flooder = server(Arc::clone(&dispatcher), alice()).with_open_tasks_per_principal(LIMIT);
        flooders.push(session(flooder).await);
    }
    let bob = Principal::new("acme", "bob");
    let other = session(McpServer::new(dispatcher, bob)).await;

    let quiet = Instant::now();
    other.peer().call_tool_once(read()).await.expect("a read");
    let quiet = quiet.elapsed();

    let mut flood = tokio::task::JoinSet::new();
    for index in 0..FLOOD {
        let peer = flooders[index % flooders.len()].peer().clone();
        flood.spawn(async move { start(&peer, message(index)).await });
    }
    tokio::task::yield_now().await;
    let during = Instant::now();
    let answered = other.peer().call_tool_once(read()).await.expect("a read");
    let during = during.elapsed();

    let mut tasks = 0;
    let mut refused = 0;
    while let Some(answer) = flood.join_next().await {
        match answer.expect("the call ran") {
            Started::Task(_) => tasks += 1,
            answer if code(&answer) == Some("CALLER_LIMIT") => refused += 1,
            answer => panic!("unexpected answer {answer:?}"),
        }
    }
    assert_eq!((tasks, refused), (LIMIT, FLOOD - LIMIT));
    let rmcp::model::CallToolResponse::Complete(result) = answered else {
        panic!("the read was not answered at once: {answered:?}");
    };
    let result = result.structured_content.unwrap_or_default();
    assert_eq!(result["status"], "succeeded", "{result}");
    eprintln!("another principal's read: {quiet:?} alone, {during:?} during a flood of {FLOOD}");
    assert!(during < Duration::from_secs(5), "{during:?}");
}

/// Three pending approvals at a limit of three: a fourth write needing one is
/// `CALLER_LIMIT` and asks nobody; the first asked again, and another principal's, are
/// answered `APPROVAL_REQUIRED` as before; once one is rejected, the fourth is asked.
async fn a_write_past_the_pending_approvals_limit_is_answered_caller_limit_and_asks_nobody(
    backend: &impl Backend,
) {
    let remote = Remote::new();
    let dispatcher = builder(&remote)
        .store(backend.open().await)
        .pending_approvals_per_principal(3)
        .build()
        .expect("it builds");
    let task = Task::unlimited();
    let mut pending = Vec::new();
    for index in 0..3 {
        let asked = dispatcher
            .dispatch(
                &alice(),
                &tracker::message(&format!("m{index}"), "bob@globex.example"),
                &task,
            )
            .await;
        assert_eq!(tracker::code(&asked), Some(ErrorCode::ApprovalRequired));
        pending.push(asked.pending_approval.expect("pending").approval_id);
    }
    let fourth = tracker::message("m3", "bob@globex.example");
    let refused = dispatcher.dispatch(&alice(), &fourth, &task).await;
    assert_eq!(tracker::code(&refused), Some(ErrorCode::CallerLimit));
    assert!(refused.pending_approval.is_none(), "nobody is asked");
    assert_eq!(dispatcher.pending_approvals().await.unwrap().len(), 3);

    let again = tracker::message("m0", "bob@globex.example");
    let again = dispatcher.dispatch(&alice(), &again, &task).await;
    assert_eq!(tracker::code(&again), Some(ErrorCode::ApprovalRequired));
    let bob = Principal::new("acme", "bob");
    let bobs = dispatcher.dispatch(&bob, &fourth, &task).await;
    assert_eq!(tracker::code(&bobs), Some(ErrorCode::ApprovalRequired));

    dispatcher.reject(&pending[1]).await.expect("rejected");
    let asked = dispatcher.dispatch(&alice(), &fourth, &task).await;
    assert_eq!(tracker::code(&asked), Some(ErrorCode::ApprovalRequired));
    assert_eq!(remote.all_requests(), 0, "nothing ran");
}

on_every_store!(
    a_call_past_the_open_tasks_limit_is_answered_caller_limit_and_makes_nothing,
    a_flood_of_one_principal_makes_no_more_than_its_limit_and_another_is_answered,
    a_write_past_the_pending_approvals_limit_is_answered_caller_limit_and_asks_nobody,
);

/// Two of alice's writes pending at a limit of two, in a store made to look as schema 8 left
/// it (no `principal_ref` column): opened again, the migration fills the column from the
/// rows' JSON, and a third write reads `CALLER_LIMIT`.
async fn pending_approvals_written_before_schema_9_count_once_migrated(
    open: impl AsyncFn() -> Arc<dyn tool_contract::control::ControlStore>,
    downgrade: impl FnOnce(),
) {
    let remote = Remote::new();
    let task = Task::unlimited();
    let dispatcher = builder(&remote)
        .store(open().await)
        .pending_approvals_per_principal(2)
        .build()
        .expect("it builds");
    for index in 0..2 {
        let asked = tracker::message(&format!("m{index}"), "bob@globex.example");
        let asked = dispatcher.dispatch(&alice(), &asked, &task).await;
        assert_eq!(tracker::code(&asked), Some(ErrorCode::ApprovalRequired));
    }
    drop(dispatcher);
    downgrade();
    let dispatcher = builder(&remote)
        .store(open().await)
        .pending_approvals_per_principal(2)
        .build()
        .expect("it builds");
    let third = tracker::message("m2", "bob@globex.example");
    let refused = dispatcher.dispatch(&alice(), &third, &task).await;
    assert_eq!(tracker::code(&refused), Some(ErrorCode::CallerLimit));
}

#[tokio::test]
async fn pending_approvals_written_before_schema_9_count_once_migrated_on_sqlite() {
    let path = std::env::temp_dir().join(format!(
        "tool-contract-schema-9-{}-{}.sqlite",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos()
    ));
    let file = tool_contract_tests::backends::Sqlite(path.clone());
    pending_approvals_written_before_schema_9_count_once_migrated(
        async || file.open().await,
        || {
            let connection = rusqlite::Connection::open(&path).unwrap();
            connection
                .execute_batch(
                    "DROP TABLE tool_contract_workers;
                     ALTER TABLE tool_contract_tasks DROP COLUMN worker;
                     DROP INDEX tool_contract_approvals_pending_of;
                     ALTER TABLE tool_contract_approvals DROP COLUMN principal_ref;
                     PRAGMA user_version = 8;",
                )
                .unwrap();
        },
    )
    .await;
}

#[tokio::test]
async fn pending_approvals_written_before_schema_9_count_once_migrated_on_postgresql() {
    let Some(schema) = tool_contract_tests::postgres::Schema::new("schema_9") else {
        return;
    };
    let name = schema.name.clone();
    pending_approvals_written_before_schema_9_count_once_migrated(
        async || {
            let store: Arc<dyn tool_contract::control::ControlStore> =
                Arc::new(schema.store().await);
            store
        },
        || {
            schema.execute(&format!(
                "DROP TABLE {name}.tool_contract_workers;
                 ALTER TABLE {name}.tool_contract_tasks DROP COLUMN worker;
                 DROP INDEX {name}.tool_contract_approvals_pending_of;
                 ALTER TABLE {name}.tool_contract_approvals DROP COLUMN principal_ref;
                 DROP TABLE {name}.tool_contract_audit_counts;
                 ALTER TABLE {name}.tool_contract_audit_heads DROP COLUMN counted_from;
                 UPDATE {name}.tool_contract_schema SET version = 8;"
            ));
        },
    )
    .await;
}
