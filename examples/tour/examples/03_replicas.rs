//! Replicas: two dispatchers over one control store, as two processes behind one address
//! would be. A waiver asked on one is approved and run on the other, once; the model's retry
//! on the first replays it. On SQLite (one host), and on PostgreSQL (many hosts) when
//! `TOOL_CONTRACT_POSTGRES_URL` names a database.
//! Run it: `cargo run --example 03_replicas --features replicas`.

use std::sync::Arc;
use std::time::Duration;

use tool_contract::control::{ControlStore, PostgresStore, SqliteStore};
use tool_contract::prelude::*;
use tool_contract::results::Delivery;
use tool_contract_tour::library::{self, Library};

/// The model asks for the waiver of fine F-77 of `member` (each run its own member, so that
/// no earlier run's record answers).
fn waiver(member: &str) -> Result<Turn, Box<dyn std::error::Error>> {
    let arguments = serde_json::json!({ "member_id": member, "fine_id": "F-77" }).to_string();
    let body = serde_json::json!({ "id": "resp_1", "status": "completed", "output": [
        { "type": "function_call", "call_id": "call_1", "name": "waive_fine", "arguments": arguments }
    ]});
    Ok(OpenAiResponses.parse(body.to_string().as_bytes())?)
}

/// Asks on replica `a`, approves and runs on `b`, retries on `a`; what each step read.
async fn across(
    store: Arc<dyn ControlStore>,
    member: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let library = Library::with_one_book();
    let replica = || {
        library::handlers(Dispatcher::for_development(library::registry()), &library)
            .store(Arc::clone(&store))
            .build()
    };
    let (a, b) = (replica()?, replica()?);
    let who = Principal::new("city-library", format!("member:{member}"));
    let (turn, task) = (waiver(member)?, Task::unlimited());

    let asked = a.dispatch_turn(&who, &turn, &task).await;
    println!("  on a: {}", asked.answers()[0].result.model);
    // The librarian's queue, read on the other replica, holds every replica's waiting writes.
    let asked_for = &asked
        .pending_approvals()
        .next()
        .ok_or("nothing waits")?
        .approval_id;
    let queue = b.pending_approvals().await?;
    let pending = queue
        .iter()
        .find(|pending| pending.approval_id == *asked_for);
    let pending = pending.ok_or("not in the queue the other replica reads")?;
    b.approve_pending(pending, "librarian:ana", Duration::from_secs(600))
        .await?;
    let ran = b.dispatch_turn(&who, &turn, &task).await;
    println!("  on b: {}", ran.answers()[0].result.model);
    let retried = a.dispatch_turn(&who, &turn, &task).await;
    println!("  on a again: {}", retried.answers()[0].result.model);

    assert_eq!(library.done(), ["waived F-77"], "run once, on one replica");
    assert_eq!(
        retried.answers()[0].result.model.execution().delivery,
        Delivery::LocalReplay
    );
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let member = format!("M-{}", std::process::id() % 1_000_000);
    let file = std::env::temp_dir().join(format!("library-{}.sqlite", std::process::id()));
    println!("SQLite ({})", file.display());
    across(Arc::new(SqliteStore::open(&file)?), &member).await?;
    std::fs::remove_file(&file)?;

    match std::env::var("TOOL_CONTRACT_POSTGRES_URL") {
        Ok(url) => {
            println!("PostgreSQL");
            across(Arc::new(PostgresStore::connect(&url).await?), &member).await?;
        }
        Err(_) => println!("PostgreSQL: set TOOL_CONTRACT_POSTGRES_URL to run it there too"),
    }
    Ok(())
}
