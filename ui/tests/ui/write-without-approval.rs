#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Done {
    ok: bool,
}

/// Tag an order.
#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Done, effect = idempotent_write, operation = same_arguments, source_label = "orders", producer_revision = "1")]
struct TagOrder {
    order_ref: String,
}

fn main() {}
