#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Done {
    ok: bool,
}

/// Ping.
#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Done, effect = pure, source_label = "ping", producer_revision = "1")]
struct Ping {
    #[tool_contract(pattern = "^[a-z+$")]
    host: String,
}

fn main() {}
