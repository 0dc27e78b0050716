use tool_contract::dispatch::Dispatcher;
use tool_contract::ToolFailure;

#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Order {
    paid: bool,
}

/// Read one order.
#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Order, effect = read_only)]
struct GetOrder {
    order_ref: String,
}

// Returns neither the contract's output nor the raw bytes with their provenance.
async fn get_order(input: GetOrder) -> Result<String, ToolFailure> {
    Ok(input.order_ref)
}

fn main() {
    let _ = Dispatcher::for_development(tool_contract::registry![GetOrder]).handler(get_order);
}
