/// Read one order by its reference.
#[derive(Debug, serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = OrderView, effect = read_only,
                source_label = "orders", producer_revision = "orders-v2")]
pub struct GetOrder {
    /// The order reference, e.g. ORDER-7.
    #[tool_contract(pattern = "^ORDER-[0-9]{1,12}$", max_len = 32)]
    pub order_ref: String,
}

#[derive(Debug, serde::Serialize, tool_contract::ToolOutput)]
pub struct OrderView {
    #[tool_output(bound = order_ref)]
    pub order_ref: String,
    pub status: OrderStatus,
}

#[derive(Debug, serde::Serialize, tool_contract::ToolOutput)]
#[serde(rename_all = "snake_case")]
pub enum OrderStatus {
    Paid,
    Pending,
    Refunded,
}

// The spec is built, and an output is read against its call.
#[test]
fn the_readme_contract_validates_its_output() {
    use tool_contract::ToolContract;
    let spec = GetOrder::spec();
    assert_eq!(spec.name(), "get_order");
    assert_eq!(
        spec.output_schema()["properties"]["status"]["enum"][0],
        "paid"
    );
    let call = GetOrder {
        order_ref: "ORDER-7".into(),
    };
    let view = call
        .validate_output(br#"{"order_ref":"ORDER-7","status":"refunded"}"#)
        .unwrap();
    assert!(matches!(view.status, OrderStatus::Refunded));
    assert!(
        call.validate_output(br#"{"order_ref":"ORDER-8","status":"paid"}"#)
            .is_err()
    );
}
