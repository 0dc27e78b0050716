#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Done {
    ok: bool,
}

/// Refund an order.
#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Done, effect = non_idempotent_write, operation = same_arguments, approval = by_caller, reconcile = Done, source_label = "refunds", producer_revision = "1")]
struct Refund {
    order_ref: String,
}

fn main() {}
