//! `refund-desk mcp --http`: two desk processes on loopback ports, one SQLite store. A
//! supervisor's approval asked through one replica is answered through the other, and the
//! refund is drafted once.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::process::{Child, Command};
use tool_contract_tests::listening::listening;

/// A desk process serving MCP over HTTP, and the address it listens on.
struct Replica {
    _process: Child,
    address: String,
}

/// Starts `refund-desk mcp --http 127.0.0.1:0 --store STORE`.
async fn replica(store: &std::path::Path) -> Replica {
    let mut command = Command::new(env!("CARGO_BIN_EXE_refund-desk"));
    command
        .args(["mcp", "--http", "127.0.0.1:0", "--store"])
        .arg(store);
    let (process, address) = listening(command).await;
    Replica {
        _process: process,
        address,
    }
}

/// A `tools/call` of 2026-07-28 to `replica`, with `extra` params; its JSON-RPC response.
async fn call(replica: &Replica, tool: &str, arguments: Value, extra: Value) -> Value {
    call_at(&replica.address, tool, arguments, extra).await
}

/// A `tools/call` of 2026-07-28 to the desk at `address`, with `extra` params; its JSON-RPC
/// response.
pub(crate) async fn call_at(address: &str, tool: &str, arguments: Value, extra: Value) -> Value {
    let mut params = json!({
        "name": tool,
        "arguments": arguments,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": { "elicitation": { "form": {} } },
            "io.modelcontextprotocol/clientInfo": { "name": "supervisor", "version": "1" }
        }
    });
    if let (Value::Object(params), Value::Object(extra)) = (&mut params, extra) {
        params.extend(extra);
    }
    let message = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params });
    let stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    let request = http::Request::post("/")
        .header("host", address)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .body(Full::new(Bytes::from(message.to_string())))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let text = String::from_utf8(body.to_vec()).unwrap();
    let json = text
        .lines()
        .find_map(|line| line.strip_prefix("data:"))
        .map_or(text.as_str(), str::trim);
    serde_json::from_str(json).unwrap_or_else(|_| panic!("not JSON: {text}"))
}

/// A refund one supervisor approves (40.00 and under).
fn refund() -> Value {
    json!({ "order_ref": "ORDER-1001", "amount_cents": 3990, "reason": "Mug arrived broken" })
}

#[tokio::test]
async fn an_approval_asked_through_one_desk_is_answered_through_another_and_drafts_once() {
    let store = std::env::temp_dir().join(format!(
        "refund-desk-http-test-{}.sqlite",
        std::process::id()
    ));
    let one = replica(&store).await;
    let other = replica(&store).await;

    let asked = call(&one, "create_refund_draft", refund(), json!({})).await;
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    let form = &asked["result"]["inputRequests"]["approval"]["params"]["message"];
    assert!(
        form.as_str().unwrap().contains("Mug arrived broken"),
        "{form}"
    );
    let answer = json!({
        "inputResponses": { "approval": { "action": "accept", "content": { "approve": true } } },
        "requestState": asked["result"]["requestState"],
    });
    let made = call(&other, "create_refund_draft", refund(), answer).await;
    let made = &made["result"]["structuredContent"];
    assert_eq!(made["status"], "succeeded", "{made}");
    assert_eq!(made["data"]["draft_ref"], "DRAFT-1");

    // The first replica replays what the other recorded; it never drafted anything itself.
    let again = call(&one, "create_refund_draft", refund(), json!({})).await;
    let again = &again["result"]["structuredContent"];
    assert_eq!(again["execution"]["delivery"], "local_replay", "{again}");
    assert_eq!(again["data"]["draft_ref"], "DRAFT-1");
    let lookup = json!({ "order_ref": "ORDER-1001" });
    let here = call(&other, "get_refund_draft", lookup.clone(), json!({})).await;
    assert_eq!(
        here["result"]["structuredContent"]["data"]["draft_ref"],
        "DRAFT-1"
    );
    let there = call(&one, "get_refund_draft", lookup, json!({})).await;
    assert_ne!(
        there["result"]["structuredContent"]["status"], "succeeded",
        "the first desk's shop has no draft: {there}"
    );
    drop((one, other));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", store.display()));
    }
}
