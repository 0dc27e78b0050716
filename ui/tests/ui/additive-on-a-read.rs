#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Done {
    ok: bool,
}

/// Ping.
#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Done, effect = read_only, additive, source_label = "ping",
                producer_revision = "1")]
struct Ping {
    host: String,
}

/// Post a note.
#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Done, effect = idempotent_write, approval = not_required, operation = per_call,
                additive = true, source_label = "notes", producer_revision = "1")]
struct PostNote {
    text: String,
}

fn main() {}
