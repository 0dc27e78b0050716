#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Done {
    ok: bool,
}

#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Done, effect = non_idempotent_write, name = "9lives")]
struct Ping {
    #[tool_contract(max_len = 8)]
    count: u32,
    #[serde(default)]
    note: Option<String>,
}

fn main() {}
