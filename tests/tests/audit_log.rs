//! Issue 4, point 8, and issue 14, finding 6: the audit log is a keyed chain with one writer
//! per file, a checkpointed head, a torn tail moved aside and linked segments; its verifier
//! finds the first broken link.

use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use tool_contract::control::{
    AuditLogError, AuditSink, BrokenLink, ChainHead, JsonLinesAuditLog, MemoryAuditLog,
    verify_chain,
};
use tool_contract::dispatch::Task;
use tool_contract_tests::tracker::{self, Remote, audit_key, builder, context};

/// `audit.jsonl` in a directory of its own, emptied.
fn temp_log(name: &str) -> PathBuf {
    let directory =
        std::env::temp_dir().join(format!("tool-contract-audit-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&directory);
    std::fs::create_dir_all(&directory).unwrap();
    directory.join("audit.jsonl")
}

fn remove(path: &Path) {
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

fn open(path: &Path) -> Arc<JsonLinesAuditLog> {
    Arc::new(JsonLinesAuditLog::open(path, audit_key()).unwrap())
}

/// `calls` reads dispatched with `log` as the sink.
async fn write_calls(log: &Arc<JsonLinesAuditLog>, calls: usize) {
    tracker::dispatch_reads(log.clone(), calls).await;
}

/// Opens the log at `path`, writes `calls`, and closes it.
async fn write_log(path: &Path, calls: usize) {
    write_calls(&open(path), calls).await;
}

fn verify(path: &Path) -> Result<ChainHead, AuditLogError> {
    verify_chain(
        BufReader::new(std::fs::File::open(path).unwrap()),
        &audit_key(),
    )
}

fn broken_at(result: Result<impl std::fmt::Debug, AuditLogError>) -> (u64, BrokenLink) {
    match result {
        Err(AuditLogError::Broken { line, link }) => (line, link),
        other => panic!("expected a broken chain, got {other:?}"),
    }
}

fn lines(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().map(str::to_owned).collect()
}

fn edit_lines(path: &Path, edit: impl FnOnce(&mut Vec<String>)) {
    let mut lines = lines(path);
    edit(&mut lines);
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

fn to_hex(bytes: impl AsRef<[u8]>) -> String {
    bytes
        .as_ref()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

fn record(line: &str) -> Value {
    serde_json::from_str(line).unwrap()
}

#[tokio::test(start_paused = true)]
async fn the_audit_log_is_a_chain_that_verifies_and_goes_on_after_reopening() {
    let path = temp_log("chain");
    write_log(&path, 3).await;
    assert_eq!(verify(&path).unwrap().records, 3);
    write_log(&path, 2).await;
    let head = verify(&path).unwrap();
    assert_eq!(head.records, 5);
    assert_eq!(
        JsonLinesAuditLog::verify(&path, &audit_key(), Some(&head)).unwrap(),
        head
    );
    let first = record(&lines(&path)[0]);
    assert_eq!(first["prev_sha256"], tool_contract::control::GENESIS_SHA256);
    assert_eq!(first["seq"], 1);
    assert!(first["model"]["status"].is_string());
    assert!(first["audit"]["binding"]["request_sha256"].is_string());
    remove(&path);
}

#[tokio::test(start_paused = true)]
async fn an_edited_record_is_the_first_broken_link() {
    let path = temp_log("edited");
    write_log(&path, 4).await;
    edit_lines(&path, |lines| {
        lines[1] = lines[1].replace("document d1", "document d9")
    });
    assert_eq!(broken_at(verify(&path)), (2, BrokenLink::RecordDigest));
    remove(&path);
}

#[tokio::test(start_paused = true)]
async fn a_removed_record_breaks_the_sequence() {
    let path = temp_log("removed");
    write_log(&path, 4).await;
    edit_lines(&path, |lines| {
        lines.remove(1);
    });
    assert_eq!(broken_at(verify(&path)), (2, BrokenLink::Sequence));
    remove(&path);
}

/// The line `line` with its model's text replaced and `record_sha256` recomputed as a plain
/// SHA-256 of the rest, as whoever rewrites a record without the key can.
fn forged(line: &str) -> String {
    let mut record: serde_json::Map<String, Value> = serde_json::from_str(line).unwrap();
    record.remove("record_sha256");
    let data = record["model"]["data"]["text"].clone();
    assert!(data.is_string(), "{data}");
    record["model"]["data"]["text"] = json!("forged");
    let canonical = |record: &serde_json::Map<String, Value>| {
        tool_contract::json::canonical::to_vec(&Value::Object(record.clone())).unwrap()
    };
    use sha2::Digest;
    let digest = to_hex(sha2::Sha256::digest(canonical(&record)));
    record.insert("record_sha256".to_owned(), json!(digest));
    String::from_utf8(canonical(&record)).unwrap()
}

#[tokio::test(start_paused = true)]
async fn the_last_record_rewritten_with_a_recomputed_plain_sha256_does_not_verify() {
    let path = temp_log("rewritten");
    write_log(&path, 4).await;
    edit_lines(&path, |lines| lines[3] = forged(&lines[3]));
    assert_eq!(broken_at(verify(&path)), (4, BrokenLink::RecordDigest));
    assert_eq!(
        broken_at(JsonLinesAuditLog::open(&path, audit_key())),
        (4, BrokenLink::RecordDigest)
    );
    remove(&path);
}

#[tokio::test(start_paused = true)]
async fn records_dropped_off_the_tail_show_against_the_checkpoint_and_an_exported_head() {
    let path = temp_log("dropped");
    let log = open(&path);
    write_calls(&log, 4).await;
    let exported = log.head();
    drop(log);
    edit_lines(&path, |lines| lines.truncate(2));
    // What is left is a chain of its own, but not the one the checkpoint sealed.
    assert_eq!(verify(&path).unwrap().records, 2);
    let behind = |result: Result<_, AuditLogError>| match result {
        Err(AuditLogError::BehindCheckpoint { checkpoint, found }) => (checkpoint, found.records),
        other => panic!("expected the checkpoint to show it, got {other:?}"),
    };
    assert_eq!(
        behind(JsonLinesAuditLog::open(&path, audit_key()).map(drop)),
        (exported.clone(), 2)
    );
    assert_eq!(
        behind(JsonLinesAuditLog::verify(&path, &audit_key(), None).map(drop)).1,
        2
    );
    // Without the checkpoint the log does not open, and a head kept elsewhere still shows it.
    std::fs::remove_file(path.with_file_name("audit.jsonl.head")).unwrap();
    assert!(matches!(
        JsonLinesAuditLog::open(&path, audit_key()),
        Err(AuditLogError::Checkpoint)
    ));
    assert_eq!(
        behind(JsonLinesAuditLog::verify(&path, &audit_key(), Some(&exported)).map(drop)).1,
        2
    );
    remove(&path);
}

#[tokio::test(start_paused = true)]
async fn a_second_writer_on_one_file_is_refused_and_the_chain_never_forks() {
    let path = temp_log("two-writers");
    let first = open(&path);
    assert!(matches!(
        JsonLinesAuditLog::open(&path, audit_key()),
        Err(AuditLogError::Locked { .. })
    ));
    write_calls(&first, 2).await;
    drop(first);
    // Once the first is closed, the file opens again and goes on.
    write_log(&path, 1).await;
    assert_eq!(
        JsonLinesAuditLog::verify(&path, &audit_key(), None)
            .unwrap()
            .records,
        3
    );
    remove(&path);
}

#[tokio::test(start_paused = true)]
async fn a_torn_last_line_is_moved_aside_and_recorded_in_the_chain() {
    let path = temp_log("torn");
    write_log(&path, 3).await;
    let whole = std::fs::read(&path).unwrap();
    let last = lines(&path)[2].clone();
    let torn = &last.as_bytes()[..last.len() / 2];
    let mut cut = whole.clone();
    cut.extend_from_slice(torn);
    std::fs::write(&path, &cut).unwrap();

    let log = open(&path);
    assert_eq!(log.head().records, 4);
    drop(log);
    let moved = path.with_file_name("audit.jsonl.torn-4");
    assert_eq!(std::fs::read(&moved).unwrap(), torn);
    let event = record(&lines(&path)[3]);
    assert_eq!(event["event"]["kind"], "tail_moved_aside");
    assert_eq!(event["event"]["bytes"], torn.len());
    assert_eq!(event["event"]["moved_to"], "audit.jsonl.torn-4");
    use sha2::Digest;
    assert_eq!(event["event"]["sha256"], to_hex(sha2::Sha256::digest(torn)));
    assert_eq!(
        JsonLinesAuditLog::verify(&path, &audit_key(), None)
            .unwrap()
            .records,
        4
    );
    remove(&path);
}

#[tokio::test(start_paused = true)]
async fn rotation_moves_segments_aside_that_verify_as_one_chain() {
    let path = temp_log("rotation");
    let log = Arc::new(
        JsonLinesAuditLog::open(&path, audit_key())
            .unwrap()
            .rotate_at(4096),
    );
    write_calls(&log, 6).await;
    log.rotate().unwrap();
    write_calls(&log, 1).await;
    let head = log.head();
    drop(log);
    let segment = |number: u32| path.with_file_name(format!("audit.jsonl.{number:06}"));
    assert!(segment(2).exists(), "several segments");
    // Each segment verifies on its own, and the whole log as one chain.
    let mut number = 1;
    while segment(number).exists() {
        verify_chain(
            std::fs::read(segment(number)).unwrap().as_slice(),
            &audit_key(),
        )
        .unwrap();
        number += 1;
    }
    let first_of_active = record(&lines(&path)[0]);
    assert_eq!(first_of_active["event"]["kind"], "segment_started");
    assert_eq!(first_of_active["event"]["reason"], "rotated");
    assert_eq!(
        first_of_active["event"]["previous_segment"],
        format!("audit.jsonl.{:06}", number - 1)
    );
    assert_eq!(
        JsonLinesAuditLog::verify(&path, &audit_key(), Some(&head)).unwrap(),
        head
    );
    // A segment taken away breaks the link to the next.
    std::fs::remove_file(segment(1)).unwrap();
    assert_eq!(
        broken_at(JsonLinesAuditLog::verify(&path, &audit_key(), None)),
        (1, BrokenLink::Sequence)
    );
    remove(&path);
}

#[tokio::test(start_paused = true)]
async fn a_file_emptied_under_the_log_goes_on_as_a_segment_that_says_so() {
    // What `copytruncate` rotation does: copy the file, then cut it to nothing.
    let path = temp_log("copytruncate");
    let log = open(&path);
    write_calls(&log, 2).await;
    let copy = path.with_file_name("audit.jsonl.copied");
    std::fs::copy(&path, &copy).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(0)
        .unwrap();
    write_calls(&log, 1).await;
    assert_eq!(log.head().records, 4);
    drop(log);
    let start = record(&lines(&path)[0]);
    assert_eq!(start["seq"], 3);
    assert_eq!(start["event"]["kind"], "segment_started");
    assert_eq!(start["event"]["reason"], "emptied_outside");
    // The copy ends where the new segment goes on, and the log opens again.
    let copied = verify_chain(std::fs::read(&copy).unwrap().as_slice(), &audit_key()).unwrap();
    assert_eq!(start["prev_sha256"], copied.head_sha256.as_str());
    assert_eq!(verify(&path).unwrap().records, 4);
    assert_eq!(open(&path).head().records, 4);
    remove(&path);
}

#[tokio::test(start_paused = true)]
async fn garbage_or_a_duplicate_member_is_malformed() {
    let path = temp_log("garbage");
    write_log(&path, 2).await;
    edit_lines(&path, |lines| lines[1] = "{not json".to_owned());
    assert_eq!(broken_at(verify(&path)), (2, BrokenLink::Malformed));
    edit_lines(&path, |lines| {
        lines[1] = lines[0].replacen("{", "{\"seq\":2,", 1)
    });
    assert_eq!(broken_at(verify(&path)), (2, BrokenLink::Malformed));
    remove(&path);
}

#[tokio::test(start_paused = true)]
async fn a_broken_log_is_not_opened_for_appending() {
    let path = temp_log("refused");
    write_log(&path, 2).await;
    edit_lines(&path, |lines| {
        lines[0] = lines[0].replace("document d0", "document dX")
    });
    assert_eq!(
        broken_at(JsonLinesAuditLog::open(&path, audit_key())),
        (1, BrokenLink::RecordDigest)
    );
    remove(&path);
}

#[test]
fn a_sink_that_fails_is_reported_and_the_result_still_stands() {
    struct Failing;
    impl AuditSink for Failing {
        fn append<'a>(
            &'a self,
            _: &'a tool_contract::ModelResult,
            _: &'a tool_contract::results::ProtectedAudit,
        ) -> tool_contract::control::AuditFuture<'a> {
            Box::pin(std::future::ready({
                Err(AuditLogError::Io(std::io::Error::other("disk full")))
            }))
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

struct RecordingSink(Steps);

impl AuditSink for RecordingSink {
    fn append<'a>(
        &'a self,
        _: &'a tool_contract::ModelResult,
        _: &'a tool_contract::results::ProtectedAudit,
    ) -> tool_contract::control::AuditFuture<'a> {
        Box::pin(std::future::ready({
            self.0.push("audit");
            Ok(())
        }))
    }
}

#[tokio::test(start_paused = true)]
async fn a_write_is_audited_before_its_ledger_record() {
    let steps = Steps::default();
    let remote = Remote::new();
    let dispatcher = builder(&remote)
        .store(Arc::new(tool_contract_tests::hooked::Hooked::new(
            Arc::new(tool_contract::control::MemoryStore::new()),
            {
                let steps = steps.clone();
                move |step| {
                    match step {
                        "claim" => steps.push("claim"),
                        "advance" => steps.push("ledger record"),
                        _ => {}
                    }
                    Ok(())
                }
            },
        )))
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

#[tokio::test(start_paused = true)]
async fn a_memory_log_holds_its_capacity_and_refuses_the_next_record() {
    let written = Arc::new(MemoryAuditLog::new(audit_key()));
    tracker::dispatch_reads(written.clone(), 1).await;
    let (model, audit) = written.records().pop().unwrap();

    let capped = MemoryAuditLog::new(audit_key()).with_capacity(2);
    capped.append(&model, &audit).await.unwrap();
    capped.append(&model, &audit).await.unwrap();
    assert!(matches!(
        capped.append(&model, &audit).await,
        Err(AuditLogError::Full { capacity: 2 })
    ));
    assert_eq!(capped.head().records, 2);
    assert_eq!(
        verify_chain(capped.lines().join("\n").as_bytes(), &audit_key()).unwrap(),
        capped.head()
    );
}

/// Fifty dispatches at once on a file log that signs a head at every sync: each answered
/// once its record is on disk, the chain whole, the last head over all fifty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_calls_at_once_are_each_answered_once_their_record_is_on_disk() {
    let path = temp_log("fifty");
    let log = Arc::new(
        JsonLinesAuditLog::open(&path, audit_key())
            .unwrap()
            .sign_tree_heads(tool_contract_tests::console::receipt_signer(), 1)
            .unwrap(),
    );
    let remote = Remote::new();
    let dispatcher = Arc::new(builder(&remote).audit_sink(log.clone()).build().unwrap());
    let calls = (0..50).map(|index| {
        let (dispatcher, path) = (dispatcher.clone(), path.clone());
        tokio::spawn(async move {
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
            assert!(dispatch.audit_error.is_none(), "{:?}", dispatch.audit_error);
            let on_disk = std::fs::read_to_string(&path).unwrap();
            assert!(
                on_disk.contains(&dispatch.result.audit.binding.call_binding_sha256),
                "answered before its record was written"
            );
        })
    });
    for call in calls.collect::<Vec<_>>() {
        call.await.unwrap();
    }
    assert_eq!(verify(&path).unwrap().records, 50);
    let heads = JsonLinesAuditLog::tree_heads(&path).unwrap();
    assert_eq!(heads.last().unwrap().tree_head.tree_size, 50);
    remove(&path);
}
