/// Ping.
#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(effect = pure, source_label = "ping", producer_revision = "1")]
struct Ping {
    host: String,
}

fn main() {}
