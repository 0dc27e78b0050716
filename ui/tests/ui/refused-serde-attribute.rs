#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Page {
    title: String,
    #[serde(flatten)]
    extra: Extra,
}

#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Extra {
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
}

fn main() {}
