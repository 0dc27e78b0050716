//! Issue 16, point 2: several dispatchers (replicas) over one control-plane store, each
//! behaviour on every store: in memory (two dispatchers of one process), one SQLite file
//! opened twice, and PostgreSQL (two pools; skipped, saying so, without
//! `TOOL_CONTRACT_POSTGRES_URL`).

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tool_contract::control::WriteState;
use tool_contract::dispatch::{Dispatch, Dispatcher};
use tool_contract::results::Delivery;
use tool_contract::{ErrorCode, Status};
use tool_contract_tests::backends::Backend;
use tool_contract_tests::tracker::{
    Fault, Remote, advance_clock, alice, builder, clock, context, create, run, sent,
};

/// A replica: its own dispatcher (own owner id) over its own handle on the store.
async fn replica(backend: &impl Backend, remote: &Arc<Remote>) -> Arc<Dispatcher> {
    Arc::new(
        builder(remote)
            .store(backend.open().await)
            .build()
            .expect("every tool has its handler"),
    )
}

fn file_issue(title: &str, key: &str) -> tool_contract::CallContext {
    context(
        "c1",
        "file_issue",
        json!({ "title": title, "body": "b" }),
        &format!("op-{key}"),
        key,
    )
}

fn code(dispatch: &Dispatch) -> Option<ErrorCode> {
    dispatch.result.model.error().map(|error| error.code())
}

async fn approve(replica: &Dispatcher, pending: &tool_contract::control::PendingApproval) {
    replica
        .approve(
            &pending.approval_id,
            &pending.preview_sha256,
            "supervisor",
            clock() + Duration::from_secs(3600),
        )
        .await
        .expect("the pending approval is approved")
        .grant()
        .expect("one approver grants it");
}

async fn approved_on_one_replica_runs_on_another(backend: &impl Backend) {
    let remote = Remote::new();
    let (a, b) = (
        replica(backend, &remote).await,
        replica(backend, &remote).await,
    );
    let call = file_issue("Printer", "k1");
    let asked = run(&a, &call).await;
    assert_eq!(code(&asked), Some(ErrorCode::ApprovalRequired));
    let pending = asked.pending_approval.expect("a pending approval");
    // The supervisor's queue on the other replica shows it.
    let queue = b.pending_approvals().await.unwrap();
    assert_eq!(queue, vec![pending.clone()]);
    approve(&b, &pending).await;
    let ran = run(&b, &call).await;
    assert_eq!(
        ran.result.model.status(),
        Status::Succeeded,
        "{:?}",
        code(&ran)
    );
    let again = run(&a, &call).await;
    assert_eq!(
        again.result.model.execution().delivery,
        Delivery::LocalReplay
    );
    assert_eq!(remote.creations(&sent("k1")), 1);
}

async fn one_grant_redeemed_at_once_by_two_replicas_runs_once(backend: &impl Backend) {
    let remote = Remote::new();
    let (a, b) = (
        replica(backend, &remote).await,
        replica(backend, &remote).await,
    );
    let call = file_issue("Printer", "k1");
    let pending = run(&a, &call).await.pending_approval.expect("pending");
    approve(&a, &pending).await;
    // Both replicas see the grant; both claim at once.
    remote.script(&[Fault::CommitAfter(Duration::from_millis(50))]);
    let (first, second) = tokio::join!(run(&a, &call), run(&b, &call));
    assert_eq!(remote.creations(&sent("k1")), 1, "the write ran once");
    let succeeded = [&first, &second]
        .iter()
        .filter(|dispatch| dispatch.result.model.status() == Status::Succeeded)
        .count();
    assert_eq!(succeeded, 1, "{:?} {:?}", code(&first), code(&second));
    let other = if first.result.model.status() == Status::Succeeded {
        &second
    } else {
        &first
    };
    assert!(
        matches!(
            code(other),
            Some(ErrorCode::OperationInProgress | ErrorCode::ApprovalRequired)
        ),
        "{:?}",
        code(other)
    );
}

async fn a_changed_request_is_refused_on_every_replica_and_the_grant_stands(
    backend: &impl Backend,
) {
    let remote = Remote::new();
    let (a, b) = (
        replica(backend, &remote).await,
        replica(backend, &remote).await,
    );
    for (index, asking) in [&a, &b].into_iter().enumerate() {
        let key = format!("k{index}");
        let pending = run(&a, &file_issue("Printer", &key))
            .await
            .pending_approval
            .expect("pending");
        approve(&a, &pending).await;
        let changed = run(asking, &file_issue("Printer on fire", &key)).await;
        assert_eq!(
            code(&changed),
            Some(ErrorCode::ApprovalInvalid),
            "replica {index}"
        );
        assert!(
            changed.pending_approval.is_none(),
            "nothing is asked while the grant stands"
        );
        assert_eq!(remote.creations(&sent(&key)), 0);
        let approved = run(asking, &file_issue("Printer", &key)).await;
        assert_eq!(code(&approved), None, "replica {index}");
        assert_eq!(remote.creations(&sent(&key)), 1);
    }
}

async fn one_key_with_another_payload_conflicts_on_every_replica(backend: &impl Backend) {
    let remote = Remote::new();
    let (a, b) = (
        replica(backend, &remote).await,
        replica(backend, &remote).await,
    );
    let done = run(&a, &create("c1", "Printer", "jammed", "k1")).await;
    assert_eq!(done.result.model.status(), Status::Succeeded);
    for other in [&a, &b] {
        let conflict = run(other, &create("c2", "Printer", "on fire", "k1")).await;
        assert_eq!(code(&conflict), Some(ErrorCode::IdempotencyConflict));
    }
    assert_eq!(remote.creations(&sent("k1")), 1);
}

async fn a_lease_whose_owner_died_is_reconciled_on_another_replica_never_rerun(
    backend: &impl Backend,
) {
    let remote = Remote::new();
    let a = replica(backend, &remote).await;
    let call = create("c1", "Printer", "jammed", "k1");
    // Replica `a` commits downstream, then dies before it records anything.
    remote.script(&[Fault::CommitThenHang]);
    let running = {
        let (a, call) = (a.clone(), call.clone());
        tokio::spawn(async move { run(&a, &call).await })
    };
    while !remote.committed(&sent("k1")) {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    running.abort();
    drop(a);
    let b = replica(backend, &remote).await;
    // Until its lease lapses, the write may still be running.
    assert_eq!(
        code(&run(&b, &call).await),
        Some(ErrorCode::OperationInProgress)
    );
    advance_clock(Duration::from_secs(3600));
    let settled = run(&b, &call).await;
    assert_eq!(
        settled.result.model.status(),
        Status::Succeeded,
        "{:?}",
        code(&settled)
    );
    assert_eq!(
        settled.result.model.execution().delivery,
        Delivery::ReceiptReconciled
    );
    assert_eq!(settled.write_state, Some(WriteState::Succeeded));
    assert_eq!(remote.creations(&sent("k1")), 1, "never run again");
}

async fn a_lapsed_owner_that_wakes_up_never_writes_over_the_record(backend: &impl Backend) {
    let remote = Remote::new();
    let (a, b) = (
        replica(backend, &remote).await,
        replica(backend, &remote).await,
    );
    let call = create("c1", "Printer", "jammed", "k1");
    // `a` stalls inside the handler (a pause, a partition) past its lease.
    remote.script(&[Fault::CommitAfter(Duration::from_millis(300))]);
    let slow = {
        let (a, call) = (a.clone(), call.clone());
        tokio::spawn(async move { run(&a, &call).await })
    };
    while remote.requests(&sent("k1")) == 0 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    advance_clock(Duration::from_secs(3600));
    // `b` takes the lapsed lease as unknown; the status query finds nothing yet.
    let settled = run(&b, &call).await;
    assert_eq!(
        settled.write_state,
        Some(WriteState::Failed),
        "{:?}",
        code(&settled)
    );
    let woken = slow.await.unwrap();
    assert_eq!(code(&woken), Some(ErrorCode::StatusConflict));
    assert_eq!(
        b.write_state(&alice(), &call).await.unwrap(),
        Some(WriteState::Disputed),
        "the late commit neither wrote over the settled record nor left it saying never happened"
    );
}

async fn purging_on_one_replica_keeps_what_another_needs(backend: &impl Backend) {
    let remote = Remote::new();
    let a = replica(backend, &remote).await;
    // `b` keeps its own records one millisecond, and purges.
    let b = builder(&remote)
        .store(backend.open().await)
        .retention(Duration::from_millis(1))
        .build()
        .unwrap();
    let done = run(&a, &create("c1", "Printer", "jammed", "k1")).await;
    assert_eq!(done.result.model.status(), Status::Succeeded);
    let pending = run(&a, &file_issue("Scanner", "k2"))
        .await
        .pending_approval
        .expect("pending");
    advance_clock(Duration::from_secs(60));
    let purged = b.purge_expired().await.unwrap();
    assert_eq!((purged.records, purged.approvals), (0, 0));
    approve(&b, &pending).await;
    assert_eq!(
        run(&a, &file_issue("Scanner", "k2"))
            .await
            .result
            .model
            .status(),
        Status::Succeeded
    );
    let replayed = run(&b, &create("c2", "Printer", "jammed", "k1")).await;
    assert_eq!(
        replayed.result.model.execution().delivery,
        Delivery::LocalReplay
    );
}

tool_contract_tests::on_every_store!(
    approved_on_one_replica_runs_on_another,
    one_grant_redeemed_at_once_by_two_replicas_runs_once,
    a_changed_request_is_refused_on_every_replica_and_the_grant_stands,
    one_key_with_another_payload_conflicts_on_every_replica,
    a_lease_whose_owner_died_is_reconciled_on_another_replica_never_rerun,
    a_lapsed_owner_that_wakes_up_never_writes_over_the_record,
    purging_on_one_replica_keeps_what_another_needs,
);
