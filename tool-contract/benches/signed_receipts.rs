//! Signed approvals: verifying one approver's passkey assertion over its approval statement,
//! and a whole receipt carrying two (the service's signature, each assertion, the rule), each
//! beside one SHA-256 of the statement, the cheapest binding an approval could have had.
//!
//! The fixtures are a receipt the refund desk's replay printed (two supervisors, each signing
//! with a software authenticator's P-256 passkey) and the two files it published.

#![allow(missing_docs)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tool_contract::results::{ApproverKeys, KeySet, SignedReceipt};

const RECEIPT: &[u8] = include_bytes!("fixtures/signed-receipt.json");
const PUBLISHED_KEYS: &[u8] = include_bytes!("fixtures/published-keys.json");
const APPROVER_KEYS: &[u8] = include_bytes!("fixtures/approver-keys.json");

fn signed_receipts(c: &mut Criterion) {
    let keys = KeySet::from_json(PUBLISHED_KEYS).expect("the published keys");
    let approvers = ApproverKeys::from_json(APPROVER_KEYS).expect("the approver keys");
    let receipt = keys
        .verify_with_approvers(RECEIPT, &approvers)
        .expect("the fixture verifies");
    let approval = &receipt.approvals[0];
    let assertion = approval.assertion.clone().expect("a passkey approval");
    let approved_at = OffsetDateTime::parse(&approval.approved_at, &Rfc3339).expect("a time");
    let statement = receipt.statement_of(approval);
    let statement_bytes = statement.to_canonical_json().into_bytes();
    let signed: SignedReceipt = serde_json::from_slice(RECEIPT).expect("a receipt");
    eprintln!(
        "statement: {} bytes; receipt: {} bytes with {} assertions",
        statement_bytes.len(),
        RECEIPT.len(),
        receipt.approvals.len()
    );

    let mut group = c.benchmark_group("signed_receipts");
    group.bench_function("one assertion (ApproverKeys::verify_assertion)", |b| {
        b.iter(|| {
            approvers
                .verify_assertion(
                    &approval.approver,
                    approved_at,
                    black_box(&statement),
                    black_box(&assertion),
                )
                .expect("it verifies")
        });
    });
    group.bench_function(
        "receipt, two assertions (KeySet::verify_with_approvers)",
        |b| {
            b.iter(|| {
                keys.verify_with_approvers(black_box(RECEIPT), &approvers)
                    .expect("it verifies")
            });
        },
    );
    group.bench_function(
        "receipt, service signature only (KeySet::verify_signed)",
        |b| {
            b.iter(|| keys.verify_signed(black_box(&signed)).expect("it verifies"));
        },
    );
    group.bench_function("baseline: one SHA-256 of the statement", |b| {
        b.iter(|| Sha256::digest(black_box(&statement_bytes)));
    });
    group.finish();
}

criterion_group!(benches, signed_receipts);
criterion_main!(benches);
