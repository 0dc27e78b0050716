//! The two servers under load, each a process of its own on a loopback port: the refund desk
//! as it is deployed (`refund-desk mcp --http`, its durable audit log signing a tree head per
//! sync), and the anchor, a plain rmcp server answering the same tool with the same bytes.
//! What each process spent is read from `/proc`.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler};
use serde_json::Value;

/// A server process and the address it listens on.
pub struct Server {
    pub address: String,
    child: Child,
}

impl Server {
    /// Starts `command` and waits for the `listening on http://ADDR` line on its stderr.
    fn start(name: &'static str, mut command: Command) -> Result<Self, String> {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| format!("cannot start {name}: {error}"))?;
        let stderr = child.stderr.take().ok_or("no stderr")?;
        let mut lines = BufReader::new(stderr).lines();
        let address = loop {
            let Some(Ok(line)) = lines.next() else {
                let _ = child.kill();
                return Err(format!("{name} ended before listening"));
            };
            if let Some(address) = line.strip_prefix("listening on http://") {
                break address.trim().to_owned();
            }
        };
        // Whatever it says later is drained, so it never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        Ok(Server { address, child })
    }

    /// The refund desk's own binary serving MCP over HTTP on a free loopback port, its
    /// approvals and write records in `store` (an SQLite path or a PostgreSQL URL).
    pub fn desk(store: &str) -> Result<Self, String> {
        let mut command = Command::new(env!("CARGO_BIN_EXE_refund-desk"));
        command.args(["mcp", "--http", "127.0.0.1:0", "--store", store]);
        Server::start("tool-contract", command)
    }

    /// This bench's own program again, as the anchor answering with `answer` (a
    /// `CallToolResult` as JSON).
    pub fn anchor(answer: &Value) -> Result<Self, String> {
        let path = std::env::temp_dir().join(format!("load-anchor-{}.json", std::process::id()));
        std::fs::write(&path, answer.to_string()).map_err(|error| error.to_string())?;
        let mut command = Command::new(std::env::current_exe().map_err(|error| error.to_string())?);
        command.arg("--anchor").arg(&path);
        Server::start("rmcp", command)
    }

    /// The CPU time the process has used so far, in seconds.
    pub fn cpu_seconds(&self) -> f64 {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())) else {
            return f64::NAN;
        };
        // After the command name in parentheses: utime and stime are the 12th and 13th fields.
        let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        let fields: Vec<&str> = after.split_whitespace().collect();
        let ticks = |at: usize| fields.get(at).and_then(|field| field.parse::<f64>().ok());
        match (ticks(11), ticks(12)) {
            (Some(user), Some(system)) => (user + system) / clock_ticks(),
            _ => f64::NAN,
        }
    }

    /// The process's resident memory, in MiB.
    pub fn resident_mib(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|kib| kib.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map_or(f64::NAN, |kib| kib / 1024.0)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The kernel's clock ticks a second, as `getconf` says (100 nearly everywhere).
fn clock_ticks() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|output| String::from_utf8(output.stdout).ok())
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or(100.0)
    })
}

/// The anchor's tool: `get_order`, its arguments read as rmcp's `#[tool]` reads them
/// (deserialized into the tool's own struct), answered with the desk's answer, unchanged.
struct Anchor {
    answer: CallToolResult,
}

#[derive(serde::Deserialize)]
#[allow(dead_code)]
struct GetOrder {
    order_ref: String,
}

impl ServerHandler for Anchor {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = serde_json::json!({
            "type": "object",
            "properties": { "order_ref": { "type": "string" } },
            "required": ["order_ref"]
        });
        let Value::Object(schema) = schema else {
            unreachable!("an object literal")
        };
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "get_order",
            "Read one order.",
            Arc::new(schema),
        )]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        serde_json::from_value::<GetOrder>(arguments)
            .map_err(|error| ErrorData::invalid_params(error.to_string(), None))?;
        Ok(self.answer.clone().into())
    }
}

/// The anchor's process: rmcp's Streamable HTTP service on a free loopback port, configured
/// as `McpServer::serve_http` configures it (a plain JSON answer, sessions for 2025-11-25,
/// `TCP_NODELAY`), on a runtime of a worker per core, until killed.
pub fn serve_anchor(answer_path: &str) -> Result<(), String> {
    let answer = std::fs::read(answer_path).map_err(|error| error.to_string())?;
    let answer: CallToolResult =
        serde_json::from_slice(&answer).map_err(|error| error.to_string())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| error.to_string())?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|error| error.to_string())?;
        let address = listener.local_addr().map_err(|error| error.to_string())?;
        let mut config = StreamableHttpServerConfig::default();
        config.json_response = true;
        let service = StreamableHttpService::new(
            move || {
                Ok(Anchor {
                    answer: answer.clone(),
                })
            },
            Arc::new(LocalSessionManager::default()),
            config,
        );
        eprintln!("listening on http://{address}");
        loop {
            let (stream, _) = listener.accept().await.map_err(|error| error.to_string())?;
            let _ = stream.set_nodelay(true);
            let service = service.clone();
            tokio::spawn(async move {
                let serve = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
                    let mut service = service.clone();
                    async move { tower_service::Service::call(&mut service, request).await }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), serve)
                    .await;
            });
        }
    })
}
