// Two contracts that do not compile, in one registry: each says its own mistake, and the
// registry adds no error of its own (their stubs' empty names are not "shared").
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

/// Pong.
#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Done, effect = pure, source_label = "pong", producer_revision = "1")]
struct Pong {
    #[tool_contract(pattern = "(unclosed")]
    host: String,
}

fn main() {
    let _ = tool_contract::registry![Ping, Pong];
}
