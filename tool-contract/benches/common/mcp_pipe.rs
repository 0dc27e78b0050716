//! An rmcp client connected to an `McpServer` over an in-memory pipe, the server reading its
//! end itself (as `serve_io` does, keeping each call's arguments as sent), on the same
//! runtime.

use rmcp::service::RunningService;
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, RoleClient};
use tool_contract::mcp::McpServer;

/// `client` connected to `server` with `lifecycle`.
pub async fn served<C: ClientHandler>(
    server: McpServer,
    client: C,
    lifecycle: ClientLifecycleMode,
) -> RunningService<RoleClient, C> {
    let (client_side, server_side) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let (read, write) = tokio::io::split(server_side);
        if let Ok(running) = server.serve_io(read, write).await {
            let _ = running.waiting().await;
        }
    });
    client
        .serve_with_lifecycle(client_side, lifecycle)
        .await
        .expect("the session starts")
}
