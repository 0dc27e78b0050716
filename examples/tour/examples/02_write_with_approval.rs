//! Writes: one the model may repeat for real, one a librarian approves first. The contracts
//! say which calls are one operation (`src/library.rs`): each model call of `borrow_book` is
//! a loan of its own; `waive_fine` is one operation per member and fine, so the model's
//! retry after the approval runs it once, and a third ask replays the result.
//! Run it: `cargo run --example 02_write_with_approval`.

use std::time::Duration;

use tool_contract::prelude::*;
use tool_contract::results::Delivery;
use tool_contract_tour::library::{self, Library};

/// Two turns of the model's: it borrows and asks for the waiver; the book comes back; it
/// borrows again and, the waiver approved, asks again (both times in two call ids).
const TURNS: [&str; 2] = [
    r#"{"id":"resp_1","status":"completed","output":[
  {"type":"function_call","call_id":"call_1","name":"borrow_book","arguments":"{\"member_id\":\"M-1024\",\"isbn\":\"9780141439518\"}"},
  {"type":"function_call","call_id":"call_2","name":"waive_fine","arguments":"{\"member_id\":\"M-1024\",\"fine_id\":\"F-77\"}"}]}"#,
    r#"{"id":"resp_2","status":"completed","output":[
  {"type":"function_call","call_id":"call_3","name":"borrow_book","arguments":"{\"member_id\":\"M-1024\",\"isbn\":\"9780141439518\"}"},
  {"type":"function_call","call_id":"call_4","name":"waive_fine","arguments":"{\"member_id\":\"M-1024\",\"fine_id\":\"F-77\"}"}]}"#,
];

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let library = Library::with_one_book();
    let builder = Dispatcher::for_development(library::registry());
    let dispatcher = library::handlers(builder, &library).build()?;
    let member = Principal::new("city-library", "member:M-1024");
    let task = Task::unlimited();

    for (number, body) in TURNS.iter().enumerate() {
        println!("turn {}", number + 1);
        let turn = OpenAiResponses.parse(body.as_bytes())?;
        let dispatched = dispatcher.dispatch_turn(&member, &turn, &task).await;
        for (answer, _) in &dispatched {
            println!("  {}: {}", answer.context.call.name, answer.result.model);
        }
        for pending in dispatched.pending_approvals() {
            // The librarian reads the preview and approves exactly it, for ten minutes.
            println!("  the librarian approves:\n{}", pending.preview.to_text());
            let ten_minutes = Duration::from_secs(600);
            dispatcher
                .approve_pending(pending, "librarian:ana", ten_minutes)
                .await?;
        }
        let next = OpenAiResponses.write_results(
            &dispatcher.binder(),
            &member,
            &turn,
            dispatched.answers(),
        )?;
        println!("  next turn's input: {} bytes", next.to_string().len());
        library.give_back("9780141439518"); // between the turns, the book comes back
    }

    // The waiver asked a third time is the same operation: its result, replayed.
    let third = OpenAiResponses.parse(TURNS[1].as_bytes())?.calls[1].clone();
    let replayed = dispatcher
        .dispatch(&member, &dispatcher.context(third), &task)
        .await;
    println!("waive_fine again: {}", replayed.result.model);

    assert_eq!(
        library.done(),
        ["lent 9780141439518", "lent 9780141439518", "waived F-77"]
    );
    assert_eq!(
        replayed.result.model.execution().delivery,
        Delivery::LocalReplay
    );
    Ok(())
}
