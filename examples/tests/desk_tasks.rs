//! `refund-desk mcp --http` serves a refund draft as a task to a client that takes tasks, on
//! both revisions: two desk processes over one store (an SQLite file, the default, or a
//! PostgreSQL database when one is named), the task asked through one and answered through
//! the other. A refund above 40.00 waits in its task for two supervisors.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::process::Command;
use tool_contract_tests::http as loopback;
use tool_contract_tests::listening::listening;
use tool_contract_tests::postgres::Schema;

/// A desk process serving MCP over HTTP on a loopback port of its own.
struct Replica {
    _process: tokio::process::Child,
    url: String,
}

/// Starts `refund-desk mcp --http 127.0.0.1:0 --store STORE`.
async fn replica(store: &str) -> Replica {
    let mut command = Command::new(env!("CARGO_BIN_EXE_refund-desk"));
    command.args(["mcp", "--http", "127.0.0.1:0", "--store", store]);
    let (process, address) = listening(command).await;
    Replica {
        _process: process,
        url: format!("http://{address}/"),
    }
}

/// What each 2026-07-28 request carries: a client that takes tasks and answers forms.
fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
            "elicitation": { "form": {} },
            "extensions": { "io.modelcontextprotocol/tasks": {} }
        },
        "io.modelcontextprotocol/clientInfo": { "name": "supervisor", "version": "1" }
    })
}

/// A 2026-07-28 request of `method` (named by `name` in the headers), its JSON-RPC response.
async fn request(replica: &Replica, method: &str, name: &str, params: Value) -> Value {
    request_at(&replica.url, method, name, params).await
}

/// [`request`] of the desk at `url`.
pub(crate) async fn request_at(url: &str, method: &str, name: &str, mut params: Value) -> Value {
    params["_meta"] = meta();
    let headers = [
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
        ("mcp-name", name),
    ];
    let message = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    let answer = loopback::post_json(url, &headers, &message).await;
    assert!(answer.status.is_success(), "{method}: {}", answer.text);
    answer.json()
}

/// A refund draft of `cents` for `order`.
fn refund(order: &str, cents: u64) -> Value {
    json!({
        "name": "create_refund_draft",
        "arguments": { "order_ref": order, "amount_cents": cents, "reason": "Mug arrived broken" }
    })
}

/// `tasks/get` of `task` through `replica`, until `done` holds of it (within ten seconds).
async fn task_until(replica: &Replica, task: &str, done: impl Fn(&Value) -> bool) -> Value {
    task_until_at(&replica.url, task, Duration::from_secs(10), done).await
}

/// `tasks/get` of `task` through the desk at `url`, until `done` holds of it (within
/// `within`).
pub(crate) async fn task_until_at(
    url: &str,
    task: &str,
    within: Duration,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let started = Instant::now();
    loop {
        let got = request_at(url, "tasks/get", task, json!({ "taskId": task })).await;
        if done(&got["result"]) {
            return got["result"].clone();
        }
        assert!(started.elapsed() < within, "{got}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// On 2026-07-28: a refund asked through `one` is a task; `other` shows it waiting for its
/// approval, takes the answer, and the draft is made once; a larger one waits for two.
async fn tasks_of_2026_07_28(one: &Replica, other: &Replica) {
    let created = request(
        one,
        "tools/call",
        "create_refund_draft",
        refund("ORDER-1001", 3990),
    )
    .await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task = created["result"]["taskId"].as_str().unwrap().to_owned();

    let waiting = task_until(other, &task, |task| task["status"] == "input_required").await;
    let (key, asked) = waiting["inputRequests"]
        .as_object()
        .unwrap()
        .iter()
        .next()
        .unwrap();
    let form = asked["params"]["message"].as_str().unwrap();
    assert!(form.contains("Mug arrived broken"), "{form}");
    let answer = json!({ key.clone(): { "action": "accept", "content": { "approve": true } } });
    let updated = request(
        other,
        "tasks/update",
        &task,
        json!({ "taskId": task, "inputResponses": answer }),
    )
    .await;
    assert!(updated.get("error").is_none(), "{updated}");

    // The replica holding the task hears of the answer at once on PostgreSQL (`NOTIFY`); of
    // another process's answer in an SQLite file, at its next beat (every 10 s).
    let completed = |task: &Value| task["status"] == "completed";
    let done = task_until_at(&one.url, &task, Duration::from_secs(30), completed).await;
    let made = &done["result"]["structuredContent"];
    assert_eq!(made["status"], "succeeded", "{done}");
    assert_eq!(made["data"]["order_ref"], "ORDER-1001", "{done}");

    let large = request(
        one,
        "tools/call",
        "create_refund_draft",
        refund("ORDER-1002", 5000),
    )
    .await;
    let large = large["result"]["taskId"].as_str().unwrap().to_owned();
    let waiting = task_until(other, &large, |task| task["status"] == "input_required").await;
    let status = waiting["statusMessage"].as_str().unwrap();
    assert!(status.contains("2 approval"), "{waiting}");
}

/// A 2025-11-25 session with the desk at `replica`: sends `message`, returns the response.
struct Session<'a> {
    replica: &'a Replica,
    id: String,
}

impl<'a> Session<'a> {
    async fn open(replica: &'a Replica) -> Session<'a> {
        let capabilities = json!({ "tasks": {}, "elicitation": { "form": {} } });
        let (id, opened) = loopback::open_session(&replica.url, "2025-11-25", capabilities).await;
        let declared = &opened.json()["result"]["capabilities"]["tasks"];
        assert!(
            declared["requests"]["tools"]["call"].is_object(),
            "{}",
            opened.text
        );
        Session { replica, id }
    }

    async fn request(&self, method: &str, params: Value) -> Value {
        let message = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
        let answer =
            loopback::in_session(&self.replica.url, "2025-11-25", &self.id, &message).await;
        assert!(answer.status.is_success(), "{message}: {}", answer.text);
        answer.json()
    }
}

/// On 2025-11-25: a refund with `params.task` in a session with `one` is a task, which a
/// session with `other` finds waiting for its approval and cancels, since nothing of it ran.
async fn tasks_of_2025_11_25(one: &Replica, other: &Replica) {
    let asking = Session::open(one).await;
    let answering = Session::open(other).await;
    let mut call = refund("ORDER-1003", 2500);
    call["task"] = json!({ "ttl": 60_000 });
    let created = asking.request("tools/call", call).await;
    let task = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();

    let started = Instant::now();
    loop {
        let got = answering
            .request("tasks/get", json!({ "taskId": task }))
            .await;
        if got["result"]["status"] == "input_required" {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{got}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let cancelled = answering
        .request("tasks/cancel", json!({ "taskId": task }))
        .await;
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    let seen = asking.request("tasks/get", json!({ "taskId": task })).await;
    assert_eq!(seen["result"]["status"], "cancelled", "{seen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_desk_serves_a_refund_as_a_task_another_replica_answers_over_sqlite() {
    let store =
        std::env::temp_dir().join(format!("refund-desk-tasks-{}.sqlite", std::process::id()));
    let store_path = store.to_str().unwrap().to_owned();
    let (one, other) = (replica(&store_path).await, replica(&store_path).await);
    tasks_of_2026_07_28(&one, &other).await;
    tasks_of_2025_11_25(&one, &other).await;
    drop((one, other));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", store.display()));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_desk_serves_a_refund_as_a_task_another_replica_answers_over_postgresql() {
    let Some(schema) = Schema::new("the desk's tasks over PostgreSQL") else {
        return;
    };
    // A database of its own: the desk keeps its tables in the default schema, and its
    // ledger would replay an earlier run's drafts.
    let database = schema.name.clone();
    schema.execute(&format!("CREATE DATABASE {database}"));
    let url = match schema.url.rsplit_once('/') {
        Some((server, _)) => format!("{server}/{database}"),
        None => panic!("a database URL: {}", schema.url),
    };
    let (one, other) = (replica(&url).await, replica(&url).await);
    tasks_of_2026_07_28(&one, &other).await;
    tasks_of_2025_11_25(&one, &other).await;
    drop((one, other));
    schema.execute(&format!("DROP DATABASE {database} WITH (FORCE)"));
}
