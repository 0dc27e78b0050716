//! Long calls as MCP tasks (2026-07-28 tasks extension) kept in the control store: created
//! before the answer names them, answered by any replica, only to the principal that asked,
//! the same after a restart; a write waiting for approval is a task in `input_required` that
//! goes on once the answer is recorded on any replica, or once two supervisors signed in the
//! console, and ends `BLOCKED` when declined; a cancellation cancels only what has not begun;
//! a task whose replica died is taken over by another, its write run once; a task is gone
//! after its TTL.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig,
    ElicitResult, ElicitationAction, GetTaskParams, GetTaskResult, Implementation, InputResponses,
    TaskPayload, TaskStatus, UpdateTaskParams,
};
use rmcp::model::{ElicitationCapability, FormElicitationCapability, UrlElicitationCapability};
use rmcp::service::RunningService;
use rmcp::{ClientHandler, RoleClient, ServiceError};
use serde_json::{Value, json};
use tool_contract::control::{ControlStore, MemoryStore, RowSeal};
use tool_contract::mcp::{McpServer, TaskSupport};
use tool_contract::{Principal, ToolSpec};
use tool_contract_tests::backends::{Backend, Memory, Postgres};
use tool_contract_tests::expenses;
use tool_contract_tests::task_client::yes_to;
use tool_contract_tests::tracker::{Fault, Remote, advance_clock, alice, dispatcher};

/// A client speaking 2026-07-28 that declares form elicitation, URL-mode elicitation too if
/// `urls`, and the tasks extension if `tasks`.
#[derive(Clone)]
struct Client {
    tasks: bool,
    urls: bool,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let capabilities = ClientCapabilities::builder().enable_elicitation();
        let mut capabilities = if self.tasks {
            capabilities.enable_tasks().build()
        } else {
            capabilities.build()
        };
        if self.urls {
            capabilities.elicitation = Some(
                ElicitationCapability::new()
                    .with_form(FormElicitationCapability::new())
                    .with_url(UrlElicitationCapability::new()),
            );
        }
        ClientConfig::new(capabilities, Implementation::new("tasks-client", "1.0.0"))
    }
}

type Session = RunningService<RoleClient, Client>;

fn every_call(_: &ToolSpec) -> TaskSupport {
    TaskSupport::Optional
}

/// A replica over `store` acting for `principal`, its tools' calls tasks by `rule`.
fn replica(
    remote: &Arc<Remote>,
    store: &Arc<dyn ControlStore>,
    principal: Principal,
    rule: fn(&ToolSpec) -> TaskSupport,
) -> McpServer {
    McpServer::new(Arc::new(dispatcher(remote, store.clone())), principal).with_tasks(rule)
}

async fn connect(server: McpServer, tasks: bool) -> Session {
    tool_contract_tests::mcp::discover(server, Client { tasks, urls: false }).await
}

/// A session of a client that takes tasks and URL-mode elicitation (the console's page).
async fn connect_declaring_urls(server: McpServer) -> Session {
    let client = Client {
        tasks: true,
        urls: true,
    };
    tool_contract_tests::mcp::discover(server, client).await
}

fn memory() -> Arc<dyn ControlStore> {
    Arc::new(MemoryStore::new())
}

fn params(tool: &str, arguments: Value) -> CallToolRequestParams {
    let Value::Object(arguments) = arguments else {
        panic!("arguments are an object");
    };
    CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments)
}

fn read() -> CallToolRequestParams {
    params("read_doc", json!({ "doc_id": "d1" }))
}

fn message() -> CallToolRequestParams {
    params(
        "send_message",
        json!({ "to": "bob@globex.example", "text": "hello" }),
    )
}

/// The task a call was answered with.
async fn started(client: &Session, call: CallToolRequestParams) -> String {
    match client.call_tool_once(call).await.expect("tools/call") {
        CallToolResponse::Task(created) => {
            assert_eq!(created.task.status, TaskStatus::Working);
            created.task.task_id
        }
        other => panic!("expected a task, got {other:?}"),
    }
}

async fn get(client: &Session, task_id: &str) -> Result<GetTaskResult, ServiceError> {
    client.get_task(GetTaskParams::new(task_id)).await
}

/// The task once it is in `status`, polled (within ten seconds).
async fn once(client: &Session, task_id: &str, status: TaskStatus) -> GetTaskResult {
    for _ in 0..400 {
        let task = get(client, task_id).await.expect("tasks/get");
        if task.task.status() == status {
            return task;
        }
        assert!(
            !task.task.status().is_terminal(),
            "ended {:?} waiting for {status:?}: {task:?}",
            task.task.status()
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("task {task_id} never reached {status:?}");
}

/// The completed task's tool result, as `structuredContent`.
fn structured(task: &GetTaskResult) -> Value {
    match &task.task.payload {
        TaskPayload::Completed { result } => result["structuredContent"].clone(),
        other => panic!("not completed: {other:?}"),
    }
}

/// The JSON-RPC error code a request was refused with.
fn error_code(answer: Result<impl std::fmt::Debug, ServiceError>) -> i32 {
    match answer {
        Err(ServiceError::McpError(error)) => error.code.0,
        other => panic!("expected an error, got {other:?}"),
    }
}

/// The key and the form of the one question an `input_required` task asks.
fn question(task: &GetTaskResult) -> String {
    match &task.task.payload {
        TaskPayload::InputRequired { input_requests } => {
            assert_eq!(input_requests.len(), 1, "{input_requests:?}");
            let (key, request) = input_requests.iter().next().unwrap();
            let request = serde_json::to_value(request).unwrap();
            assert_eq!(request["method"], "elicitation/create", "{request}");
            key.clone()
        }
        other => panic!("not input_required: {other:?}"),
    }
}

#[tokio::test]
async fn a_call_becomes_a_task_whose_result_is_the_calls_own() {
    let remote = Remote::new();
    let store = memory();
    let client = connect(replica(&remote, &store, alice(), every_call), true).await;
    let task_id = started(&client, read()).await;
    assert!(
        task_id.len() == 37 && task_id.starts_with("task_"),
        "128 random bits: {task_id}"
    );
    let done = once(&client, &task_id, TaskStatus::Completed).await;
    assert_eq!(structured(&done)["status"], "succeeded");

    // A client that does not take tasks is answered in its request, with the same data.
    let plain = connect(replica(&remote, &store, alice(), every_call), false).await;
    let inline = plain.call_tool(read()).await.expect("tools/call");
    assert_eq!(
        inline.structured_content.unwrap()["data"],
        structured(&done)["data"]
    );
}

#[tokio::test]
async fn another_principals_task_reads_as_absent() {
    let remote = Remote::new();
    let store = memory();
    let ana = connect(replica(&remote, &store, alice(), every_call), true).await;
    let task_id = started(&ana, read()).await;
    once(&ana, &task_id, TaskStatus::Completed).await;

    let bob = Principal::new("acme", "bob");
    let other = connect(replica(&remote, &store, bob, every_call), true).await;
    assert_eq!(error_code(get(&other, &task_id).await), -32602);
    assert_eq!(
        error_code(other.cancel_task(CancelTaskParams::new(&task_id)).await),
        -32602
    );
    assert_eq!(
        error_code(
            other
                .update_task(UpdateTaskParams::new(&task_id, yes_to("approval:x")))
                .await
        ),
        -32602
    );
    assert_eq!(
        error_code(get(&ana, "task_00000000000000000000000000000000").await),
        -32602
    );
}

#[tokio::test]
async fn a_tool_that_requires_tasks_refuses_a_client_without_the_extension() {
    let remote = Remote::new();
    let required = |_: &ToolSpec| TaskSupport::Required;
    let client = connect(replica(&remote, &memory(), alice(), required), false).await;
    assert_eq!(
        error_code(client.call_tool_once(message()).await),
        -32021,
        "a missing client capability"
    );
    assert_eq!(remote.all_requests(), 0, "nothing ran");
}

/// A write that waits for approval: a task in `input_required` on the replica it began on,
/// read and answered through the other, completed once, the write run once; another,
/// cancelled through the other, never runs.
async fn an_approval_in_a_task_is_answered_on_another_replica(store: Arc<dyn ControlStore>) {
    let remote = Remote::new();
    let first = connect(replica(&remote, &store, alice(), every_call), true).await;
    let second = connect(replica(&remote, &store, alice(), every_call), true).await;
    let task_id = started(&first, message()).await;
    let waiting = once(&second, &task_id, TaskStatus::InputRequired).await;
    let key = question(&waiting);
    assert!(key.starts_with("approval:apr_"), "{key}");
    assert_eq!(remote.all_requests(), 0, "nothing ran while it waits");

    second
        .update_task(UpdateTaskParams::new(&task_id, yes_to(&key)))
        .await
        .expect("tasks/update");
    let done = once(&second, &task_id, TaskStatus::Completed).await;
    assert_eq!(structured(&done)["status"], "succeeded", "{done:?}");
    assert_eq!(remote.all_requests(), 1, "the write ran once");
    // Every replica answers with the same text.
    let (one, two) = (
        get(&first, &task_id).await.unwrap(),
        get(&second, &task_id).await.unwrap(),
    );
    assert_eq!(
        serde_json::to_string(&one).unwrap(),
        serde_json::to_string(&two).unwrap()
    );
    // Answering again: the task asks nothing now.
    assert_eq!(
        error_code(
            second
                .update_task(UpdateTaskParams::new(&task_id, yes_to(&key)))
                .await
        ),
        -32602
    );

    // Another write, cancelled through the other replica while it waits: it never runs.
    let other = params(
        "send_message",
        json!({ "to": "carol@globex.example", "text": "hello" }),
    );
    let cancelled_id = started(&first, other).await;
    once(&second, &cancelled_id, TaskStatus::InputRequired).await;
    second
        .cancel_task(CancelTaskParams::new(&cancelled_id))
        .await
        .expect("tasks/cancel");
    assert_eq!(
        get(&first, &cancelled_id).await.unwrap().task.status(),
        TaskStatus::Cancelled
    );
    assert_eq!(remote.all_requests(), 1, "only the first write ran");
}

#[tokio::test]
async fn an_approval_in_a_task_is_answered_on_another_replica_in_memory() {
    an_approval_in_a_task_is_answered_on_another_replica(memory()).await;
}

#[tokio::test]
async fn an_approval_in_a_task_is_answered_on_another_replica_over_postgresql() {
    let Some(schema) = tool_contract_tests::postgres::Schema::new("an_approval_in_a_task") else {
        return;
    };
    an_approval_in_a_task_is_answered_on_another_replica(Arc::new(schema.store().await)).await;
}

#[tokio::test]
async fn a_task_cancelled_while_it_waits_for_approval_never_runs() {
    let remote = Remote::new();
    let dispatcher = Arc::new(dispatcher(&remote, memory()));
    let server = McpServer::new(dispatcher.clone(), alice()).with_tasks(every_call);
    let client = connect(server, true).await;
    let task_id = started(&client, message()).await;
    let waiting = once(&client, &task_id, TaskStatus::InputRequired).await;
    client
        .cancel_task(CancelTaskParams::new(&task_id))
        .await
        .expect("tasks/cancel");
    let cancelled = get(&client, &task_id).await.unwrap();
    assert_eq!(cancelled.task.status(), TaskStatus::Cancelled);

    // Approved afterwards, out of band: the cancelled task's work does not run it.
    let pending = dispatcher.pending_approvals().await.unwrap();
    assert_eq!(pending.len(), 1, "{waiting:?}");
    dispatcher
        .approve(
            &pending[0].approval_id,
            &pending[0].preview_sha256,
            "supervisor",
            tool_contract_tests::tracker::clock() + Duration::from_secs(600),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(remote.all_requests(), 0, "nothing ran");
    assert_eq!(
        get(&client, &task_id).await.unwrap().task.status(),
        TaskStatus::Cancelled
    );
    // Ended: cancelling again is acknowledged, and changes nothing.
    client
        .cancel_task(CancelTaskParams::new(&task_id))
        .await
        .expect("an ended task's cancellation is acknowledged");
    assert_eq!(
        get(&client, &task_id).await.unwrap().task.status(),
        TaskStatus::Cancelled
    );
}

#[tokio::test]
async fn a_task_whose_write_began_is_not_cancelled_and_ends_as_the_write_does() {
    let remote = Remote::new();
    remote.script(&[Fault::CommitAfter(Duration::from_millis(400))]);
    let writes = |spec: &ToolSpec| match spec.name() {
        "create_issue" => TaskSupport::Optional,
        _ => TaskSupport::Forbidden,
    };
    let client = connect(replica(&remote, &memory(), alice(), writes), true).await;
    let call = params(
        "create_issue",
        json!({ "title": "Printer on fire", "body": "3" }),
    );
    let task_id = started(&client, call).await;
    // The write is at the remote: the request arrived, the commit is under way.
    for _ in 0..200 {
        if remote.all_requests() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(remote.all_requests(), 1);
    client
        .cancel_task(CancelTaskParams::new(&task_id))
        .await
        .expect("a cancellation is asked, not promised");
    let done = once(&client, &task_id, TaskStatus::Completed).await;
    assert_eq!(structured(&done)["status"], "succeeded", "{done:?}");
    assert_eq!(remote.all_requests(), 1);
}

#[tokio::test]
async fn a_read_is_cancelled_while_it_runs_since_nothing_of_it_acts() {
    let remote = Remote::new();
    remote.script(&[Fault::HangBeforeCommit]);
    let client = connect(replica(&remote, &memory(), alice(), every_call), true).await;
    let task_id = started(&client, read()).await;
    for _ in 0..200 {
        if remote.reads() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(remote.reads(), 1, "the read is under way");
    client
        .cancel_task(CancelTaskParams::new(&task_id))
        .await
        .expect("tasks/cancel");
    assert_eq!(
        get(&client, &task_id).await.unwrap().task.status(),
        TaskStatus::Cancelled
    );
}

/// Fail as a tool does.
#[derive(Debug, serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Nothing, effect = read_only)]
struct FailAsATool {}

/// Crash inside the server.
#[derive(Debug, serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Nothing, effect = read_only)]
struct Crash {}

#[derive(Debug, serde::Serialize, tool_contract::ToolOutput)]
struct Nothing {}

#[tokio::test]
async fn a_crashed_handler_ends_its_task_failed_and_a_tools_failure_ends_it_completed() {
    use tool_contract::dispatch::Dispatcher;
    use tool_contract::{FailureKind, ToolFailure};

    async fn fail(_: FailAsATool) -> Result<Nothing, ToolFailure> {
        Err(ToolFailure::new(FailureKind::Failed, "no"))
    }
    async fn crash(_: Crash) -> Result<Nothing, ToolFailure> {
        panic!("the handler crashed");
    }
    let dispatcher = Dispatcher::for_development(tool_contract::registry![FailAsATool, Crash])
        .handler(fail)
        .handler(crash)
        .build()
        .unwrap();
    let server = McpServer::new(Arc::new(dispatcher), alice()).with_tasks(every_call);
    let client = connect(server, true).await;

    let failed_tool = started(&client, params("fail_as_a_tool", json!({}))).await;
    let done = once(&client, &failed_tool, TaskStatus::Completed).await;
    assert_eq!(structured(&done)["status"], "failed");

    let crashed = started(&client, params("crash", json!({}))).await;
    let ended = once(&client, &crashed, TaskStatus::Failed).await;
    let TaskPayload::Failed { error } = &ended.task.payload else {
        panic!("failed: {ended:?}");
    };
    assert_eq!(error["code"], -32603);
    assert_eq!(error["data"]["result"]["status"], "failed", "{error:?}");
}

#[tokio::test]
async fn a_task_is_gone_after_its_ttl() {
    let remote = Remote::new();
    let server = replica(&remote, &memory(), alice(), every_call)
        .with_task_ttl(Some(Duration::from_secs(60)));
    let client = connect(server, true).await;
    let task_id = started(&client, read()).await;
    let done = once(&client, &task_id, TaskStatus::Completed).await;
    assert_eq!(done.task.task.ttl_ms, Some(60_000));
    advance_clock(Duration::from_secs(61));
    assert_eq!(error_code(get(&client, &task_id).await), -32602);
}

#[tokio::test]
async fn a_task_is_answered_the_same_after_a_restart_over_one_sqlite_file() {
    use tool_contract::control::SqliteStore;

    let remote = Remote::new();
    let file = tool_contract_tests::backends::sqlite_file();
    let before = {
        let store: Arc<dyn ControlStore> = Arc::new(SqliteStore::open(&file.0).unwrap());
        let client = connect(replica(&remote, &store, alice(), every_call), true).await;
        let task_id = started(&client, read()).await;
        let done = once(&client, &task_id, TaskStatus::Completed).await;
        client.cancel().await.unwrap();
        (task_id, serde_json::to_string(&done).unwrap())
    };
    let store: Arc<dyn ControlStore> = Arc::new(SqliteStore::open(&file.0).unwrap());
    let client = connect(replica(&remote, &store, alice(), every_call), true).await;
    let after = get(&client, &before.0)
        .await
        .expect("the task, after the restart");
    assert_eq!(serde_json::to_string(&after).unwrap(), before.1);
}

fn writes(spec: &ToolSpec) -> TaskSupport {
    match spec.name() {
        "create_issue" => TaskSupport::Optional,
        _ => TaskSupport::Forbidden,
    }
}

/// On a replica of its own (a runtime of its own, over its own handle on `backend`'s
/// store), starts a task creating an issue whose request the tracker commits and never
/// answers, then kills the replica once the commit is in: its work, its hold on the task,
/// its sessions all end mid-write. The task's id.
fn a_replica_dies_mid_write(remote: &Arc<Remote>, backend: &impl Backend) -> String {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                remote.script(&[Fault::CommitThenHang]);
                let (task_id, client) = runtime.block_on(async {
                    let store = backend.open().await;
                    let client = connect(replica(remote, &store, alice(), writes), true).await;
                    let call = params(
                        "create_issue",
                        json!({ "title": "Printer on fire", "body": "3" }),
                    );
                    let task_id = started(&client, call).await;
                    for _ in 0..400 {
                        if remote.all_requests() == 1 {
                            break;
                        }
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                    (task_id, client)
                });
                assert_eq!(remote.all_requests(), 1, "the write reached the tracker");
                runtime.shutdown_background();
                drop(client);
                task_id
            })
            .join()
            .expect("replica A ran")
    })
}

/// A replica killed mid-write: another takes its task over once its hold lapsed, and the
/// task completes with what the ledger and the write's status query say, the write run once.
async fn a_task_outlives_its_replica(backend: &impl Backend) {
    let remote = Remote::new();
    let task_id = a_replica_dies_mid_write(&remote, backend);

    let store = backend.open().await;
    let server = replica(&remote, &store, alice(), writes);
    let client = connect(server.clone(), true).await;
    assert_eq!(
        get(&client, &task_id).await.unwrap().task.status(),
        TaskStatus::Working,
        "the dead replica's task is still working"
    );
    assert_eq!(
        server.resume_tasks().await.unwrap().taken_over,
        0,
        "its hold still runs"
    );
    // Another tenant's stale task whose row does not open (sealed under other keys): reported
    // and passed over, never stopping this takeover.
    let other_keys =
        tool_contract::AuditKeys::new(tool_contract::SecretKey::new([0x99; 32]).unwrap());
    let unreadable = tool_contract_tests::tasks::working_task("globex/bob", "replica-z", 0, None);
    assert!(
        store
            .create_task(&unreadable, &RowSeal::new(&other_keys))
            .await
            .unwrap()
    );
    // Past the hold on the task and the lease on the write.
    advance_clock(Duration::from_secs(600));
    let resumed = server.resume_tasks().await.unwrap();
    assert_eq!(resumed.taken_over, 1, "taken over");
    assert_eq!(
        resumed.unreadable,
        std::slice::from_ref(&unreadable.task_id)
    );
    assert_eq!(server.resume_tasks().await.unwrap().taken_over, 0, "once");
    let done = once(&client, &task_id, TaskStatus::Completed).await;
    let result = structured(&done);
    assert_eq!(result["status"], "succeeded", "{result}");
    assert_eq!(
        result["execution"]["delivery"], "receipt_reconciled",
        "{result}"
    );
    assert_eq!(remote.all_requests(), 1, "the write ran once");
}

#[tokio::test]
async fn a_task_outlives_its_replica_in_memory() {
    a_task_outlives_its_replica(&Memory(MemoryStore::new())).await;
}

#[tokio::test]
async fn a_task_outlives_its_replica_over_postgresql() {
    let Some(schema) = tool_contract_tests::postgres::Schema::new("a_task_outlives_its_replica")
    else {
        return;
    };
    a_task_outlives_its_replica(&Postgres(schema)).await;
}

#[tokio::test]
async fn a_declined_approval_completes_the_task_blocked_and_nothing_runs() {
    let remote = Remote::new();
    let client = connect(replica(&remote, &memory(), alice(), every_call), true).await;
    let task_id = started(&client, message()).await;
    let key = question(&once(&client, &task_id, TaskStatus::InputRequired).await);
    let mut no = InputResponses::new();
    no.insert(
        key,
        serde_json::to_value(ElicitResult::new(ElicitationAction::Decline)).unwrap(),
    );
    client
        .update_task(UpdateTaskParams::new(&task_id, no))
        .await
        .expect("tasks/update");
    let done = once(&client, &task_id, TaskStatus::Completed).await;
    assert_eq!(structured(&done)["error"]["code"], "BLOCKED", "{done:?}");
    assert_eq!(remote.all_requests(), 0);
}

#[tokio::test]
async fn a_write_in_a_task_waits_for_two_passkey_approvals_given_in_the_console() {
    let desk = tool_contract_tests::console::desk().await;
    let (mut ana, mut ana_key) = desk.enrolled("sup-ana").await;
    let (mut ben, mut ben_key) = desk.enrolled("sup-ben").await;
    let page = format!("{}/approvals/{{approval_id}}", desk.base);
    let server = McpServer::new(desk.dispatcher.clone(), alice())
        .with_tasks(every_call)
        .with_approvals_console(&page);
    let client = connect_declaring_urls(server).await;
    let task_id = started(&client, message()).await;
    let waiting = once(&client, &task_id, TaskStatus::InputRequired).await;

    // The question sends the person to the console's page of the approval.
    let key = question(&waiting);
    let approval_id = key.strip_prefix("approval:").expect("an approval's key");
    let TaskPayload::InputRequired { input_requests } = &waiting.task.payload else {
        unreachable!("asked above");
    };
    let request = serde_json::to_value(&input_requests[&key]).unwrap();
    assert_eq!(
        request["params"]["url"],
        page.replace("{approval_id}", approval_id),
        "{request}"
    );
    // What the client answers decides nothing: the signatures do.
    let mut went = InputResponses::new();
    went.insert(
        key.clone(),
        serde_json::to_value(ElicitResult::new(ElicitationAction::Accept)).unwrap(),
    );
    client
        .update_task(UpdateTaskParams::new(&task_id, went))
        .await
        .expect("tasks/update");
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(
        get(&client, &task_id).await.unwrap().task.status(),
        TaskStatus::InputRequired
    );
    assert_eq!(desk.remote.all_requests(), 0, "nothing ran");

    // The two supervisors sign in the console, each with their own passkey.
    for (visit, passkey) in [(&mut ana, &mut ana_key), (&mut ben, &mut ben_key)] {
        let decided = visit.decide(approval_id, "approve", passkey).await;
        assert_eq!(decided.status, 200, "{}", decided.text);
    }
    let done = once(&client, &task_id, TaskStatus::Completed).await;
    assert_eq!(structured(&done)["status"], "succeeded", "{done:?}");
    assert_eq!(desk.remote.all_requests(), 1, "the write ran once");
}

#[tokio::test]
async fn a_replica_serving_http_takes_over_a_dead_replicas_task_on_its_own() {
    let remote = Remote::new();
    let backend = Memory(MemoryStore::new());
    let task_id = a_replica_dies_mid_write(&remote, &backend);

    let replica = Arc::new(dispatcher(&remote, backend.open().await));
    let server = McpServer::new(replica.clone(), alice()).with_tasks(writes);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    tokio::spawn(server.serve_http(listener));
    advance_clock(Duration::from_secs(600));
    // Nobody calls resume_tasks: the serving replica looks every ten seconds.
    for _ in 0..300 {
        let task = replica
            .task(&task_id, None)
            .await
            .unwrap()
            .expect("the task");
        if task.status == tool_contract::control::TaskStatus::Completed {
            assert!(task.outcome.unwrap().contains(r#""status":"succeeded""#));
            assert_eq!(remote.all_requests(), 1, "the write ran once");
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the task was not taken over");
}

/// A task id no server draws (here one holding NUL, which PostgreSQL refuses in text) names no
/// task on every store: `-32602`, never a store failure (`-32603`).
async fn a_task_id_holding_nul_is_unknown(backend: &impl Backend) {
    let remote = Remote::new();
    let store = backend.open().await;
    let client = connect(replica(&remote, &store, alice(), every_call), true).await;
    for task_id in [
        "task_\u{0}",
        "task_0000000000000000000000000000000\u{0}",
        "\u{0}",
    ] {
        assert_eq!(
            error_code(get(&client, task_id).await),
            -32602,
            "{task_id:?}"
        );
        assert_eq!(
            error_code(client.cancel_task(CancelTaskParams::new(task_id)).await),
            -32602
        );
        assert_eq!(
            error_code(
                client
                    .update_task(UpdateTaskParams::new(task_id, yes_to("approval:x")))
                    .await
            ),
            -32602
        );
    }
}

tool_contract_tests::on_every_store!(a_task_id_holding_nul_is_unknown);

/// A write that stalls on one replica (it commits 400 ms after it reached the tracker), its
/// task taken over by another once the clock passed its hold and the write's lease, the
/// status query unreachable if `status_unreachable`: the other replica's client, and the
/// task's answer once it completed there.
async fn taken_over_while_stalled(
    remote: &Arc<Remote>,
    status_unreachable: bool,
) -> (Session, String, GetTaskResult) {
    let store = memory();
    let stalled = connect(replica(remote, &store, alice(), writes), true).await;
    remote.script(&[Fault::CommitAfter(Duration::from_millis(400))]);
    let call = params(
        "create_issue",
        json!({ "title": "Printer on fire", "body": "3" }),
    );
    let task_id = started(&stalled, call).await;
    for _ in 0..200 {
        if remote.all_requests() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(remote.all_requests(), 1, "the write reached the tracker");
    remote.status_unreachable(status_unreachable);
    advance_clock(Duration::from_secs(600));
    let server = replica(remote, &store, alice(), writes);
    let client = connect(server.clone(), true).await;
    assert_eq!(server.resume_tasks().await.unwrap().taken_over, 1);
    let answered = once(&client, &task_id, TaskStatus::Completed).await;
    (client, task_id, answered)
}

/// The task `task_id`'s answer once its result's `pointer` reads `value` (within ten
/// seconds), having run the write once.
async fn once_it_answers(
    client: &Session,
    remote: &Remote,
    task_id: &str,
    pointer: &str,
    value: &str,
) -> Value {
    for _ in 0..400 {
        let now = structured(&get(client, task_id).await.unwrap());
        if now.pointer(pointer) == Some(&json!(value)) {
            assert_eq!(remote.all_requests(), 1, "nothing ran again");
            return now;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the task never answered {pointer} = {value}");
}

/// A write a stalled replica began, taken over once its task's hold and the write's lease
/// lapsed: the status query finds nothing yet, and the task answers as the ledger says then.
/// The stalled write then commits after all, the ledger turns `disputed`, and the task
/// answers the dispute (a person decides): never "failed" over an effect that happened.
#[tokio::test]
async fn a_taken_over_write_that_commits_after_all_makes_its_task_answer_the_dispute() {
    let remote = Remote::new();
    let (client, task_id, answered) = taken_over_while_stalled(&remote, false).await;
    assert_eq!(
        structured(&answered)["error"]["code"],
        "TOOL_ERROR",
        "the status query found nothing yet: {answered:?}"
    );
    let now = once_it_answers(&client, &remote, &task_id, "/error/code", "STATUS_CONFLICT").await;
    assert_eq!(now["execution"]["outcome"], "unknown");
}

/// A write a stalled replica began, taken over while its status query cannot tell: the task
/// answers as the ledger says then (its outcome unknown). The stalled write then commits, the
/// ledger settles it, and the task answers the write's result: never a stale "unknown" once
/// the ledger knows, and nothing ran twice.
#[tokio::test]
async fn a_taken_over_write_left_unknown_makes_its_task_answer_its_later_commit() {
    let remote = Remote::new();
    let (client, task_id, answered) = taken_over_while_stalled(&remote, true).await;
    assert_eq!(
        structured(&answered)["error"]["code"],
        "OUTCOME_UNKNOWN",
        "the status query could not tell: {answered:?}"
    );
    remote.status_unreachable(false);
    let now = once_it_answers(&client, &remote, &task_id, "/status", "succeeded").await;
    assert_eq!(now["data"]["number"], 241);
}

fn pay_out() -> CallToolRequestParams {
    params(
        "pay_out",
        json!({ "report_id": "R-7", "amount_cents": 4200 }),
    )
}

/// Under `approval = by_another` a task asks its caller no form: with nobody else to send
/// the person to, it answers APPROVAL_REQUIRED at once, and a confirmation sent anyway
/// finds nothing to answer.
#[tokio::test]
async fn by_another_a_task_asks_its_caller_nothing_and_a_forged_yes_approves_nothing() {
    let (desk, payroll) = expenses::desk(memory());
    let server = McpServer::new(Arc::new(desk), expenses::employee()).with_tasks(every_call);
    let client = connect(server, true).await;
    let task_id = started(&client, pay_out()).await;
    let done = once(&client, &task_id, TaskStatus::Completed).await;
    let answered = structured(&done);
    assert_eq!(answered["error"]["code"], "APPROVAL_REQUIRED", "{done:?}");
    let TaskPayload::Completed { result } = &done.task.payload else {
        unreachable!("completed above");
    };
    let approval_id = result["_meta"]["tool-contract/pending_approval"]["approval_id"]
        .as_str()
        .expect("the pending approval's id")
        .to_owned();
    assert_eq!(
        error_code(
            client
                .update_task(UpdateTaskParams::new(
                    &task_id,
                    yes_to(&format!("approval:{approval_id}"))
                ))
                .await
        ),
        -32602
    );
    assert_eq!(payroll.payouts("R-7"), 0);
}

/// Under `approval = by_another` with a console, the task sends its caller there by URL, and
/// the caller's own answer (a form's yes in its place) counts for nothing: the task waits
/// until someone else approves, then runs the payout once.
#[tokio::test]
async fn by_another_a_task_waits_for_someone_else_whatever_its_caller_answers() {
    let (desk, payroll) = expenses::desk(memory());
    let desk = Arc::new(desk);
    let server = McpServer::new(Arc::clone(&desk), expenses::employee())
        .with_tasks(every_call)
        .with_approvals_console("https://desk.example/approvals/{approval_id}");
    let client = connect_declaring_urls(server).await;
    let task_id = started(&client, pay_out()).await;
    let waiting = once(&client, &task_id, TaskStatus::InputRequired).await;
    let key = question(&waiting);
    client
        .update_task(UpdateTaskParams::new(&task_id, yes_to(&key)))
        .await
        .expect("tasks/update");
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(
        get(&client, &task_id).await.unwrap().task.status(),
        TaskStatus::InputRequired
    );
    assert_eq!(payroll.payouts("R-7"), 0, "the caller's yes paid nothing");

    expenses::a_manager_approves_what_waits(&desk).await;
    let done = once(&client, &task_id, TaskStatus::Completed).await;
    assert_eq!(structured(&done)["status"], "succeeded", "{done:?}");
    assert_eq!(payroll.payouts("R-7"), 1);
}
