#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Issue {
    number: u32,
}

/// Read an issue.
#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Issue, effect = read_only, source_label = "tracker", producer_revision = "1")]
struct GetIssue {
    number: u32,
}

/// Close an issue. The status tool named as a string is one error, at the string, and the
/// keys after it still count (no false "source_label is required").
#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Issue, effect = non_idempotent_write, operation = same_arguments, approval = by_caller, reconcile = "get_issue", source_label = "tracker", producer_revision = "1")]
struct CloseIssue {
    number: u32,
}

fn main() {}
