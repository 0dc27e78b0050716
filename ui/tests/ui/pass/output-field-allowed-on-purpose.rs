/// Usage figures, whose names only look like credentials.
#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Usage {
    tokens_used: u32,
    #[tool_output(allow_forbidden_key)]
    token_count: u32,
}

fn main() {
    assert!(tool_contract::vocabulary::ForbiddenKeys::DEFAULT.is_forbidden("token_count"));
}
