//! What the shared store grows by on PostgreSQL, per thing it keeps: a task's row (a read
//! answered as a task, its call and result kept) and an audit record (a read's, with its
//! stream's head and tree heads), each the table, its TOAST and its indexes
//! (`pg_total_relation_size`) over `MEASURED` of them after as many others.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, GetTaskParams, TaskStatus};
use serde_json::json;
use tool_contract::control::PostgresAuditLog;
use tool_contract_tests::postgres::Schema;
use tool_contract_tests::task_client::{replica, started};
use tool_contract_tests::tracker::{Remote, audit_key, dispatch_reads};

const MEASURED: usize = 400;

/// The bytes of `table` in `schema`, with its TOAST and indexes.
fn table_bytes(schema: &Schema, table: &str) -> i64 {
    schema.query_i64(&format!(
        "SELECT pg_total_relation_size('{}.{table}')",
        schema.name
    ))
}

fn per_one(grown: i64) -> i64 {
    grown / i64::try_from(MEASURED).expect("a small count")
}

#[tokio::test]
async fn a_task_row_costs_about_two_kilobytes_on_postgres() {
    let Some(schema) = Schema::new("task_row_bytes") else {
        return;
    };
    let remote = Remote::new();
    let client = replica(&remote, Arc::new(schema.store().await)).await;
    let read = |index: usize| {
        let serde_json::Value::Object(arguments) = json!({ "doc_id": format!("d{index}") }) else {
            unreachable!("an object")
        };
        CallToolRequestParams::new("read_doc").with_arguments(arguments)
    };
    let mut measured = 0;
    let mut before = 0;
    for round in 0..2 {
        let mut tasks = Vec::with_capacity(MEASURED);
        for index in 0..MEASURED {
            tasks.push(started(client.peer(), read(round * MEASURED + index)).await);
        }
        for task_id in &tasks {
            let began = Instant::now();
            loop {
                let task = client.get_task(GetTaskParams::new(task_id)).await.unwrap();
                if task.task.status() == TaskStatus::Completed {
                    break;
                }
                assert!(
                    began.elapsed() < Duration::from_secs(10),
                    "{task_id} never ended"
                );
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        if round == 0 {
            before = table_bytes(&schema, "tool_contract_tasks");
        } else {
            measured = per_one(table_bytes(&schema, "tool_contract_tasks") - before);
        }
    }
    eprintln!("a completed read's task row on PostgreSQL: {measured} bytes");
    assert!((500..4096).contains(&measured), "{measured} bytes");
}

#[tokio::test]
async fn an_audit_record_costs_about_two_kilobytes_on_postgres() {
    let Some(schema) = Schema::new("audit_record_bytes") else {
        return;
    };
    let store = schema.store().await;
    let sink = Arc::new(PostgresAuditLog::new(&store, audit_key()));
    dispatch_reads(sink.clone(), MEASURED).await;
    let bytes = || {
        table_bytes(&schema, "tool_contract_audit")
            + table_bytes(&schema, "tool_contract_audit_heads")
            + table_bytes(&schema, "tool_contract_audit_tree_heads")
            + table_bytes(&schema, "tool_contract_audit_counts")
    };
    let before = bytes();
    dispatch_reads(sink, MEASURED).await;
    let measured = per_one(bytes() - before);
    eprintln!("a read's audit record on PostgreSQL: {measured} bytes");
    assert!((500..8192).contains(&measured), "{measured} bytes");
}
