#[derive(serde::Serialize)]
struct Plain {
    x: u8,
}

#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Stats {
    plain: Plain,
}

fn main() {}
