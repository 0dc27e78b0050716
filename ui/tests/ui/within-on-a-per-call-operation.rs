#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Lent {
    lent: bool,
}

/// Lends a book.
#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Lent, effect = non_idempotent_write, approval = not_required, reconcile = manual, operation = per_call, within = "30d")]
struct LendBook {
    #[tool_contract(max_len = 13)]
    isbn: String,
}

fn main() {}
