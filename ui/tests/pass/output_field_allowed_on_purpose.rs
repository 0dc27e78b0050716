/// Usage figures, whose names only look like credentials.
#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Usage {
    tokens_used: u32,
    #[tool_output(allow_forbidden_key)]
    token_count: u32,
}

#[test]
fn a_field_allowed_on_purpose_compiles_though_its_name_is_forbidden() {
    assert!(tool_contract::vocabulary::ForbiddenKeys::DEFAULT.is_forbidden("token_count"));
}
