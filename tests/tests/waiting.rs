//! Waiting costs nothing: a task waiting for a decision is woken by the store once the
//! decision is given, on whichever replica (an in-process notification on memory and SQLite,
//! LISTEN/NOTIFY on PostgreSQL), rather than reading the store on a timer. What ten thousand
//! waiting tasks cost PostgreSQL is `cost_of_waiting.rs`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{GetTaskParams, TaskPayload, TaskStatus, UpdateTaskParams};
use serde_json::json;
use tool_contract::control::{ControlStore, MemoryStore};
use tool_contract_tests::backends::Backend;
use tool_contract_tests::on_every_store;
use tool_contract_tests::postgres::{Relay, Schema};
use tool_contract_tests::task_client::{
    TaskSession as Session, message, replica, server, started, yes_to,
};
use tool_contract_tests::tracker::{Remote, advance_clock, alice, dispatcher};

/// The task's status and, while it waits for input, the key of what it asks.
async fn look(client: &Session, task_id: &str) -> (TaskStatus, Option<String>) {
    let task = client
        .get_task(GetTaskParams::new(task_id))
        .await
        .expect("tasks/get");
    let asked = match &task.task.payload {
        TaskPayload::InputRequired { input_requests } => input_requests.keys().next().cloned(),
        _ => None,
    };
    (task.task.status(), asked)
}

/// The key a task asks under, once it waits for input (within ten seconds).
async fn asked_once_waiting(client: &Session, task_id: &str) -> String {
    for _ in 0..1000 {
        if let (TaskStatus::InputRequired, Some(key)) = look(client, task_id).await {
            return key;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("task {task_id} never asked for input");
}

/// The `percent`th percentile of `sorted`.
fn percentile(sorted: &[Duration], percent: usize) -> Duration {
    sorted[(sorted.len() * percent).div_ceil(100) - 1]
}

/// A hundred tasks waiting on one replica, each approved on another: the time from the
/// decision's answer to the task going on (it leaves `input_required`) is at the median
/// under 50 ms, where a poll every quarter second made it about 125, and never a second,
/// where the beat of held tasks (every 10 s) would make it seconds. The median rather than a
/// tail, so that a loaded machine's pauses do not read as polling; the tail, measured one
/// test at a time, is in BENCHMARKS.md.
async fn a_decision_on_another_replica_wakes_its_task_sooner_than_a_poll_would(
    backend: &impl Backend,
) {
    const TASKS: usize = 100;
    let remote = Remote::new();
    let first = replica(&remote, backend.open().await).await;
    let second = replica(&remote, backend.open().await).await;
    let mut waiting = Vec::with_capacity(TASKS);
    for index in 0..TASKS {
        waiting.push(started(first.peer(), message(index)).await);
    }
    let mut asked = Vec::with_capacity(TASKS);
    for task_id in &waiting {
        asked.push(asked_once_waiting(&second, task_id).await);
    }
    let mut woken = Vec::with_capacity(TASKS);
    for (task_id, key) in waiting.iter().zip(&asked) {
        second
            .update_task(UpdateTaskParams::new(task_id, yes_to(key)))
            .await
            .expect("tasks/update");
        let decided = Instant::now();
        while look(&second, task_id).await.0 == TaskStatus::InputRequired {
            assert!(
                decided.elapsed() < Duration::from_secs(5),
                "task {task_id} was never woken"
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        woken.push(decided.elapsed());
    }
    // Every task ends before the test does: nothing is left mid-step when its store goes.
    for task_id in &waiting {
        let began = Instant::now();
        while look(&second, task_id).await.0 != TaskStatus::Completed {
            assert!(
                began.elapsed() < Duration::from_secs(10),
                "task {task_id} never ended"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    woken.sort_unstable();
    let (median, p99, slowest) = (
        percentile(&woken, 50),
        percentile(&woken, 99),
        percentile(&woken, 100),
    );
    eprintln!("woken after its decision: median {median:?}, p99 {p99:?}, slowest {slowest:?}");
    assert!(
        median <= Duration::from_millis(50),
        "woken {median:?} after its decision at the median"
    );
    assert!(
        slowest < Duration::from_secs(1),
        "a task was woken {slowest:?} after its decision"
    );
    assert_eq!(remote.all_requests() as usize, TASKS, "each write ran once");
}

on_every_store!(a_decision_on_another_replica_wakes_its_task_sooner_than_a_poll_would);

/// A decision given while a replica's listener was cut off from PostgreSQL: no notification
/// reaches it, and once it listens again it wakes every waiter, so the task goes on within
/// seconds of the connection coming back rather than at the next beat of held tasks.
#[tokio::test]
async fn a_decision_made_while_the_listener_was_away_wakes_its_task_once_it_listens_again() {
    let Some(schema) = Schema::new("a_decision_made_while_the_listener_was_away") else {
        return;
    };
    let relay = Relay::start(&schema.url);
    let remote = Remote::new();
    let first = replica(
        &remote,
        Arc::new(relay.store(&schema, schema.options()).await),
    )
    .await;
    let second = replica(&remote, Arc::new(schema.store().await)).await;
    let task_id = started(first.peer(), message(0)).await;
    let key = asked_once_waiting(&second, &task_id).await;
    // The first replica has heard of its own moves and waits, quiet.
    tokio::time::sleep(Duration::from_millis(300)).await;

    relay.cut();
    second
        .update_task(UpdateTaskParams::new(&task_id, yes_to(&key)))
        .await
        .expect("tasks/update");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        look(&second, &task_id).await.0,
        TaskStatus::InputRequired,
        "nobody told the first replica"
    );
    relay.restore();
    let restored = Instant::now();
    while look(&second, &task_id).await.0 != TaskStatus::Completed {
        assert!(
            restored.elapsed() < Duration::from_secs(5),
            "the task did not go on once its replica listened again"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(remote.all_requests(), 1, "the write ran once");
}

/// On 2025-11-25, `tasks/result` waits for its task: twenty writes, each working 100 ms at the
/// remote, each asked for its result at once; the answer comes within 50 ms of the write's
/// work at the median and within a second always (reading the task every quarter second, it
/// came 150 ms past the work, at the next read).
#[tokio::test]
async fn tasks_result_answers_as_soon_as_its_task_ended() {
    const WRITES: usize = 20;
    const WORK: Duration = Duration::from_millis(100);
    let remote = Remote::new();
    remote.script(&[tool_contract_tests::tracker::Fault::CommitAfter(WORK); WRITES]);
    let dispatcher = dispatcher(
        &remote,
        Arc::new(tool_contract::control::MemoryStore::new()),
    );
    let writes = |spec: &tool_contract::ToolSpec| match spec.name() {
        "create_issue" => tool_contract::mcp::TaskSupport::Optional,
        _ => tool_contract::mcp::TaskSupport::Forbidden,
    };
    let server =
        tool_contract::mcp::McpServer::new(Arc::new(dispatcher), alice()).with_tasks(writes);
    let capabilities = json!({ "tasks": { "list": {}, "cancel": {} } });
    let (mut wire, _) =
        tool_contract_tests::mcp::Wire::initialize(server, "2025-11-25", capabilities).await;
    let mut late = Vec::with_capacity(WRITES);
    for index in 0..WRITES {
        let call = json!({
            "name": "create_issue",
            "arguments": { "title": format!("Printer on fire {index}"), "body": "3" },
            "task": {}
        });
        let began = Instant::now();
        let created = wire.request("tools/call", call).await;
        let task_id = created["result"]["task"]["taskId"].clone();
        assert!(task_id.is_string(), "{created}");
        let result = wire
            .request("tasks/result", json!({ "taskId": task_id }))
            .await;
        assert_eq!(
            result["result"]["structuredContent"]["status"], "succeeded",
            "{result}"
        );
        late.push(began.elapsed().saturating_sub(WORK));
    }
    late.sort_unstable();
    let (median, p99) = (percentile(&late, 50), percentile(&late, 99));
    eprintln!("tasks/result answered past the write's work: median {median:?}, p99 {p99:?}");
    assert!(
        median <= Duration::from_millis(50),
        "{median:?} at the median"
    );
    assert!(percentile(&late, 100) < Duration::from_secs(1), "{late:?}");
}

/// A task waiting on a replica that lives is held by that replica's lease past the hold it was
/// created with: the replica's beat renews its lease every ten seconds, and another replica
/// looking for tasks to take over takes none for a minute. (Tokio's clock paused, so the beats
/// come at once; the wall clock moved by hand beside it.)
#[tokio::test(start_paused = true)]
async fn a_live_replicas_waiting_task_is_never_taken_over() {
    let remote = Remote::new();
    let store: Arc<dyn ControlStore> = Arc::new(MemoryStore::new());
    let first = replica(&remote, Arc::clone(&store)).await;
    let task_id = started(first.peer(), message(0)).await;
    asked_once_waiting(&first, &task_id).await;
    let second = server(Arc::new(dispatcher(&remote, store)), alice());
    for _ in 0..6 {
        advance_clock(Duration::from_secs(10));
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert_eq!(second.resume_tasks().await.unwrap().taken_over, 0);
    }
    assert_eq!(look(&first, &task_id).await.0, TaskStatus::InputRequired);
}

/// A PostgreSQL store whose first waiter's runtime ended (its listener with it) still tells
/// the waiters of a later runtime: the next waiter starts the listener again there.
#[test]
fn a_store_outliving_its_first_runtime_still_hears_what_changed() {
    use tool_contract::control::{Changed, ControlStore};
    let Some(schema) = Schema::new("a_store_outliving_its_first_runtime") else {
        return;
    };
    let runtime = || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
    };
    let first = runtime();
    let store = first.block_on(schema.store());
    first.block_on(async {
        let _ = store.changes().expect("PostgreSQL tells its waiters");
        tokio::time::sleep(Duration::from_millis(200)).await;
    });
    drop(first);

    let second = runtime();
    second.block_on(async {
        let changes = store.changes().expect("PostgreSQL tells its waiters");
        let watch = changes.watch(&[Changed::Task("task-1".to_owned())]);
        // Once listening, the listener wakes every waiter: that wake is taken first.
        let _ = tokio::time::timeout(Duration::from_secs(2), watch.changed()).await;
        schema.execute(&format!(
            "SELECT pg_notify('{}', 'task:task-1')",
            schema.name
        ));
        let told = tokio::time::timeout(Duration::from_secs(2), watch.changed()).await;
        assert!(told.is_ok(), "the second runtime's waiter was never told");
    });
}
