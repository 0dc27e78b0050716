// `grounded` on a type whose fields cannot hold sources, on an enum, and on a scalar field.
use tool_contract::evidence::GroundingSource;

#[derive(serde::Serialize, tool_contract::ToolOutput)]
#[tool_output(grounded)]
struct Advisor {
    name: String,
    email: Option<String>,
}

#[derive(serde::Serialize, tool_contract::ToolOutput)]
#[tool_output(grounded)]
enum Verdict {
    Yes,
    No,
}

#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Reading {
    #[tool_output(grounded)]
    celsius: f64,
    sources: Vec<GroundingSource>,
    more_sources: Vec<GroundingSource>,
}

fn main() {}
