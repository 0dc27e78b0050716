#[derive(serde::Serialize, tool_contract::ToolOutput)]
#[serde(rename_all = "snake_case")]
enum Status {
    Paid,
    #[serde(other)]
    Unknown,
}

fn main() {}
