#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct OrderView {
    #[tool_output(bound = order_id)]
    order_ref: String,
}

/// Read one order.
#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = OrderView, effect = read_only, source_label = "orders", producer_revision = "1")]
struct GetOrder {
    order_ref: String,
}

fn main() {}
