#[derive(serde::Serialize, tool_contract::ToolOutput)]
enum Status {
    Paid { amount: u64 },
    Pending,
}

fn main() {}
