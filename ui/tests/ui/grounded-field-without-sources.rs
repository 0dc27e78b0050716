// `grounded` on a field whose type is a struct with no `Vec<GroundingSource>` field.
#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Advisor {
    name: String,
}

#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Advisors {
    #[tool_output(grounded)]
    advisors: Vec<Advisor>,
}

fn main() {}
