#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Done {
    ok: bool,
}

/// Ping.
#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Done, effect = pure, source_label = "ping", producer_revision = "1")]
#[tool_contract(effect = read_only)]
struct Ping {
    #[tool_contract(max_len = 8, max_len = 9)]
    host: String,
}

fn main() {}
