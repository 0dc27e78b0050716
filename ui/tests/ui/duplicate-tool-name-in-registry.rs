#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Done {
    ok: bool,
}

/// Ping one host.
#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Done, effect = pure, source_label = "ping", producer_revision = "1", name = "ping")]
struct PingHost {
    host: String,
}

/// Ping.
#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Done, effect = pure, source_label = "ping", producer_revision = "1")]
struct Ping {
    host: String,
}

fn main() {
    let _registry = tool_contract::registry![PingHost, Ping];
}
