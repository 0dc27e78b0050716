#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Paid {
    paid: bool,
}

/// Pays an expense report out.
#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Paid, effect = idempotent_write, approval = required, operation = [report_id], source_label = "expenses", producer_revision = "1")]
struct PayOut {
    #[tool_contract(max_len = 16)]
    report_id: String,
}

fn main() {}
