//! What the benches share: the contracts they read, the plain serde structs their baselines
//! read the same documents into, and the documents.
//!
//! Each bench target compiles this module on its own and uses part of it.
#![allow(dead_code)]

#[cfg(feature = "mcp-http")]
pub mod http_client;
#[cfg(feature = "postgres")]
pub mod ledger_writes;
#[cfg(feature = "mcp")]
pub mod mcp_pipe;
pub mod orders;
#[cfg(feature = "postgres")]
pub mod pgbench;
#[cfg(feature = "postgres")]
pub mod postgres;

use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;
use tool_contract::providers::{Api, Correlation, ToolCall};
use tool_contract::{
    AuditKeys, Binder, CallContext, CallResult, Principal, RawProvenance, RawResult, Registry,
    SecretKey, ToolContract, ToolOutput,
};

/// Read one shipment.
#[derive(serde::Deserialize, ToolContract)]
#[tool_contract(output = Shipment, effect = read_only, source_label = "shipping",
                producer_revision = "bench")]
pub struct GetShipment {
    pub shipment_ref: String,
}

#[derive(serde::Serialize, ToolOutput)]
pub struct Shipment {
    #[tool_output(bound = shipment_ref)]
    pub shipment_ref: String,
    #[tool_output(max_len = 40)]
    pub carrier: String,
    pub status: ShipmentStatus,
    #[tool_output(format = rfc3339_utc)]
    pub created_at: String,
    pub weight_grams: u32,
    pub declared_value_cents: u64,
    pub insured: bool,
    #[tool_output(pattern = "^[A-Z]{2}$")]
    pub destination_country: String,
    #[tool_output(format = https_url)]
    pub tracking_url: String,
    #[tool_output(max_len = 200)]
    pub notes: Option<String>,
    #[tool_output(max_items = 10)]
    pub parcels: Vec<Parcel>,
}

#[derive(serde::Serialize, ToolOutput)]
pub struct Parcel {
    #[tool_output(max_len = 32)]
    pub parcel_ref: String,
    pub weight_grams: u32,
    pub length_cm: u16,
    pub width_cm: u16,
    pub height_cm: u16,
    #[tool_output(max_len = 80)]
    pub contents: String,
}

#[derive(serde::Serialize, ToolOutput)]
#[serde(rename_all = "snake_case")]
pub enum ShipmentStatus {
    LabelCreated,
    InTransit,
    Delivered,
}

/// `Shipment`, borrowed from the document it is read from.
#[derive(serde::Serialize, ToolOutput)]
pub struct ShipmentView<'a> {
    #[tool_output(bound = shipment_ref)]
    pub shipment_ref: &'a str,
    #[tool_output(max_len = 40)]
    pub carrier: &'a str,
    pub status: ShipmentStatus,
    #[tool_output(format = rfc3339_utc)]
    pub created_at: &'a str,
    pub weight_grams: u32,
    pub declared_value_cents: u64,
    pub insured: bool,
    #[tool_output(pattern = "^[A-Z]{2}$")]
    pub destination_country: &'a str,
    #[tool_output(format = https_url)]
    pub tracking_url: &'a str,
    #[tool_output(max_len = 200)]
    pub notes: Option<&'a str>,
    #[tool_output(max_items = 10)]
    pub parcels: Vec<ParcelView<'a>>,
}

#[derive(serde::Serialize, ToolOutput)]
pub struct ParcelView<'a> {
    #[tool_output(max_len = 32)]
    pub parcel_ref: &'a str,
    pub weight_grams: u32,
    pub length_cm: u16,
    pub width_cm: u16,
    pub height_cm: u16,
    #[tool_output(max_len = 80)]
    pub contents: &'a str,
}

/// Baseline (a): what serde alone checks.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlainShipment {
    pub shipment_ref: String,
    pub carrier: String,
    pub status: PlainStatus,
    pub created_at: String,
    pub weight_grams: u32,
    pub declared_value_cents: u64,
    pub insured: bool,
    pub destination_country: String,
    pub tracking_url: String,
    pub notes: Option<String>,
    pub parcels: Vec<PlainParcel>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlainParcel {
    pub parcel_ref: String,
    pub weight_grams: u32,
    pub length_cm: u16,
    pub width_cm: u16,
    pub height_cm: u16,
    pub contents: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlainStatus {
    LabelCreated,
    InTransit,
    Delivered,
}

/// The borrowed baseline: what serde alone checks, every string borrowed.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlainShipmentView<'a> {
    pub shipment_ref: &'a str,
    pub carrier: &'a str,
    pub status: PlainStatus,
    pub created_at: &'a str,
    pub weight_grams: u32,
    pub declared_value_cents: u64,
    pub insured: bool,
    pub destination_country: &'a str,
    pub tracking_url: &'a str,
    pub notes: Option<&'a str>,
    #[serde(borrow)]
    pub parcels: Vec<PlainParcelView<'a>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlainParcelView<'a> {
    pub parcel_ref: &'a str,
    pub weight_grams: u32,
    pub length_cm: u16,
    pub width_cm: u16,
    pub height_cm: u16,
    pub contents: &'a str,
}

pub fn document() -> Vec<u8> {
    let parcels: Vec<_> = (1..=5)
        .map(|i| {
            json!({
                "parcel_ref": format!("PCL-2026-000{i}"),
                "weight_grams": 1200 + i,
                "length_cm": 40,
                "width_cm": 30,
                "height_cm": 20 + i,
                "contents": "Ceramic mugs, bubble-wrapped, four per box"
            })
        })
        .collect();
    serde_json::to_vec(&json!({
        "shipment_ref": "SHP-2026-11-29-0042",
        "carrier": "Northwind Freight",
        "status": "in_transit",
        "created_at": "2026-11-29T08:15:30Z",
        "weight_grams": 6015,
        "declared_value_cents": 189_900,
        "insured": true,
        "destination_country": "NL",
        "tracking_url": "https://track.example.com/SHP-2026-11-29-0042",
        "notes": "Leave with the neighbour at number 12 if nobody answers.",
        "parcels": parcels
    }))
    .expect("a Value encodes")
}

/// List the stock of one warehouse.
#[derive(serde::Deserialize, ToolContract)]
#[tool_contract(output = Stock, effect = read_only, source_label = "warehouse",
                producer_revision = "stock-v3")]
pub struct ListStock {
    #[tool_contract(max_len = 32)]
    pub warehouse_ref: String,
}

#[derive(serde::Serialize, ToolOutput)]
pub struct Stock {
    #[tool_output(bound = warehouse_ref)]
    pub warehouse_ref: String,
    #[tool_output(format = rfc3339_utc)]
    pub counted_at: String,
    #[tool_output(max_items = 8000)]
    pub items: Vec<StockItem>,
}

#[derive(serde::Serialize, ToolOutput)]
pub struct StockItem {
    #[tool_output(pattern = "^SKU-[0-9]+$")]
    pub sku: String,
    #[tool_output(max_len = 80)]
    pub title: String,
    pub quantity: u32,
    pub unit_price: f64,
    pub state: StockState,
    pub discontinued: bool,
}

#[derive(serde::Serialize, ToolOutput)]
#[serde(rename_all = "snake_case")]
pub enum StockState {
    InStock,
    Low,
    Out,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlainStock {
    pub warehouse_ref: String,
    pub counted_at: String,
    pub items: Vec<PlainStockItem>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlainStockItem {
    pub sku: String,
    pub title: String,
    pub quantity: u32,
    pub unit_price: f64,
    pub state: PlainState,
    pub discontinued: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlainState {
    InStock,
    Low,
    Out,
}

pub fn stock(items: usize) -> Value {
    let states = ["in_stock", "low", "out"];
    let items: Vec<Value> = (0..items)
        .map(|i| {
            json!({
                "sku": format!("SKU-{}", 100_000 + i),
                "title": format!("Stoneware mug, speckled glaze, 350 ml (batch {i})"),
                "quantity": (i * 37) % 500,
                "unit_price": 4.5 + (i as f64) * 0.25,
                "state": states[i % 3],
                "discontinued": i % 7 == 0,
            })
        })
        .collect();
    json!({ "warehouse_ref": "WH-AMS-2", "counted_at": "2026-11-29T06:00:00Z", "items": items })
}

/// The sizes of the result path's curve: items of the stock list, and the label.
pub const SIZES: [(usize, &str); 5] = [
    (6, "1KiB"),
    (100, "16KiB"),
    (400, "64KiB"),
    (1600, "256KiB"),
    (6300, "1MiB"),
];

/// The shipment's output schema, compiled for the `jsonschema` baseline (formats checked).
pub fn shipment_schema() -> jsonschema::Validator {
    jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(GetShipment::spec().output_schema())
        .expect("the emitted schema compiles")
}

/// One `list_stock` call and all the result path needs around it: the binder, the call, its
/// typed input, and for the off-the-shelf pipeline the compiled output schema.
pub struct ResultPath {
    pub binder: Binder<'static>,
    pub principal: Principal,
    pub context: CallContext,
    pub input: ListStock,
    pub provenance: RawProvenance,
    schema: jsonschema::Validator,
    arguments: Value,
}

impl ResultPath {
    pub fn new() -> Self {
        let registry: &'static Registry = Box::leak(Box::new(
            tool_contract::registry![ListStock]
                .into_builder()
                .all_adapters()
                .build(),
        ));
        let binder = Binder::new(
            registry,
            AuditKeys::new(SecretKey::new([3; 32]).expect("32 bytes")),
        )
        .with_clock(|| OffsetDateTime::UNIX_EPOCH);
        let context = CallContext::new(
            ToolCall {
                api: Api::OpenAiResponses,
                adapter_revision: tool_contract::providers::openai::ADAPTER
                    .revision
                    .to_owned(),
                response_id: Some("resp_1".to_owned()),
                call_id: "call_1".to_owned(),
                correlation: Correlation::Id,
                name: "list_stock".to_owned(),
                arguments: br#"{"warehouse_ref":"WH-AMS-2"}"#.to_vec(),
            },
            "op-1",
        )
        .with_idempotency_key("key-1");
        let input = ListStock::parse_arguments(&context.call.arguments).expect("valid arguments");
        let schema = jsonschema::draft202012::options()
            .should_validate_formats(true)
            .build(ListStock::spec().output_schema())
            .expect("the emitted schema compiles");
        let arguments = serde_json::from_slice(&context.call.arguments).expect("JSON");
        ResultPath {
            binder,
            principal: Principal::new("acme", "alice"),
            context,
            input,
            provenance: RawProvenance::new("stock-v3", "2026-11-29T06:00:00Z"),
            schema,
            arguments,
        }
    }

    /// The handler's bytes as the result path receives them.
    pub fn raw(&self, bytes: &[u8]) -> RawResult {
        RawResult::new(bytes.to_vec(), self.provenance.clone())
    }

    /// validate → project → three digests.
    pub fn tool_contract(&self, raw: RawResult) -> CallResult {
        self.binder
            .project_output(&self.principal, &self.context, &self.input, raw)
    }

    /// The floor: a typed serde parse with `deny_unknown_fields` plus one SHA-256.
    pub fn floor(bytes: &[u8]) -> (bool, [u8; 32]) {
        let parsed = serde_json::from_slice::<PlainStock>(bytes).is_ok();
        (parsed, Sha256::digest(bytes).into())
    }

    /// What a user would assemble off the shelf for the same result: `serde_json::Value`,
    /// the `jsonschema` crate on the output schema, `serde_jcs` for the canonical forms, and
    /// three SHA-256 (request, result, call binding).
    pub fn off_the_shelf(&self, bytes: &[u8]) -> (bool, [u8; 32]) {
        let value: Value = serde_json::from_slice(bytes).expect("valid JSON");
        let valid = self.schema.is_valid(&value);
        let model = json!({
            "status": "succeeded",
            "data": value,
            "provenance": {
                "source_label": "warehouse",
                "producer_revision": "stock-v3",
                "observed_at": "2026-11-29T06:00:00Z",
                "trust": "untrusted_data",
            },
        });
        let result_sha256 = hex::encode(Sha256::digest(serde_jcs::to_vec(&model).expect("JCS")));
        let request = json!({
            "tool": "list_stock",
            "arguments": self.arguments,
            "tenant": self.principal.tenant,
            "subject": self.principal.subject,
        });
        let request_sha256 = hex::encode(Sha256::digest(serde_jcs::to_vec(&request).expect("JCS")));
        let binding = json!({
            "call_id": self.context.call.call_id,
            "operation_id": self.context.operation_id,
            "request_sha256": request_sha256,
            "result_sha256": result_sha256,
        });
        (
            valid,
            Sha256::digest(serde_jcs::to_vec(&binding).expect("JCS")).into(),
        )
    }
}
