#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Summary {
    #[tool_output(max_len = 2000)]
    text: String,
}

/// Summarises a text within a budget of tokens, a name that only looks like a credential.
#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Summary, effect = pure)]
struct Summarise {
    #[tool_contract(max_len = 20000)]
    text: String,
    #[tool_contract(allow_forbidden_key, maximum = 4096)]
    token_budget: u32,
}

#[test]
fn an_input_field_allowed_on_purpose_compiles_though_its_name_is_forbidden() {
    use tool_contract::ToolContract as _;
    assert!(tool_contract::vocabulary::ForbiddenKeys::DEFAULT.is_forbidden("token_budget"));
    let input = Summarise::parse_arguments(br#"{"text":"hello","token_budget":64}"#).unwrap();
    assert_eq!(input.token_budget, 64);
}
