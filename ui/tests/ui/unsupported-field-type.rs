#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Stats {
    by_day: std::collections::HashMap<String, u64>,
    ratio: f32,
    count: usize,
}

fn main() {}
