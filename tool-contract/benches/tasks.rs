//! What a poll of an MCP task costs beside the call itself, on PostgreSQL (features `mcp` and
//! `postgres`: `cargo bench -p tool-contract --features mcp,postgres --bench tasks`), in the
//! same run, each over an rmcp client speaking 2026-07-28 on an in-memory pipe:
//!
//! - `tasks/tools_call`: the read `get_order` through `McpServer`, answered in its request
//!   (the dispatcher's store on PostgreSQL, which a read does not touch);
//! - `tasks/tasks_get`: `tasks/get` of a completed task of that read, through the same
//!   server: one statement on PostgreSQL (`tests/tests/store_round_trips.rs` counts it on the
//!   wire), the stored result read back;
//! - `tasks/store_task`: the store's read of that task alone (`ControlStore::task`), no MCP.
//!
//! Needs `TOOL_CONTRACT_POSTGRES_URL`; without it the bench says so and measures nothing.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::orders::{Discard, GetOrder, get_order};
use criterion::{Criterion, criterion_group, criterion_main};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, GetTaskParams,
    Implementation, ProtocolVersion, TaskStatus,
};
use rmcp::service::RunningService;
use rmcp::{ClientHandler, ClientLifecycleMode, RoleClient};
use serde_json::{Value, json};
use tool_contract::control::{ControlStore, PostgresOptions, PostgresStore, RowSeal};
use tool_contract::dispatch::Dispatcher;
use tool_contract::mcp::{McpServer, TaskSupport};
use tool_contract::{AuditKeys, Principal, SecretKey};

const SCHEMA: &str = "tool_contract_bench_tasks";

/// A client that takes tasks.
#[derive(Clone)]
struct TakesTasks;

impl ClientHandler for TakesTasks {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_tasks().build(),
            Implementation::new("bench", "1.0.0"),
        )
    }
}

async fn connect(server: McpServer) -> RunningService<RoleClient, TakesTasks> {
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    common::mcp_pipe::served(server, TakesTasks, lifecycle).await
}

/// The bench dispatcher's keys: its task rows are sealed with a key derived from them.
fn keys() -> AuditKeys {
    AuditKeys::new(SecretKey::new([3; 32]).expect("32 bytes"))
}

fn request() -> CallToolRequestParams {
    let Value::Object(arguments) = json!({ "order_ref": "ORDER-7" }) else {
        unreachable!("an object literal")
    };
    CallToolRequestParams::new("get_order").with_arguments(arguments)
}

fn bench_tasks(c: &mut Criterion) {
    let Ok(url) = std::env::var("TOOL_CONTRACT_POSTGRES_URL") else {
        eprintln!("tasks bench: TOOL_CONTRACT_POSTGRES_URL is not set; nothing measured");
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    // Each run starts from an empty schema, migrated by this build.
    runtime.block_on(common::postgres::execute(
        &url,
        &format!("DROP SCHEMA IF EXISTS {SCHEMA} CASCADE"),
    ));
    let options = PostgresOptions::default().with_schema(SCHEMA);
    let store: Arc<dyn ControlStore> = Arc::new(
        runtime
            .block_on(PostgresStore::connect_with(&url, options))
            .expect("the bench database is reachable"),
    );
    let registry = tool_contract::registry![GetOrder]
        .into_builder()
        .all_adapters()
        .build();
    let dispatcher = Arc::new(
        Dispatcher::builder(registry, keys())
            .handler(get_order)
            .audit_sink(Arc::new(Discard))
            .store(store.clone())
            .build()
            .expect("every tool has a handler"),
    );
    let principal = Principal::new("acme", "bench");
    // Two servers of one dispatcher: calls answered in their request, and calls as tasks.
    let plain = McpServer::new(dispatcher.clone(), principal.clone());
    let tasks = McpServer::new(dispatcher.clone(), principal).with_tasks(|_| TaskSupport::Optional);
    let (plain, tasks) = runtime.block_on(async { (connect(plain).await, connect(tasks).await) });

    // One task, completed: what every poll reads.
    let task_id = runtime.block_on(async {
        let CallToolResponse::Task(created) = tasks.call_tool_once(request()).await.unwrap() else {
            panic!("a task");
        };
        let task_id = created.task.task_id;
        loop {
            let task = tasks.get_task(GetTaskParams::new(&task_id)).await.unwrap();
            if task.task.status() == TaskStatus::Completed {
                break task_id;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
    let owner = dispatcher
        .binder()
        .keys()
        .principal_ref(&Principal::new("acme", "bench"));
    let seal = RowSeal::new(&keys());

    let mut group = c.benchmark_group("tasks");
    group.bench_function("tools_call", |b| {
        b.iter(|| runtime.block_on(plain.call_tool(request())).unwrap());
    });
    group.bench_function("tasks_get", |b| {
        b.iter(|| {
            runtime
                .block_on(tasks.get_task(GetTaskParams::new(&task_id)))
                .unwrap()
        });
    });
    group.bench_function("store_task", |b| {
        b.iter(|| {
            runtime
                .block_on(store.task(&task_id, Some(&owner), 0, &seal))
                .unwrap()
                .expect("the task")
        });
    });
    group.finish();
}

criterion_group!(benches, bench_tasks);
criterion_main!(benches);
