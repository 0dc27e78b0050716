//! Issue 4, point 8: the audit log is a hash chain whose verifier finds the first broken link.

use std::io::BufReader;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::json;
use tool_contract::dispatch::{
    AuditLogError, AuditSink, BrokenLink, JsonLinesAuditLog, Task, verify_chain,
};
use tool_contract_tests::tracker::{self, Remote, builder, context};

fn temp_log(name: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!(
        "tool-contract-audit-{name}-{}.jsonl",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&path);
    path
}

async fn write_log(path: &PathBuf, calls: usize) {
    let remote = Remote::new();
    let log = Arc::new(JsonLinesAuditLog::open(path).unwrap());
    let dispatcher = builder(&remote).audit_sink(log.clone()).build().unwrap();
    for index in 0..calls {
        let call = context(
            &format!("c{index}"),
            "read_doc",
            json!({ "doc_id": format!("d{index}") }),
            "op",
            "k",
        );
        let dispatch = dispatcher
            .dispatch(&tracker::alice(), &call, &Task::unlimited())
            .await;
        assert!(dispatch.audit_error.is_none());
    }
}

fn verify(path: &PathBuf) -> Result<tool_contract::dispatch::ChainHead, AuditLogError> {
    verify_chain(BufReader::new(std::fs::File::open(path).unwrap()))
}

fn broken_at(path: &PathBuf) -> (u64, BrokenLink) {
    match verify(path) {
        Err(AuditLogError::Broken { line, link }) => (line, link),
        other => panic!("expected a broken chain, got {other:?}"),
    }
}

fn edit_lines(path: &PathBuf, edit: impl FnOnce(&mut Vec<String>)) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    edit(&mut lines);
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

#[tokio::test(start_paused = true)]
async fn the_audit_log_is_a_chain_that_verifies_and_goes_on_after_reopening() {
    let path = temp_log("chain");
    write_log(&path, 3).await;
    let head = verify(&path).unwrap();
    assert_eq!(head.records, 3);
    write_log(&path, 2).await;
    let head = verify(&path).unwrap();
    assert_eq!(head.records, 5);
    let first: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        first["prev_sha256"],
        tool_contract::dispatch::GENESIS_SHA256
    );
    assert_eq!(first["seq"], 1);
    assert!(first["model"]["status"].is_string());
    assert!(first["audit"]["binding"]["request_sha256"].is_string());
    let _ = std::fs::remove_file(&path);
}

#[tokio::test(start_paused = true)]
async fn an_edited_record_is_the_first_broken_link() {
    let path = temp_log("edited");
    write_log(&path, 4).await;
    edit_lines(&path, |lines| {
        lines[1] = lines[1].replace("document d1", "document d9")
    });
    assert_eq!(broken_at(&path), (2, BrokenLink::RecordDigest));
    let _ = std::fs::remove_file(&path);
}

#[tokio::test(start_paused = true)]
async fn a_removed_record_breaks_the_sequence() {
    let path = temp_log("removed");
    write_log(&path, 4).await;
    edit_lines(&path, |lines| {
        lines.remove(1);
    });
    assert_eq!(broken_at(&path), (2, BrokenLink::Sequence));
    let _ = std::fs::remove_file(&path);
}

#[tokio::test(start_paused = true)]
async fn a_rewritten_record_with_a_fresh_digest_breaks_the_next_link() {
    let path = temp_log("rewritten");
    write_log(&path, 4).await;
    edit_lines(&path, |lines| {
        let mut record: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&lines[1]).unwrap();
        record.remove("record_sha256");
        record["model"]["data"]["text"] = json!("forged");
        let content =
            tool_contract::json::canonical::to_vec(&serde_json::Value::Object(record.clone()))
                .unwrap();
        use sha2::Digest;
        let digest: String = sha2::Sha256::digest(&content)
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect();
        record.insert("record_sha256".to_owned(), json!(digest));
        lines[1] = String::from_utf8(
            tool_contract::json::canonical::to_vec(&serde_json::Value::Object(record)).unwrap(),
        )
        .unwrap();
    });
    assert_eq!(broken_at(&path), (3, BrokenLink::PreviousDigest));
    let _ = std::fs::remove_file(&path);
}

#[tokio::test(start_paused = true)]
async fn garbage_or_a_duplicate_member_is_malformed() {
    let path = temp_log("garbage");
    write_log(&path, 2).await;
    edit_lines(&path, |lines| lines[1] = "{not json".to_owned());
    assert_eq!(broken_at(&path), (2, BrokenLink::Malformed));
    edit_lines(&path, |lines| {
        lines[1] = lines[0].replacen("{", "{\"seq\":2,", 1)
    });
    assert_eq!(broken_at(&path), (2, BrokenLink::Malformed));
    let _ = std::fs::remove_file(&path);
}

#[tokio::test(start_paused = true)]
async fn a_broken_log_is_not_opened_for_appending() {
    let path = temp_log("refused");
    write_log(&path, 2).await;
    edit_lines(&path, |lines| {
        lines[0] = lines[0].replace("document d0", "document dX")
    });
    assert!(matches!(
        JsonLinesAuditLog::open(&path),
        Err(AuditLogError::Broken {
            line: 1,
            link: BrokenLink::RecordDigest
        })
    ));
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_sink_that_fails_is_reported_and_the_result_still_stands() {
    struct Failing;
    impl AuditSink for Failing {
        fn append(
            &self,
            _: &tool_contract::ModelResult,
            _: &tool_contract::results::ProtectedAudit,
        ) -> Result<(), AuditLogError> {
            Err(AuditLogError::Io(std::io::Error::other("disk full")))
        }
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let remote = Remote::new();
    let dispatcher = builder(&remote)
        .audit_sink(Arc::new(Failing))
        .build()
        .unwrap();
    let call = context("c1", "read_doc", json!({ "doc_id": "d" }), "op", "k");
    let dispatch =
        runtime.block_on(dispatcher.dispatch(&tracker::alice(), &call, &Task::unlimited()));
    assert!(matches!(dispatch.audit_error, Some(AuditLogError::Io(_))));
    assert_eq!(
        dispatch.result.model.status(),
        tool_contract::Status::Succeeded
    );
}

/// Every step, in the order the dispatcher took it.
#[derive(Clone, Default)]
struct Steps(Arc<std::sync::Mutex<Vec<&'static str>>>);

impl Steps {
    fn push(&self, step: &'static str) {
        self.0.lock().unwrap().push(step);
    }
}

struct RecordingLedger(tool_contract::dispatch::MemoryLedger, Steps);

impl tool_contract::dispatch::Ledger for RecordingLedger {
    fn claim<'a>(
        &'a self,
        claim: &'a tool_contract::dispatch::ledger::Claim,
    ) -> tool_contract::dispatch::ledger::LedgerFuture<'a, tool_contract::dispatch::ledger::Claimed>
    {
        self.1.push("claim");
        self.0.claim(claim)
    }
    fn advance<'a>(
        &'a self,
        step: &'a tool_contract::dispatch::ledger::Advance,
    ) -> tool_contract::dispatch::ledger::LedgerFuture<'a, tool_contract::dispatch::ledger::Advanced>
    {
        self.1.push("ledger record");
        self.0.advance(step)
    }
    fn release<'a>(
        &'a self,
        key: &'a str,
        owner: &'a str,
    ) -> tool_contract::dispatch::ledger::LedgerFuture<'a, bool> {
        self.0.release(key, owner)
    }
    fn get<'a>(
        &'a self,
        key: &'a str,
    ) -> tool_contract::dispatch::ledger::LedgerFuture<
        'a,
        Option<tool_contract::dispatch::ledger::Record>,
    > {
        self.0.get(key)
    }
    fn purge_expired(&self, now_ms: u64) -> tool_contract::dispatch::ledger::LedgerFuture<'_, u64> {
        self.0.purge_expired(now_ms)
    }
}

struct RecordingSink(Steps);

impl AuditSink for RecordingSink {
    fn append(
        &self,
        _: &tool_contract::ModelResult,
        _: &tool_contract::results::ProtectedAudit,
    ) -> Result<(), AuditLogError> {
        self.0.push("audit");
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn a_write_is_audited_before_its_ledger_record() {
    let steps = Steps::default();
    let remote = Remote::new();
    let dispatcher = builder(&remote)
        .ledger(Arc::new(RecordingLedger(Default::default(), steps.clone())))
        .audit_sink(Arc::new(RecordingSink(steps.clone())))
        .build()
        .unwrap();
    let call = context(
        "c1",
        "create_issue",
        json!({ "title": "t", "body": "b" }),
        "op",
        "k",
    );
    let dispatch = dispatcher
        .dispatch(&tracker::alice(), &call, &Task::unlimited())
        .await;
    assert_eq!(
        dispatch.result.model.status(),
        tool_contract::Status::Succeeded
    );
    assert_eq!(
        *steps.0.lock().unwrap(),
        ["claim", "audit", "ledger record"]
    );
}
