//! The console on the same port as MCP's Streamable HTTP transport.

use super::Console;
use crate::mcp::McpServer;

impl McpServer {
    /// Serves `console` on the same port as MCP over Streamable HTTP, under its base path
    /// (its requests never reach MCP's transport: the console checks its own sessions and
    /// CSRF tokens), and sends people to its approval pages
    /// ([`with_approvals_console`](Self::with_approvals_console)) at its origin. A console
    /// mounted at the root (base path `""`) would take every path: it is not served here,
    /// only linked to.
    #[cfg_attr(docsrs, doc(cfg(all(feature = "console", feature = "mcp-http"))))]
    #[must_use]
    pub fn with_console(self, console: &Console) -> Self {
        let base = console.base_path();
        let server = self.with_approvals_console(&console.approval_url("{approval_id}"));
        if base.is_empty() {
            return server;
        }
        server.with_routes(base, console.mounted())
    }
}
