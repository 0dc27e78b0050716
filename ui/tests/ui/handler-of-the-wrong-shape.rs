use tool_contract::dispatch::{Dispatcher, HandlerContext};
use tool_contract::{AuditKeys, SecretKey, ToolFailure};

#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Order {
    paid: bool,
}

/// Read one order.
#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Order, effect = read_only, source_label = "orders", producer_revision = "1")]
struct GetOrder {
    order_ref: String,
}

// Returns the typed output where a handler returns the raw bytes with their provenance.
async fn get_order(_: GetOrder, _: HandlerContext) -> Result<Order, ToolFailure> {
    Ok(Order { paid: true })
}

fn main() {
    let keys = AuditKeys::new(SecretKey::from([7; 32]));
    let _ = Dispatcher::builder(tool_contract::registry![GetOrder], keys).handler::<GetOrder>(get_order);
}
