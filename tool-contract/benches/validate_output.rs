//! Reading a ~1 KiB tool output from bytes: the generated validator beside two baselines in
//! the same run: (a) `serde_json::from_slice` into an equivalent typed struct with
//! `deny_unknown_fields`, and (b) `serde_json::from_slice::<Value>` plus the `jsonschema`
//! crate validating the equivalent JSON Schema, compiled once.

#![allow(missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use serde::Deserialize;
use std::hint::black_box;
use tool_contract::{ToolContract, ToolOutput};

/// Read one shipment.
#[derive(serde::Deserialize, ToolContract)]
#[tool_contract(output = Shipment, effect = read_only, source_label = "shipping",
                producer_revision = "bench")]
struct GetShipment {
    shipment_ref: String,
}

#[derive(serde::Serialize, ToolOutput)]
#[allow(dead_code)]
struct Shipment {
    #[tool_output(bound = shipment_ref)]
    shipment_ref: String,
    #[tool_output(max_len = 40)]
    carrier: String,
    status: ShipmentStatus,
    #[tool_output(format = rfc3339_utc)]
    created_at: String,
    weight_grams: u32,
    declared_value_cents: u64,
    insured: bool,
    #[tool_output(pattern = "^[A-Z]{2}$")]
    destination_country: String,
    #[tool_output(format = https_url)]
    tracking_url: String,
    #[tool_output(max_len = 200)]
    notes: Option<String>,
    #[tool_output(max_items = 10)]
    parcels: Vec<Parcel>,
}

#[derive(serde::Serialize, ToolOutput)]
#[allow(dead_code)]
struct Parcel {
    #[tool_output(max_len = 32)]
    parcel_ref: String,
    weight_grams: u32,
    length_cm: u16,
    width_cm: u16,
    height_cm: u16,
    #[tool_output(max_len = 80)]
    contents: String,
}

#[derive(serde::Serialize, ToolOutput)]
#[serde(rename_all = "snake_case")]
enum ShipmentStatus {
    LabelCreated,
    InTransit,
    Delivered,
}

/// Baseline (a): what serde alone checks.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct PlainShipment {
    shipment_ref: String,
    carrier: String,
    status: PlainStatus,
    created_at: String,
    weight_grams: u32,
    declared_value_cents: u64,
    insured: bool,
    destination_country: String,
    tracking_url: String,
    notes: Option<String>,
    parcels: Vec<PlainParcel>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct PlainParcel {
    parcel_ref: String,
    weight_grams: u32,
    length_cm: u16,
    width_cm: u16,
    height_cm: u16,
    contents: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum PlainStatus {
    LabelCreated,
    InTransit,
    Delivered,
}

fn document() -> Vec<u8> {
    let parcels: Vec<_> = (1..=5)
        .map(|i| {
            serde_json::json!({
                "parcel_ref": format!("PCL-2026-000{i}"),
                "weight_grams": 1200 + i,
                "length_cm": 40,
                "width_cm": 30,
                "height_cm": 20 + i,
                "contents": "Ceramic mugs, bubble-wrapped, four per box"
            })
        })
        .collect();
    serde_json::to_vec(&serde_json::json!({
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

fn bench(c: &mut Criterion) {
    let bytes = document();
    let call = GetShipment {
        shipment_ref: "SHP-2026-11-29-0042".to_owned(),
    };
    let schema = jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(GetShipment::spec().output_schema())
        .expect("the emitted schema compiles");
    assert!(call.validate_output(&bytes).is_ok());
    assert!(serde_json::from_slice::<PlainShipment>(&bytes).is_ok());
    assert!(schema.is_valid(&serde_json::from_slice(&bytes).expect("valid JSON")));

    let mut group = c.benchmark_group(format!("validate_output_{}_bytes", bytes.len()));
    group.bench_function("tool_contract_generated", |b| {
        b.iter(|| call.validate_output(black_box(&bytes)).is_ok());
    });
    group.bench_function("serde_json_typed_deny_unknown", |b| {
        b.iter(|| serde_json::from_slice::<PlainShipment>(black_box(&bytes)).is_ok());
    });
    group.bench_function("serde_json_value_plus_jsonschema", |b| {
        b.iter(|| {
            let value: serde_json::Value =
                serde_json::from_slice(black_box(&bytes)).expect("valid JSON");
            schema.is_valid(&value)
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
