#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Line {
    // A nested output's `bound` is checked against the input of every contract that holds it,
    // and reported here, at the `bound` itself.
    #[tool_output(bound = sku)]
    item_ref: String,
}

#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct OrderView {
    #[tool_output(bound = order_ref)]
    order_ref: String,
    #[tool_output(max_items = 10)]
    lines: Vec<Line>,
}

/// Read one order.
#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = OrderView, effect = read_only, source_label = "orders", producer_revision = "1")]
struct GetOrder {
    order_ref: String,
}

fn main() {}
