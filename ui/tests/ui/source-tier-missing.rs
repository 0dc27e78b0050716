// A contract whose output carries sources must declare how far they are trusted.
use tool_contract::evidence::GroundingSource;

#[derive(serde::Serialize, tool_contract::ToolOutput)]
#[tool_output(grounded)]
struct Page {
    sources: Vec<GroundingSource>,
}

/// Read a page.
#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Page, effect = read_only, source_label = "pages", producer_revision = "1")]
struct ReadPage {
    #[tool_contract(max_len = 100)]
    url: String,
}

fn main() {}
