#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Done {
    ok: bool,
}

/// Ping.
#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Done, effect = pur)]
struct Ping {
    host: String,
}

fn use_it(input: &Ping) -> Option<Done> {
    use tool_contract::ToolContract;
    input.validate_output(b"{}").ok()
}

fn main() {
    let _ = use_it;
}
