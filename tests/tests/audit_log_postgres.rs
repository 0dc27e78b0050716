//! Issue 16, point 4: the audit log on PostgreSQL. One chain per stream (one writer), each
//! stream's head sealed; the verifier finds an edited, deleted, reordered or appended record,
//! a truncated tail, a removed head and a removed stream. Skipped, saying so, without
//! `TOOL_CONTRACT_POSTGRES_URL`.

use std::sync::Arc;

use tool_contract::control::PostgresStore;
use tool_contract::control::{AuditLogError, BrokenLink, PostgresAuditLog, StreamHead};
use tool_contract::{SecretKey, Status};
use tool_contract_tests::postgres::Schema;
use tool_contract_tests::tracker::{Remote, audit_key, builder, create, run};

/// A log in a schema of its own holding three calls of one stream.
async fn log_of_three(test: &str) -> Option<(Schema, PostgresStore, StreamHead)> {
    let schema = Schema::new(test)?;
    let store = schema.store().await;
    let sink = Arc::new(PostgresAuditLog::new(&store, audit_key()));
    let remote = Remote::new();
    let dispatcher = builder(&remote)
        .store(Arc::new(store.clone()))
        .audit_sink(sink.clone())
        .build()
        .unwrap();
    for key in ["k1", "k2", "k3"] {
        let dispatch = run(&dispatcher, &create("c", "Printer", key, key)).await;
        assert_eq!(dispatch.result.model.status(), Status::Succeeded);
        assert!(dispatch.audit_error.is_none(), "{:?}", dispatch.audit_error);
    }
    let heads = PostgresAuditLog::verify(&store, &audit_key(), &[])
        .await
        .unwrap();
    assert_eq!(heads.len(), 1);
    assert_eq!(heads[0].stream, sink.stream());
    assert_eq!(heads[0].head.records, 3);
    Some((schema, store, heads[0].clone()))
}

/// Runs `sql` past the append-only trigger, as an administrator could.
fn tamper(schema: &Schema, sql: &str) {
    let sql = sql.replace("$S", &schema.name);
    schema.execute(&format!("SET session_replication_role = replica; {sql}"));
}

/// What the verifier says of the one stream, unwrapped.
async fn verdict(store: &PostgresStore, known: &[StreamHead]) -> AuditLogError {
    match PostgresAuditLog::verify(store, &audit_key(), known).await {
        Ok(heads) => panic!("the tampered log verified: {heads:?}"),
        Err(AuditLogError::Stream { error, .. }) => *error,
        Err(other) => panic!("not a stream's error: {other:?}"),
    }
}

#[tokio::test]
async fn every_call_is_a_record_of_its_stream_and_the_log_verifies() {
    let Some((schema, store, first)) = log_of_three("audit_pg_verifies").await else {
        return;
    };
    // A second writer is a second stream; both verify, each against its own head.
    let other = PostgresAuditLog::new(&store, audit_key());
    let remote = Remote::new();
    let dispatcher = builder(&remote)
        .store(Arc::new(store.clone()))
        .audit_sink(Arc::new(other))
        .build()
        .unwrap();
    run(&dispatcher, &create("c", "Scanner", "b", "k9")).await;
    let heads = PostgresAuditLog::verify(&store, &audit_key(), std::slice::from_ref(&first))
        .await
        .unwrap();
    assert_eq!(heads.len(), 2);
    assert!(heads.contains(&first));
    drop(schema);
}

#[tokio::test]
async fn the_audit_table_refuses_updates_and_deletes() {
    let Some((schema, _store, _)) = log_of_three("audit_pg_append_only").await else {
        return;
    };
    let url = schema.url.clone();
    let name = schema.name.clone();
    let refused = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(connection);
            let update = client
                .execute(
                    &format!("UPDATE {name}.tool_contract_audit SET record = '{{}}'"),
                    &[],
                )
                .await;
            let delete = client
                .execute(&format!("DELETE FROM {name}.tool_contract_audit"), &[])
                .await;
            (update.is_err(), delete.is_err())
        })
    })
    .join()
    .unwrap();
    assert_eq!(refused, (true, true));
}

#[tokio::test]
async fn an_edited_record_breaks_its_chain() {
    let Some((schema, store, _)) = log_of_three("audit_pg_edited").await else {
        return;
    };
    tamper(
        &schema,
        "UPDATE $S.tool_contract_audit SET record = replace(record, '\"k2\"', '\"k7\"') WHERE seq = 2",
    );
    let error = verdict(&store, &[]).await;
    assert!(
        matches!(
            error,
            AuditLogError::Broken {
                line: 2,
                link: BrokenLink::RecordDigest
            }
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_deleted_record_breaks_its_chain() {
    let Some((schema, store, _)) = log_of_three("audit_pg_deleted").await else {
        return;
    };
    tamper(&schema, "DELETE FROM $S.tool_contract_audit WHERE seq = 2");
    let error = verdict(&store, &[]).await;
    assert!(
        matches!(error, AuditLogError::Broken { line: 3, .. }),
        "{error:?}"
    );
}

#[tokio::test]
async fn reordered_records_break_their_chain() {
    let Some((schema, store, _)) = log_of_three("audit_pg_reordered").await else {
        return;
    };
    tamper(
        &schema,
        "UPDATE $S.tool_contract_audit SET seq = -seq WHERE seq IN (1, 2);
         UPDATE $S.tool_contract_audit SET seq = CASE seq WHEN -1 THEN 2 ELSE 1 END WHERE seq < 0",
    );
    let error = verdict(&store, &[]).await;
    assert!(
        matches!(error, AuditLogError::Broken { line: 1, .. }),
        "{error:?}"
    );
}

#[tokio::test]
async fn an_appended_record_is_refused() {
    let Some((schema, store, _)) = log_of_three("audit_pg_appended").await else {
        return;
    };
    // A copy of the last record, under the next number: nobody without the key can make one
    // that follows.
    tamper(
        &schema,
        "INSERT INTO $S.tool_contract_audit (stream, seq, record)
         SELECT stream, 4, record FROM $S.tool_contract_audit WHERE seq = 3",
    );
    let error = verdict(&store, &[]).await;
    assert!(
        matches!(error, AuditLogError::Broken { line: 4, .. }),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_truncated_tail_no_longer_reaches_the_sealed_head() {
    let Some((schema, store, head)) = log_of_three("audit_pg_truncated").await else {
        return;
    };
    tamper(&schema, "DELETE FROM $S.tool_contract_audit WHERE seq = 3");
    let error = verdict(&store, &[]).await;
    assert!(
        matches!(error, AuditLogError::BehindCheckpoint { ref checkpoint, ref found }
            if *checkpoint == head.head && found.records == 2),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_removed_or_forged_head_is_refused() {
    let Some((schema, store, _)) = log_of_three("audit_pg_head").await else {
        return;
    };
    tamper(
        &schema,
        "UPDATE $S.tool_contract_audit_heads SET records = 2",
    );
    assert!(matches!(
        verdict(&store, &[]).await,
        AuditLogError::Checkpoint
    ));
    tamper(&schema, "DELETE FROM $S.tool_contract_audit_heads");
    assert!(matches!(
        verdict(&store, &[]).await,
        AuditLogError::Checkpoint
    ));
}

#[tokio::test]
async fn a_stream_removed_with_its_head_shows_against_an_exported_head() {
    let Some((schema, store, head)) = log_of_three("audit_pg_stream_removed").await else {
        return;
    };
    tamper(
        &schema,
        "DELETE FROM $S.tool_contract_audit; DELETE FROM $S.tool_contract_audit_heads",
    );
    // Alone, an empty log is a valid log; against the head exported before, it is not.
    assert!(
        PostgresAuditLog::verify(&store, &audit_key(), &[])
            .await
            .unwrap()
            .is_empty()
    );
    let error = verdict(&store, &[head]).await;
    assert!(
        matches!(error, AuditLogError::BehindCheckpoint { .. }),
        "{error:?}"
    );
}

#[tokio::test]
async fn records_under_another_key_do_not_verify() {
    let Some((_schema, store, _)) = log_of_three("audit_pg_other_key").await else {
        return;
    };
    let other = SecretKey::new([0x71; 32]).unwrap();
    let refused = PostgresAuditLog::verify(&store, &other, &[]).await;
    assert!(
        matches!(refused, Err(AuditLogError::Stream { .. })),
        "{refused:?}"
    );
}

#[tokio::test]
async fn a_tail_cut_with_its_head_row_set_back_passes_alone_and_shows_against_an_exported_head() {
    let Some(schema) = Schema::new("audit_pg_rolled_back") else {
        return;
    };
    let store = schema.store().await;
    let sink = Arc::new(PostgresAuditLog::new(&store, audit_key()));
    let remote = Remote::new();
    let dispatcher = builder(&remote)
        .store(Arc::new(store.clone()))
        .audit_sink(sink)
        .build()
        .unwrap();
    for key in ["k1", "k2"] {
        run(&dispatcher, &create("c", "Printer", key, key)).await;
    }
    // A database writer keeps a copy of the head row as it is at record 2.
    tamper(
        &schema,
        "CREATE TABLE $S.kept AS SELECT * FROM $S.tool_contract_audit_heads",
    );
    run(&dispatcher, &create("c", "Printer", "k3", "k3")).await;
    let exported = PostgresAuditLog::verify(&store, &audit_key(), &[])
        .await
        .unwrap();
    assert_eq!(exported[0].head.records, 3);
    // Record 3 deleted, the head row set back to the copy.
    tamper(
        &schema,
        "DELETE FROM $S.tool_contract_audit WHERE seq = 3; \
         UPDATE $S.tool_contract_audit_heads AS head SET records = kept.records, \
         head_sha256 = kept.head_sha256, seal = kept.seal FROM $S.kept AS kept \
         WHERE head.stream = kept.stream",
    );
    let alone = PostgresAuditLog::verify(&store, &audit_key(), &[])
        .await
        .expect("no check inside the database sees it");
    assert_eq!(alone[0].head.records, 2);
    let error = verdict(&store, &exported).await;
    assert!(
        matches!(error, AuditLogError::BehindCheckpoint { .. }),
        "{error:?}"
    );
}

/// Fifty calls at once share a few transactions (a tree head signed at each): every record
/// committed before its call is answered, the stream whole, the last head over all fifty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_calls_at_once_are_committed_in_a_few_transactions() {
    let Some(schema) = Schema::new("audit_pg_group_commit") else {
        return;
    };
    let store = schema.store().await;
    let signer = tool_contract_tests::console::receipt_signer();
    let sink = Arc::new(PostgresAuditLog::new(&store, audit_key()).sign_tree_heads(signer, 1));
    let remote = Remote::new();
    let dispatcher = Arc::new(
        builder(&remote)
            .store(Arc::new(store.clone()))
            .audit_sink(sink.clone())
            .build()
            .unwrap(),
    );
    let calls: Vec<_> = (0..50)
        .map(|index| {
            let dispatcher = dispatcher.clone();
            tokio::spawn(async move {
                let call = tool_contract_tests::tracker::context(
                    &format!("c{index}"),
                    "read_doc",
                    serde_json::json!({ "doc_id": format!("d{index}") }),
                    "op",
                    "k",
                );
                let dispatch = dispatcher
                    .dispatch(
                        &tool_contract_tests::tracker::alice(),
                        &call,
                        &tool_contract::dispatch::Task::unlimited(),
                    )
                    .await;
                assert!(dispatch.audit_error.is_none(), "{:?}", dispatch.audit_error);
            })
        })
        .collect();
    for call in calls {
        call.await.unwrap();
    }
    let heads = PostgresAuditLog::verify(&store, &audit_key(), &[])
        .await
        .unwrap();
    assert_eq!(heads[0].head.records, 50);
    let tree_heads = PostgresAuditLog::tree_heads(&store, sink.stream())
        .await
        .unwrap();
    assert_eq!(tree_heads.last().unwrap().tree_head.tree_size, 50);
    assert!(tree_heads.len() < 25, "{} transactions", tree_heads.len());
    let keys =
        tool_contract::results::KeySet::new([
            tool_contract_tests::console::receipt_signer().published_key()
        ])
        .unwrap();
    PostgresAuditLog::verify_published(&store, sink.stream(), &tree_heads, &keys)
        .await
        .unwrap();
}
