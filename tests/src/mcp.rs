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
