#[derive(serde::Serialize)]
struct Done {
    ok: bool,
}

/// Ping.
#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Done, effect = pure, source_label = "ping", producer_revision = "1")]
struct Ping {
    host: String,
}

fn main() {}
