//! Evidence: reading a grounded output (sources required, tiers capped, a synthetic-data
//! detector on every address) beside `serde_json` into an equivalent typed struct with
//! `deny_unknown_fields`, which checks none of it; and `arbitrate` over 32 candidates beside a
//! plain sort of the same candidates by tier and confidence.

#![allow(missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use serde::Deserialize;
use std::hint::black_box;
use tool_contract::evidence::{Fact, GroundingSource, SourceTier, arbitrate};
use tool_contract::{ToolContract, ToolOutput};

/// Find advisors on the schools' staff pages.
#[derive(serde::Deserialize, ToolContract)]
#[tool_contract(output = Advisors, effect = read_only, source_label = "staff pages",
                producer_revision = "bench", source_tier = official)]
struct FindAdvisors {
    #[tool_contract(max_len = 100)]
    field: String,
}

#[derive(serde::Serialize, ToolOutput)]
#[allow(dead_code)]
struct Advisors {
    #[tool_output(grounded, max_items = 20)]
    advisors: Vec<Advisor>,
}

#[derive(serde::Serialize, ToolOutput)]
#[allow(dead_code)]
struct Advisor {
    #[tool_output(max_len = 120)]
    name: String,
    #[tool_output(max_len = 254, strip_synthetic(placeholder_email))]
    email: Option<String>,
    #[tool_output(max_items = 5)]
    sources: Vec<GroundingSource>,
}

/// The baseline: what serde alone checks.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct PlainAdvisors {
    advisors: Vec<PlainAdvisor>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct PlainAdvisor {
    name: String,
    email: Option<String>,
    sources: Vec<PlainSource>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct PlainSource {
    id: String,
    label: String,
    tier: String,
    url: Option<String>,
    snippet: String,
    confidence: f64,
}

fn document() -> Vec<u8> {
    let advisors: Vec<_> = (1..=8)
        .map(|i| {
            let source = |kind: &str, tier: &str| {
                serde_json::json!({
                    "id": format!("{kind}-{i}"),
                    "label": format!("{kind} page {i}"),
                    "tier": tier,
                    "url": format!("https://www.school{i}.example.org/{kind}"),
                    "snippet": "Head of the optics group; supervises doctoral students.",
                    "confidence": 0.85,
                })
            };
            serde_json::json!({
                "name": format!("Advisor Number {i}"),
                "email": format!("advisor{i}@physics.school{i}.se"),
                "sources": [source("staff", "official"), source("register", "authoritative_database")],
            })
        })
        .collect();
    serde_json::to_vec(&serde_json::json!({ "advisors": advisors })).expect("a Value encodes")
}

fn facts() -> Vec<Fact<u32>> {
    (0..32_u32)
        .map(|i| {
            let tier = SourceTier::ALL[(i % 4) as usize];
            let source = GroundingSource::new(
                format!("s-{i}"),
                "A page",
                tier,
                None,
                "the text",
                f64::from(i % 7) / 7.0,
            )
            .expect("a valid source");
            Fact::new(FindAdvisors::spec(), i % 5, source)
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let bytes = document();
    let call = FindAdvisors {
        field: "optics".to_owned(),
    };
    assert!(call.validate_output(&bytes).is_ok());
    assert!(serde_json::from_slice::<PlainAdvisors>(&bytes).is_ok());

    let mut group = c.benchmark_group(format!("grounded_output_{}_bytes", bytes.len()));
    group.bench_function("tool_contract_generated", |b| {
        b.iter(|| call.validate_output(black_box(&bytes)).is_ok());
    });
    group.bench_function("serde_json_typed_deny_unknown", |b| {
        b.iter(|| serde_json::from_slice::<PlainAdvisors>(black_box(&bytes)).is_ok());
    });
    group.finish();

    let candidates = facts();
    let mut group = c.benchmark_group("arbitrate_32_facts");
    group.bench_function("arbitrate", |b| {
        b.iter(|| arbitrate(black_box(candidates.clone())));
    });
    group.bench_function("clone_and_sort_by_tier_and_confidence", |b| {
        b.iter(|| {
            let mut sorted = black_box(candidates.clone());
            sorted.sort_by(|a, b| {
                b.tier()
                    .cmp(&a.tier())
                    .then(b.source().confidence().total_cmp(&a.source().confidence()))
            });
            sorted
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
