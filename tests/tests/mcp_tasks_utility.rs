//! 2025-11-25's tasks utility on the same task rows as the 2026-07-28 extension, read off the
//! wire as a client of that revision sends it: the `tasks` capability and each tool's
//! `execution.taskSupport`; `params.task` answered with a `CreateTaskResult`; `tasks/get`,
//! `tasks/result` (which asks what the task waits for, tied to the task), `tasks/list` and
//! `tasks/cancel` in the utility's shapes; over a byte stream and over Streamable HTTP.

use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tool_contract::control::{ControlStore, MemoryStore};
use tool_contract::mcp::{McpServer, TaskSupport};
use tool_contract::{Principal, ToolSpec};
use tool_contract_tests::expenses;
use tool_contract_tests::mcp::Wire;
use tool_contract_tests::tracker::{Fault, Remote, alice, dispatcher};

const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// Reads and messages may be tasks, filing an issue must be one, nothing else is.
fn rule(spec: &ToolSpec) -> TaskSupport {
    match spec.name() {
        "read_doc" | "send_message" => TaskSupport::Optional,
        "file_issue" => TaskSupport::Required,
        _ => TaskSupport::Forbidden,
    }
}

fn server(remote: &Arc<Remote>) -> McpServer {
    acting_for(remote, Arc::new(MemoryStore::new()), alice())
}

fn acting_for(
    remote: &Arc<Remote>,
    store: Arc<dyn ControlStore>,
    principal: Principal,
) -> McpServer {
    let dispatcher = dispatcher(remote, store);
    McpServer::new(Arc::new(dispatcher), principal).with_tasks(rule)
}

/// A 2025-11-25 client that can answer forms and takes tasks.
async fn connect(server: McpServer) -> (Wire, Value) {
    let capabilities = json!({
        "elicitation": { "form": {} },
        "tasks": { "list": {}, "cancel": {} }
    });
    Wire::initialize(server, "2025-11-25", capabilities).await
}

fn read_as_task(ttl_ms: u64) -> Value {
    json!({ "name": "read_doc", "arguments": { "doc_id": "d1" }, "task": { "ttl": ttl_ms } })
}

fn message_as_task() -> Value {
    json!({
        "name": "send_message",
        "arguments": { "to": "bob@globex.example", "text": "hello" },
        "task": {}
    })
}

/// The task a `tools/call` with `params.task` was answered with.
async fn started(wire: &mut Wire, call: Value) -> Value {
    let created = wire.request("tools/call", call).await;
    let task = created["result"]["task"].clone();
    assert!(task["taskId"].is_string(), "a CreateTaskResult: {created}");
    task
}

/// The task by `tasks/get` once it is `status` (within ten seconds).
async fn once(wire: &mut Wire, task_id: &Value, status: &str) -> Value {
    for _ in 0..400 {
        let task = wire
            .request("tasks/get", json!({ "taskId": task_id }))
            .await;
        if task["result"]["status"] == status {
            return task["result"].clone();
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("task {task_id} never reached {status}");
}

fn accept_form(_: &Value) -> Value {
    json!({ "action": "accept", "content": { "approve": true } })
}

/// `tasks/result` of `task`, every form it asks on the way accepted: the answer, and what
/// was asked.
async fn result_accepting_forms(wire: &mut Wire, task: &Value) -> (Value, Vec<Value>) {
    let mut asked = Vec::new();
    let result = wire
        .request_answering(
            "tasks/result",
            json!({ "taskId": task["taskId"] }),
            |request| {
                asked.push(request.clone());
                accept_form(request)
            },
        )
        .await;
    (result, asked)
}

#[tokio::test]
async fn a_2025_11_25_session_is_told_the_utility_and_each_tools_task_support() {
    let remote = Remote::new();
    let (mut wire, initialized) = connect(server(&remote)).await;
    assert_eq!(initialized["protocolVersion"], "2025-11-25");
    assert_eq!(
        initialized["capabilities"]["tasks"],
        json!({ "list": {}, "cancel": {}, "requests": { "tools": { "call": {} } } })
    );
    let listed = wire.request("tools/list", json!({})).await;
    let support = |name: &str| {
        let tools = listed["result"]["tools"].as_array().expect("tools");
        let tool = tools.iter().find(|tool| tool["name"] == name).expect(name);
        tool.get("execution").cloned()
    };
    assert_eq!(
        support("read_doc"),
        Some(json!({ "taskSupport": "optional" }))
    );
    assert_eq!(
        support("file_issue"),
        Some(json!({ "taskSupport": "required" }))
    );
    assert_eq!(support("create_issue"), None, "forbidden, by default");

    // An earlier revision has no utility: neither the capability nor a tool's support.
    let (mut earlier, initialized) =
        Wire::initialize(server(&remote), "2025-06-18", json!({})).await;
    assert!(initialized["capabilities"].get("tasks").is_none());
    let listed = earlier.request("tools/list", json!({})).await;
    assert!(
        listed["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .all(|tool| tool.get("execution").is_none()),
        "{listed}"
    );
    assert_eq!(
        earlier.request("tasks/list", json!({})).await["error"]["code"],
        -32601
    );
}

#[tokio::test]
async fn a_call_with_params_task_is_a_task_whose_result_tasks_result_gives() {
    let remote = Remote::new();
    let (mut wire, _) = connect(server(&remote)).await;
    let task = started(&mut wire, read_as_task(60_000)).await;
    assert_eq!(task["status"], "working");
    assert_eq!(task["ttl"], 60_000, "the shorter of the asked and the kept");
    assert_eq!(task["pollInterval"], 1_000);
    assert!(task["createdAt"].is_string() && task["lastUpdatedAt"].is_string());
    assert!(
        task.get("ttlMs").is_none(),
        "the utility's fields only: {task}"
    );

    let result = wire
        .request("tasks/result", json!({ "taskId": task["taskId"] }))
        .await;
    let result = &result["result"];
    assert_eq!(
        result["structuredContent"]["status"], "succeeded",
        "{result}"
    );
    assert_eq!(result["isError"], false);
    assert_eq!(
        result["_meta"][RELATED_TASK],
        json!({ "taskId": task["taskId"] })
    );
    let done = once(&mut wire, &task["taskId"], "completed").await;
    assert_eq!(done["taskId"], task["taskId"]);

    // The server keeps a task a day: a client asking for longer gets the day.
    let longer = started(&mut wire, read_as_task(u64::MAX / 2)).await;
    assert_eq!(longer["ttl"], 24 * 3_600_000);
}

#[tokio::test]
async fn tasks_result_asks_what_the_task_waits_for_tied_to_the_task_and_the_write_runs_once() {
    let remote = Remote::new();
    let (mut wire, _) = connect(server(&remote)).await;
    let task = started(&mut wire, message_as_task()).await;
    once(&mut wire, &task["taskId"], "input_required").await;
    assert_eq!(remote.all_requests(), 0, "nothing ran while it waits");

    let (result, asked) = result_accepting_forms(&mut wire, &task).await;
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["method"], "elicitation/create");
    assert_eq!(
        asked[0]["params"]["_meta"][RELATED_TASK],
        json!({ "taskId": task["taskId"] })
    );
    assert_eq!(
        result["result"]["structuredContent"]["status"], "succeeded",
        "{result}"
    );
    assert_eq!(remote.all_requests(), 1, "the write ran once");
}

#[tokio::test]
async fn tasks_list_gives_the_callers_tasks_and_cancel_answers_the_cancelled_task() {
    let remote = Remote::new();
    let store: Arc<dyn ControlStore> = Arc::new(MemoryStore::new());
    let (mut wire, _) = connect(acting_for(&remote, store.clone(), alice())).await;
    let waiting = started(&mut wire, message_as_task()).await;
    once(&mut wire, &waiting["taskId"], "input_required").await;

    // Another principal on the same store sees none of it.
    let bob = Principal::new("acme", "bob");
    let (mut other, _) = connect(acting_for(&remote, store, bob)).await;
    let listed = other.request("tasks/list", json!({})).await;
    assert_eq!(listed["result"]["tasks"], json!([]), "{listed}");
    for method in ["tasks/get", "tasks/cancel"] {
        let answer = other
            .request(method, json!({ "taskId": waiting["taskId"] }))
            .await;
        assert_eq!(answer["error"]["code"], -32602, "{method}: {answer}");
    }

    let listed = wire.request("tasks/list", json!({})).await;
    let tasks = listed["result"]["tasks"].as_array().expect("tasks");
    assert_eq!(tasks.len(), 1, "{listed}");
    assert_eq!(tasks[0]["taskId"], waiting["taskId"]);
    assert_eq!(tasks[0]["status"], "input_required");
    assert!(listed["result"].get("nextCursor").is_none(), "one page");
    let forged = wire
        .request("tasks/list", json!({ "cursor": "page-2" }))
        .await;
    assert_eq!(forged["error"]["code"], -32602);

    let cancelled = wire
        .request("tasks/cancel", json!({ "taskId": waiting["taskId"] }))
        .await;
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    assert_eq!(cancelled["result"]["taskId"], waiting["taskId"]);
    let again = wire
        .request("tasks/cancel", json!({ "taskId": waiting["taskId"] }))
        .await;
    assert_eq!(again["error"]["code"], -32602, "an ended task is refused");
    let result = wire
        .request("tasks/result", json!({ "taskId": waiting["taskId"] }))
        .await;
    assert_eq!(result["error"]["code"], -32602, "{result}");
    assert_eq!(remote.all_requests(), 0, "the cancelled write never ran");

    let unnamed = wire.request("tasks/get", json!({})).await;
    assert_eq!(unnamed["error"]["code"], -32602, "no taskId: {unnamed}");
    let unknown = json!({ "taskId": "task_00000000000000000000000000000000" });
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let answer = wire.request(method, unknown.clone()).await;
        assert_eq!(answer["error"]["code"], -32602, "{method}: {answer}");
    }
}

#[tokio::test]
async fn a_task_whose_write_began_is_refused_cancellation_and_ends_as_the_write_does() {
    let remote = Remote::new();
    remote.script(&[Fault::CommitAfter(Duration::from_millis(400))]);
    let dispatcher = dispatcher(&remote, Arc::new(MemoryStore::new()));
    let writes = |spec: &ToolSpec| match spec.name() {
        "create_issue" => TaskSupport::Optional,
        _ => TaskSupport::Forbidden,
    };
    let server = McpServer::new(Arc::new(dispatcher), alice()).with_tasks(writes);
    let (mut wire, _) = connect(server).await;
    let call = json!({
        "name": "create_issue",
        "arguments": { "title": "Printer on fire", "body": "3" },
        "task": {}
    });
    let task = started(&mut wire, call).await;
    // The write is at the remote: the request arrived, the commit is under way.
    for _ in 0..200 {
        if remote.all_requests() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(remote.all_requests(), 1);
    let refused = wire
        .request("tasks/cancel", json!({ "taskId": task["taskId"] }))
        .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let result = wire
        .request("tasks/result", json!({ "taskId": task["taskId"] }))
        .await;
    assert_eq!(
        result["result"]["structuredContent"]["status"], "succeeded",
        "{result}"
    );
    once(&mut wire, &task["taskId"], "completed").await;
    assert_eq!(remote.all_requests(), 1, "the write ran once");
}

#[tokio::test]
async fn a_tools_task_support_refuses_a_call_that_does_not_match_it() {
    let remote = Remote::new();
    let (mut wire, _) = connect(server(&remote)).await;
    let required = json!({ "name": "file_issue", "arguments": { "title": "t", "body": "b" } });
    assert_eq!(
        wire.request("tools/call", required).await["error"]["code"],
        -32601,
        "a required task not asked for"
    );
    let forbidden = json!({
        "name": "create_issue",
        "arguments": { "title": "t", "body": "b" },
        "task": {}
    });
    assert_eq!(
        wire.request("tools/call", forbidden).await["error"]["code"],
        -32601,
        "a task asked of a tool whose calls never are"
    );
    let malformed = json!({ "name": "read_doc", "arguments": { "doc_id": "d1" }, "task": 5 });
    assert_eq!(
        wire.request("tools/call", malformed).await["error"]["code"],
        -32602
    );
    assert_eq!(remote.all_requests(), 0, "nothing ran");

    // Optional: without params.task the call is answered in its request.
    let plain = json!({ "name": "read_doc", "arguments": { "doc_id": "d1" } });
    let answered = wire.request("tools/call", plain).await;
    assert_eq!(
        answered["result"]["structuredContent"]["status"], "succeeded",
        "{answered}"
    );
}

#[tokio::test]
async fn a_tool_that_failed_reads_failed_and_tasks_result_gives_its_error_result() {
    let remote = Remote::new();
    let (mut wire, _) = connect(server(&remote)).await;
    // The knowledge base cannot be reached: the tool fails.
    remote.script(&[Fault::NotSent; 8]);
    let task = started(&mut wire, read_as_task(60_000)).await;
    let result = wire
        .request("tasks/result", json!({ "taskId": task["taskId"] }))
        .await;
    assert_eq!(result["result"]["isError"], true, "{result}");
    once(&mut wire, &task["taskId"], "failed").await;
}

/// One JSON-RPC message POSTed to `address` with `headers`.
async fn send(
    address: &str,
    headers: &[(&str, &str)],
    message: &Value,
) -> http::Response<hyper::body::Incoming> {
    let stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    let mut request = http::Request::post("/")
        .header("host", address)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request
        .body(Full::new(Bytes::from(message.to_string())))
        .unwrap();
    sender.send_request(request).await.unwrap()
}

/// A request POSTed to `address` with `headers`: the session header and the message
/// answered (a JSON body, or the last `data:` line of an event stream).
async fn post(address: &str, headers: &[(&str, &str)], message: &Value) -> (Option<String>, Value) {
    let response = send(address, headers, message).await;
    let session = response
        .headers()
        .get("mcp-session-id")
        .map(|value| value.to_str().unwrap().to_owned());
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let text = String::from_utf8(body.to_vec()).unwrap();
    assert!(status.is_success(), "{status}: {text}");
    let json = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(str::trim)
        .rfind(|data| !data.is_empty())
        .unwrap_or(text.as_str());
    (
        session,
        serde_json::from_str(json).unwrap_or_else(|_| panic!("not JSON: {text}")),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_utility_is_served_over_streamable_http() {
    let remote = Remote::new();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    tokio::spawn(server(&remote).serve_http(listener));

    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": { "tasks": {}, "elicitation": { "form": {} } },
            "clientInfo": { "name": "http-wire", "version": "1" }
        }
    });
    let (session, initialized) = post(
        &address,
        &[("mcp-protocol-version", "2025-11-25")],
        &initialize,
    )
    .await;
    let session = session.expect("a session");
    assert_eq!(
        initialized["result"]["capabilities"]["tasks"]["requests"],
        json!({ "tools": { "call": {} } }),
        "{initialized}"
    );
    let headers = [
        ("mcp-protocol-version", "2025-11-25"),
        ("mcp-session-id", session.as_str()),
    ];
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    let noted = send(&address, &headers, &initialized).await;
    assert_eq!(noted.status(), 202);

    let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": read_as_task(60_000) });
    let (_, created) = post(&address, &headers, &call).await;
    let task_id = created["result"]["task"]["taskId"].clone();
    assert!(task_id.is_string(), "{created}");
    let result = json!({ "jsonrpc": "2.0", "id": 3, "method": "tasks/result", "params": { "taskId": task_id } });
    let (_, result) = post(&address, &headers, &result).await;
    assert_eq!(
        result["result"]["structuredContent"]["status"], "succeeded",
        "{result}"
    );
    let get = json!({ "jsonrpc": "2.0", "id": 4, "method": "tasks/get", "params": { "taskId": task_id } });
    let (_, got) = post(&address, &headers, &get).await;
    assert_eq!(got["result"]["status"], "completed", "{got}");
    assert_eq!(got["result"]["ttl"], 60_000);

    // A write waiting for approval: tasks/result's stream carries the form, tied to the task;
    // the answer, POSTed in the session, lets the write run once.
    let call =
        json!({ "jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": message_as_task() });
    let (_, created) = post(&address, &headers, &call).await;
    let task_id = created["result"]["task"]["taskId"].clone();
    let get = json!({ "jsonrpc": "2.0", "id": 6, "method": "tasks/get", "params": { "taskId": task_id } });
    for _ in 0..400 {
        if post(&address, &headers, &get).await.1["result"]["status"] == "input_required" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let result = json!({ "jsonrpc": "2.0", "id": 7, "method": "tasks/result", "params": { "taskId": task_id } });
    let mut stream = send(&address, &headers, &result).await.into_body();
    let mut answered = None;
    while let Some(message) = next_event(&mut stream).await {
        if message["method"] == "elicitation/create" {
            assert_eq!(
                message["params"]["_meta"][RELATED_TASK],
                json!({ "taskId": task_id })
            );
            let answer =
                json!({ "jsonrpc": "2.0", "id": message["id"], "result": accept_form(&message) });
            assert_eq!(send(&address, &headers, &answer).await.status(), 202);
        } else if message["id"] == 7 {
            answered = Some(message);
            break;
        }
    }
    let answered = answered.expect("tasks/result answered");
    assert_eq!(
        answered["result"]["structuredContent"]["status"], "succeeded",
        "{answered}"
    );
    assert_eq!(remote.all_requests(), 1, "the write ran once");
}

/// The next JSON-RPC message of an event stream, read as it arrives.
async fn next_event(stream: &mut hyper::body::Incoming) -> Option<Value> {
    let mut text = String::new();
    loop {
        if let Some(end) = text.find("\n\n") {
            let event: String = text.drain(..end + 2).collect();
            let data = event
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .map(str::trim)
                .collect::<String>();
            if let Ok(message) = serde_json::from_str(&data) {
                return Some(message);
            }
            continue;
        }
        let frame = stream.frame().await?.ok()?;
        if let Ok(data) = frame.into_data() {
            text.push_str(std::str::from_utf8(&data).ok()?);
        }
    }
}

/// Under `approval = by_another`, `tasks/result` sends the caller to the console by URL and
/// whatever the caller answers counts for nothing: the payout waits for someone else, then
/// runs once, and `tasks/result` gives its result.
#[tokio::test]
async fn by_another_tasks_result_counts_the_callers_answer_for_nothing() {
    let (desk, payroll) = expenses::desk(Arc::new(MemoryStore::new()));
    let desk = Arc::new(desk);
    let server = McpServer::new(Arc::clone(&desk), expenses::employee())
        .with_tasks(|_| TaskSupport::Optional)
        .with_approvals_console("https://desk.example/approvals/{approval_id}");
    let capabilities = json!({
        "elicitation": { "form": {}, "url": {} },
        "tasks": { "list": {}, "cancel": {} }
    });
    let (mut wire, _) = Wire::initialize(server, "2025-11-25", capabilities).await;
    let call = json!({
        "name": "pay_out",
        "arguments": { "report_id": "R-7", "amount_cents": 4200 },
        "task": {}
    });
    let task = started(&mut wire, call).await;
    once(&mut wire, &task["taskId"], "input_required").await;

    // Someone else decides, once the caller's own answer has had its chance to count.
    let manager = tokio::spawn({
        let (desk, payroll) = (Arc::clone(&desk), Arc::clone(&payroll));
        async move {
            tokio::time::sleep(Duration::from_millis(800)).await;
            assert_eq!(payroll.payouts("R-7"), 0, "the caller's yes paid nothing");
            expenses::a_manager_approves_what_waits(&desk).await;
        }
    });
    let (result, asked) = result_accepting_forms(&mut wire, &task).await;
    manager.await.expect("the manager's checks hold");
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["params"]["mode"], "url", "{asked:?}");
    assert_eq!(
        result["result"]["structuredContent"]["status"], "succeeded",
        "{result}"
    );
    assert_eq!(payroll.payouts("R-7"), 1);
}
