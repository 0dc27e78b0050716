//! Approval receipts: signing one (Ed25519 over its RFC 8785 canonical JSON) and verifying one
//! from its text (read exactly, canonicalized, checked against the published key), each beside
//! one SHA-256 of the same canonical bytes, the cheapest check a receipt could have had.

#![allow(missing_docs)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;
use tool_contract::results::{
    ApprovalBasis, ApprovalFact, DigestAlgorithm, KeySet, ReceiptFacts, ReceiptRevisions,
    ReceiptSigner,
};

fn at(seconds: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp(1_796_000_000 + seconds).expect("a time")
}

/// A two-approver receipt, as the refund desk issues them.
fn facts() -> ReceiptFacts {
    ReceiptFacts {
        approval_id: "apr_348ddda18b55".into(),
        approvals: [
            ("ana.supervisor@acme.example", 10),
            ("ben.supervisor@acme.example", 20),
        ]
        .into_iter()
        .map(|(approver, approved_at)| ApprovalFact {
            approver: approver.into(),
            approved_at: at(approved_at),
            expires_at: at(600),
            basis: ApprovalBasis::Service,
        })
        .collect(),
        approvals_required: 2,
        signatures_required: false,
        principal_ref: "af4c095c9add38646ffeafac62f0d91acd8df052ff819e85507d048a7f0a4f5e".into(),
        tool: "create_refund_draft".into(),
        operation_id: "refund-draft:ORDER-1001".into(),
        request_sha256: "544697c07077ba5365fb7e56568463ace3a652412d7f2d730fd8b3a30f27d4c7".into(),
        request_digest: DigestAlgorithm::Sha256,
        revisions: ReceiptRevisions {
            effect: "sha256:782b20a349f2d4bb".into(),
            input: "sha256:41cce880c4146bd4".into(),
            output: "sha256:c9a156be7ac5da7c".into(),
        },
        preview_sha256: "38a983a0d59689ed276c54cd18a7c0554b02001110d10b16ae5579884e10d5af".into(),
        expires_at: at(600),
        redeemed_at: at(30),
        edited_arguments: None,
        earlier_run: None,
        required_by: Vec::new(),
    }
}

fn receipts(c: &mut Criterion) {
    let signer = ReceiptSigner::new("desk-1", [7; 32], at(0));
    let keys = KeySet::new([signer.published_key()]).expect("the published key");
    let facts = facts();
    let signed = signer.sign(&facts).expect("it signs");
    let text = signed.to_json();
    let receipt_bytes = {
        let value = serde_json::to_value(&signed.receipt).expect("a receipt encodes");
        tool_contract::json::canonical::to_vec(&value).expect("canonical")
    };
    assert!(keys.verify(text.as_bytes()).is_ok());
    eprintln!(
        "receipt: {} bytes signed, {} bytes with its signature",
        receipt_bytes.len(),
        text.len()
    );

    let mut group = c.benchmark_group("receipts");
    group.bench_function("sign (ReceiptSigner::sign)", |b| {
        b.iter(|| signer.sign(black_box(&facts)).expect("it signs"));
    });
    group.bench_function("verify from text (KeySet::verify)", |b| {
        b.iter(|| {
            keys.verify(black_box(text.as_bytes()))
                .expect("it verifies")
        });
    });
    group.bench_function("verify read (KeySet::verify_signed)", |b| {
        b.iter(|| keys.verify_signed(black_box(&signed)).expect("it verifies"));
    });
    group.bench_function("baseline: one SHA-256 of the receipt's bytes", |b| {
        b.iter(|| Sha256::digest(black_box(&receipt_bytes)));
    });
    group.finish();
}

criterion_group!(benches, receipts);
criterion_main!(benches);
