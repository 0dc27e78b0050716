// Synthetic-data detectors: on strings only; `strip` needs somewhere to drop the value; a
// detector must exist; one declaration per field; an unknown source tier.
#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Contact {
    #[tool_output(strip_synthetic(placeholder_email))]
    email: String,
    #[tool_output(reject_synthetic(placeholder_phone))]
    extension: u32,
    #[tool_output(reject_synthetic(placeholder_emial))]
    backup: Option<String>,
    #[tool_output(reject_synthetic(lorem_ipsum), strip_synthetic(lorem_ipsum))]
    note: Option<String>,
    #[tool_output(strip_synthetic())]
    alias: Option<String>,
}

/// Look someone up.
#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Contact, effect = read_only, source_label = "people",
                producer_revision = "1", source_tier = goverment)]
struct FindContact {
    #[tool_contract(max_len = 100)]
    name: String,
}

fn main() {}
