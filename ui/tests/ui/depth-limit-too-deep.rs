#[derive(serde::Serialize, tool_contract::ToolOutput)]
#[tool_output(max_depth = 100000)]
struct Event {
    kind: String,
    #[tool_output(free_form(max_depth = 5000, max_bytes = 4096))]
    payload: serde_json::Value,
}

fn main() {}
