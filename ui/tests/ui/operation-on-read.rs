#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Loan {
    on_loan: bool,
}

/// Whether a book is on loan.
#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Loan, effect = read_only, operation = per_call)]
struct FindLoan {
    isbn: String,
}

fn main() {}
