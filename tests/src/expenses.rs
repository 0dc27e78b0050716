//! An expense desk: a payout a manager approves, once per report. The fixture of the tests
//! that hold the contract's words ("once", "approved by another") at every door.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tool_contract::control::{ControlStore, MemoryAuditLog, PendingApproval};
use tool_contract::dispatch::{Dispatch, Dispatcher, DispatcherBuilder, Task};
use tool_contract::{CallContext, Principal, ToolContract, ToolFailure, ToolOutput};

use crate::tracker::{audit_key, clock, keys};

/// Pay an expense report out to the employee who filed it; a manager approves it first.
/// One payout per report.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Payout, effect = idempotent_write, approval = by_another,
                operation = [report_id], source_label = "payroll",
                producer_revision = "payroll-v1")]
pub struct PayOut {
    /// The expense report.
    #[tool_contract(pattern = "^R-[0-9]{1,6}$")]
    pub report_id: String,
    /// The amount, in cents.
    #[tool_contract(minimum = 1, maximum = 10000000)]
    pub amount_cents: u32,
}

/// A payout made.
#[derive(Debug, PartialEq, serde::Serialize, ToolOutput)]
pub struct Payout {
    /// The report paid.
    #[tool_output(bound = report_id)]
    pub report_id: String,
    /// The amount paid, in cents.
    #[tool_output(bound = amount_cents)]
    pub amount_cents: u32,
}

/// The payroll system: every payout it made, in order.
#[derive(Debug, Default)]
pub struct Payroll {
    made: Mutex<Vec<(String, u32)>>,
}

impl Payroll {
    /// How many payouts `report_id` got.
    pub fn payouts(&self, report_id: &str) -> usize {
        self.made
            .lock()
            .unwrap()
            .iter()
            .filter(|(report, _)| report == report_id)
            .count()
    }

    /// Every payout, in order.
    pub fn all(&self) -> Vec<(String, u32)> {
        self.made.lock().unwrap().clone()
    }
}

/// The employee who files reports and asks the assistant to pay them.
pub fn employee() -> Principal {
    Principal::new("expenses", "E-1001")
}

/// The desk's dispatcher over `store`, before `build`, and its payroll.
pub fn desk_builder(store: Arc<dyn ControlStore>) -> (DispatcherBuilder, Arc<Payroll>) {
    let payroll = Arc::new(Payroll::default());
    let paying = Arc::clone(&payroll);
    let builder = Dispatcher::builder(tool_contract::registry![PayOut], keys())
        .clock(clock)
        .store(store)
        .audit_sink(Arc::new(MemoryAuditLog::new(audit_key())))
        .handler(move |input: PayOut| {
            let payroll = Arc::clone(&paying);
            async move {
                let made = (input.report_id.clone(), input.amount_cents);
                payroll.made.lock().unwrap().push(made);
                Ok::<_, ToolFailure>(Payout {
                    report_id: input.report_id,
                    amount_cents: input.amount_cents,
                })
            }
        });
    (builder, payroll)
}

/// The desk's dispatcher over `store`, and its payroll.
pub fn desk(store: Arc<dyn ControlStore>) -> (Dispatcher, Arc<Payroll>) {
    let (builder, payroll) = desk_builder(store);
    (builder.build().expect("the desk builds"), payroll)
}

/// The model's call `call_id` to pay `report_id` `amount_cents`, named by the contract's rule.
pub fn pay(
    dispatcher: &Dispatcher,
    call_id: &str,
    report_id: &str,
    amount_cents: u32,
) -> CallContext {
    let arguments = serde_json::json!({ "report_id": report_id, "amount_cents": amount_cents });
    dispatcher.context(crate::kb::call(call_id, "pay_out", &arguments.to_string()))
}

/// Dispatches `call` as the employee.
pub async fn run(dispatcher: &Dispatcher, call: &CallContext) -> Dispatch {
    dispatcher
        .dispatch(&employee(), call, &Task::unlimited())
        .await
}

/// The approval `call` waits for.
///
/// # Panics
///
/// When it does not wait.
pub async fn waiting(dispatcher: &Dispatcher, call: &CallContext) -> PendingApproval {
    run(dispatcher, call)
        .await
        .pending_approval
        .expect("the payout waits for approval")
}

/// An hour, the approvals' lifetime in these tests.
pub const HOUR: Duration = Duration::from_secs(3600);

/// The one approval `desk` waits on, which nobody has approved yet, approved by manager Mia:
/// someone other than the employee who asked.
///
/// # Panics
///
/// When nothing waits, someone approved it already, or the approval is refused.
pub async fn a_manager_approves_what_waits(desk: &Dispatcher) {
    let pending = desk
        .pending_approvals()
        .await
        .unwrap()
        .pop()
        .expect("waits");
    assert!(pending.approvals.is_empty(), "{:?}", pending.approvals);
    desk.approve_pending(&pending, "manager:mia", HOUR)
        .await
        .expect("another person approves");
}
