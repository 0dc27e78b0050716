//! A plain HTTP/1.1 client of an MCP server's Streamable HTTP endpoint: one kept-alive
//! connection, and a 2026-07-28 `tools/call` of `get_order` (no session, the revision in
//! `_meta`).

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;

/// One kept-alive HTTP/1.1 connection to `address`.
pub async fn connect(address: &str) -> SendRequest<Full<Bytes>> {
    let stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    sender
}

const CALL: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_order","arguments":{"order_ref":"ORDER-7"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}}}"#;

/// One `tools/call` round trip; the answer's length.
pub async fn call(
    sender: &mut SendRequest<Full<Bytes>>,
    address: &str,
    authorization: Option<&str>,
) -> usize {
    let mut request = hyper::Request::post("/mcp")
        .header("host", address)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "get_order");
    if let Some(authorization) = authorization {
        request = request.header("authorization", authorization);
    }
    let request = request
        .body(Full::new(Bytes::from_static(CALL.as_bytes())))
        .unwrap();
    sender.ready().await.unwrap();
    let response = sender.send_request(request).await.unwrap();
    assert_eq!(response.status(), 200);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert!(
        body.windows(9).any(|window| window == b"succeeded"),
        "{body:?}"
    );
    body.len()
}
