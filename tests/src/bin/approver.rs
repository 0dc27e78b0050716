//! One supervisor's replica, in a process of its own, for the four-eyes test on PostgreSQL
//! (`tests/tests/four_eyes.rs`): approves one pending approval in the shared store and says
//! what it came to.
//!
//! `approver URL SCHEMA APPROVAL_ID PREVIEW_SHA256 APPROVER` prints `granted` or
//! `awaiting N` (N more approvers needed), or the refusal, and exits non-zero on one.

use std::sync::Arc;
use std::time::Duration;

use tool_contract::control::Approved;
use tool_contract::control::{PostgresOptions, PostgresStore};
use tool_contract_tests::tracker::{Remote, builder, clock};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let [url, schema, approval_id, preview_sha256, approver] = arguments.as_slice() else {
        eprintln!("usage: approver URL SCHEMA APPROVAL_ID PREVIEW_SHA256 APPROVER");
        std::process::exit(2);
    };
    let options = PostgresOptions::default().with_schema(schema.clone());
    let store = PostgresStore::connect_with(url, options)
        .await
        .unwrap_or_else(|error| {
            eprintln!("the store did not open: {error}");
            std::process::exit(1);
        });
    let dispatcher = builder(&Remote::new())
        .store(Arc::new(store))
        .build()
        .expect("every tool has its handler");
    let expires_at = clock() + Duration::from_secs(3600);
    match dispatcher
        .approve(approval_id, preview_sha256, approver, expires_at)
        .await
    {
        Ok(Approved::Granted(_)) => println!("granted"),
        Ok(Approved::Awaiting(pending)) => {
            println!("awaiting {}", pending.approvals_still_needed());
        }
        Err(error) => {
            println!("refused: {error}");
            std::process::exit(1);
        }
    }
}
