//! One conformance suite every control-plane store passes: in memory, SQLite (reopened from
//! its file for every "restart"), and PostgreSQL (a schema of its own per test; skipped, and
//! saying so, when `TOOL_CONTRACT_POSTGRES_URL` is not set; `.ci/run` sets it).

use time::OffsetDateTime;
use tool_contract::Effect;
use tool_contract::control::{
    Advance, Advanced, Claim, Claimed, IfAbsent, Lease, Release, RowSeal, SCHEMA_VERSION,
    SqliteStore,
};
use tool_contract::control::{
    ApprovalAsk, ApprovalBasis, ApprovalCheck, ApprovalError, ApprovalGrant, ApproveStep, Approved,
    ControlStore, Invalidity, PendingApproval, Preview, RejectStep, RejectionReason,
    SignedDecisionRefusal, StoreError, WriteEvent, WriteState,
};
use tool_contract_tests::backends::{Backend, sqlite_file};
use tool_contract_tests::postgres::Schema;

const LEASE: u64 = 60_000;
const RETENTION: u64 = 3_600_000;
const T0: u64 = 1_787_392_800_000;

/// The seal of approval rows, as the tests' dispatchers make it.
fn seal() -> RowSeal {
    RowSeal::new(&tool_contract_tests::tracker::keys())
}

fn lease(owner: &str) -> Lease {
    Lease {
        owner: owner.to_owned(),
        generation: 1,
    }
}

fn release(owner: &str, return_grant: bool) -> Release {
    Release {
        key: "k".to_owned(),
        lease: lease(owner),
        return_grant,
        seal: seal(),
    }
}

fn claim(key: &str, request: &str, owner: &str, now_ms: u64) -> Claim {
    Claim {
        key: key.to_owned(),
        request_sha256: request.to_owned(),
        tool: "create_issue".to_owned(),
        lease: lease(owner),
        now_ms,
        lease_ms: LEASE,
        retention_ms: RETENTION,
        kept: false,
        redeem: None,
        seal: seal(),
        call: None,
    }
}

/// A claim of a later execution: its lease generation (the fencing token) above the first's.
fn later_claim(key: &str, request: &str, owner: &str, now_ms: u64) -> Claim {
    Claim {
        lease: Lease {
            owner: owner.to_owned(),
            generation: 2,
        },
        ..claim(key, request, owner, now_ms)
    }
}

fn step(
    key: &str,
    owner: &str,
    from: WriteState,
    event: WriteEvent,
    result: Option<&str>,
    now_ms: u64,
) -> Advance {
    Advance {
        key: key.to_owned(),
        lease: lease(owner),
        from,
        event,
        result: result.map(str::to_owned),
        now_ms,
        retention_ms: RETENTION,
    }
}

/// Claims `key` for request `r1` as `owner` at `T0` and moves it by `event` at once.
async fn finished(
    ledger: &dyn ControlStore,
    key: &str,
    owner: &str,
    event: WriteEvent,
    result: Option<&str>,
) {
    assert_eq!(
        ledger.claim(&claim(key, "r1", owner, T0)).await.unwrap(),
        Claimed::Fresh
    );
    let moved = ledger
        .advance(&step(key, owner, WriteState::Executing, event, result, T0))
        .await
        .unwrap();
    assert!(matches!(moved, Advanced::Applied(_)), "{moved:?}");
}

/// Moves the record at `k` as `owner`, from `from`, by `event`, at `T0`.
async fn move_k(
    ledger: &dyn ControlStore,
    owner: &str,
    from: WriteState,
    event: WriteEvent,
    result: Option<&str>,
) -> Result<Advanced, StoreError> {
    ledger
        .advance(&step("k", owner, from, event, result, T0))
        .await
}

async fn state_of(ledger: &dyn ControlStore, key: &str) -> Option<WriteState> {
    ledger.get(key).await.unwrap().map(|record| record.state)
}

async fn a_fresh_key_is_claimed_once_and_replayed_after_its_outcome(store: &impl Backend) {
    let ledger = store.open().await;
    assert_eq!(
        ledger.claim(&claim("k", "r1", "a", T0)).await.unwrap(),
        Claimed::Fresh
    );
    assert_eq!(state_of(&*ledger, "k").await, Some(WriteState::Executing));
    let done = ledger
        .advance(&step(
            "k",
            "a",
            WriteState::Executing,
            WriteEvent::Commit,
            Some("{\"stored\":1}"),
            T0 + 5,
        ))
        .await
        .unwrap();
    assert!(matches!(done, Advanced::Applied(ref record) if record.state == WriteState::Succeeded));
    match ledger.claim(&claim("k", "r1", "b", T0 + 10)).await.unwrap() {
        Claimed::Replay(record) => {
            assert_eq!(record.result.as_deref(), Some("{\"stored\":1}"));
            assert_eq!(record.lease.owner, "a");
        }
        other => panic!("expected a replay, got {other:?}"),
    }
}

async fn the_same_key_with_another_request_conflicts_in_every_state(store: &impl Backend) {
    let ledger = store.open().await;
    ledger.claim(&claim("k", "r1", "a", T0)).await.unwrap();
    assert!(matches!(
        ledger.claim(&claim("k", "r2", "b", T0)).await.unwrap(),
        Claimed::Conflict(_)
    ));
    move_k(
        &*ledger,
        "a",
        WriteState::Executing,
        WriteEvent::Commit,
        Some("{}"),
    )
    .await
    .unwrap();
    assert!(matches!(
        ledger.claim(&claim("k", "r2", "b", T0)).await.unwrap(),
        Claimed::Conflict(_)
    ));
}

async fn a_key_in_flight_is_refused_while_its_lease_runs(store: &impl Backend) {
    let ledger = store.open().await;
    ledger.claim(&claim("k", "r1", "a", T0)).await.unwrap();
    let again = ledger
        .claim(&claim("k", "r1", "b", T0 + LEASE - 1))
        .await
        .unwrap();
    assert!(matches!(again, Claimed::InFlight(ref record) if record.lease.owner == "a"));
    assert_eq!(state_of(&*ledger, "k").await, Some(WriteState::Executing));
}

async fn a_restart_between_executing_and_the_outcome_leaves_the_operation_unknown(
    store: &impl Backend,
) {
    {
        let ledger = store.open().await;
        assert_eq!(
            ledger.claim(&claim("k", "r1", "a", T0)).await.unwrap(),
            Claimed::Fresh
        );
        // The process dies here: no outcome is ever recorded.
    }
    let ledger = store.open().await;
    // Until the lease lapses, the first owner may still be running.
    assert!(matches!(
        ledger.claim(&claim("k", "r1", "b", T0 + 1)).await.unwrap(),
        Claimed::InFlight(_)
    ));
    // Then it is unknown: not failed, and not free to run again.
    let after = ledger
        .claim(&claim("k", "r1", "b", T0 + LEASE))
        .await
        .unwrap();
    assert!(matches!(after, Claimed::Unknown(ref record) if record.state == WriteState::Unknown));
    assert_eq!(state_of(&*ledger, "k").await, Some(WriteState::Unknown));
    let later = ledger
        .claim(&claim("k", "r1", "c", T0 + 10 * LEASE))
        .await
        .unwrap();
    assert!(matches!(later, Claimed::Unknown(_)), "{later:?}");
}

async fn a_lapsed_lease_turns_unknown_whoever_asks(store: &impl Backend) {
    let ledger = store.open().await;
    ledger.claim(&claim("k", "r1", "a", T0)).await.unwrap();
    let other = ledger
        .claim(&claim("k", "r2", "b", T0 + LEASE))
        .await
        .unwrap();
    assert!(matches!(other, Claimed::Conflict(ref record) if record.state == WriteState::Unknown));
    assert_eq!(state_of(&*ledger, "k").await, Some(WriteState::Unknown));
}

async fn only_the_owner_moves_a_write_in_flight(store: &impl Backend) {
    let ledger = store.open().await;
    ledger.claim(&claim("k", "r1", "a", T0)).await.unwrap();
    let intruder = move_k(
        &*ledger,
        "b",
        WriteState::Executing,
        WriteEvent::Commit,
        Some("{}"),
    )
    .await
    .unwrap();
    assert!(
        matches!(intruder, Advanced::Stale(Some(ref record)) if record.state == WriteState::Executing)
    );
    let wrong_state = move_k(
        &*ledger,
        "a",
        WriteState::CancelRequested,
        WriteEvent::Commit,
        Some("{}"),
    )
    .await
    .unwrap();
    assert!(matches!(wrong_state, Advanced::Stale(_)));
    assert_eq!(state_of(&*ledger, "k").await, Some(WriteState::Executing));
}

async fn an_event_without_a_move_is_refused(store: &impl Backend) {
    let ledger = store.open().await;
    ledger.claim(&claim("k", "r1", "a", T0)).await.unwrap();
    let refused = move_k(
        &*ledger,
        "a",
        WriteState::Executing,
        WriteEvent::Approve,
        None,
    )
    .await;
    assert!(
        matches!(refused, Err(StoreError::Illegal(_))),
        "{refused:?}"
    );
    assert_eq!(state_of(&*ledger, "k").await, Some(WriteState::Executing));
}

async fn finished_records_absorb_every_event(store: &impl Backend) {
    let ledger = store.open().await;
    finished(
        &*ledger,
        "k",
        "a",
        WriteEvent::ConfirmNothingHappened,
        Some("{}"),
    )
    .await;
    for event in [
        WriteEvent::Commit,
        WriteEvent::LoseTrack,
        WriteEvent::Execute,
        WriteEvent::ReconcileFound,
    ] {
        let refused = move_k(&*ledger, "a", WriteState::Failed, event, None).await;
        assert!(
            matches!(refused, Err(StoreError::Illegal(_))),
            "{event:?}: {refused:?}"
        );
    }
    assert_eq!(state_of(&*ledger, "k").await, Some(WriteState::Failed));
}

async fn an_unknown_write_is_settled_only_by_reconciliation(store: &impl Backend) {
    let ledger = store.open().await;
    finished(&*ledger, "k", "a", WriteEvent::LoseTrack, None).await;
    let rerun = move_k(
        &*ledger,
        "a",
        WriteState::Unknown,
        WriteEvent::Execute,
        None,
    )
    .await;
    assert!(matches!(rerun, Err(StoreError::Illegal(_))));
    // Any worker may reconcile: the status query is a read.
    let settled = ledger
        .advance(&step(
            "k",
            "z",
            WriteState::Unknown,
            WriteEvent::ReconcileFound,
            Some("{\"n\":241}"),
            T0 + 1,
        ))
        .await
        .unwrap();
    assert!(
        matches!(settled, Advanced::Applied(ref record) if record.state == WriteState::Succeeded)
    );
    assert!(matches!(
        ledger.claim(&claim("k", "r1", "b", T0 + 2)).await.unwrap(),
        Claimed::Replay(_)
    ));
}

async fn a_claim_is_released_only_by_its_owner_before_anything_was_sent(store: &impl Backend) {
    let ledger = store.open().await;
    ledger.claim(&claim("k", "r1", "a", T0)).await.unwrap();
    assert!(!ledger.release(&release("b", false)).await.unwrap());
    assert!(ledger.release(&release("a", false)).await.unwrap());
    assert_eq!(state_of(&*ledger, "k").await, None);
    assert_eq!(
        ledger.claim(&claim("k", "r1", "b", T0)).await.unwrap(),
        Claimed::Fresh
    );
    move_k(
        &*ledger,
        "b",
        WriteState::Executing,
        WriteEvent::Commit,
        Some("{}"),
    )
    .await
    .unwrap();
    assert!(
        !ledger.release(&release("b", false)).await.unwrap(),
        "a finished record is never released"
    );
}

async fn a_new_execution_after_the_retention_needs_a_higher_fencing_token(store: &impl Backend) {
    let ledger = store.open().await;
    finished(&*ledger, "done", "a", WriteEvent::Commit, Some("{}")).await;
    // The same generation as the last execution's: its token would not fence that one out.
    assert!(matches!(
        ledger
            .claim(&claim("done", "r2", "b", T0 + RETENTION))
            .await
            .unwrap(),
        Claimed::InFlight(_)
    ));
    assert_eq!(
        ledger
            .claim(&later_claim("done", "r2", "b", T0 + RETENTION))
            .await
            .unwrap(),
        Claimed::Fresh
    );
}

async fn keys_expire_after_the_retention_and_unknown_ones_never_do(store: &impl Backend) {
    let ledger = store.open().await;
    finished(&*ledger, "done", "a", WriteEvent::Commit, Some("{}")).await;
    finished(&*ledger, "lost", "a", WriteEvent::LoseTrack, None).await;
    assert!(matches!(
        ledger
            .claim(&claim("done", "r1", "b", T0 + RETENTION - 1))
            .await
            .unwrap(),
        Claimed::Replay(_)
    ));
    // Past the retention the key is free for a new intent.
    assert_eq!(
        ledger
            .claim(&later_claim("done", "r2", "b", T0 + RETENTION))
            .await
            .unwrap(),
        Claimed::Fresh
    );
    assert_eq!(
        ledger
            .purge_expired(T0 + 100 * RETENTION)
            .await
            .unwrap()
            .records,
        0,
        "nothing finished is left"
    );
    assert!(matches!(
        ledger
            .claim(&claim("lost", "r1", "b", T0 + 100 * RETENTION))
            .await
            .unwrap(),
        Claimed::Unknown(_)
    ));
}

async fn purge_removes_only_finished_records_past_their_retention(store: &impl Backend) {
    let ledger = store.open().await;
    for key in ["a", "b"] {
        finished(&*ledger, key, "o", WriteEvent::Commit, Some("{}")).await;
    }
    ledger
        .claim(&claim("running", "r1", "o", T0))
        .await
        .unwrap();
    assert_eq!(
        ledger
            .purge_expired(T0 + RETENTION - 1)
            .await
            .unwrap()
            .records,
        0
    );
    assert_eq!(
        ledger.purge_expired(T0 + RETENTION).await.unwrap().records,
        2
    );
    assert_eq!(state_of(&*ledger, "a").await, None);
    assert_eq!(
        state_of(&*ledger, "running").await,
        Some(WriteState::Executing)
    );
}

/// Claims `key` as a kept operation (for `retention_ms`) with a call, as `a` at `T0`, and
/// commits it.
async fn committed_kept(ledger: &dyn ControlStore, key: &str, retention_ms: u64) {
    let kept = Claim {
        kept: true,
        retention_ms,
        call: Some(r#"{"arguments":"the caller's"}"#.to_owned()),
        ..claim(key, "r1", "a", T0)
    };
    assert_eq!(ledger.claim(&kept).await.unwrap(), Claimed::Fresh);
    let done = Advance {
        retention_ms,
        ..step(
            key,
            "a",
            WriteState::Executing,
            WriteEvent::Commit,
            Some("{}"),
            T0,
        )
    };
    assert!(matches!(
        ledger.advance(&done).await.unwrap(),
        Advanced::Applied(_)
    ));
}

/// An operation named by its fields or key is kept past its window (its retention here), so a
/// repeat finds it and names it; only an operator's purge by age removes it, and never one
/// whose window has not ended.
async fn a_kept_record_outlives_its_window_until_an_operator_purges_it(store: &impl Backend) {
    let ledger = store.open().await;
    committed_kept(ledger.as_ref(), "kept", RETENTION).await;
    finished(
        ledger.as_ref(),
        "plain",
        "a",
        WriteEvent::Commit,
        Some("{}"),
    )
    .await;
    let past = T0 + 10 * RETENTION;
    assert_eq!(
        ledger.purge_expired(past).await.unwrap().records,
        1,
        "the plain one"
    );
    let record = ledger
        .get("kept")
        .await
        .unwrap()
        .expect("kept past its window");
    assert!(record.kept);
    assert_eq!(record.call, None, "a finished record lets go of the call");
    assert_eq!(record.expires_at_ms, T0 + RETENTION);
    // A claim after the window is a new execution, over the kept record.
    assert!(
        matches!(
            ledger.claim(&claim("kept", "r1", "b", past)).await.unwrap(),
            Claimed::InFlight(_)
        ),
        "its fencing token must rise first"
    );
    // The operator's purge by age: none whose window ended after the cutoff.
    assert_eq!(
        ledger.purge_operations(T0 + RETENTION - 1).await.unwrap(),
        0
    );
    assert!(ledger.get("kept").await.unwrap().is_some());
    assert_eq!(ledger.purge_operations(T0 + RETENTION).await.unwrap(), 1);
    assert_eq!(ledger.get("kept").await.unwrap(), None);
}

/// A record kept for good (`u64::MAX` of retention) is never past its window.
async fn a_record_kept_for_good_is_replayed_whenever_asked_and_never_purged(store: &impl Backend) {
    let ledger = store.open().await;
    committed_kept(ledger.as_ref(), "k", u64::MAX).await;
    let far = T0 + 100 * 365 * 86_400_000;
    assert_eq!(ledger.purge_expired(far).await.unwrap().records, 0);
    assert_eq!(ledger.purge_operations(far).await.unwrap(), 0);
    assert!(matches!(
        ledger
            .claim(&later_claim("k", "r1", "b", far))
            .await
            .unwrap(),
        Claimed::Replay(_)
    ));
}

async fn concurrent_claims_of_one_key_give_exactly_one_fresh(store: &impl Backend) {
    let mut claims = tokio::task::JoinSet::new();
    for index in 0..8 {
        // Each as its own replica: its own connection to the store.
        let ledger = store.open().await;
        claims.spawn(async move {
            ledger
                .claim(&claim("k", "r1", &format!("o{index}"), T0))
                .await
                .unwrap()
        });
    }
    let answers = claims.join_all().await;
    let fresh = answers
        .iter()
        .filter(|answer| **answer == Claimed::Fresh)
        .count();
    assert_eq!(fresh, 1, "{answers:?}");
    assert!(
        answers
            .iter()
            .all(|answer| matches!(answer, Claimed::Fresh | Claimed::InFlight(_)))
    );
}

async fn claim_if_absent_claims_an_empty_key_and_otherwise_writes_nothing(store: &impl Backend) {
    let ledger = store.open().await;
    assert_eq!(
        ledger
            .claim_if_absent(&claim("k", "r1", "a", T0))
            .await
            .unwrap(),
        IfAbsent::Claimed(Claimed::Fresh)
    );
    assert_eq!(state_of(&*ledger, "k").await, Some(WriteState::Executing));
    // Another request, or the same one again: the record as it stands, left as it is.
    for request in ["r2", "r1"] {
        match ledger
            .claim_if_absent(&claim("k", request, "b", T0 + 1))
            .await
            .unwrap()
        {
            IfAbsent::Present(record) => {
                assert_eq!(record.lease, lease("a"));
                assert_eq!(record.request_sha256, "r1");
                assert_eq!(record.state, WriteState::Executing);
            }
            other => panic!("expected the record, got {other:?}"),
        }
    }
    // Not even a lapsed lease is settled: the look only looks.
    match ledger
        .claim_if_absent(&claim("k", "r1", "b", T0 + LEASE + 1))
        .await
        .unwrap()
    {
        IfAbsent::Present(record) => assert_eq!(record.state, WriteState::Executing),
        other => panic!("expected the record, got {other:?}"),
    }
    assert_eq!(state_of(&*ledger, "k").await, Some(WriteState::Executing));
}

async fn concurrent_claims_if_absent_of_one_key_give_exactly_one_fresh(store: &impl Backend) {
    let mut claims = tokio::task::JoinSet::new();
    for index in 0..8 {
        let ledger = store.open().await;
        claims.spawn(async move {
            ledger
                .claim_if_absent(&claim("k", "r1", &format!("o{index}"), T0))
                .await
                .unwrap()
        });
    }
    let answers = claims.join_all().await;
    let fresh = answers
        .iter()
        .filter(|answer| **answer == IfAbsent::Claimed(Claimed::Fresh))
        .count();
    assert_eq!(fresh, 1, "{answers:?}");
    assert!(answers.iter().all(|answer| matches!(
        answer,
        IfAbsent::Claimed(Claimed::Fresh | Claimed::InFlight(_)) | IfAbsent::Present(_)
    )));
}

fn at(ms: u64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000).unwrap()
}

fn pending(id: &str, key: &str, request: &str) -> PendingApproval {
    PendingApproval {
        approval_id: id.to_owned(),
        request_sha256: request.to_owned(),
        preview: Preview {
            tool: "create_issue".to_owned(),
            description: "Create an issue.".to_owned(),
            effect: Effect::NonIdempotentWrite,
            arguments: serde_json::json!({ "title": "Broken \u{202e} login", "n": [1, 2.5] }),
            earlier_run: None,
            // Kept through every store, and into the grant it becomes.
            required_by: vec!["big-issues".to_owned()],
        },
        preview_sha256: format!("preview-of-{request}"),
        principal_ref: "p1".to_owned(),
        tenant: "acme".to_owned(),
        operation_id: "op".to_owned(),
        ledger_key: key.to_owned(),
        approvals_required: 1,
        signatures_required: false,
        approvals: Vec::new(),
        by_another: false,
        caller_person_ref: CALLER.to_owned(),
    }
}

/// The caller's person reference in these pending approvals.
const CALLER: &str = "person-of-the-caller";

/// The grant an approval formed; a test fails if it only counted toward one.
fn granted(approved: Approved) -> ApprovalGrant {
    match approved {
        Approved::Granted(grant) => grant,
        Approved::Awaiting(pending) => panic!("still awaiting approvals: {pending:?}"),
    }
}

/// The approval stage of request `request` on key `k`, offering `fresh_id` as the new
/// pending approval, at `now_ms`.
fn ask(request: &str, fresh_id: &str, now_ms: u64) -> ApprovalAsk {
    ApprovalAsk {
        ledger_key: "k".to_owned(),
        request_sha256: request.to_owned(),
        tool: "create_issue".to_owned(),
        principal_ref: "p1".to_owned(),
        operation_id: "op".to_owned(),
        now: at(now_ms),
        fresh: pending(fresh_id, "k", request),
        retention_ms: RETENTION,
        pending_limit: 100,
        seal: seal(),
    }
}

fn approval(id: &str, request: &str, now_ms: u64) -> ApproveStep {
    ApproveStep {
        approval_id: id.to_owned(),
        preview_sha256: format!("preview-of-{request}"),
        approver: "supervisor".to_owned(),
        expires_at: at(now_ms + LEASE),
        now: at(now_ms),
        edited_arguments: None,
        approvals_required: 0,
        signatures_required: false,
        required_by: Vec::new(),
        basis: ApprovalBasis::Service,
        person_ref: None,
        seal: seal(),
    }
}

fn redeeming(owner: &str, approval_id: &str, now_ms: u64) -> Claim {
    Claim {
        redeem: Some(approval_id.to_owned()),
        ..claim("k", "r1", owner, now_ms)
    }
}

async fn a_pending_approval_is_the_same_whoever_asks_again(store: &impl Backend) {
    let (a, b) = (store.open().await, store.open().await);
    let first = a.check_approval(&ask("r1", "apr_a", T0)).await.unwrap();
    assert_eq!(first, ApprovalCheck::Required(pending("apr_a", "k", "r1")));
    // Another replica asking for the same request gets the same pending approval.
    let again = b.check_approval(&ask("r1", "apr_b", T0 + 1)).await.unwrap();
    assert_eq!(again, ApprovalCheck::Required(pending("apr_a", "k", "r1")));
    assert_eq!(
        b.pending_approvals(T0 + 1, &seal()).await.unwrap(),
        vec![pending("apr_a", "k", "r1")],
        "the preview, with its hidden character and numbers, reads back as written"
    );
}

async fn an_approval_given_on_one_replica_is_redeemed_on_another_once(store: &impl Backend) {
    let (a, b) = (store.open().await, store.open().await);
    let grant = grant_of_apr_a(a.as_ref()).await;
    assert_eq!(grant.approvers().collect::<Vec<_>>(), ["supervisor"]);
    assert!(a.pending_approvals(T0, &seal()).await.unwrap().is_empty());
    let seen = b.check_approval(&ask("r1", "apr_b", T0 + 1)).await.unwrap();
    assert_eq!(seen, ApprovalCheck::Proceed(grant.clone()));
    assert_eq!(
        b.claim(&redeeming("b", "apr_a", T0 + 1)).await.unwrap(),
        Claimed::Fresh
    );
    // While its execution's record stands, an ask is answered by that record, never by a
    // new approval for a write already running.
    let during = a.check_approval(&ask("r1", "apr_c", T0 + 2)).await.unwrap();
    assert_eq!(during, ApprovalCheck::Proceed(grant.clone()));
    assert!(matches!(
        a.claim(&redeeming("a", "apr_a", T0 + 2)).await.unwrap(),
        Claimed::InFlight(_)
    ));
    assert!(
        a.pending_approvals(T0 + 2, &seal())
            .await
            .unwrap()
            .is_empty()
    );
    b.advance(&step(
        "k",
        "b",
        WriteState::Executing,
        WriteEvent::Commit,
        Some("{}"),
        T0 + 2,
    ))
    .await
    .unwrap();
    // Once the record is gone, the grant is spent: a claim naming it again writes nothing,
    // and the next ask needs a new approval.
    let expired_record = later_claim("k", "r1", "a", T0 + 2 + RETENTION);
    assert!(matches!(
        a.claim(&Claim {
            redeem: Some("apr_a".to_owned()),
            ..expired_record
        })
        .await
        .unwrap(),
        Claimed::GrantSpent
    ));
    let after = a
        .check_approval(&ask("r1", "apr_d", T0 + 2 + RETENTION))
        .await
        .unwrap();
    assert_eq!(after, ApprovalCheck::Required(pending("apr_d", "k", "r1")));
}

async fn concurrent_redemptions_of_one_grant_run_once(store: &impl Backend) {
    grant_of_apr_a(store.open().await.as_ref()).await;
    let mut claims = tokio::task::JoinSet::new();
    for index in 0..8 {
        let replica = store.open().await;
        claims.spawn(async move {
            let owner = format!("o{index}");
            replica
                .claim(&redeeming(&owner, "apr_a", T0 + 1))
                .await
                .unwrap()
        });
    }
    let answers = claims.join_all().await;
    let fresh = answers
        .iter()
        .filter(|answer| **answer == Claimed::Fresh)
        .count();
    assert_eq!(fresh, 1, "{answers:?}");
}

/// The execution `owner` runs on key `k` commits at `now_ms`.
async fn committed(ledger: &dyn ControlStore, owner: &str, now_ms: u64) {
    let step = step(
        "k",
        owner,
        WriteState::Executing,
        WriteEvent::Commit,
        Some("{}"),
        now_ms,
    );
    assert!(matches!(
        ledger.advance(&step).await.unwrap(),
        Advanced::Applied(_)
    ));
}

/// The grant of `apr_a` for request `r1` on key `k`, approved at `T0`, as the approval
/// stage answers it.
async fn grant_of_apr_a(ledger: &dyn ControlStore) -> ApprovalGrant {
    ledger
        .check_approval(&ask("r1", "apr_a", T0))
        .await
        .unwrap();
    approve_apr_a(ledger).await
}

/// The pending approval `apr_a`, approved at `T0`: its grant.
async fn approve_apr_a(ledger: &dyn ControlStore) -> ApprovalGrant {
    granted(
        ledger
            .approve(&approval("apr_a", "r1", T0))
            .await
            .unwrap()
            .unwrap(),
    )
}

async fn a_grant_the_approval_stage_read_is_redeemed_by_one_claim(store: &impl Backend) {
    let (a, b) = (store.open().await, store.open().await);
    grant_of_apr_a(a.as_ref()).await;
    let ApprovalCheck::Proceed(grant) =
        b.check_approval(&ask("r1", "apr_b", T0 + 1)).await.unwrap()
    else {
        panic!("the approved request proceeds");
    };
    // The rules that asked, as the preview named them, in the grant another replica reads.
    assert_eq!(grant.required_by, ["big-issues"]);
    assert_eq!(
        b.claim_redeeming(&redeeming("b", "apr_a", T0 + 1), &grant)
            .await
            .unwrap(),
        Claimed::Fresh
    );
    // The same grant, as the stage read it before, claims nothing more.
    assert!(matches!(
        a.claim_redeeming(&redeeming("a", "apr_a", T0 + 2), &grant)
            .await
            .unwrap(),
        Claimed::InFlight(record) if record.lease.owner == "b"
    ));
    committed(b.as_ref(), "b", T0 + 2).await;
    let expired_record = later_claim("k", "r1", "a", T0 + 2 + RETENTION);
    assert_eq!(
        a.claim_redeeming(
            &Claim {
                redeem: Some("apr_a".to_owned()),
                ..expired_record
            },
            &grant
        )
        .await
        .unwrap(),
        Claimed::GrantSpent,
        "once its record is gone, the grant is spent"
    );
}

async fn concurrent_claims_redeeming_one_grant_run_once(store: &impl Backend) {
    let grant = grant_of_apr_a(store.open().await.as_ref()).await;
    let mut claims = tokio::task::JoinSet::new();
    for index in 0..8 {
        let (replica, grant) = (store.open().await, grant.clone());
        claims.spawn(async move {
            let owner = format!("o{index}");
            replica
                .claim_redeeming(&redeeming(&owner, "apr_a", T0 + 1), &grant)
                .await
                .unwrap()
        });
    }
    let answers = claims.join_all().await;
    assert_eq!(
        answers
            .iter()
            .filter(|answer| **answer == Claimed::Fresh)
            .count(),
        1,
        "{answers:?}"
    );
}

async fn a_claim_redeeming_on_a_taken_key_answers_from_its_record_and_spends_nothing(
    store: &impl Backend,
) {
    let ledger = store.open().await;
    let grant = grant_of_apr_a(ledger.as_ref()).await;
    assert_eq!(
        ledger.claim(&claim("k", "r1", "x", T0)).await.unwrap(),
        Claimed::Fresh
    );
    assert!(matches!(
        ledger
            .claim_redeeming(&redeeming("b", "apr_a", T0 + 1), &grant)
            .await
            .unwrap(),
        Claimed::InFlight(record) if record.lease.owner == "x"
    ));
    assert!(ledger.release(&release("x", false)).await.unwrap());
    assert_eq!(
        ledger
            .claim_redeeming(&redeeming("b", "apr_a", T0 + 2), &grant)
            .await
            .unwrap(),
        Claimed::Fresh,
        "the grant was still unspent"
    );
}

async fn a_grant_replaced_since_the_approval_stage_is_not_redeemed(store: &impl Backend) {
    let ledger = store.open().await;
    let grant = grant_of_apr_a(ledger.as_ref()).await;
    // The grant lapsed and a request asked since: the stage wrote a new pending approval over
    // it.
    let after = T0 + LEASE + 1;
    assert!(matches!(
        ledger
            .check_approval(&ask("r2", "apr_b", after))
            .await
            .unwrap(),
        ApprovalCheck::Invalid(..)
    ));
    assert_eq!(
        ledger
            .claim_redeeming(&redeeming("b", "apr_a", after + 1), &grant)
            .await
            .unwrap(),
        Claimed::GrantSpent
    );
    assert_eq!(ledger.get("k").await.unwrap(), None, "nothing was claimed");
}

async fn a_claim_naming_another_approval_than_its_grant_redeems_only_what_it_names(
    store: &impl Backend,
) {
    let ledger = store.open().await;
    let grant = grant_of_apr_a(ledger.as_ref()).await;
    assert_eq!(
        ledger
            .claim_redeeming(&redeeming("b", "apr_other", T0 + 1), &grant)
            .await
            .unwrap(),
        Claimed::GrantSpent
    );
    assert_eq!(ledger.get("k").await.unwrap(), None);
    assert_eq!(
        ledger
            .check_approval(&ask("r1", "apr_b", T0 + 1))
            .await
            .unwrap(),
        ApprovalCheck::Proceed(grant),
        "the grant stands"
    );
}

/// The look for approval at `now_ms`, where the stage writes nothing: its record is `get`'s,
/// and it answers as `check_approval` does.
async fn look_agrees_with_the_stage(ledger: &dyn ControlStore, fresh_id: &str, now_ms: u64) {
    let look = ledger
        .look_for_approval(&ask("r1", fresh_id, now_ms))
        .await
        .unwrap();
    assert_eq!(look.record, ledger.get("k").await.unwrap());
    let read = look
        .check
        .expect("the look answers a stage that writes nothing");
    let checked = ledger
        .check_approval(&ask("r1", "apr_unused", now_ms))
        .await
        .unwrap();
    assert_eq!(read, checked);
}

async fn a_look_for_approval_answers_as_the_approval_stage_would(store: &impl Backend) {
    let ledger = store.open().await;
    let empty = ledger
        .look_for_approval(&ask("r1", "apr_a", T0))
        .await
        .unwrap();
    assert_eq!(
        empty.check, None,
        "a stage that writes a pending approval is not answered by a look"
    );
    assert!(
        ledger
            .pending_approvals(T0, &seal())
            .await
            .unwrap()
            .is_empty()
    );
    ledger
        .check_approval(&ask("r1", "apr_a", T0))
        .await
        .unwrap();
    look_agrees_with_the_stage(ledger.as_ref(), "apr_b", T0).await;
    approve_apr_a(ledger.as_ref()).await;
    look_agrees_with_the_stage(ledger.as_ref(), "apr_b", T0 + 1).await;
    assert_eq!(
        ledger
            .claim(&redeeming("a", "apr_a", T0 + 1))
            .await
            .unwrap(),
        Claimed::Fresh
    );
    look_agrees_with_the_stage(ledger.as_ref(), "apr_b", T0 + 2).await;
    committed(ledger.as_ref(), "a", T0 + 2).await;
    let spent = ledger
        .look_for_approval(&ask("r1", "apr_b", T0 + 2 + RETENTION))
        .await
        .unwrap();
    assert_eq!(
        spent.check, None,
        "a spent grant needs a new pending approval"
    );
}

async fn a_release_before_any_attempt_gives_the_grant_back_and_after_one_does_not(
    store: &impl Backend,
) {
    let ledger = store.open().await;
    let grant = grant_of_apr_a(ledger.as_ref()).await;
    assert_eq!(
        ledger.claim(&redeeming("a", "apr_a", T0)).await.unwrap(),
        Claimed::Fresh
    );
    assert!(ledger.release(&release("a", true)).await.unwrap());
    let again = ledger
        .check_approval(&ask("r1", "apr_b", T0 + 1))
        .await
        .unwrap();
    assert_eq!(again, ApprovalCheck::Proceed(grant));
    // An attempt the service refused still spent it.
    assert_eq!(
        ledger
            .claim(&redeeming("a", "apr_a", T0 + 2))
            .await
            .unwrap(),
        Claimed::Fresh
    );
    assert!(ledger.release(&release("a", false)).await.unwrap());
    let spent = ledger
        .check_approval(&ask("r1", "apr_c", T0 + 3))
        .await
        .unwrap();
    assert_eq!(spent, ApprovalCheck::Required(pending("apr_c", "k", "r1")));
}

async fn a_grant_stands_when_a_changed_request_is_refused_on_every_replica(store: &impl Backend) {
    let (a, b) = (store.open().await, store.open().await);
    let grant = grant_of_apr_a(a.as_ref()).await;
    let changed = b.check_approval(&ask("r2", "apr_b", T0 + 1)).await.unwrap();
    assert_eq!(
        changed,
        ApprovalCheck::GrantStands(Invalidity::RequestChanged)
    );
    assert!(
        b.pending_approvals(T0 + 1, &seal())
            .await
            .unwrap()
            .is_empty()
    );
    // The grant stands for the request it covers, on every replica, until it is used.
    let original = a.check_approval(&ask("r1", "apr_c", T0 + 2)).await.unwrap();
    assert_eq!(original, ApprovalCheck::Proceed(grant));
    assert_eq!(
        b.claim(&redeeming("b", "apr_a", T0 + 2)).await.unwrap(),
        Claimed::Fresh
    );
}

async fn a_lapsed_grant_is_replaced_by_a_changed_request(store: &impl Backend) {
    let ledger = store.open().await;
    grant_of_apr_a(ledger.as_ref()).await;
    let after = T0 + LEASE + 1;
    let changed = ledger
        .check_approval(&ask("r2", "apr_b", after))
        .await
        .unwrap();
    assert_eq!(
        changed,
        ApprovalCheck::Invalid(pending("apr_b", "k", "r2"), Invalidity::Expired)
    );
    assert!(matches!(
        ledger
            .approve(&approval("apr_a", "r1", after))
            .await
            .unwrap(),
        Err(ApprovalError::NotPending)
    ));
}

async fn an_approval_must_name_the_pending_preview_and_a_later_expiry(store: &impl Backend) {
    let ledger = store.open().await;
    assert!(matches!(
        ledger
            .approve(&approval("apr_none", "r1", T0))
            .await
            .unwrap(),
        Err(ApprovalError::NotPending)
    ));
    ledger
        .check_approval(&ask("r1", "apr_a", T0))
        .await
        .unwrap();
    let other_preview = ApproveStep {
        preview_sha256: "preview-of-r9".to_owned(),
        ..approval("apr_a", "r1", T0)
    };
    assert!(matches!(
        ledger.approve(&other_preview).await.unwrap(),
        Err(ApprovalError::PreviewMismatch)
    ));
    let lapsed = ApproveStep {
        expires_at: at(T0),
        ..approval("apr_a", "r1", T0)
    };
    assert!(matches!(
        ledger.approve(&lapsed).await.unwrap(),
        Err(ApprovalError::Expired)
    ));
    assert!(
        ledger
            .approve(&approval("apr_a", "r1", T0))
            .await
            .unwrap()
            .is_ok()
    );
    assert!(
        matches!(
            ledger.approve(&approval("apr_a", "r1", T0)).await.unwrap(),
            Err(ApprovalError::NotPending)
        ),
        "an approval is given once"
    );
}

/// The approval stage of request `r1` on key `k` as `ask` makes it, its pending approval
/// changed by `change` (`by_another`, how many approvers).
fn ask_with(fresh_id: &str, now_ms: u64, change: impl FnOnce(&mut PendingApproval)) -> ApprovalAsk {
    let mut asked = ask("r1", fresh_id, now_ms);
    change(&mut asked.fresh);
    asked
}

/// An approval of `apr_a` by `approver`, the person `person_ref` (`None`: not known), on
/// `basis`.
fn approval_by(approver: &str, person_ref: Option<&str>, basis: ApprovalBasis) -> ApproveStep {
    ApproveStep {
        approver: approver.to_owned(),
        person_ref: person_ref.map(str::to_owned),
        basis,
        ..approval("apr_a", "r1", T0)
    }
}

async fn under_by_another_the_callers_own_approval_counts_for_nothing(store: &impl Backend) {
    let (a, b) = (store.open().await, store.open().await);
    a.check_approval(&ask_with("apr_a", T0, |pending| pending.by_another = true))
        .await
        .unwrap();
    // The caller's answer at their client, and the service naming the caller as approver.
    for own in [
        approval_by("mcp:acme/E-1001", Some(CALLER), ApprovalBasis::Client),
        approval_by("mcp:acme/E-1001", None, ApprovalBasis::Client),
        approval_by("e-1001", Some(CALLER), ApprovalBasis::Service),
    ] {
        assert!(
            matches!(
                b.approve(&own).await.unwrap(),
                Err(ApprovalError::CallerCannotApprove)
            ),
            "{own:?}"
        );
    }
    let [still] = &a.pending_approvals(T0, &seal()).await.unwrap()[..] else {
        panic!("the approval is still pending");
    };
    assert!(still.approvals.is_empty() && still.by_another);
    let another = approval_by("supervisor", Some("person-of-sam"), ApprovalBasis::Service);
    assert!(matches!(
        b.approve(&another).await.unwrap(),
        Ok(Approved::Granted(_))
    ));
}

async fn under_by_caller_the_callers_own_answer_counts(store: &impl Backend) {
    let ledger = store.open().await;
    ledger
        .check_approval(&ask("r1", "apr_a", T0))
        .await
        .unwrap();
    let own = approval_by("mcp:acme/E-1001", Some(CALLER), ApprovalBasis::Client);
    assert!(matches!(
        ledger.approve(&own).await.unwrap(),
        Ok(Approved::Granted(_))
    ));
}

/// Four eyes counting the caller's answer and an enrolled approver whose subject is unknown:
/// they may be one person. Decided in the store's approve step, so the two arriving at the
/// same instant cannot both count, on any replica.
async fn an_approver_not_told_from_the_caller_never_joins_their_answer_even_at_once(
    store: &impl Backend,
) {
    let rounds = 12;
    for round in 0..rounds {
        let id = format!("apr_{round}");
        let key = format!("k{round}");
        let ledger = store.open().await;
        let mut asked = ask_with(&id, T0, |pending| {
            pending.approvals_required = 2;
            pending.ledger_key.clone_from(&key);
        });
        asked.ledger_key.clone_from(&key);
        ledger.check_approval(&asked).await.unwrap();
        let caller = ApproveStep {
            approval_id: id.clone(),
            ..approval_by("mcp:acme/E-1001", Some(CALLER), ApprovalBasis::Client)
        };
        let untied = ApproveStep {
            approval_id: id.clone(),
            ..approval_by("sup-ana", None, ApprovalBasis::Service)
        };
        let (a, b) = (store.open().await, store.open().await);
        let (first, second) = tokio::join!(
            tokio::spawn(async move { a.approve(&caller).await.unwrap() }),
            tokio::spawn(async move { b.approve(&untied).await.unwrap() }),
        );
        let answers = [first.unwrap(), second.unwrap()];
        let recorded = answers.iter().filter(|answer| answer.is_ok()).count();
        let untied_refusals = answers
            .iter()
            .filter(|answer| {
                matches!(
                    answer,
                    Err(ApprovalError::Refused(
                        SignedDecisionRefusal::UntiedApprover
                    ))
                )
            })
            .count();
        assert_eq!(
            (recorded, untied_refusals),
            (1, 1),
            "round {round}: {answers:?}"
        );
        assert!(
            answers
                .iter()
                .all(|answer| !matches!(answer, Ok(Approved::Granted(_)))),
            "round {round}: nothing is granted on one person's word: {answers:?}"
        );
    }
}

async fn a_grant_with_edits_keeps_them_on_every_replica(store: &impl Backend) {
    let (a, b) = (store.open().await, store.open().await);
    a.check_approval(&ask("r1", "apr_a", T0)).await.unwrap();
    let edited = ApproveStep {
        edited_arguments: Some(r#"{"to":"carol@acme.example"}"#.to_owned()),
        ..approval("apr_a", "r1", T0)
    };
    let grant = granted(b.approve(&edited).await.unwrap().unwrap());
    assert_eq!(grant.edited_arguments, edited.edited_arguments);
    let ApprovalCheck::Proceed(found) =
        a.check_approval(&ask("r1", "apr_b", T0 + 1)).await.unwrap()
    else {
        panic!("the grant proceeds");
    };
    assert_eq!(found.edited_arguments, edited.edited_arguments);
}

async fn the_rules_an_edit_adds_join_the_grant_on_every_replica(store: &impl Backend) {
    let (a, b) = (store.open().await, store.open().await);
    a.check_approval(&ask("r1", "apr_a", T0)).await.unwrap();
    // The preview's rule asks of the edit too; `to-outside` asks of the edit alone.
    let edited = ApproveStep {
        edited_arguments: Some(r#"{"to":"eve@globex.example"}"#.to_owned()),
        required_by: vec!["to-outside".to_owned(), "big-issues".to_owned()],
        ..approval("apr_a", "r1", T0)
    };
    let grant = granted(b.approve(&edited).await.unwrap().unwrap());
    assert_eq!(grant.required_by, ["big-issues", "to-outside"]);
    let ApprovalCheck::Proceed(found) =
        a.check_approval(&ask("r1", "apr_b", T0 + 1)).await.unwrap()
    else {
        panic!("the grant proceeds");
    };
    assert_eq!(found.required_by, ["big-issues", "to-outside"]);
}

async fn a_rejection_holds_on_every_replica(store: &impl Backend) {
    let (a, b) = (store.open().await, store.open().await);
    a.check_approval(&ask("r1", "apr_a", T0)).await.unwrap();
    let reject = RejectStep {
        approval_id: "apr_a".to_owned(),
        reason: Some(RejectionReason::WrongDetails),
        now: at(T0),
        retention_ms: RETENTION,
        seal: seal(),
    };
    assert!(b.reject(&reject).await.unwrap().is_ok());
    assert!(matches!(
        b.reject(&reject).await.unwrap(),
        Err(ApprovalError::NotPending)
    ));
    for request in ["r1", "r2"] {
        let asked = a
            .check_approval(&ask(request, "apr_b", T0 + 1))
            .await
            .unwrap();
        // The reason is kept with the rejection, on every replica.
        assert_eq!(
            asked,
            ApprovalCheck::Rejected(Some(RejectionReason::WrongDetails))
        );
    }
}

async fn a_lapsed_owner_cannot_write_over_a_record_claimed_again(store: &impl Backend) {
    let ledger = store.open().await;
    ledger.claim(&claim("k", "r1", "a", T0)).await.unwrap();
    // Owner `a` stalls; its lease lapses, someone settles the write as never having happened.
    assert!(matches!(
        ledger
            .claim(&claim("k", "r1", "b", T0 + LEASE))
            .await
            .unwrap(),
        Claimed::Unknown(_)
    ));
    ledger
        .advance(&step(
            "k",
            "b",
            WriteState::Unknown,
            WriteEvent::ReconcileAbsent,
            None,
            T0 + LEASE,
        ))
        .await
        .unwrap();
    // Past its retention the key is claimed again by the same owner, under a new generation.
    let later = T0 + LEASE + RETENTION;
    let second = Claim {
        lease: Lease {
            owner: "a".to_owned(),
            generation: 2,
        },
        ..claim("k", "r1", "a", later)
    };
    assert_eq!(ledger.claim(&second).await.unwrap(), Claimed::Fresh);
    // The first execution of `a` wakes up and reports its commit: fenced off.
    let woken = ledger
        .advance(&step(
            "k",
            "a",
            WriteState::Executing,
            WriteEvent::Commit,
            Some("{\"late\":1}"),
            later,
        ))
        .await
        .unwrap();
    assert!(
        matches!(woken, Advanced::Stale(Some(ref record)) if record.state == WriteState::Executing && record.lease.generation == 2),
        "{woken:?}"
    );
    assert!(
        !ledger.release(&release("a", false)).await.unwrap(),
        "nor release it"
    );
    assert_eq!(ledger.get("k").await.unwrap().unwrap().result, None);
}

async fn purging_on_one_replica_keeps_what_another_still_needs(store: &impl Backend) {
    let (a, b) = (store.open().await, store.open().await);
    // Replica `a` has a write running, an approval pending and a grant not yet lapsed.
    a.claim(&claim("running", "r1", "a", T0)).await.unwrap();
    a.check_approval(&ask("r1", "apr_a", T0)).await.unwrap();
    let mut other = ask("r1", "apr_g", T0);
    other.ledger_key = "granted".to_owned();
    other.fresh = pending("apr_g", "granted", "r1");
    a.check_approval(&other).await.unwrap();
    granted(
        a.approve(&approval("apr_g", "r1", T0))
            .await
            .unwrap()
            .unwrap(),
    );
    finished(&*a, "lost", "a", WriteEvent::LoseTrack, None).await;
    // Replica `b` purges just before anything's expiry: nothing goes.
    let early = b.purge_expired(T0 + LEASE - 1).await.unwrap();
    assert_eq!((early.records, early.approvals), (0, 0));
    assert!(
        a.approve(&approval("apr_a", "r1", T0 + 1))
            .await
            .unwrap()
            .is_ok()
    );
    assert_eq!(state_of(&*a, "running").await, Some(WriteState::Executing));
    // Long after, lapsed grants go; running and unknown writes never do.
    let late = b.purge_expired(T0 + 100 * RETENTION).await.unwrap();
    assert_eq!((late.records, late.approvals), (0, 2));
    assert_eq!(state_of(&*a, "running").await, Some(WriteState::Executing));
    assert_eq!(state_of(&*a, "lost").await, Some(WriteState::Unknown));
}

tool_contract_tests::on_every_store!(
    a_fresh_key_is_claimed_once_and_replayed_after_its_outcome,
    the_same_key_with_another_request_conflicts_in_every_state,
    a_key_in_flight_is_refused_while_its_lease_runs,
    a_restart_between_executing_and_the_outcome_leaves_the_operation_unknown,
    a_lapsed_lease_turns_unknown_whoever_asks,
    only_the_owner_moves_a_write_in_flight,
    an_event_without_a_move_is_refused,
    finished_records_absorb_every_event,
    an_unknown_write_is_settled_only_by_reconciliation,
    a_claim_is_released_only_by_its_owner_before_anything_was_sent,
    keys_expire_after_the_retention_and_unknown_ones_never_do,
    a_new_execution_after_the_retention_needs_a_higher_fencing_token,
    purge_removes_only_finished_records_past_their_retention,
    concurrent_claims_of_one_key_give_exactly_one_fresh,
    claim_if_absent_claims_an_empty_key_and_otherwise_writes_nothing,
    concurrent_claims_if_absent_of_one_key_give_exactly_one_fresh,
    a_pending_approval_is_the_same_whoever_asks_again,
    an_approval_given_on_one_replica_is_redeemed_on_another_once,
    concurrent_redemptions_of_one_grant_run_once,
    a_release_before_any_attempt_gives_the_grant_back_and_after_one_does_not,
    a_grant_stands_when_a_changed_request_is_refused_on_every_replica,
    a_lapsed_grant_is_replaced_by_a_changed_request,
    an_approval_must_name_the_pending_preview_and_a_later_expiry,
    a_rejection_holds_on_every_replica,
    a_grant_with_edits_keeps_them_on_every_replica,
    the_rules_an_edit_adds_join_the_grant_on_every_replica,
    a_lapsed_owner_cannot_write_over_a_record_claimed_again,
    purging_on_one_replica_keeps_what_another_still_needs,
    a_grant_the_approval_stage_read_is_redeemed_by_one_claim,
    concurrent_claims_redeeming_one_grant_run_once,
    a_claim_redeeming_on_a_taken_key_answers_from_its_record_and_spends_nothing,
    a_grant_replaced_since_the_approval_stage_is_not_redeemed,
    a_claim_naming_another_approval_than_its_grant_redeems_only_what_it_names,
    a_look_for_approval_answers_as_the_approval_stage_would,
    under_by_another_the_callers_own_approval_counts_for_nothing,
    under_by_caller_the_callers_own_answer_counts,
    an_approver_not_told_from_the_caller_never_joins_their_answer_even_at_once,
    a_kept_record_outlives_its_window_until_an_operator_purges_it,
    a_record_kept_for_good_is_replayed_whenever_asked_and_never_purged,
);

#[tokio::test]
async fn a_grant_row_edited_after_the_approval_stage_is_refused_on_postgres_and_nothing_is_claimed()
{
    let Some(schema) = Schema::new("edited_grant") else {
        return;
    };
    let store = schema.store().await;
    let grant = grant_of_apr_a(&store).await;
    // Another approver's name in the stored grant, its seal left as it was: the one-statement
    // claim finds another row than the stage read, and the general claim opens it.
    schema.execute(&format!(
        "UPDATE {}.tool_contract_approvals SET body = replace(body, 'supervisor', 'mallory')",
        schema.name
    ));
    let claimed = store
        .claim_redeeming(&redeeming("b", "apr_a", T0 + 1), &grant)
        .await;
    assert!(
        matches!(claimed, Err(StoreError::Unsealed(_))),
        "{claimed:?}"
    );
    assert_eq!(store.get("k").await.unwrap(), None, "nothing was claimed");
    let looked = store.look_for_approval(&ask("r1", "apr_b", T0 + 1)).await;
    assert!(
        matches!(looked, Err(StoreError::Unsealed(_))),
        "the one-statement look opens the row too: {looked:?}"
    );
}

#[test]
fn a_corrupt_row_is_an_error_not_a_panic() {
    let store = sqlite_file();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    {
        let ledger = SqliteStore::open(&store.0).unwrap();
        runtime
            .block_on(ledger.claim(&claim("k", "r1", "a", T0)))
            .unwrap();
    }
    let edit = rusqlite::Connection::open(&store.0).unwrap();
    let edited = edit
        .execute(
            "UPDATE tool_contract_ledger SET state = 'exploded' WHERE key = 'k'",
            [],
        )
        .unwrap();
    assert_eq!(edited, 1);
    drop(edit);
    let ledger = SqliteStore::open(&store.0).unwrap();
    let read = runtime.block_on(ledger.get("k"));
    assert!(matches!(read, Err(StoreError::Corrupt(_))), "{read:?}");
    let claimed = runtime.block_on(ledger.claim(&claim("k", "r1", "b", T0)));
    assert!(
        matches!(claimed, Err(StoreError::Corrupt(_))),
        "{claimed:?}"
    );
}

#[test]
fn an_sqlite_file_of_a_newer_schema_is_refused() {
    let store = sqlite_file();
    drop(SqliteStore::open(&store.0).unwrap());
    let edit = rusqlite::Connection::open(&store.0).unwrap();
    edit.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    drop(edit);
    let refused = SqliteStore::open(&store.0);
    assert!(
        matches!(refused, Err(StoreError::SchemaTooNew { found, supported })
            if found == SCHEMA_VERSION + 1 && supported == SCHEMA_VERSION),
        "{refused:?}"
    );
}

#[test]
fn an_sqlite_ledger_from_before_versioning_is_migrated() {
    let store = sqlite_file();
    let old = rusqlite::Connection::open(&store.0).unwrap();
    old.execute_batch(
        "CREATE TABLE tool_contract_ledger (key TEXT PRIMARY KEY NOT NULL, request_sha256 TEXT NOT NULL, \
         tool TEXT NOT NULL, state TEXT NOT NULL, owner TEXT NOT NULL, lease_until_ms INTEGER NOT NULL, \
         expires_at_ms INTEGER NOT NULL, result TEXT) STRICT;
         INSERT INTO tool_contract_ledger VALUES ('old', 'r0', 'create_issue', 'succeeded', 'a', 0, 9, NULL);",
    )
    .unwrap();
    drop(old);
    let ledger = SqliteStore::open(&store.0).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let old = runtime.block_on(ledger.get("old")).unwrap().unwrap();
    assert_eq!(
        (old.state, old.lease.generation),
        (WriteState::Succeeded, 0)
    );
    assert_eq!(
        runtime
            .block_on(ledger.claim(&claim("k", "r1", "a", T0)))
            .unwrap(),
        Claimed::Fresh
    );
}

#[tokio::test]
async fn a_postgres_schema_newer_than_the_code_is_refused() {
    let Some(schema) = Schema::new("a_postgres_schema_newer_than_the_code_is_refused") else {
        return;
    };
    drop(schema.store().await);
    schema.execute(&format!(
        "UPDATE {}.tool_contract_schema SET version = {}",
        schema.name,
        SCHEMA_VERSION + 1
    ));
    let refused =
        tool_contract::control::PostgresStore::connect_with(&schema.url, schema.options()).await;
    assert!(
        matches!(refused, Err(StoreError::SchemaTooNew { found, .. }) if found == SCHEMA_VERSION + 1),
        "{refused:?}"
    );
}

#[tokio::test]
async fn replicas_connecting_at_once_migrate_the_schema_once() {
    let Some(schema) = Schema::new("replicas_connecting_at_once_migrate_the_schema_once") else {
        return;
    };
    let (a, b, c) = tokio::join!(schema.store(), schema.store(), schema.store());
    assert_eq!(
        a.claim(&claim("k", "r1", "a", T0)).await.unwrap(),
        Claimed::Fresh
    );
    assert!(matches!(
        b.claim(&claim("k", "r1", "b", T0)).await.unwrap(),
        Claimed::InFlight(_)
    ));
    assert!(matches!(
        c.claim(&claim("k", "r2", "c", T0)).await.unwrap(),
        Claimed::Conflict(_)
    ));
}

#[tokio::test]
async fn a_postgres_schema_name_that_is_not_an_identifier_is_refused() {
    let options = tool_contract::control::PostgresOptions::default().with_schema("x; DROP TABLE y");
    let refused = tool_contract::control::PostgresStore::connect_with(
        "postgres://nobody@127.0.0.1:1/none",
        options,
    )
    .await;
    assert!(matches!(refused, Err(StoreError::Store(_))), "{refused:?}");
}

/// SQLite steps run on tokio's blocking pool: one waiting for the file's write lock leaves
/// the runtime's only thread free for everything else.
#[tokio::test(flavor = "current_thread")]
async fn an_sqlite_step_waiting_for_the_file_lock_never_blocks_the_runtime() {
    let store = sqlite_file();
    let ledger = SqliteStore::open(&store.0).unwrap();
    let other_process = rusqlite::Connection::open(&store.0).unwrap();
    other_process.execute_batch("BEGIN IMMEDIATE").unwrap();
    let claiming = tokio::spawn(async move { ledger.claim(&claim("k", "r1", "a", T0)).await });
    // The claim waits for the lock; a timer on the same thread still fires.
    let ticked = tokio::time::timeout(
        std::time::Duration::from_secs(2),
        tokio::time::sleep(std::time::Duration::from_millis(50)),
    )
    .await;
    assert!(ticked.is_ok(), "the runtime's thread was blocked");
    assert!(
        !claiming.is_finished(),
        "the claim still waits for the lock"
    );
    other_process.execute_batch("COMMIT").unwrap();
    assert_eq!(claiming.await.unwrap().unwrap(), Claimed::Fresh);
}

#[tokio::test]
async fn an_sqlite_read_does_not_wait_for_another_processes_write_lock() {
    let file = sqlite_file();
    let store = file.open().await;
    store
        .claim(&claim("k", "r1", "a", T0))
        .await
        .expect("a record to read");
    // Another process holds the database's write lock, as a long write step would.
    let writer = rusqlite::Connection::open(&file.0).unwrap();
    writer.execute_batch("BEGIN IMMEDIATE").unwrap();
    let quick = std::time::Duration::from_secs(2);
    let read = tokio::time::timeout(quick, store.get("k")).await;
    let record = read
        .expect("a read never waits for the write lock")
        .unwrap();
    assert!(record.is_some());
    let pending = tokio::time::timeout(quick, store.pending_approvals(T0, &seal())).await;
    assert!(pending.expect("nor does the supervisor's queue").is_ok());
    let look = tokio::time::timeout(quick, store.look_for_approval(&ask("r1", "apr_a", T0))).await;
    assert!(look.expect("nor does a write's look for approval").is_ok());
    writer.execute_batch("ROLLBACK").unwrap();
}
