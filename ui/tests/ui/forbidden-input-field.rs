#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Charged {
    charged: bool,
}

/// Charges a card.
#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Charged, effect = non_idempotent_write, approval = by_caller, operation = per_call, reconcile = manual, source_label = "payments", producer_revision = "1")]
struct ChargeCard {
    #[tool_contract(max_len = 19)]
    card_number: String,
    #[tool_contract(max_len = 4)]
    cvv: String,
    #[tool_contract(max_len = 64)]
    stripe_key: String,
}

fn main() {}
