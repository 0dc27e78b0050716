#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Client {
    name: String,
    #[serde(rename = "X-Api-Key")]
    key: String,
}

fn main() {}
