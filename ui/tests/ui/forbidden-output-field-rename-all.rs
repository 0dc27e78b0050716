#[derive(serde::Serialize, tool_contract::ToolOutput)]
#[serde(rename_all = "camelCase")]
struct Step {
    name: String,
    operation_id: String,
}

fn main() {}
