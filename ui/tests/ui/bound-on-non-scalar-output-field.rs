#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct OrderView {
    #[tool_output(bound = order_refs)]
    order_refs: Vec<String>,
}

fn main() {}
