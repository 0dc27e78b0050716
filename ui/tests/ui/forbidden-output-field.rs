#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Session {
    user: String,
    access_token: String,
}

fn main() {}
