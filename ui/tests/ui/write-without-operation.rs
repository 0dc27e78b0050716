#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Loan {
    on_loan: bool,
}

/// Lend a book to a member.
#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Loan, effect = non_idempotent_write, approval = not_required,
                reconcile = manual)]
struct BorrowBook {
    member_id: String,
    isbn: String,
}

fn main() {}
