#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Seen {
    observed_at: time::OffsetDateTime,
}

fn main() {}
