//! An approval resumes the call: the host holds the model's turn while a manager decides, then
//! runs the approved payout and hands the model its real result, with no second call of the
//! model's. The payout is once per report for good (`operation = [report_id]`), and only
//! someone other than the employee who asked may approve it (`approval = by_another`).
//! Run it: `cargo run --example 07_approval_resumes_the_turn`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tool_contract::control::ApprovalError;
use tool_contract::prelude::*;

/// Pay an expense report out to the employee who filed it; their manager approves it first.
/// One payout per report.
#[derive(serde::Deserialize, ToolContract)]
#[tool_contract(output = Payout, effect = idempotent_write, approval = by_another,
                operation = [report_id])]
struct PayOut {
    #[tool_contract(pattern = "^R-[0-9]{1,6}$")]
    report_id: String,
    #[tool_contract(minimum = 1, maximum = 1000000)]
    amount_cents: u32,
}

#[derive(serde::Serialize, ToolOutput)]
struct Payout {
    #[tool_output(bound = report_id)]
    report_id: String,
    #[tool_output(bound = amount_cents)]
    amount_cents: u32,
    #[tool_output(pattern = "^PAY-[0-9]+$")]
    transfer_ref: String,
}

async fn pay_out(paid: Arc<Mutex<Vec<String>>>, input: PayOut) -> Result<Payout, ToolFailure> {
    let mut paid = paid.lock().unwrap();
    paid.push(input.report_id.clone());
    Ok(Payout {
        transfer_ref: format!("PAY-{}", paid.len()),
        report_id: input.report_id,
        amount_cents: input.amount_cents,
    })
}

/// The model's turn: it asks to pay report R-7.
const TURN: &str = r#"{"id":"resp_1","status":"completed","output":[
  {"type":"function_call","call_id":"call_1","name":"pay_out","arguments":"{\"report_id\":\"R-7\",\"amount_cents\":4200}"}]}"#;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let paid = Arc::new(Mutex::new(Vec::new()));
    let desk = Dispatcher::for_development(registry![PayOut])
        .handler(typed(&paid, pay_out))
        .build()?;
    let employee = Principal::new("expenses", "E-1001");
    let task = Task::unlimited();
    let turn = OpenAiResponses.parse(TURN.as_bytes())?;

    // The turn waits for a person: the host holds it instead of answering the model.
    let held = desk.dispatch_turn(&employee, &turn, &task).await;
    assert!(held.is_waiting());
    let pending = held.pending_approvals().next().expect("the payout waits");
    println!("the manager is shown:\n{}", pending.preview.to_text());

    // The employee cannot approve their own payout, however the name is spelled.
    let own = desk
        .approve_pending(pending, "e-1001", Duration::from_secs(600))
        .await;
    assert!(matches!(own, Err(ApprovalError::CallerCannotApprove)));
    desk.approve_pending(pending, "manager:mia", Duration::from_secs(600))
        .await?;

    // Decided: the held calls run on their grant, and the model reads the real result.
    let decided = desk.resume_turn(&employee, held, &task).await;
    let next =
        OpenAiResponses.write_results(&desk.binder(), &employee, &turn, decided.answers())?;
    println!("the model's next input: {next}");
    assert_eq!(next[0]["call_id"], "call_1");
    let output: serde_json::Value = serde_json::from_str(next[0]["output"].as_str().unwrap())?;
    assert_eq!(output["status"], "succeeded");
    assert_eq!(output["data"]["transfer_ref"], "PAY-1");

    // The model asks again, in another turn: the same report, paid once.
    let again = desk
        .resume_turn(
            &employee,
            desk.dispatch_turn(&employee, &turn, &task).await,
            &task,
        )
        .await;
    assert_eq!(again.answers()[0].result.model.status(), Status::Succeeded);
    assert_eq!(*paid.lock().unwrap(), ["R-7"]);
    Ok(())
}
