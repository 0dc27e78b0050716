//! Audit checkpoints anyone can verify: the log signs its tree head (an RFC 9162 Merkle root
//! over its records, with the keyed chain's head there) every N records and at rotation, and
//! an auditor holding those heads and the service's published key alone finds an edit, a
//! truncation or a rollback below any head they kept.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tool_contract::Status;
use tool_contract::control::{
    AuditLogError, JsonLinesAuditLog, PostgresAuditLog, SignedTreeHead, TreeHeadError,
};
use tool_contract::results::{KeySet, ReceiptSigner};
use tool_contract_tests::postgres::Schema;
use tool_contract_tests::tracker::{Remote, audit_key, builder, create, run};

fn signer() -> ReceiptSigner {
    let since = time::OffsetDateTime::now_utc() - Duration::from_secs(3600);
    ReceiptSigner::new("desk-1", [0x5e; 32], since)
}

/// The published key set: all an auditor holds besides the heads.
fn public_keys() -> KeySet {
    KeySet::from_json(
        KeySet::new([signer().published_key()])
            .unwrap()
            .to_json()
            .as_bytes(),
    )
    .unwrap()
}

struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn dir(test: &str) -> Dir {
    let dir = std::env::temp_dir().join(format!("tree-heads-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    Dir(dir)
}

/// `calls` calls audited to a file log signing its tree head every `every` records.
async fn file_log(dir: &Dir, calls: usize, every: u64) -> PathBuf {
    let path = dir.0.join("audit.jsonl");
    append_calls(&path, "k", calls, Some(every)).await;
    path
}

/// Opens the log at `path` (signing its tree heads every `every` records, if given) and
/// audits `calls` calls of keys `{prefix}{n}` to it.
async fn append_calls(path: &Path, prefix: &str, calls: usize, every: Option<u64>) {
    let mut log = JsonLinesAuditLog::open(path, audit_key()).unwrap();
    if let Some(every) = every {
        log = log.sign_tree_heads(signer(), every).unwrap();
    }
    let log = Arc::new(log);
    let remote = Remote::new();
    let dispatcher = builder(&remote).audit_sink(log).build().unwrap();
    for n in 0..calls {
        let key = format!("{prefix}{n}");
        let dispatch = run(&dispatcher, &create("c", "Printer", &key, &key)).await;
        assert_eq!(dispatch.result.model.status(), Status::Succeeded);
        assert!(dispatch.audit_error.is_none(), "{:?}", dispatch.audit_error);
    }
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut file = path.as_os_str().to_owned();
    file.push(suffix);
    PathBuf::from(file)
}

fn held_error(verdict: Result<impl std::fmt::Debug, AuditLogError>) -> TreeHeadError {
    match verdict {
        Err(AuditLogError::TreeHeads(error)) => error,
        other => panic!("the log held: {other:?}"),
    }
}

#[tokio::test]
async fn a_log_signs_its_tree_head_every_n_records_and_verifies_with_public_keys_alone() {
    let dir = dir("verifies");
    let path = file_log(&dir, 7, 3).await;
    let heads = JsonLinesAuditLog::tree_heads(&path).unwrap();
    let sizes: Vec<u64> = heads.iter().map(|head| head.tree_head.tree_size).collect();
    assert_eq!(sizes, [0, 3, 6], "one at opening, then every three records");
    let held = JsonLinesAuditLog::verify_published(&path, &heads, &public_keys()).unwrap();
    assert_eq!(held.records, 7);
    assert_eq!(held.verified_through, 6);
    // The head names the keyed chain where it stands: the operator's check meets the public one.
    let chain = JsonLinesAuditLog::verify(&path, &audit_key(), None).unwrap();
    assert_eq!(chain.records, 7);
    assert_eq!(heads[2].tree_head.chain_head.records, 6);
}

#[tokio::test]
async fn a_rotation_signs_the_head_of_the_segment_it_closes() {
    let dir = dir("rotation");
    let path = dir.0.join("audit.jsonl");
    let log = JsonLinesAuditLog::open(&path, audit_key())
        .unwrap()
        .sign_tree_heads(signer(), 100)
        .unwrap();
    let log = Arc::new(log);
    let remote = Remote::new();
    let dispatcher = builder(&remote).audit_sink(log.clone()).build().unwrap();
    for key in ["k1", "k2"] {
        run(&dispatcher, &create("c", "Printer", key, key)).await;
    }
    log.rotate().unwrap();
    run(&dispatcher, &create("c", "Printer", "k3", "k3")).await;
    let heads = JsonLinesAuditLog::tree_heads(&path).unwrap();
    let sizes: Vec<u64> = heads.iter().map(|head| head.tree_head.tree_size).collect();
    assert_eq!(sizes, [0, 2], "the closed segment's end is signed");
    let held = JsonLinesAuditLog::verify_published(&path, &heads, &public_keys()).unwrap();
    assert_eq!(held.records, 4, "two calls, the segment start, one call");
}

#[tokio::test]
async fn an_edited_record_below_a_signed_head_is_refused() {
    let dir = dir("edited");
    let path = file_log(&dir, 4, 2).await;
    let heads = JsonLinesAuditLog::tree_heads(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    // One digit of the first record's model result, its chain digests left alone.
    let edited = text.replacen("\"number\":241", "\"number\":240", 1);
    assert!(edited != text, "the edit changed nothing");
    std::fs::write(&path, edited).unwrap();
    let error = held_error(JsonLinesAuditLog::verify_published(
        &path,
        &heads,
        &public_keys(),
    ));
    assert_eq!(error, TreeHeadError::Altered { tree_size: 2 });
}

#[tokio::test]
async fn a_truncated_log_is_refused_against_a_head_it_no_longer_reaches() {
    let dir = dir("truncated");
    let path = file_log(&dir, 4, 2).await;
    let heads = JsonLinesAuditLog::tree_heads(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let kept: String = text
        .lines()
        .take(3)
        .map(|line| format!("{line}\n"))
        .collect();
    std::fs::write(&path, kept).unwrap();
    let error = held_error(JsonLinesAuditLog::verify_published(
        &path,
        &heads,
        &public_keys(),
    ));
    assert_eq!(
        error,
        TreeHeadError::Truncated {
            records: 3,
            tree_size: 4
        }
    );
}

#[tokio::test]
async fn a_log_rolled_back_and_written_again_is_refused() {
    let dir = dir("rolled-back");
    let path = dir.0.join("audit.jsonl");
    append_calls(&path, "k", 2, Some(2)).await;
    // The operator's backup at two records: the log and its keyed head.
    let backup = [
        std::fs::read(&path).unwrap(),
        std::fs::read(with_suffix(&path, ".head")).unwrap(),
    ];
    append_calls(&path, "later", 2, Some(2)).await;
    let heads = JsonLinesAuditLog::tree_heads(&path).unwrap();
    assert_eq!(heads.last().unwrap().tree_head.tree_size, 4);
    // The backup restored, and two other records written with the audit key.
    std::fs::write(&path, &backup[0]).unwrap();
    std::fs::write(with_suffix(&path, ".head"), &backup[1]).unwrap();
    append_calls(&path, "other", 2, None).await;
    assert_eq!(
        JsonLinesAuditLog::verify(&path, &audit_key(), None)
            .unwrap()
            .records,
        4,
        "the keyed chain alone is whole again"
    );
    let error = held_error(JsonLinesAuditLog::verify_published(
        &path,
        &heads,
        &public_keys(),
    ));
    assert_eq!(error, TreeHeadError::Altered { tree_size: 4 });
    // Rolled back without writing again, it is a truncation below the head.
    std::fs::write(&path, &backup[0]).unwrap();
    let error = held_error(JsonLinesAuditLog::verify_published(
        &path,
        &heads,
        &public_keys(),
    ));
    assert_eq!(
        error,
        TreeHeadError::Truncated {
            records: 2,
            tree_size: 4
        }
    );
}

#[tokio::test]
async fn a_head_signed_by_an_unpublished_key_or_edited_is_refused() {
    let dir = dir("forged");
    let path = file_log(&dir, 2, 2).await;
    let mut heads = JsonLinesAuditLog::tree_heads(&path).unwrap();
    let other =
        KeySet::new([
            ReceiptSigner::new("desk-1", [0x11; 32], time::OffsetDateTime::UNIX_EPOCH)
                .published_key(),
        ])
        .unwrap();
    let error = held_error(JsonLinesAuditLog::verify_published(&path, &heads, &other));
    assert!(
        matches!(error, TreeHeadError::Signature { .. }),
        "{error:?}"
    );
    heads[1].tree_head.tree_size = 1;
    let error = held_error(JsonLinesAuditLog::verify_published(
        &path,
        &heads,
        &public_keys(),
    ));
    assert!(
        matches!(error, TreeHeadError::Signature { tree_size: 1, .. }),
        "{error:?}"
    );
    let text = heads[0].to_json();
    assert_eq!(
        SignedTreeHead::from_json(text.as_bytes()).unwrap(),
        heads[0]
    );
}

/// A PostgreSQL stream of `calls` calls, signing every `every`: its store, stream and heads.
async fn postgres_stream(
    test: &str,
    calls: usize,
    every: u64,
) -> Option<(Schema, tool_contract::control::PostgresStore, String)> {
    let schema = Schema::new(test)?;
    let store = schema.store().await;
    let sink = PostgresAuditLog::new(&store, audit_key()).sign_tree_heads(signer(), every);
    let stream = sink.stream().to_owned();
    let remote = Remote::new();
    let dispatcher = builder(&remote)
        .store(Arc::new(store.clone()))
        .audit_sink(Arc::new(sink))
        .build()
        .unwrap();
    for n in 0..calls {
        let key = format!("k{n}");
        let dispatch = run(&dispatcher, &create("c", "Printer", &key, &key)).await;
        assert!(dispatch.audit_error.is_none(), "{:?}", dispatch.audit_error);
    }
    Some((schema, store, stream))
}

#[tokio::test]
async fn a_postgres_stream_verifies_up_to_its_heads_and_a_rollback_below_one_is_refused() {
    let Some((schema, store, stream)) = postgres_stream("tree_heads_pg", 5, 2).await else {
        return;
    };
    let heads = PostgresAuditLog::tree_heads(&store, &stream).await.unwrap();
    let sizes: Vec<u64> = heads.iter().map(|head| head.tree_head.tree_size).collect();
    assert_eq!(sizes, [2, 4]);
    let held = PostgresAuditLog::verify_published(&store, &stream, &heads, &public_keys())
        .await
        .unwrap();
    assert_eq!((held.records, held.verified_through), (5, 4));
    // An administrator cuts the stream back to three records, its sealed head row with it.
    let name = &schema.name;
    schema.execute(&format!(
        "SET session_replication_role = replica; \
         DELETE FROM {name}.tool_contract_audit WHERE seq > 3; \
         DELETE FROM {name}.tool_contract_audit_tree_heads;"
    ));
    let error = held_error(
        PostgresAuditLog::verify_published(&store, &stream, &heads, &public_keys()).await,
    );
    assert_eq!(
        error,
        TreeHeadError::Truncated {
            records: 3,
            tree_size: 4
        }
    );
}

#[tokio::test]
async fn one_record_is_proven_in_the_log_under_a_signed_head_without_the_rest() {
    let dir = dir("inclusion");
    let path = file_log(&dir, 5, 5).await;
    let heads = JsonLinesAuditLog::tree_heads(&path).unwrap();
    let head = heads.last().unwrap();
    head.verify_signature(&public_keys()).unwrap();
    // The operator proves record 3 to someone holding only the head and the record.
    let records = JsonLinesAuditLog::records(&path).unwrap();
    let lines: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
    let proof = tool_contract::control::MerkleTree::inclusion_proof(&lines, 2).unwrap();
    assert_eq!(proof.len(), 3, "log2 of five records, rounded up");
    assert!(head.tree_head.includes(&records[2], 2, &proof));
    assert!(!head.tree_head.includes(&records[3], 2, &proof));
    let mut edited = records[2].clone();
    edited[10] ^= 1;
    assert!(!head.tree_head.includes(&edited, 2, &proof));
}

#[tokio::test]
async fn a_published_tree_heads_file_that_is_not_one_is_refused_with_a_reason() {
    let dir = dir("garbled");
    let path = file_log(&dir, 2, 2).await;
    let mut heads_file = path.as_os_str().to_owned();
    heads_file.push(".tree-heads");
    let mut text = std::fs::read(&heads_file).unwrap();
    text.extend_from_slice(b"{\"tree_head\":{}}\n\xff\n");
    std::fs::write(&heads_file, text).unwrap();
    let read = JsonLinesAuditLog::tree_heads(&path);
    assert!(
        matches!(read, Err(AuditLogError::TreeHeadFailed(_))),
        "{read:?}"
    );
    for garbage in [&b""[..], b"[]", b"{\"tree_head\":1,\"signature\":\"\"}"] {
        assert!(SignedTreeHead::from_json(garbage).is_err());
    }
}

/// The page of a log's newest records (the console's default audit page), held against the
/// newest signed tree head with the published keys and the audit key: nothing else of the
/// log is read.
async fn page_against_head(
    log: &dyn tool_contract::control::AuditHistory,
) -> Result<Option<tool_contract::control::PageAgainstHead>, TreeHeadError> {
    let pages = log
        .read_page(&tool_contract::control::PageEnds::new(), 100)
        .await
        .unwrap();
    pages[0].against_tree_head(&public_keys(), &audit_key())
}

#[tokio::test]
async fn a_page_of_the_newest_records_holds_against_the_newest_signed_head() {
    let dir = dir("page-holds");
    let path = file_log(&dir, 7, 3).await;
    let log = JsonLinesAuditLog::open(&path, audit_key()).unwrap();
    assert_eq!(
        page_against_head(&log).await,
        Ok(Some(tool_contract::control::PageAgainstHead::Held {
            tree_size: 6
        }))
    );
}

#[tokio::test]
async fn a_page_finds_a_postgres_stream_cut_at_either_end() {
    let Some((schema, store, _)) = postgres_stream("page_cut_pg", 5, 2).await else {
        return;
    };
    let log = PostgresAuditLog::new(&store, audit_key());
    assert_eq!(
        page_against_head(&log).await,
        Ok(Some(tool_contract::control::PageAgainstHead::Held {
            tree_size: 4
        }))
    );
    let name = &schema.name;
    schema.execute(&format!(
        "SET session_replication_role = replica; \
         DELETE FROM {name}.tool_contract_audit WHERE seq <= 1;"
    ));
    assert_eq!(
        page_against_head(&log).await,
        Err(TreeHeadError::CutFromTheBeginning {
            oldest: 2,
            tree_size: 4
        })
    );
    schema.execute(&format!(
        "SET session_replication_role = replica; \
         DELETE FROM {name}.tool_contract_audit WHERE seq > 3; \
         UPDATE {name}.tool_contract_audit_heads SET records = 3;"
    ));
    let cut = page_against_head(&log).await;
    assert!(
        matches!(
            cut,
            Err(TreeHeadError::Truncated { tree_size: 4, .. }
                | TreeHeadError::CutFromTheBeginning { .. })
        ),
        "{cut:?}"
    );
}
