#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Done {
    ok: bool,
}

/// Ping.
#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Done, effect = read_only, approval = by_caller, source_label = "ping", producer_revision = "1")]
struct Ping {
    host: String,
}

fn main() {}
