//! What serving a call over MCP costs, beside rmcp alone and the dispatcher alone, in the same
//! run (feature `mcp`: `cargo bench -p tool-contract --features mcp --bench mcp`).
//!
//! - `tools_call/dispatch`: the read through `Dispatcher::dispatch`, no MCP;
//! - `tools_call/rmcp_fixed_answer`: an rmcp client and a server that answers every
//!   `tools/call` with a fixed result of the same size, over an in-memory pipe: rmcp's own cost;
//! - `tools_call/mcp_server`: the same client and pipe to `McpServer`: dispatch, verification,
//!   structured content and text block;
//! - `tools_call/rmcp_dispatching_fixed_answer`: the fixed answer again, from a server that
//!   first runs the same dispatch and drops it: the two parts in one process, each with the
//!   other's use of the caches (the two parts measured apart each run with warm ones).
//!
//! Each of the two MCP figures on the handshake revision (2025-11-25) and on 2026-07-28, whose
//! requests each carry their revision and capabilities in `_meta` (`…_2026_07_28`). With the
//! feature `mcp-http`, the 2026-07-28 pair again over Streamable HTTP on loopback, one
//! kept-alive HTTP/1.1 connection each (`http_…`): rmcp's own HTTP service with the fixed
//! answer, and `McpServer::serve_http`.
//!
//! `mcp CASE REPETITIONS` (a case's name as above, e.g. `mcp_server_2026_07_28`) runs one
//! case that many times after its setup, without criterion: `benches/callgrind.sh mcp` counts
//! each case's instructions that way.

mod common;

use std::hint::black_box;
use std::sync::Arc;

use common::orders::dispatcher;
use criterion::{Criterion, criterion_group};
use rmcp::model::ProtocolVersion;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer, RunningService};
use rmcp::{
    ClientLifecycleMode, ClientServiceExt, ErrorData, RoleClient, ServerHandler, ServiceExt,
};
use serde_json::{Value, json};
use tool_contract::dispatch::Task;
use tool_contract::mcp::McpServer;
use tool_contract::providers::{Correlation, ToolCall};
use tool_contract::{CallContext, Principal};

/// Answers every call with one fixed result: rmcp's cost with no work behind it.
struct FixedAnswer(Value);

impl ServerHandler for FixedAnswer {
    fn get_info(&self) -> ServerConfig {
        tools_only()
    }

    async fn call_tool(
        &self,
        _request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        Ok(fixed_result(&self.0))
    }
}

/// A server of tools and nothing else.
fn tools_only() -> ServerConfig {
    ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
}

/// `fixed` as a call's result: its text, and itself as structured content.
fn fixed_result(fixed: &Value) -> CallToolResponse {
    let mut result = CallToolResult::success(vec![ContentBlock::text(fixed.to_string())]);
    result.structured_content = Some(fixed.clone());
    result.into()
}

/// The fixed answer, given after a dispatch of the call it then drops: rmcp and the
/// dispatcher in one handler, with nothing of `McpServer` between them.
struct DispatchingFixedAnswer {
    fixed: Value,
    dispatcher: Arc<tool_contract::dispatch::Dispatcher>,
    principal: Principal,
    context: CallContext,
}

impl ServerHandler for DispatchingFixedAnswer {
    fn get_info(&self) -> ServerConfig {
        tools_only()
    }

    async fn call_tool(
        &self,
        _request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // Boxed as `McpServer` boxes its call, for the same reason.
        let dispatched = Box::pin(self.dispatcher.dispatch(
            &self.principal,
            &self.context,
            &Task::unlimited(),
        ))
        .await;
        black_box(dispatched);
        Ok(fixed_result(&self.fixed))
    }
}

/// How a client starts: the `initialize` handshake, or 2026-07-28's `server/discover`.
fn lifecycle(stateless: bool) -> ClientLifecycleMode {
    if stateless {
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        }
    } else {
        ClientLifecycleMode::Initialize
    }
}

/// A client connected over an in-memory pipe to `server`, which runs on the same runtime.
async fn connect<S: ServerHandler>(server: S, stateless: bool) -> RunningService<RoleClient, ()> {
    let (client_side, server_side) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_side).await {
            let _ = running.waiting().await;
        }
    });
    ().serve_with_lifecycle(client_side, lifecycle(stateless))
        .await
        .expect("the session starts")
}

/// A client connected the same way to `server`, which reads the pipe itself (to keep each
/// call's arguments as sent).
async fn connect_served(server: McpServer, stateless: bool) -> RunningService<RoleClient, ()> {
    common::mcp_pipe::served(server, (), lifecycle(stateless)).await
}

fn request() -> CallToolRequestParams {
    let Value::Object(arguments) = json!({ "order_ref": "ORDER-7" }) else {
        unreachable!("an object literal")
    };
    CallToolRequestParams::new("get_order").with_arguments(arguments)
}

/// Everything the cases share: the runtime, the dispatcher, and the clients, connected.
struct Setup {
    runtime: tokio::runtime::Runtime,
    principal: Principal,
    dispatcher: Arc<tool_contract::dispatch::Dispatcher>,
    task: Task,
    context: CallContext,
    clients: Vec<Clients>,
    /// A client of [`DispatchingFixedAnswer`] (handshake revision).
    dispatching: RunningService<RoleClient, ()>,
    /// Over Streamable HTTP (2026-07-28): the address and a kept-alive connection of the
    /// fixed answer's rmcp service, then of `McpServer::serve_http`.
    #[cfg(feature = "mcp-http")]
    http: [(String, std::cell::RefCell<HttpSender>); 2],
}

#[cfg(feature = "mcp-http")]
type HttpSender = hyper::client::conn::http1::SendRequest<http_body_util::Full<bytes::Bytes>>;

/// A revision's suffix in the cases' names, a client of the fixed answer, and one of
/// `McpServer`.
type Clients = (
    &'static str,
    RunningService<RoleClient, ()>,
    RunningService<RoleClient, ()>,
);

fn setup() -> Setup {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let principal = Principal::new("acme", "alice");
    let dispatcher = Arc::new(dispatcher());
    let task = Task::unlimited();
    let context = CallContext::new(
        ToolCall {
            api: tool_contract::mcp::ADAPTER.api,
            adapter_revision: tool_contract::mcp::ADAPTER.revision.to_owned(),
            response_id: None,
            call_id: "mcp-1".to_owned(),
            correlation: Correlation::Id,
            name: "get_order".to_owned(),
            arguments: br#"{"order_ref":"ORDER-7"}"#.to_vec(),
        },
        "op-1",
    );
    // The fixed answer is the model result the server would give, so both carry as much.
    let fixed = runtime.block_on(dispatcher.dispatch(&principal, &context, &task));
    let fixed: Value =
        serde_json::from_slice(&fixed.result.model.to_canonical_json()).expect("JSON");
    let server = || McpServer::new(dispatcher.clone(), principal.clone());
    let clients = runtime.block_on(async {
        [
            (
                "",
                connect(FixedAnswer(fixed.clone()), false).await,
                connect_served(server(), false).await,
            ),
            (
                "_2026_07_28",
                connect(FixedAnswer(fixed.clone()), true).await,
                connect_served(server(), true).await,
            ),
        ]
    });

    let dispatching = runtime.block_on(connect(
        DispatchingFixedAnswer {
            fixed: fixed.clone(),
            dispatcher: dispatcher.clone(),
            principal: principal.clone(),
            context: context.clone(),
        },
        false,
    ));

    #[cfg(feature = "mcp-http")]
    let http = runtime.block_on(async {
        let fixed_address = http::serve_fixed(fixed).await;
        let served_address = http::serve(server()).await;
        [
            (
                fixed_address.clone(),
                common::http_client::connect(&fixed_address).await.into(),
            ),
            (
                served_address.clone(),
                common::http_client::connect(&served_address).await.into(),
            ),
        ]
    });
    Setup {
        runtime,
        principal,
        dispatcher,
        task,
        context,
        clients: clients.into(),
        dispatching,
        #[cfg(feature = "mcp-http")]
        http,
    }
}

/// The servers over Streamable HTTP, on loopback ports of the bench's runtime.
#[cfg(feature = "mcp-http")]
mod http {
    use std::sync::Arc;

    use hyper::body::Incoming;
    use hyper_util::rt::TokioIo;
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    use serde_json::Value;
    use tokio::net::TcpListener;
    use tool_contract::mcp::McpServer;

    use super::FixedAnswer;

    /// rmcp's own Streamable HTTP service answering every call with `fixed`, configured as
    /// `McpServer::serve_http` configures it (a plain JSON answer); its address.
    pub(super) async fn serve_fixed(fixed: Value) -> String {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let address = listener.local_addr().expect("its address").to_string();
        let mut config = StreamableHttpServerConfig::default();
        config.json_response = true;
        let service = StreamableHttpService::new(
            move || Ok(FixedAnswer(fixed.clone())),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let service = service.clone();
                tokio::spawn(async move {
                    let serve =
                        hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
                            let mut service = service.clone();
                            async move { tower_service::Service::call(&mut service, request).await }
                        });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), serve)
                        .await;
                });
            }
        });
        address
    }

    /// `server` over Streamable HTTP; its address.
    pub(super) async fn serve(server: McpServer) -> String {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let address = listener.local_addr().expect("its address").to_string();
        tokio::spawn(server.serve_http(listener));
        address
    }
}

impl Setup {
    /// The names of the cases, in the order they are measured.
    fn cases(&self) -> Vec<String> {
        let mut cases = vec!["dispatch".to_owned()];
        for (revision, _, _) in &self.clients {
            cases.push(format!("rmcp_fixed_answer{revision}"));
            cases.push(format!("mcp_server{revision}"));
        }
        cases.push(DISPATCHING.to_owned());
        #[cfg(feature = "mcp-http")]
        cases.extend(HTTP_CASES.map(str::to_owned));
        cases
    }

    /// Runs case `name` once; `false` when there is no such case.
    fn run(&self, name: &str) -> bool {
        #[cfg(feature = "mcp-http")]
        if let Some(at) = HTTP_CASES.iter().position(|case| *case == name) {
            let (address, sender) = &self.http[at];
            let mut sender = sender.borrow_mut();
            self.runtime.block_on(async {
                black_box(common::http_client::call(&mut sender, address, None).await)
            });
            return true;
        }
        if name == "dispatch" {
            self.runtime.block_on(async {
                black_box(
                    self.dispatcher
                        .dispatch(&self.principal, &self.context, &self.task)
                        .await,
                )
            });
            return true;
        }
        if name == DISPATCHING {
            self.runtime.block_on(async {
                black_box(
                    self.dispatching
                        .call_tool(request())
                        .await
                        .expect("answered"),
                )
            });
            return true;
        }
        for (revision, bare, served) in &self.clients {
            let client = if name == format!("rmcp_fixed_answer{revision}") {
                bare
            } else if name == format!("mcp_server{revision}") {
                served
            } else {
                continue;
            };
            self.runtime.block_on(async {
                black_box(client.call_tool(request()).await.expect("answered"))
            });
            return true;
        }
        false
    }
}

/// The case of [`DispatchingFixedAnswer`].
const DISPATCHING: &str = "rmcp_dispatching_fixed_answer";

/// The cases over Streamable HTTP, in the order of `Setup::http`.
#[cfg(feature = "mcp-http")]
const HTTP_CASES: [&str; 2] = [
    "http_rmcp_fixed_answer_2026_07_28",
    "http_mcp_server_2026_07_28",
];

fn bench_tools_call(c: &mut Criterion) {
    let setup = setup();
    let mut group = c.benchmark_group("tools_call");
    for case in setup.cases() {
        group.bench_function(&case, |b| b.iter(|| setup.run(&case)));
    }
    group.finish();
}

criterion_group!(benches, bench_tools_call);

fn main() {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    if let [case, times] = arguments.as_slice()
        && let Ok(times) = times.parse::<u64>()
    {
        let setup = setup();
        for _ in 0..times {
            if !setup.run(case) {
                eprintln!("no case {case}");
                std::process::exit(2);
            }
        }
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
