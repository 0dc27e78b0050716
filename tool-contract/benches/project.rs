//! RFC 8785 canonicalization and the whole result path, each beside its baselines in the same
//! run.
//!
//! - `canonical_value_*`: `canonical::to_vec(&Value)` against `serde_json::to_vec` of the same
//!   value and against `serde_jcs::to_vec`;
//! - `canonical_text_*`: `canonical::canonicalize(&[u8])` against `serde_json::from_slice` to a
//!   `Value` plus `serde_json::to_vec`;
//! - `result_path_*`, at ~1 KiB, ~16 KiB, ~64 KiB, ~256 KiB and ~1 MiB: validate → project →
//!   three digests (`Binder::project_output`) against the floor (a typed serde parse with
//!   `deny_unknown_fields` plus one SHA-256 of the bytes) and against the pipeline a user would
//!   assemble off the shelf (`serde_json::Value`, `jsonschema`, `serde_jcs`, three SHA-256).

#![allow(missing_docs)]

mod common;

use std::hint::black_box;

use common::ResultPath;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::Value;
use tool_contract::Status;
use tool_contract::json::canonical;

fn bench(c: &mut Criterion) {
    let path = ResultPath::new();
    for (items, label) in common::SIZES {
        let value = common::stock(items);
        let bytes = serde_json::to_vec(&value).expect("a Value encodes");
        let size = bytes.len();
        let raw = path.raw(&bytes);
        assert_eq!(
            path.tool_contract(raw.clone()).model.status(),
            Status::Succeeded
        );
        assert!(path.off_the_shelf(&bytes).0 && ResultPath::floor(&bytes).0);

        if matches!(label, "1KiB" | "64KiB") {
            assert_eq!(
                canonical::to_vec(&value).unwrap(),
                serde_jcs::to_vec(&value).unwrap()
            );
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
        }

        let mut group = c.benchmark_group(format!("result_path_{label}_{size}_bytes"));
        if items > 1000 {
            group.sample_size(20);
        }
        group.bench_function("validate_project_three_digests", |b| {
            b.iter(|| path.tool_contract(black_box(raw.clone())));
        });
        group.bench_function("serde_typed_parse_plus_sha256", |b| {
            b.iter(|| ResultPath::floor(black_box(&bytes)));
        });
        group.bench_function("value_jsonschema_serde_jcs_three_sha256", |b| {
            b.iter(|| path.off_the_shelf(black_box(&bytes)));
        });
        group.bench_function("raw_result_clone_only", |b| {
            b.iter(|| black_box(raw.clone()));
        });
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
