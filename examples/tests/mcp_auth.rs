//! `refund-desk mcp --http ADDR --issuer URL --resource URL`: the README's whole path against
//! a real issuer (`oauth2-mock-server`): the metadata, a call without a token, a read with
//! one, a refund above 40.00 that steps up to `refunds:large`, and the same refund asked of a
//! supervisor once the token has it.

use serde_json::{Value, json};
use tokio::process::{Child, Command};
use tool_contract_tests::http::{self, Answer};
use tool_contract_tests::issuer::MockIssuer;
use tool_contract_tests::listening::listening;

/// The desk process; stopped when dropped.
struct Desk {
    _process: Child,
    resource: String,
}

/// Starts the desk on a free loopback port as a resource server of `issuer`.
async fn desk(issuer: &MockIssuer, store: &std::path::Path) -> Desk {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let address = format!("127.0.0.1:{port}");
    let resource = format!("http://{address}/mcp");
    let mut command = Command::new(env!("CARGO_BIN_EXE_refund-desk"));
    command
        .args(["mcp", "--http", &address, "--issuer", &issuer.url])
        .args(["--resource", &resource, "--store"])
        .arg(store);
    let (process, _) = listening(command).await;
    Desk {
        _process: process,
        resource,
    }
}

/// A `tools/call` of 2026-07-28 with `token`.
async fn call(desk: &Desk, token: Option<&str>, tool: &str, arguments: Value) -> Answer {
    let message = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": tool, "arguments": arguments, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": { "elicitation": { "form": {} } },
            "io.modelcontextprotocol/clientInfo": { "name": "supervisor", "version": "1" }
        } } });
    let authorization = token.map(|token| format!("Bearer {token}"));
    let mut headers = vec![
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", tool),
    ];
    if let Some(authorization) = &authorization {
        headers.push(("authorization", authorization));
    }
    http::post_json(&desk.resource, &headers, &message).await
}

#[tokio::test]
async fn the_desk_over_http_takes_tokens_of_its_issuer_and_steps_a_large_refund_up() {
    let Some(issuer) = MockIssuer::start("refund desk with tokens") else {
        return;
    };
    let store =
        std::env::temp_dir().join(format!("refund-desk-auth-{}.sqlite", std::process::id()));
    let desk = desk(&issuer, &store).await;

    let metadata = http::get(
        &desk
            .resource
            .replace("/mcp", "/.well-known/oauth-protected-resource/mcp"),
    )
    .await;
    let metadata = metadata.json();
    assert_eq!(metadata["resource"], desk.resource.as_str());
    assert_eq!(metadata["authorization_servers"], json!([issuer.url]));

    let order = json!({ "order_ref": "ORDER-1001" });
    let anonymous = call(&desk, None, "get_order", order.clone()).await;
    assert_eq!(anonymous.status, 401);
    assert!(
        anonymous
            .header("www-authenticate")
            .contains("resource_metadata=")
    );

    let reader = issuer
        .token_for(&desk.resource, "acme-shop", "sam", "tools:read")
        .await;
    let read = call(&desk, Some(&reader), "get_order", order).await;
    assert_eq!(
        read.json()["result"]["structuredContent"]["status"],
        "succeeded",
        "{}",
        read.text
    );

    let large =
        json!({ "order_ref": "ORDER-1001", "amount_cents": 4990, "reason": "Mug arrived broken" });
    let writer = issuer
        .token_for(&desk.resource, "acme-shop", "sam", "tools:read tools:write")
        .await;
    let stepped = call(&desk, Some(&writer), "create_refund_draft", large.clone()).await;
    assert_eq!(stepped.status, 403, "{}", stepped.text);
    let challenge = stepped.header("www-authenticate");
    assert!(
        challenge.contains("error=\"insufficient_scope\""),
        "{challenge}"
    );
    assert!(
        challenge.contains("scope=\"tools:write refunds:large\""),
        "{challenge}"
    );

    let large_writer = issuer
        .token_for(
            &desk.resource,
            "acme-shop",
            "sam",
            "tools:write refunds:large",
        )
        .await;
    let asked = call(&desk, Some(&large_writer), "create_refund_draft", large).await;
    assert_eq!(
        asked.json()["result"]["resultType"],
        "input_required",
        "{}",
        asked.text
    );

    drop(desk);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", store.display()));
    }
}
