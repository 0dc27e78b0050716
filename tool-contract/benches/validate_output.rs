//! Reading a ~1 KiB tool output from bytes: the generated validator beside the fastest Rust
//! JSON readers and a schema validator, in the same run:
//! (a) `serde_json::from_slice` into an equivalent typed struct with `deny_unknown_fields`;
//! (b) `sonic_rs::from_slice` into the same struct;
//! (c) `simd_json::serde::from_slice` into the same struct (it parses in place, so the copy of
//!     the buffer it needs is included);
//! (d) `serde_json::from_slice::<Value>` plus the `jsonschema` crate validating the equivalent
//!     JSON Schema, compiled once;
//! and the same document read into borrowed types (every string a `&str` into the bytes): the
//! generated validator's `validate_output_borrowed`, beside sonic-rs and simd-json (which
//! borrows from its mutable copy) into the equivalent borrowed serde struct.

#![allow(missing_docs)]

mod common;

use std::hint::black_box;

use common::{GetShipment, PlainShipment, PlainShipmentView, ShipmentView};
use criterion::{Criterion, criterion_group, criterion_main};
use tool_contract::ToolContract;
use tool_contract::vocabulary::ForbiddenKeys;

fn bench(c: &mut Criterion) {
    let bytes = common::document();
    let call = GetShipment {
        shipment_ref: "SHP-2026-11-29-0042".to_owned(),
    };
    let schema = common::shipment_schema();
    assert!(call.validate_output(&bytes).is_ok());
    assert!(serde_json::from_slice::<PlainShipment>(&bytes).is_ok());
    assert!(sonic_rs::from_slice::<PlainShipment>(&bytes).is_ok());
    assert!(simd_json::serde::from_slice::<PlainShipment>(&mut bytes.clone()).is_ok());
    assert!(schema.is_valid(&serde_json::from_slice(&bytes).expect("valid JSON")));
    assert!(
        call.validate_output_borrowed::<ShipmentView<'_>>(&bytes, &ForbiddenKeys::DEFAULT)
            .is_ok()
    );
    assert!(sonic_rs::from_slice::<PlainShipmentView<'_>>(&bytes).is_ok());
    assert!(simd_json::serde::from_slice::<PlainShipmentView<'_>>(&mut bytes.clone()).is_ok());

    let mut group = c.benchmark_group(format!("validate_output_{}_bytes", bytes.len()));
    group.bench_function("tool_contract_generated", |b| {
        b.iter(|| call.validate_output(black_box(&bytes)).is_ok());
    });
    group.bench_function("serde_json_typed_deny_unknown", |b| {
        b.iter(|| serde_json::from_slice::<PlainShipment>(black_box(&bytes)).is_ok());
    });
    group.bench_function("sonic_rs_typed_deny_unknown", |b| {
        b.iter(|| sonic_rs::from_slice::<PlainShipment>(black_box(&bytes)).is_ok());
    });
    group.bench_function("simd_json_typed_deny_unknown_with_copy", |b| {
        b.iter(|| {
            let mut copy = black_box(&bytes).clone();
            simd_json::serde::from_slice::<PlainShipment>(&mut copy).is_ok()
        });
    });
    group.bench_function("tool_contract_generated_borrowed", |b| {
        b.iter(|| {
            call.validate_output_borrowed::<ShipmentView<'_>>(
                black_box(&bytes),
                &ForbiddenKeys::DEFAULT,
            )
            .is_ok()
        });
    });
    group.bench_function("sonic_rs_typed_borrowed", |b| {
        b.iter(|| sonic_rs::from_slice::<PlainShipmentView<'_>>(black_box(&bytes)).is_ok());
    });
    group.bench_function("simd_json_typed_borrowed_with_copy", |b| {
        b.iter(|| {
            let mut copy = black_box(&bytes).clone();
            simd_json::serde::from_slice::<PlainShipmentView<'_>>(&mut copy).is_ok()
        });
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
