//! What the dispatch pipeline costs per call, beside the same handler and projection called
//! directly, in the same run.
//!
//! - `read/direct`: parse the arguments, run the handler, `Binder::project_output`;
//! - `read/dispatch`: the same call through `Dispatcher::dispatch` (lookup, validation, a gate,
//!   authorization, budget, timeout, projection, audit sink);
//! - `write/dispatch_memory`: a non-idempotent write under a fresh key, with the in-memory
//!   ledger (claim, outcome record);
//! - `write/dispatch_sqlite` (feature `sqlite`): the same with the SQLite ledger on a file,
//!   each step a synced transaction.

mod common;

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use common::orders::Discard;
use criterion::{Criterion, criterion_group, criterion_main};
use tool_contract::control::{ControlStore, MemoryStore};
use tool_contract::dispatch::{
    Dispatcher, GateCall, GateDecision, HandlerContext, Task, ToolOptions,
};
use tool_contract::{
    AuditKeys, Binder, CallContext, Principal, RawProvenance, RawResult, Registry, SecretKey,
    ToolContract, ToolFailure, ToolOutput,
};

/// Read one order.
#[derive(serde::Deserialize, ToolContract)]
#[tool_contract(output = Order, effect = read_only, source_label = "orders", producer_revision = "o-1")]
struct GetOrder {
    #[tool_contract(max_len = 32)]
    order_ref: String,
}

/// Note something on an order.
#[derive(serde::Deserialize, ToolContract)]
#[tool_contract(output = Order, effect = non_idempotent_write, operation = same_arguments, approval = not_required,
                reconcile = GetOrder, source_label = "orders", producer_revision = "o-1")]
struct NoteOrder {
    #[tool_contract(max_len = 32)]
    order_ref: String,
}

#[derive(serde::Serialize, ToolOutput)]
struct Order {
    #[tool_output(max_len = 32)]
    order_ref: String,
    #[tool_output(maximum = 1000000)]
    total_cents: u32,
}

async fn get_order(input: GetOrder, _: HandlerContext) -> Result<RawResult, ToolFailure> {
    Ok(order(&input.order_ref))
}

async fn note_order(input: NoteOrder, _: HandlerContext) -> Result<RawResult, ToolFailure> {
    Ok(order(&input.order_ref))
}

fn find_note(note: &NoteOrder) -> GetOrder {
    GetOrder {
        order_ref: note.order_ref.clone(),
    }
}

fn order(order_ref: &str) -> RawResult {
    let output = format!(r#"{{"order_ref":"{order_ref}","total_cents":4200}}"#);
    RawResult::new(output, RawProvenance::new("o-1", "2026-11-29T10:00:00Z"))
}

fn registry() -> Registry {
    tool_contract::registry![GetOrder, NoteOrder]
}

fn keys() -> AuditKeys {
    AuditKeys::new(SecretKey::new([3; 32]).expect("32 bytes"))
}

fn dispatcher(ledger: Arc<dyn ControlStore>) -> Dispatcher {
    Dispatcher::builder(registry(), keys())
        .handler(get_order)
        .write_handler(note_order, find_note, ToolOptions::DEFAULT)
        .gate(|_: &GateCall<'_>| GateDecision::Proceed)
        .store(ledger)
        .audit_sink(Arc::new(Discard))
        .build()
        .expect("every tool has a handler")
}

fn context(name: &str, key: String) -> CallContext {
    common::orders::call(name).with_idempotency_key(key)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime")
}

fn bench_read(c: &mut Criterion) {
    let runtime = runtime();
    let principal = Principal::new("acme", "alice");
    let task = Task::unlimited();
    let read = context("get_order", "k".to_owned());
    let registry = registry();
    let binder = Binder::new(&registry, keys());
    let dispatcher = dispatcher(Arc::new(MemoryStore::new()));

    let mut group = c.benchmark_group("read");
    group.bench_function("direct", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let input = GetOrder::parse_arguments(&read.call.arguments).expect("valid");
                let bound = GetOrder::parse_arguments(&read.call.arguments).expect("valid");
                let raw = get_order(input, HandlerContext::detached("op-1", "k"))
                    .await
                    .expect("output");
                black_box(binder.project_output(&principal, &read, &bound, raw))
            })
        });
    });
    group.bench_function("dispatch", |b| {
        b.iter(|| {
            runtime
                .block_on(async { black_box(dispatcher.dispatch(&principal, &read, &task).await) })
        });
    });
    group.finish();
}

fn bench_write(c: &mut Criterion) {
    let runtime = runtime();
    let principal = Principal::new("acme", "alice");
    let task = Task::unlimited();
    let counter = AtomicU64::new(0);
    let fresh = || {
        context(
            "note_order",
            format!("k-{}", counter.fetch_add(1, Ordering::Relaxed)),
        )
    };

    let mut group = c.benchmark_group("write");
    let memory = dispatcher(Arc::new(MemoryStore::new()));
    group.bench_function("dispatch_memory", |b| {
        b.iter(|| {
            runtime
                .block_on(async { black_box(memory.dispatch(&principal, &fresh(), &task).await) })
        });
    });
    #[cfg(feature = "sqlite")]
    {
        let path =
            std::env::temp_dir().join(format!("tool-contract-bench-{}.sqlite", std::process::id()));
        let ledger = tool_contract::control::SqliteStore::open(&path).expect("a ledger file");
        let sqlite = dispatcher(Arc::new(ledger));
        group.bench_function("dispatch_sqlite", |b| {
            b.iter(|| {
                runtime.block_on(async {
                    black_box(sqlite.dispatch(&principal, &fresh(), &task).await)
                })
            });
        });
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }
    group.finish();
}

criterion_group!(benches, bench_read, bench_write);
criterion_main!(benches);
