#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Page {
    #[tool_output(minimum = 0)]
    title: String,
    #[tool_output(max_items = 3)]
    count: u32,
    #[tool_output(format = https_url)]
    visits: u64,
}

fn main() {}
