//! Task rows as a store holds them, for the tests that write them without a server.

use tool_contract::control::{TaskRow, TaskStatus, new_task_id};

/// A task of `owner`'s, working under `worker`'s hold until `lease_until_ms`, kept for
/// `ttl_ms` (or until it ends, for `None`).
pub fn working_task(
    owner: &str,
    worker: &str,
    lease_until_ms: u64,
    ttl_ms: Option<u64>,
) -> TaskRow {
    TaskRow {
        task_id: new_task_id().expect("the system's randomness"),
        owner: owner.to_owned(),
        tool: "export_orders".to_owned(),
        status: TaskStatus::Working,
        status_message: None,
        created_at_ms: 1_000,
        updated_at_ms: 1_000,
        ttl_ms,
        poll_interval_ms: 500,
        began: false,
        call: None,
        worker: Some(worker.to_owned()),
        lease_until_ms,
        awaiting: None,
        outcome: None,
    }
}
