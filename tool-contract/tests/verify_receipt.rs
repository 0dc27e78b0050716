//! `tool-contract-verify-receipt`, run as an auditor would: on the files a redemption left,
//! with nothing but the published keys.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use time::OffsetDateTime;
use tool_contract::control::MemoryAuditLog;
use tool_contract::dispatch::{Dispatcher, HandlerContext, Task};
use tool_contract::providers::{Api, Correlation, ToolCall};
use tool_contract::results::{KeySet, ReceiptSigner, SignedReceipt};
use tool_contract::{
    AuditKeys, CallContext, Principal, RawProvenance, RawResult, SecretKey, ToolContract,
    ToolFailure, ToolOutput,
};

/// Refund an order.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Refunded, effect = non_idempotent_write, operation = same_arguments, approval = by_caller,
                reconcile = manual, source_label = "desk", producer_revision = "desk-1")]
struct IssueRefund {
    /// The order.
    #[tool_contract(max_len = 16)]
    order_ref: String,
}

/// A refund made.
#[derive(Debug, serde::Serialize, ToolOutput)]
struct Refunded {
    #[tool_output(max_len = 16)]
    refund_ref: String,
}

const ARGUMENTS: &[u8] = br#"{"order_ref":"ORDER-7"}"#;

fn call() -> CallContext {
    let call = ToolCall {
        api: Api::OpenAiResponses,
        adapter_revision: tool_contract::providers::openai::ADAPTER
            .revision
            .to_owned(),
        response_id: Some("resp_1".into()),
        call_id: "call_1".into(),
        correlation: Correlation::Id,
        name: "issue_refund".into(),
        arguments: ARGUMENTS.to_vec(),
    };
    CallContext::new(call, "refund-ORDER-7").with_idempotency_key("refund-ORDER-7")
}

/// The receipt of one approved refund, and the signer's published keys.
async fn redeemed() -> (SignedReceipt, KeySet) {
    let since = OffsetDateTime::now_utc() - time::Duration::hours(1);
    let signer = ReceiptSigner::new("desk-1", [3; 32], since);
    let keys = KeySet::new([signer.published_key()]).unwrap();
    let dispatcher = Dispatcher::builder(
        tool_contract::registry![IssueRefund],
        AuditKeys::new(SecretKey::from([1; 32])),
    )
    .handler(|_: IssueRefund, _: HandlerContext| async {
        let output = br#"{"refund_ref":"R-1"}"#.to_vec();
        let provenance = RawProvenance::new("desk-1", "2026-12-01T00:00:00Z");
        Ok::<_, ToolFailure>(RawResult::new(output, provenance))
    })
    .audit_sink(Arc::new(MemoryAuditLog::new(SecretKey::from([2; 32]))))
    .approval_receipts(signer)
    .build()
    .unwrap();
    let principal = Principal::new("acme", "alice");
    let asked = dispatcher
        .dispatch(&principal, &call(), &Task::unlimited())
        .await;
    let pending = asked.pending_approval.expect("it waits for a person");
    let _ = dispatcher
        .approve_pending(&pending, "carol", std::time::Duration::from_secs(600))
        .await
        .unwrap();
    let ran = dispatcher
        .dispatch(&principal, &call(), &Task::unlimited())
        .await;
    let receipt = ran
        .result
        .audit
        .approval
        .and_then(|approval| approval.receipt);
    (receipt.expect("a receipt"), keys)
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn verify(arguments: &[&Path], flags: &[&str]) -> (i32, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_tool-contract-verify-receipt"))
        .args(flags)
        .args(arguments)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    (output.status.code().unwrap_or(-1), text)
}

/// The command on `receipt`, asked whether it covers alice's call with `arguments`.
fn verify_call(receipt: &Path, keys: &str, arguments: &Path) -> (i32, String) {
    let call = [
        "--keys",
        keys,
        "--tenant",
        "acme",
        "--subject",
        "alice",
        "--arguments",
        arguments.to_str().unwrap(),
    ];
    verify(&[receipt], &call)
}

fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tc-receipt-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test]
async fn the_command_verifies_a_receipt_and_the_call_it_covers() {
    let (receipt, keys) = redeemed().await;
    let dir = scratch("good");
    let receipt_path = write(&dir, "receipt.json", receipt.to_json().as_bytes());
    let keys_path = write(&dir, "keys.json", keys.to_json().as_bytes());
    let arguments_path = write(&dir, "arguments.json", ARGUMENTS);
    let keys_flag = keys_path.to_str().unwrap();
    let (code, text) = verify_call(&receipt_path, keys_flag, &arguments_path);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("approved by carol"), "{text}");
    assert!(text.contains("covers the call of acme/alice"), "{text}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn the_command_refuses_a_changed_receipt_and_another_call() {
    let (receipt, keys) = redeemed().await;
    let dir = scratch("bad");
    let keys_path = write(&dir, "keys.json", keys.to_json().as_bytes());
    let keys_flag = keys_path.to_str().unwrap();
    let changed = receipt.to_json().replace("carol", "carl!");
    let changed_path = write(&dir, "changed.json", changed.as_bytes());
    let (code, text) = verify(&[&changed_path], &["--keys", keys_flag]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("refused: the signature does not verify"),
        "{text}"
    );

    let receipt_path = write(&dir, "receipt.json", receipt.to_json().as_bytes());
    let other = write(&dir, "other.json", br#"{"order_ref":"ORDER-8"}"#);
    let (code, text) = verify_call(&receipt_path, keys_flag, &other);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("does not cover this call"), "{text}");

    let (code, text) = verify(&[&receipt_path], &["--keys", keys_flag, "--tenant", "acme"]);
    assert_eq!(code, 2, "a call given in part is a usage error: {text}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// The README's auditor command on a receipt the refund desk's replay printed (two
/// supervisors, each signing with a passkey) and the two files it published.
#[cfg(feature = "passkeys")]
#[test]
fn the_command_verifies_each_passkey_of_a_signed_receipt_with_the_approver_keys() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/fixtures");
    let run = |receipt: &Path, approvers: Option<&Path>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_tool-contract-verify-receipt"));
        command
            .arg("--keys")
            .arg(fixtures.join("published-keys.json"));
        if let Some(approvers) = approvers {
            command.arg("--approvers").arg(approvers);
        }
        command.arg(receipt).output().expect("the command runs")
    };
    let receipt = fixtures.join("signed-receipt.json");
    let approvers = fixtures.join("approver-keys.json");
    let verified = run(&receipt, Some(&approvers));
    let stdout = String::from_utf8_lossy(&verified.stdout);
    assert!(verified.status.success(), "{stdout}");
    assert!(
        stdout.contains("rule: 2 different approvers signing with passkeys"),
        "{stdout}"
    );
    assert_eq!(
        stdout
            .matches("signed with their passkey (verified)")
            .count(),
        2
    );
    // Without the approver keys nobody takes the signatures on trust.
    let alone = run(&receipt, None);
    assert_eq!(alone.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&alone.stdout).contains("approver keys"));
    // One approver's key swapped for the other's: refused.
    let text = std::fs::read_to_string(&approvers).unwrap();
    let keys: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut swapped = keys.clone();
    swapped["approvers"][0]["credentials"][0]["public_key"] =
        keys["approvers"][1]["credentials"][0]["public_key"].clone();
    let swapped_path =
        std::env::temp_dir().join(format!("approver-keys-swapped-{}.json", std::process::id()));
    std::fs::write(&swapped_path, swapped.to_string()).unwrap();
    let refused = run(&receipt, Some(&swapped_path));
    let _ = std::fs::remove_file(&swapped_path);
    assert_eq!(refused.status.code(), Some(1));
}
