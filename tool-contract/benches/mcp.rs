//! What serving a call over MCP costs, beside rmcp alone and the dispatcher alone, in the same
//! run (feature `mcp`: `cargo bench -p tool-contract --features mcp --bench mcp`).
//!
//! - `tools_call/dispatch`: the read through `Dispatcher::dispatch`, no MCP;
//! - `tools_call/rmcp_fixed_answer`: an rmcp client and a server that answers every
//!   `tools/call` with a fixed result of the same size, over an in-memory pipe: rmcp's own cost;
//! - `tools_call/mcp_server`: the same client and pipe to `McpServer`: dispatch, verification,
//!   structured content and text block.
//!
//! Each of the two MCP figures on the handshake revision (2025-11-25) and on 2026-07-28, whose
//! requests each carry their revision and capabilities in `_meta` (`…_2026_07_28`).
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
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn call_tool(
        &self,
        _request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let mut result = CallToolResult::success(vec![ContentBlock::text(self.0.to_string())]);
        result.structured_content = Some(self.0.clone());
        Ok(result.into())
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
    let (client_side, server_side) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let (read, write) = tokio::io::split(server_side);
        if let Ok(running) = server.serve_io(read, write).await {
            let _ = running.waiting().await;
        }
    });
    ().serve_with_lifecycle(client_side, lifecycle(stateless))
        .await
        .expect("the session starts")
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
}

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
                connect(FixedAnswer(fixed), true).await,
                connect_served(server(), true).await,
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
    }
}

impl Setup {
    /// Runs case `name` once; `false` when there is no such case.
    fn run(&self, name: &str) -> bool {
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

fn bench_tools_call(c: &mut Criterion) {
    let Setup {
        runtime,
        principal,
        dispatcher,
        task,
        context,
        clients,
    } = setup();
    let mut group = c.benchmark_group("tools_call");
    group.bench_function("dispatch", |b| {
        b.iter(|| {
            runtime.block_on(async {
                black_box(dispatcher.dispatch(&principal, &context, &task).await)
            })
        });
    });
    for (revision, bare, served) in &clients {
        group.bench_function(format!("rmcp_fixed_answer{revision}"), |b| {
            b.iter(|| {
                runtime.block_on(async {
                    black_box(bare.call_tool(request()).await.expect("answered"))
                })
            });
        });
        group.bench_function(format!("mcp_server{revision}"), |b| {
            b.iter(|| {
                runtime.block_on(async {
                    black_box(served.call_tool(request()).await.expect("answered"))
                })
            });
        });
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
