// A `GroundingSource` of the user's own is not the crate's: it carries no checked evidence.
#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct GroundingSource {
    text: String,
}

#[derive(serde::Serialize, tool_contract::ToolOutput)]
#[tool_output(grounded)]
struct Advisor {
    name: String,
    sources: Vec<GroundingSource>,
}

fn main() {}
