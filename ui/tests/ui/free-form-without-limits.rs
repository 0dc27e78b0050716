#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Event {
    kind: String,
    payload: serde_json::Value,
}

fn main() {}
