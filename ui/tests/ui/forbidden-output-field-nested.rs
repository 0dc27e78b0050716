#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Account {
    id: String,
    login: Credentials,
}

#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Credentials {
    user: String,
    password: String,
}

fn main() {}
