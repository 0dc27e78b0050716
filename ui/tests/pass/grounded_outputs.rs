// Grounding and synthetic-data detectors as a user writes them.
use tool_contract::evidence::GroundingSource;

#[derive(serde::Serialize, tool_contract::ToolOutput)]
#[tool_output(grounded)]
struct Schools {
    #[tool_output(max_items = 20)]
    names: Vec<String>,
    sources: Vec<tool_contract::evidence::GroundingSource>,
}

#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Advisor {
    name: String,
    #[tool_output(strip_synthetic(placeholder_email, placeholder_phone, with = looks_invented))]
    contact: Option<String>,
    #[tool_output(reject_synthetic(lorem_ipsum))]
    bio: String,
    sources: Vec<GroundingSource>,
}

#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Advisors {
    #[tool_output(grounded, max_items = 20)]
    advisors: Vec<Advisor>,
    #[tool_output(grounded)]
    lead: Option<Advisor>,
}

fn looks_invented(value: &str) -> bool {
    value.contains("N/A")
}

/// List schools.
#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Schools, effect = read_only, source_label = "register",
                producer_revision = "1", source_tier = authoritative_database)]
struct ListSchools {
    #[tool_contract(max_len = 100)]
    field: String,
}

/// Find advisors.
#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Advisors, effect = read_only, source_label = "staff pages",
                producer_revision = "1", source_tier = official)]
struct FindAdvisors {
    #[tool_contract(max_items = 20)]
    schools: Vec<String>,
}

#[test]
fn grounded_contracts_register() {
    let _ = tool_contract::registry![ListSchools, FindAdvisors];
}
