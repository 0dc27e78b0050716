use time::OffsetDateTime;

/// Look up a product.
#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Product, effect = read_only, source_label = "catalog",
                producer_revision = "catalog-3", input_revision = "in-1", handler_revision = "h-2",
                policy_revision = "p-1", max_bytes = 4096, max_depth = 4)]
struct GetProduct {
    /// The stock-keeping unit.
    #[tool_contract(min_len = 3, max_len = 16)]
    sku: String,
    /// Whether to include archived products.
    include_archived: bool,
    /// Tags to filter on.
    #[tool_contract(max_items = 5, max_len = 20)]
    tags: Vec<String>,
    /// An optional price ceiling.
    #[tool_contract(minimum = 0, maximum = 100000.5)]
    max_price: Option<f64>,
    /// Result page.
    #[tool_contract(minimum = 1)]
    page: u16,
}

#[derive(serde::Serialize, tool_contract::ToolOutput)]
#[tool_output(max_bytes = 65536, max_depth = 6)]
#[serde(rename_all = "camelCase")]
struct Product {
    #[tool_output(bound = sku)]
    sku: String,
    display_name: String,
    #[tool_output(minimum = -40, maximum = 60)]
    storage_temp_c: i8,
    stock: u32,
    balance: i64,
    weight_kg: f64,
    in_stock: bool,
    #[tool_output(format = https_url)]
    page_url: String,
    #[tool_output(format = rfc3339_utc)]
    updated: String,
    #[serde(with = "time::serde::rfc3339")]
    observed_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    discontinued_at: Option<OffsetDateTime>,
    note: Option<String>,
    #[tool_output(max_items = 10)]
    variants: Vec<Variant>,
    availability: Availability,
    #[tool_output(free_form(max_depth = 3, max_bytes = 2048))]
    attributes: serde_json::Value,
    #[serde(rename = "type")]
    r#kind: String,
}

#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Variant {
    #[tool_output(pattern = "^[A-Z]{2}$")]
    size: String,
    price_cents: u64,
}

#[derive(serde::Serialize, tool_contract::ToolOutput)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
enum Availability {
    InStock,
    Backorder,
    #[serde(rename = "gone")]
    Discontinued,
}

// The spec is built (schemas, revisions) and an output holding dates reads back typed.
#[test]
fn every_field_type_has_its_schema_and_reads_back() {
    use tool_contract::ToolContract;
    let spec = GetProduct::spec();
    let properties = &spec.output_schema()["properties"];
    assert_eq!(properties["observedAt"]["format"], "date-time");
    assert_eq!(spec.revisions().handler.as_deref(), Some("h-2"));
    let call = GetProduct {
        sku: "SKU-1".into(),
        include_archived: false,
        tags: Vec::new(),
        max_price: None,
        page: 1,
    };
    let output = call
        .validate_output(
            br#"{"sku":"SKU-1","displayName":"Mug","storageTempC":20,"stock":3,"balance":-2,
                "weightKg":0.4,"inStock":true,"pageUrl":"https://shop.example/mug",
                "updated":"2026-08-22T10:00:00Z","observedAt":"2026-08-22T12:00:00+02:00",
                "discontinuedAt":null,"note":null,"variants":[{"size":"XL","price_cents":900}],
                "availability":"gone","attributes":{"colour":"blue"},"type":"mug"}"#,
        )
        .unwrap();
    assert_eq!(output.observed_at.unix_timestamp(), 1_787_392_800);
    assert!(matches!(output.availability, Availability::Discontinued));
}
