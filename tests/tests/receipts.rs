//! Approval receipts: issued when a grant is redeemed, kept in the audit and the audit log
//! (never in the model result), and checked offline by anyone with the published key.

use std::sync::Arc;
use std::time::Duration;

use time::OffsetDateTime;
use tool_contract::control::{MemoryAuditLog, PendingApproval};
use tool_contract::dispatch::{Dispatch, Dispatcher};
use tool_contract::results::{ApprovalReceipt, KeySet, PublishedKey, ReceiptError, ReceiptSigner};
use tool_contract::{AuditKeys, CallContext, ErrorCode, Principal, SecretKey, Status};
use tool_contract_tests::tracker::{
    Remote, SendMessage, alice, audit_key, builder, builder_with_keys, clock, message,
    pending_approval, receipt_of, run,
};

const SIGNING_SEED: [u8; 32] = [0x5e; 32];

fn since() -> OffsetDateTime {
    clock() - Duration::from_secs(86_400)
}

fn signer() -> ReceiptSigner {
    ReceiptSigner::new("desk-1", SIGNING_SEED, since())
}

fn published() -> KeySet {
    KeySet::from_json(
        KeySet::new([signer().published_key()])
            .unwrap()
            .to_json()
            .as_bytes(),
    )
    .expect("the published key set reads back")
}

fn arguments(call: &CallContext) -> &[u8] {
    &call.call.arguments
}

async fn approve_as(dispatcher: &Dispatcher, pending: &PendingApproval, approver: &str) {
    let _ = dispatcher
        .approve(
            &pending.approval_id,
            &pending.preview_sha256,
            approver,
            clock() + Duration::from_secs(3600),
        )
        .await
        .expect("the approval is recorded");
}

/// A `send_message` call, asked of `dispatcher` and approved by each of `approvers`.
async fn approved_call(dispatcher: &Dispatcher, approvers: &[&str]) -> CallContext {
    let call = message("m1", "bob@globex.example");
    let pending = pending_approval(dispatcher, &call).await;
    for approver in approvers {
        approve_as(dispatcher, &pending, approver).await;
    }
    call
}

/// An approved `send_message` run on a dispatcher that signs receipts with `signer`.
async fn approved_run(signer: ReceiptSigner) -> (Dispatch, Arc<MemoryAuditLog>, CallContext) {
    let remote = Remote::new();
    let log = Arc::new(MemoryAuditLog::new(audit_key()));
    let dispatcher = builder(&remote)
        .audit_sink(log.clone())
        .approval_receipts(signer)
        .build()
        .unwrap();
    let call = approved_call(&dispatcher, &["carol"]).await;
    (run(&dispatcher, &call).await, log, call)
}

#[tokio::test]
async fn a_redeemed_grant_leaves_a_receipt_in_the_audit_and_the_log_never_in_the_model_result() {
    let (ran, log, _) = approved_run(signer()).await;
    assert_eq!(ran.result.model.status(), Status::Succeeded, "{ran:?}");
    let signed = receipt_of(&ran);
    let receipt = &signed.receipt;
    assert_eq!(receipt.tool, "send_message");
    assert_eq!(receipt.approvals.len(), 1);
    assert_eq!(receipt.approvals[0].approver, "carol");
    assert_eq!(
        receipt.request_sha256,
        ran.result.audit.binding.request_sha256
    );
    assert_eq!(receipt.principal_ref, ran.result.audit.principal_ref);
    let model = serde_json::to_string(&ran.result.model).unwrap();
    assert!(!model.contains(&signed.signature), "{model}");
    assert!(!model.contains("carol"), "{model}");
    let logged = log.lines().join("\n");
    assert!(logged.contains(&signed.signature), "the audit log keeps it");
}

#[tokio::test]
async fn a_receipt_verifies_offline_with_the_published_key_and_covers_the_call() {
    let (ran, _, call) = approved_run(signer()).await;
    let text = receipt_of(&ran).to_json();
    let receipt = published().verify(text.as_bytes()).expect("it verifies");
    receipt
        .check_call(&alice(), arguments(&call))
        .expect("it covers the model's call");
}

#[tokio::test]
async fn only_the_canonical_bytes_that_were_signed_verify() {
    let (ran, _, _) = approved_run(signer()).await;
    let text = receipt_of(&ran).to_json();
    let pretty = serde_json::to_string_pretty(&receipt_of(&ran)).unwrap();
    // The same members, signature first: the same meaning in another order.
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let reordered = format!(
        "{{\"signature\":{},\"receipt\":{}}}",
        value["signature"], value["receipt"]
    );
    // A letter of the receipt written as a JSON escape.
    let escaped = text.replacen("\"tool-contract/", "\"\\u0074ool-contract/", 1);
    assert_ne!(escaped, text);
    for copy in [
        pretty,
        reordered,
        escaped,
        format!("{text}\n"),
        format!(" {text}"),
    ] {
        assert!(
            matches!(
                published().verify(copy.as_bytes()),
                Err(ReceiptError::NotCanonical)
            ),
            "{copy}"
        );
    }
    published()
        .verify(text.as_bytes())
        .expect("the signed bytes verify");
}

#[tokio::test]
async fn a_receipt_with_any_byte_changed_is_refused() {
    let (ran, _, _) = approved_run(signer()).await;
    let signed = receipt_of(&ran);
    let text = signed.to_json().into_bytes();
    let keys = published();
    let duplicated = format!(
        "{},\"signature\":\"{}\"}}",
        &signed.to_json()[..text.len() - 1],
        signed.signature
    );
    assert!(
        matches!(
            keys.verify(duplicated.as_bytes()),
            Err(ReceiptError::Malformed(_))
        ),
        "a member given twice is refused"
    );
    for index in 0..text.len() {
        for flip in [0x01u8, 0x20] {
            let mut changed = text.clone();
            changed[index] ^= flip;
            assert!(
                keys.verify(&changed).is_err(),
                "byte {index} ^ {flip:#x} verified: {}",
                String::from_utf8_lossy(&changed)
            );
        }
    }
}

#[tokio::test]
async fn a_receipt_is_refused_under_another_key_or_an_unknown_one() {
    let (ran, _, _) = approved_run(signer()).await;
    let text = receipt_of(&ran).to_json();
    let impostor = ReceiptSigner::new("desk-1", [0x77; 32], since());
    let other_key = KeySet::new([impostor.published_key()]).unwrap();
    assert_eq!(
        other_key.verify(text.as_bytes()),
        Err(ReceiptError::BadSignature)
    );
    let other_id =
        KeySet::new([ReceiptSigner::new("desk-2", SIGNING_SEED, since()).published_key()]).unwrap();
    assert_eq!(
        other_id.verify(text.as_bytes()),
        Err(ReceiptError::UnknownKey("desk-1".into()))
    );
    // Signed by the impostor under the real id: the published key refuses it.
    let (forged, _, _) = approved_run(impostor).await;
    assert_eq!(
        published().verify(receipt_of(&forged).to_json().as_bytes()),
        Err(ReceiptError::BadSignature)
    );
}

#[tokio::test]
async fn a_receipt_redeemed_after_its_key_was_rotated_out_is_refused() {
    let (ran, _, _) = approved_run(signer()).await;
    let text = receipt_of(&ran).to_json();
    let mut rotated: PublishedKey = signer().published_key();
    rotated.valid_until = Some(
        (clock() - Duration::from_secs(1))
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap(),
    );
    let keys = KeySet::new([rotated]).unwrap();
    assert_eq!(
        keys.verify(text.as_bytes()),
        Err(ReceiptError::KeyNotValid {
            key_id: "desk-1".into()
        })
    );
    let not_yet = KeySet::new([ReceiptSigner::new(
        "desk-1",
        SIGNING_SEED,
        clock() + Duration::from_secs(60),
    )
    .published_key()])
    .unwrap();
    assert!(matches!(
        not_yet.verify(text.as_bytes()),
        Err(ReceiptError::KeyNotValid { .. })
    ));
}

#[tokio::test]
async fn a_dispatcher_whose_key_no_longer_signs_runs_nothing_and_keeps_the_grant() {
    let remote = Remote::new();
    let store = Arc::new(tool_contract::control::MemoryStore::new());
    let expired = signer().valid_until(clock() - Duration::from_secs(1));
    let dispatcher = builder(&remote)
        .store(store.clone())
        .approval_receipts(expired)
        .build()
        .unwrap();
    let call = approved_call(&dispatcher, &["carol"]).await;
    let refused = run(&dispatcher, &call).await;
    assert_eq!(
        refused.result.model.error().map(|error| error.code()),
        Some(ErrorCode::TimeoutBeforeExecute),
        "{refused:?}"
    );
    assert_eq!(remote.all_requests(), 0, "nothing ran without a receipt");
    // The key rotated in: the same grant, unspent, runs the write once.
    let rotated = builder(&remote)
        .store(store)
        .approval_receipts(signer())
        .build()
        .unwrap();
    let ran = run(&rotated, &call).await;
    assert_eq!(ran.result.model.status(), Status::Succeeded, "{ran:?}");
    assert_eq!(remote.all_requests(), 1);
    receipt_of(&ran);
}

#[tokio::test]
async fn a_receipt_moved_to_other_arguments_or_another_principal_is_refused() {
    let (ran, _, call) = approved_run(signer()).await;
    let receipt: ApprovalReceipt = published()
        .verify(receipt_of(&ran).to_json().as_bytes())
        .unwrap();
    let other = message("m1", "eve@globex.example");
    assert_eq!(
        receipt.check_call(&alice(), arguments(&other)),
        Err(ReceiptError::OtherCall)
    );
    let mallory = Principal::new("acme", "mallory");
    assert_eq!(
        receipt.check_call(&mallory, arguments(&call)),
        Err(ReceiptError::OtherCall)
    );
    // The same arguments written another way are the same call.
    let reordered = br#"{ "text": "hello", "to": "bob@globex.example" }"#;
    receipt.check_call(&alice(), reordered).unwrap();
}

#[tokio::test]
async fn a_replay_or_a_second_call_carries_no_new_receipt() {
    let remote = Remote::new();
    let dispatcher = builder(&remote)
        .approval_receipts(signer())
        .build()
        .unwrap();
    let call = approved_call(&dispatcher, &["carol"]).await;
    receipt_of(&run(&dispatcher, &call).await);
    let replayed = run(&dispatcher, &call).await;
    assert_eq!(replayed.result.model.status(), Status::Succeeded);
    let receipt = replayed
        .result
        .audit
        .approval
        .as_ref()
        .and_then(|approval| approval.receipt.as_ref());
    assert!(receipt.is_none(), "only the redeeming execution has one");
}

#[tokio::test]
async fn a_four_eyes_receipt_names_every_approver() {
    let remote = Remote::new();
    let dispatcher = builder(&remote)
        .approvers::<SendMessage>(2)
        .approval_receipts(signer())
        .build()
        .unwrap();
    let call = approved_call(&dispatcher, &["carol", "dave"]).await;
    let ran = run(&dispatcher, &call).await;
    let receipt = published()
        .verify(receipt_of(&ran).to_json().as_bytes())
        .unwrap();
    let approvers: Vec<&str> = receipt
        .approvals
        .iter()
        .map(|given| given.approver.as_str())
        .collect();
    assert_eq!(approvers, ["carol", "dave"]);
}

#[tokio::test]
async fn a_receipt_with_keyed_digests_verifies_but_says_its_call_needs_the_key() {
    let remote = Remote::new();
    let keys =
        AuditKeys::new(SecretKey::from([0x42; 32])).with_digest_key(SecretKey::from([9; 32]));
    let dispatcher = builder_with_keys(&remote, keys)
        .approval_receipts(signer())
        .build()
        .unwrap();
    let call = approved_call(&dispatcher, &["carol"]).await;
    let ran = run(&dispatcher, &call).await;
    let receipt = published()
        .verify(receipt_of(&ran).to_json().as_bytes())
        .unwrap();
    assert_eq!(
        receipt.check_call(&alice(), arguments(&call)),
        Err(ReceiptError::KeyedRequestDigest)
    );
}

#[test]
fn text_that_is_not_a_receipt_is_refused_without_a_panic() {
    let keys = published();
    for text in [
        &b""[..],
        b"{}",
        b"[]",
        b"\xff\xfe",
        br#"{"receipt":{},"signature":""}"#,
        br#"{"receipt":null,"signature":"00","extra":1}"#,
    ] {
        assert!(matches!(keys.verify(text), Err(ReceiptError::Malformed(_))));
    }
}

/// Every call permitted; a message outside acme asks two people.
const OUTSIDE_TWO: &str = r#"permit(principal, action, resource);
    @id("outside-two") @approvers("2")
    permit(principal, action == Tools::Action::"send_message", resource)
      when { !(context.input.to like "*@acme.example") };"#;

/// A dispatcher deciding by the Cedar `rules` and signing its receipts.
fn under_rules(remote: &Arc<Remote>, rules: &str) -> Dispatcher {
    builder(remote)
        .policies(tool_contract::policy::Policies::cedar("rules.cedar", rules))
        .approval_receipts(signer())
        .build()
        .unwrap()
}

#[tokio::test]
async fn the_preview_and_the_receipt_name_the_approval_rules_that_asked() {
    let remote = Remote::new();
    let dispatcher = under_rules(&remote, OUTSIDE_TWO);
    let call = message("m1", "bob@globex.example");
    let pending = pending_approval(&dispatcher, &call).await;
    assert_eq!(pending.preview.required_by, ["outside-two"]);
    assert!(pending.preview.to_text().contains("outside-two"));
    for approver in ["carol", "dave"] {
        approve_as(&dispatcher, &pending, approver).await;
    }
    let ran = run(&dispatcher, &call).await;
    assert_eq!(ran.result.model.status(), Status::Succeeded, "{ran:?}");
    let receipt = published()
        .verify(receipt_of(&ran).to_json().as_bytes())
        .unwrap();
    assert_eq!(receipt.required_by, ["outside-two"]);
    assert_eq!(receipt.approvals_required, Some(2));
}

#[tokio::test]
async fn a_receipt_names_the_rules_that_ask_of_the_arguments_a_person_edited() {
    let remote = Remote::new();
    let to_eve = r#"@id("to-eve") @approvers("1")
        permit(principal, action == Tools::Action::"send_message", resource)
          when { context.input.to == "eve@globex.example" };"#;
    let dispatcher = under_rules(&remote, &format!("{OUTSIDE_TWO}\n{to_eve}"));
    let call = message("m1", "bob@globex.example");
    let pending = pending_approval(&dispatcher, &call).await;
    assert_eq!(pending.preview.required_by, ["outside-two"]);
    let edited = serde_json::json!({ "to": "eve@globex.example", "text": "hello" });
    for approver in ["carol", "dave"] {
        let _ = dispatcher
            .approve_with_edits(
                &pending.approval_id,
                &pending.preview_sha256,
                &edited,
                approver,
                clock() + Duration::from_secs(3600),
            )
            .await
            .expect("the approval is recorded");
    }
    let ran = run(&dispatcher, &call).await;
    let code = ran.result.model.error().map(|error| error.code());
    assert_eq!(code, Some(ErrorCode::ApprovedWithChanges), "{ran:?}");
    assert_eq!(remote.all_requests(), 1, "the edited call ran");
    let receipt = published()
        .verify(receipt_of(&ran).to_json().as_bytes())
        .unwrap();
    assert!(receipt.edited_arguments_sha256.is_some(), "{receipt:?}");
    assert_eq!(receipt.required_by, ["outside-two", "to-eve"]);
}
