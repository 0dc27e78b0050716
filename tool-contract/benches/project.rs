//! RFC 8785 canonicalization and the whole result path, each beside its baselines in the same
//! run, on a ~1 KiB and a ~64 KiB tool result.
//!
//! - `canonical_value_*`: `canonical::to_vec(&Value)` against `serde_json::to_vec` of the same
//!   value (plain, unsorted-in-principle output) and against `serde_jcs::to_vec`;
//! - `canonical_text_*`: `canonical::canonicalize(&[u8])` against `serde_json::from_slice` to a
//!   `Value` plus `serde_json::to_vec`;
//! - `result_path_*`: validate → project → three digests (`Binder::project_output`) against a
//!   typed serde parse with `deny_unknown_fields` plus one SHA-256 of the bytes.

#![allow(missing_docs)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;
use tool_contract::json::canonical;
use tool_contract::providers::{Api, Correlation, ToolCall};
use tool_contract::{
    AuditKeys, Binder, CallContext, Principal, RawProvenance, RawResult, Registry, SecretKey,
    Status, ToolContract, ToolOutput,
};

/// List the stock of one warehouse.
#[derive(serde::Deserialize, ToolContract)]
#[tool_contract(output = Stock, effect = read_only, source_label = "warehouse",
                producer_revision = "stock-v3")]
struct ListStock {
    #[tool_contract(max_len = 32)]
    warehouse_ref: String,
}

#[derive(serde::Serialize, ToolOutput)]
struct Stock {
    #[tool_output(bound = warehouse_ref)]
    warehouse_ref: String,
    #[tool_output(format = rfc3339_utc)]
    counted_at: String,
    #[tool_output(max_items = 2000)]
    items: Vec<StockItem>,
}

#[derive(serde::Serialize, ToolOutput)]
struct StockItem {
    #[tool_output(pattern = "^SKU-[0-9]+$")]
    sku: String,
    #[tool_output(max_len = 80)]
    title: String,
    quantity: u32,
    unit_price: f64,
    state: StockState,
    discontinued: bool,
}

#[derive(serde::Serialize, ToolOutput)]
#[serde(rename_all = "snake_case")]
enum StockState {
    InStock,
    Low,
    Out,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct PlainStock {
    warehouse_ref: String,
    counted_at: String,
    items: Vec<PlainStockItem>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct PlainStockItem {
    sku: String,
    title: String,
    quantity: u32,
    unit_price: f64,
    state: PlainState,
    discontinued: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum PlainState {
    InStock,
    Low,
    Out,
}

fn stock(items: usize) -> Value {
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

fn clock() -> OffsetDateTime {
    OffsetDateTime::UNIX_EPOCH
}

fn bench(c: &mut Criterion) {
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
    .with_clock(clock);
    let principal = Principal::new("acme", "alice");
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
    let provenance = RawProvenance::new("stock-v3", "2026-11-29T06:00:00Z");

    for (label, items) in [("1KiB", 6), ("64KiB", 400)] {
        let value = stock(items);
        let bytes = serde_json::to_vec(&value).expect("a Value encodes");
        let size = bytes.len();
        assert_eq!(
            canonical::to_vec(&value).unwrap(),
            serde_jcs::to_vec(&value).unwrap()
        );
        let raw = RawResult::new(bytes.clone(), provenance.clone());
        let projected = binder.project_output(&principal, &context, &input, raw.clone());
        assert_eq!(projected.model.status(), Status::Succeeded);

        let mut group = c.benchmark_group(format!("canonical_value_{label}_{size}_bytes"));
        group.bench_function("tool_contract_canonical_to_vec", |b| {
            b.iter(|| canonical::to_vec(black_box(&value)));
        });
        group.bench_function("serde_json_to_vec", |b| {
            b.iter(|| serde_json::to_vec(black_box(&value)));
        });
        group.bench_function("serde_jcs_to_vec", |b| {
            b.iter(|| serde_jcs::to_vec(black_box(&value)));
        });
        group.finish();

        let mut group = c.benchmark_group(format!("canonical_text_{label}_{size}_bytes"));
        group.bench_function("tool_contract_canonicalize", |b| {
            b.iter(|| canonical::canonicalize(black_box(&bytes)));
        });
        group.bench_function("serde_json_value_roundtrip", |b| {
            b.iter(|| {
                let value: Value = serde_json::from_slice(black_box(&bytes)).expect("valid");
                serde_json::to_vec(&value)
            });
        });
        group.finish();

        let mut group = c.benchmark_group(format!("result_path_{label}_{size}_bytes"));
        group.bench_function("validate_project_three_digests", |b| {
            b.iter(|| binder.project_output(&principal, &context, &input, black_box(raw.clone())));
        });
        group.bench_function("serde_typed_parse_plus_sha256", |b| {
            b.iter(|| {
                let parsed = serde_json::from_slice::<PlainStock>(black_box(&bytes)).is_ok();
                (parsed, Sha256::digest(black_box(&bytes)))
            });
        });
        group.bench_function("raw_result_clone_only", |b| {
            b.iter(|| black_box(raw.clone()));
        });
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
