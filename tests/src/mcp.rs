//! In-process MCP sessions: a server on one end of a pipe, a test's client on the other.

use rmcp::model::ProtocolVersion;
use rmcp::service::RunningService;
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, RoleClient, ServiceExt};
use tool_contract::mcp::McpServer;

/// Serves `server` on an in-memory pipe and returns its other end, for a client.
fn serve(server: McpServer) -> tokio::io::DuplexStream {
    let (client_side, server_side) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let (read, write) = tokio::io::split(server_side);
        if let Ok(running) = server.serve_io(read, write).await {
            let _ = running.waiting().await;
        }
    });
    client_side
}

/// `server` served to `client` after the handshake (2025-11-25 and before).
///
/// # Panics
///
/// When the handshake fails.
pub async fn handshake<C: ClientHandler>(
    server: McpServer,
    client: C,
) -> RunningService<RoleClient, C> {
    client.serve(serve(server)).await.expect("the handshake")
}

/// `server` served to `client` speaking 2026-07-28 (no handshake).
///
/// # Panics
///
/// When discovery fails.
pub async fn discover<C: ClientHandler>(
    server: McpServer,
    client: C,
) -> RunningService<RoleClient, C> {
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    client
        .serve_with_lifecycle(serve(server), lifecycle)
        .await
        .expect("discovery")
}

/// A client of the bare wire over an in-memory pipe: JSON-RPC lines written and read as they
/// are, for the shapes rmcp's client does not write (2025-11-25's tasks utility).
pub struct Wire {
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
    write: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    next_id: u64,
}

impl Wire {
    /// `server` served on a pipe, after the handshake at `version` by a client declaring
    /// `capabilities`; and the `initialize` result.
    ///
    /// # Panics
    ///
    /// When the handshake fails.
    pub async fn initialize(
        server: McpServer,
        version: &str,
        capabilities: serde_json::Value,
    ) -> (Wire, serde_json::Value) {
        use tokio::io::AsyncBufReadExt;

        let (read, write) = tokio::io::split(serve(server));
        let mut wire = Wire {
            lines: tokio::io::BufReader::new(read).lines(),
            write,
            next_id: 0,
        };
        let params = serde_json::json!({
            "protocolVersion": version,
            "capabilities": capabilities,
            "clientInfo": { "name": "wire", "version": "1" }
        });
        let initialized = wire.request("initialize", params).await;
        let result = initialized["result"].clone();
        assert!(result.is_object(), "the handshake: {initialized}");
        wire.send(&serde_json::json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await;
        (wire, result)
    }

    async fn send(&mut self, message: &serde_json::Value) {
        use tokio::io::AsyncWriteExt;

        let mut line = message.to_string();
        line.push('\n');
        self.write
            .write_all(line.as_bytes())
            .await
            .expect("the pipe");
    }

    /// The response to a request of `method` with `params` (the whole message: its `result`
    /// or its `error`).
    ///
    /// # Panics
    ///
    /// When the server sends a request of its own meanwhile, or closes the pipe.
    pub async fn request(&mut self, method: &str, params: serde_json::Value) -> serde_json::Value {
        self.request_answering(method, params, |asked| {
            panic!("the server asked {asked} unexpectedly")
        })
        .await
    }

    /// [`request`](Self::request), each request the server sends meanwhile answered with
    /// the result `answer` gives for it (given the whole request).
    ///
    /// # Panics
    ///
    /// When the server closes the pipe.
    pub async fn request_answering(
        &mut self,
        method: &str,
        params: serde_json::Value,
        mut answer: impl FnMut(&serde_json::Value) -> serde_json::Value,
    ) -> serde_json::Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&serde_json::json!({
            "jsonrpc": "2.0", "id": id, "method": method, "params": params
        }))
        .await;
        loop {
            let line = self
                .lines
                .next_line()
                .await
                .expect("the pipe")
                .expect("the server closed the pipe");
            let message: serde_json::Value = serde_json::from_str(&line).expect("a JSON line");
            if message.get("method").is_some() && message.get("id").is_some() {
                let result = answer(&message);
                self.send(&serde_json::json!({
                    "jsonrpc": "2.0", "id": message["id"], "result": result
                }))
                .await;
            } else if message["id"] == id {
                return message;
            }
        }
    }
}
