//! Issue 16, point 4: the audit log on PostgreSQL. One chain per stream (one writer), each
//! stream's head sealed; the verifier finds an edited, deleted, reordered or appended record,
//! a truncated tail, a removed head and a removed stream. Skipped, saying so, without
//! `TOOL_CONTRACT_POSTGRES_URL`.

use std::sync::Arc;

use tool_contract::control::{
    AuditHistory, AuditLogError, AuditSink, BrokenLink, PostgresAuditLog, PostgresStore,
    RejectionReason, StreamHead, last_day_minutes, tally_calls,
};
use tool_contract::results::{ModelResult, ProtectedAudit};
use tool_contract::{ErrorCode, SecretKey, Status};
use tool_contract_tests::postgres::Schema;
use tool_contract_tests::tracker::{
    Remote, approve, audit_key, builder, clock, code, create, message, pending_approval, run,
};

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

/// `model` as if observed `at`.
fn observed(model: &ModelResult, at: time::OffsetDateTime) -> ModelResult {
    let mut model = serde_json::to_value(model).unwrap();
    model["provenance"]["observed_at"] = serde_json::json!(
        at.format(&time::format_description::well_known::Rfc3339)
            .unwrap()
    );
    serde_json::from_value(model).unwrap()
}

/// Every call of every stream the log's table holds, read back and checked.
async fn calls_read_back(log: &PostgresAuditLog) -> Vec<(ModelResult, ProtectedAudit)> {
    let histories = log.read_back_all().await.unwrap();
    histories
        .iter()
        .flat_map(|history| {
            let calls = history.calls(&audit_key());
            assert!(calls.chain.is_ok(), "{:?}", calls.chain);
            calls.calls
        })
        .collect()
}

#[tokio::test]
async fn the_counts_kept_as_records_are_appended_are_what_the_records_count() {
    let Some(schema) = Schema::new("audit_pg_counts") else {
        return;
    };
    let store = schema.store().await;
    let (first, second) = (
        Arc::new(PostgresAuditLog::new(&store, audit_key())),
        Arc::new(PostgresAuditLog::new(&store, audit_key())),
    );
    let remote = Remote::new();
    let replica = |log: &Arc<PostgresAuditLog>| {
        builder(&remote)
            .store(Arc::new(store.clone()))
            .audit_sink(log.clone())
            .build()
            .unwrap()
    };
    let (a, b) = (replica(&first), replica(&second));
    for key in ["k1", "k2", "k3"] {
        run(&a, &create("c", "Printer", key, key)).await;
    }
    // Asked on A, granted, run on B.
    let granted = message("m-1", "bob");
    approve(&a, &granted, "supervisor").await;
    assert_eq!(code(&run(&b, &granted).await), None);
    // Asked on B, rejected, told on A.
    let refused = message("m-2", "mallory");
    let pending = pending_approval(&b, &refused).await;
    b.reject_because(&pending.approval_id, RejectionReason::WrongDetails)
        .await
        .unwrap();
    assert_eq!(
        code(&run(&a, &refused).await),
        Some(ErrorCode::RejectedWrongDetails)
    );
    // A call observed two days ago, appended now.
    let ran = run(&a, &create("c", "Scanner", "k9", "k9")).await;
    let aged = observed(&ran.result.model, clock() - time::Duration::days(2));
    first.append(&aged, &ran.result.audit).await.unwrap();

    let day = last_day_minutes(clock());
    let kept = first
        .tally(&day)
        .await
        .unwrap()
        .expect("both streams counted every record");
    let calls = calls_read_back(&first).await;
    assert_eq!(
        calls.len(),
        9,
        "3 issues, m-1 and m-2 twice each, k9 and the aged call"
    );
    assert_eq!(kept, tally_calls(&calls, &day));
    let (issues, messages) = (&kept["create_issue"], &kept["send_message"]);
    assert_eq!(issues.calls, 4, "the aged call is not of the last day");
    assert_eq!(
        (messages.calls, messages.granted, messages.rejected),
        (4, 1, 1),
        "m-1 asked and ran, m-2 asked and told"
    );
    // Every minute there is: the aged call is counted, in its own.
    let always = i64::MIN..=i64::MAX;
    let ever = first.tally(&always).await.unwrap().unwrap();
    assert_eq!(ever["create_issue"].calls, 5);
    assert_eq!(ever, tally_calls(&calls, &always));
    drop(schema);
}

#[tokio::test]
async fn a_stream_appended_before_counts_were_kept_is_tallied_only_past_its_last_uncounted_record()
{
    let Some(schema) = Schema::new("audit_pg_counts_from") else {
        return;
    };
    let remote = Remote::new();
    let replica = async || {
        let store = schema.store().await;
        let log = Arc::new(PostgresAuditLog::new(&store, audit_key()));
        let dispatcher = builder(&remote)
            .store(Arc::new(store))
            .audit_sink(log.clone())
            .build()
            .unwrap();
        (log, dispatcher)
    };
    let (_, dispatcher) = replica().await;
    run(&dispatcher, &create("c", "Printer", "k1", "k1")).await;
    drop(dispatcher);
    // As schema version 9 left it; opened again, migrated to 10, which counts that stream
    // from its next record on (and to the versions after). The next replica writes a stream
    // of its own.
    schema.execute(&format!(
        "DROP TABLE {name}.tool_contract_workers;
         ALTER TABLE {name}.tool_contract_tasks DROP COLUMN worker;
         DROP TABLE {name}.tool_contract_audit_counts;
         ALTER TABLE {name}.tool_contract_audit_heads DROP COLUMN counted_from;
         UPDATE {name}.tool_contract_schema SET version = 9;",
        name = schema.name
    ));
    let (log, dispatcher) = replica().await;
    run(&dispatcher, &create("c", "Printer", "k2", "k2")).await;
    assert_eq!(
        log.tally(&last_day_minutes(clock())).await.unwrap(),
        None,
        "the day holds a call the counts miss"
    );
    assert_eq!(
        log.tally(&(i64::MIN..=i64::MAX)).await.unwrap(),
        None,
        "all time holds it too"
    );
    // Two days on, a call observed then: the day holds it alone.
    let later = clock() + time::Duration::days(2);
    let ran = run(&dispatcher, &create("c", "Printer", "k3", "k3")).await;
    log.append(&observed(&ran.result.model, later), &ran.result.audit)
        .await
        .unwrap();
    let day = last_day_minutes(later);
    let kept = log.tally(&day).await.unwrap().expect("the day is counted");
    assert_eq!(kept["create_issue"].calls, 1);
    assert_eq!(kept, tally_calls(&calls_read_back(&log).await, &day));
    drop(schema);
}
