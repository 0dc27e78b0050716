#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Card {
    holder: String,
    card_number: String,
    pin: String,
    otp_code: String,
}

fn main() {}
