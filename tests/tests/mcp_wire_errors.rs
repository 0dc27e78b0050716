//! JSON-RPC's errors over Streamable HTTP, as a client reads them: a method MCP defines whose
//! params do not read is `-32602` naming what is wrong (HTTP 400 without a session), never
//! "no such method"; a body that is not one JSON-RPC message is `-32700` or `-32600` with
//! HTTP 400 and a JSON body, in a session or without; and a 2025-11-25 session of a server
//! that declared no tasks runs a call that asks for one as a plain call.

use std::sync::Arc;

use http::Method;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tool_contract::control::{ControlStore, MemoryStore};
use tool_contract::mcp::McpServer;
use tool_contract_tests::http::{self as loopback, Answer};
use tool_contract_tests::tracker::{Remote, alice, dispatcher};

/// A server of the tracker's tools without tasks, on a loopback port; its URL.
async fn server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let store: Arc<dyn ControlStore> = Arc::new(MemoryStore::new());
    let server = McpServer::new(Arc::new(dispatcher(&Remote::new(), store)), alice());
    tokio::spawn(server.serve_http(listener));
    url
}

/// The `_meta` every 2026-07-28 request carries.
fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": { "name": "wire-errors", "version": "1" }
    })
}

/// `body` POSTed as JSON with the headers of a request of 2026-07-28, or of the 2025-11-25
/// session named.
async fn post(url: &str, session: Option<&str>, body: Vec<u8>) -> Answer {
    let mut headers = vec![
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    // 2026-07-28 names the method in a header too.
    let method = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|sent| sent["method"].as_str().map(str::to_owned))
        .unwrap_or_default();
    headers.push(("mcp-method", &method));
    match session {
        Some(session) => {
            headers.push(("mcp-protocol-version", "2025-11-25"));
            headers.push(("mcp-session-id", session));
        }
        None => headers.push(("mcp-protocol-version", "2026-07-28")),
    }
    loopback::send(Method::POST, url, &headers, body).await
}

/// A 2025-11-25 session opened on `url`; its id.
async fn session(url: &str) -> String {
    loopback::open_session(url, "2025-11-25", json!({})).await.0
}

/// Checks that `answer` is HTTP 400 with a JSON-RPC error of `code` for request `id` in a JSON
/// body; its message.
fn assert_refused(answer: &Answer, code: i64, id: &Value) -> String {
    assert_eq!(answer.status, 400, "{}", answer.text);
    assert!(
        answer
            .header("content-type")
            .starts_with("application/json"),
        "{answer:?}"
    );
    assert_error(answer, code, id)
}

/// Checks that `answer` is a JSON-RPC error of `code` for request `id`; its message.
fn assert_error(answer: &Answer, code: i64, id: &Value) -> String {
    let error = answer.json();
    assert_eq!(error["jsonrpc"], "2.0", "{}", answer.text);
    assert_eq!(error["error"]["code"], code, "{}", answer.text);
    assert_eq!(&error["id"], id, "{}", answer.text);
    error["error"]["message"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_known_method_with_params_that_do_not_read_is_invalid_params_with_400() {
    let url = server().await;
    let cases = [
        (
            "tools/call",
            json!({ "name": "read_doc", "arguments": "oops", "_meta": meta() }),
            "invalid type",
        ),
        (
            "tools/call",
            json!({ "arguments": {}, "_meta": meta() }),
            "name",
        ),
        (
            "tools/call",
            json!({ "name": 5, "arguments": {}, "_meta": meta() }),
            "invalid type",
        ),
        (
            "tasks/get",
            json!({ "taskId": 5, "_meta": meta() }),
            "invalid type",
        ),
    ];
    for (id, (method, params, names)) in cases.into_iter().enumerate() {
        let request = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        let answer = post(&url, None, request.to_string().into_bytes()).await;
        let message = assert_refused(&answer, -32602, &json!(id));
        assert!(
            message.contains(method) && message.contains(names),
            "{request}: {message}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_session_a_known_method_with_params_that_do_not_read_is_invalid_params() {
    let url = server().await;
    let session = session(&url).await;
    let request = json!({
        "jsonrpc": "2.0", "id": "c1", "method": "tools/call",
        "params": { "name": "read_doc", "arguments": "oops" }
    });
    let answer = post(&url, Some(&session), request.to_string().into_bytes()).await;
    assert!(answer.status.is_success(), "{}", answer.text);
    let message = assert_error(&answer, -32602, &json!("c1"));
    assert!(message.contains("tools/call"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_method_is_still_method_not_found() {
    let url = server().await;
    let request = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/dance", "params": { "_meta": meta() } });
    let answer = post(&url, None, request.to_string().into_bytes()).await;
    assert_error(&answer, -32601, &json!(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_is_not_json_is_a_parse_error_with_400_in_a_session_or_without() {
    let url = server().await;
    let session = session(&url).await;
    for body in [b"{\"jsonrpc\":".to_vec(), b"\xff\xfe{}".to_vec()] {
        for session in [None, Some(session.as_str())] {
            let answer = post(&url, session, body.clone()).await;
            assert_refused(&answer, -32700, &Value::Null);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_that_is_not_one_message_is_an_invalid_request_with_400_in_a_session_or_without() {
    let url = server().await;
    let session = session(&url).await;
    let cases = [
        (
            json!({ "jsonrpc": "1.0", "id": 3, "method": "tools/list" }),
            json!(3),
        ),
        (
            json!([{ "jsonrpc": "2.0", "id": 4, "method": "tools/list" }]),
            Value::Null,
        ),
        (
            json!({ "jsonrpc": "2.0", "id": null, "method": "tools/list" }),
            Value::Null,
        ),
        (json!(42), Value::Null),
    ];
    for (body, id) in cases {
        for session in [None, Some(session.as_str())] {
            let answer = post(&url, session, body.to_string().into_bytes()).await;
            assert_refused(&answer, -32600, &id);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_tasks_runs_a_2025_11_25_call_that_asks_for_a_task_as_a_plain_call() {
    let url = server().await;
    let session = session(&url).await;
    let call = json!({
        "jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": { "name": "read_doc", "arguments": { "doc_id": "d1" }, "task": { "ttl": 60000 } }
    });
    let answer = post(&url, Some(&session), call.to_string().into_bytes()).await;
    assert!(answer.status.is_success(), "{}", answer.text);
    let result = answer.json();
    assert_eq!(result["id"], 9, "{}", answer.text);
    assert_eq!(
        result["result"]["structuredContent"]["status"], "succeeded",
        "{}",
        answer.text
    );
}
