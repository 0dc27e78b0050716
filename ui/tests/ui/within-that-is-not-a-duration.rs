#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Paid {
    paid: bool,
}

/// Pays a member's allowance.
#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Paid, effect = idempotent_write, approval = by_another, operation = [member_id], within = "a month")]
struct PayAllowance {
    #[tool_contract(max_len = 8)]
    member_id: String,
}

fn main() {}
