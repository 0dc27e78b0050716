use tool_contract::{ToolContract, ToolOutput};

/// Read one order by its reference.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = OrderView, effect = read_only, source_label = "orders", producer_revision = "orders-v2")]
pub struct GetOrder {
    /// The order reference, e.g. ORDER-7.
    #[tool_contract(pattern = "^ORDER-[0-9]{1,12}$", max_len = 32)]
    pub order_ref: String,
}

#[derive(Debug, serde::Serialize, ToolOutput)]
pub struct OrderView {
    #[tool_output(bound = order_ref)]
    pub order_ref: String,
    pub status: OrderStatus,
}

#[derive(Debug, serde::Serialize, ToolOutput)]
#[serde(rename_all = "snake_case")]
pub enum OrderStatus { Paid, Pending, Refunded }

#[test]
fn scratch() {
    let input = GetOrder::parse_arguments(br#"{"order_ref":"ORDER-7"}"#).unwrap();
    println!("{}", serde_json::to_string_pretty(GetOrder::spec().input_schema()).unwrap());
    println!("{}", serde_json::to_string_pretty(GetOrder::spec().output_schema()).unwrap());
    println!("{:?}", GetOrder::spec().revisions());
    let out = input.validate_output(br#"{"order_ref":"ORDER-7","status":"paid"}"#).unwrap();
    println!("{out:?}");
    let err = input.validate_output(br#"{"order_ref":"ORDER-8","status":"lost","x":1,"password":2, "status": "paid"}"#).unwrap_err();
    println!("{err}");
    let err = GetOrder::parse_arguments(br#"{"order_ref":"ORD"}"#).unwrap_err();
    println!("{err}");
}
