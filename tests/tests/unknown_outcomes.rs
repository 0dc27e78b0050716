//! Issue 4, points 3, 5, 7 and 9: writes whose outcome is unknown are reconciled, never run
//! again; the same key is never dispatched twice; cancellation is reported honestly.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tool_contract::control::SqliteStore;
use tool_contract::control::{ControlStore, MemoryStore, WriteState};
use tool_contract::dispatch::{Dispatch, Dispatcher, StopReason, Task};
use tool_contract::results::{Delivery, Outcome, Recovery};
use tool_contract::{ErrorCode, Status};
use tool_contract_tests::tracker::{
    Fault, OPTIONS, Remote, advance_clock, alice, approve, context, create, dispatcher, run, sent,
};

fn memory_dispatcher(remote: &Arc<Remote>) -> Dispatcher {
    dispatcher(remote, Arc::new(MemoryStore::new()))
}

fn code(dispatch: &Dispatch) -> Option<ErrorCode> {
    dispatch.result.model.error().map(|error| error.code())
}

fn verified(dispatcher: &Dispatcher, call: &tool_contract::CallContext, dispatch: &Dispatch) {
    dispatcher
        .binder()
        .verify(&alice(), call, &dispatch.result)
        .expect("the result verifies");
}

#[tokio::test(start_paused = true)]
async fn a_create_that_times_out_is_unknown_and_a_status_query_by_key_finds_241_without_a_second_create()
 {
    let remote = Remote::new();
    remote.script(&[Fault::CommitThenHang]);
    let dispatcher = memory_dispatcher(&remote);
    let call = create("c1", "Printer on fire", "Floor 3", "k-1");

    let timed_out = run(&dispatcher, &call).await;
    assert_eq!(timed_out.result.model.status(), Status::Unknown);
    assert_eq!(code(&timed_out), Some(ErrorCode::OutcomeUnknown));
    assert_eq!(
        timed_out.result.model.error().unwrap().recovery(),
        Recovery::QueryStatus
    );
    assert_eq!(timed_out.result.model.execution().outcome, Outcome::Unknown);
    assert_eq!(timed_out.write_state, Some(WriteState::Unknown));
    assert_eq!(timed_out.stop, Some(StopReason::OutcomeUnknown));
    assert_eq!(timed_out.attempts, 1, "never retried after dispatch");
    verified(&dispatcher, &call, &timed_out);

    let status_call = create("c2", "Printer on fire", "Floor 3", "k-1");
    let reconciled = dispatcher
        .reconcile(&alice(), &status_call, &Task::unlimited())
        .await;
    assert_eq!(reconciled.result.model.status(), Status::Succeeded);
    assert_eq!(
        reconciled.result.model.data(),
        Some(json!({ "number": 241 }))
    );
    assert_eq!(
        reconciled.result.model.execution().delivery,
        Delivery::ReceiptReconciled
    );
    assert_eq!(reconciled.write_state, Some(WriteState::Succeeded));
    verified(&dispatcher, &status_call, &reconciled);
    assert_eq!(remote.status_queries(), 1);
    assert_eq!(remote.requests(&sent("k-1")), 1, "no second create");

    // Asking again replays what the ledger now knows.
    let again = dispatcher
        .dispatch(
            &alice(),
            &create("c3", "Printer on fire", "Floor 3", "k-1"),
            &Task::unlimited(),
        )
        .await;
    assert_eq!(
        again.result.model.execution().delivery,
        Delivery::LocalReplay
    );
    assert_eq!(again.result.model.data(), Some(json!({ "number": 241 })));
    assert_eq!(remote.requests(&sent("k-1")), 1);
}

#[tokio::test(start_paused = true)]
async fn calling_the_write_again_after_an_unknown_outcome_queries_its_status_instead() {
    let remote = Remote::new();
    remote.script(&[Fault::CommitThenHang]);
    let dispatcher = memory_dispatcher(&remote);
    let unknown = run(&dispatcher, &create("c1", "t", "b", "k-1")).await;
    // What the model is told to do is what settles it: the same call again.
    let told = unknown.result.model.error().expect("an error").message();
    assert!(told.contains("Call it again unchanged"), "{told}");
    let retried = run(&dispatcher, &create("c2", "t", "b", "k-1")).await;
    assert_eq!(
        retried.result.model.execution().delivery,
        Delivery::ReceiptReconciled
    );
    assert_eq!(retried.result.model.data(), Some(json!({ "number": 241 })));
    assert_eq!(retried.attempts, 0);
    assert_eq!(remote.requests(&sent("k-1")), 1);
}

#[tokio::test(start_paused = true)]
async fn a_status_query_that_finds_nothing_settles_the_write_as_failed_without_running_it() {
    let remote = Remote::new();
    remote.script(&[Fault::HangBeforeCommit]);
    let dispatcher = memory_dispatcher(&remote);
    let call = create("c1", "t", "b", "k-1");
    let unknown = run(&dispatcher, &call).await;
    assert_eq!(unknown.write_state, Some(WriteState::Unknown));
    let settled = dispatcher
        .reconcile(&alice(), &call, &Task::unlimited())
        .await;
    assert_eq!(code(&settled), Some(ErrorCode::ToolError));
    assert_eq!(settled.write_state, Some(WriteState::Failed));
    assert_eq!(remote.requests(&sent("k-1")), 1);
    assert_eq!(remote.created(&sent("k-1")), None);
}

#[tokio::test(start_paused = true)]
async fn a_remote_without_keys_or_status_queries_stops_and_says_the_issue_may_exist() {
    let remote = Remote::new();
    remote.script(&[Fault::CommitThenHang]);
    let dispatcher = memory_dispatcher(&remote);
    let call = context(
        "c1",
        "file_issue",
        json!({ "title": "t", "body": "b" }),
        "op-1",
        "k-1",
    );
    approve(&dispatcher, &call, "bob").await;

    let stopped = run(&dispatcher, &call).await;
    assert_eq!(stopped.result.model.status(), Status::Unknown);
    assert_eq!(code(&stopped), Some(ErrorCode::OutcomeUnconfirmed));
    let error = stopped.result.model.error().unwrap();
    assert_eq!(error.recovery(), Recovery::HumanReview);
    assert!(
        error.message().contains("may have happened"),
        "{}",
        error.message()
    );
    assert_eq!(stopped.write_state, Some(WriteState::Unknown));
    verified(&dispatcher, &call, &stopped);

    // It waits for a person: asking again neither runs it nor pretends to know.
    let again = run(&dispatcher, &call).await;
    assert_eq!(code(&again), Some(ErrorCode::OutcomeUnconfirmed));
    assert_eq!(remote.requests(&sent("k-1")), 1);
    assert_eq!(remote.status_queries(), 0);
}

#[tokio::test(start_paused = true)]
async fn the_same_key_while_the_first_is_in_flight_is_refused_never_dispatched_twice() {
    let remote = Remote::new();
    remote.script(&[Fault::HangBeforeCommit]);
    let dispatcher = memory_dispatcher(&remote);
    let first = create("c1", "t", "b", "k-1");
    let second = create("c2", "t", "b", "k-1");
    let (principal, task) = (alice(), Task::unlimited());
    let (first, second) = tokio::join!(dispatcher.dispatch(&principal, &first, &task), async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        run(&dispatcher, &second).await
    });
    assert_eq!(code(&second), Some(ErrorCode::OperationInProgress));
    assert_eq!(
        second.result.model.error().unwrap().recovery(),
        Recovery::RetryAfter
    );
    assert_eq!(second.attempts, 0);
    assert_eq!(first.write_state, Some(WriteState::Unknown));
    assert_eq!(remote.requests(&sent("k-1")), 1);
}

#[tokio::test(start_paused = true)]
async fn the_same_key_with_other_arguments_is_an_idempotency_conflict() {
    let remote = Remote::new();
    let dispatcher = memory_dispatcher(&remote);
    let done = run(&dispatcher, &create("c1", "t", "b", "k-1")).await;
    assert_eq!(done.result.model.status(), Status::Succeeded);
    let conflicting = create("c2", "another title", "b", "k-1");
    let conflict = run(&dispatcher, &conflicting).await;
    assert_eq!(code(&conflict), Some(ErrorCode::IdempotencyConflict));
    verified(&dispatcher, &conflicting, &conflict);
    assert_eq!(remote.requests(&sent("k-1")), 1);
}

#[tokio::test(start_paused = true)]
async fn a_new_key_is_a_new_intent() {
    let remote = Remote::new();
    let dispatcher = memory_dispatcher(&remote);
    run(&dispatcher, &create("c1", "t", "b", "k-1")).await;
    let second = run(&dispatcher, &create("c2", "t", "b", "k-2")).await;
    assert_eq!(second.result.model.data(), Some(json!({ "number": 242 })));
    assert_eq!(second.result.model.execution().delivery, Delivery::Fresh);
}

#[tokio::test(start_paused = true)]
async fn two_principals_never_share_a_key() {
    let remote = Remote::new();
    let dispatcher = memory_dispatcher(&remote);
    run(&dispatcher, &create("c1", "t", "b", "k-1")).await;
    let mallory = tool_contract::Principal::new("evil", "mallory");
    let theirs = dispatcher
        .dispatch(&mallory, &create("c2", "t", "b", "k-1"), &Task::unlimited())
        .await;
    assert_eq!(
        theirs.result.model.execution().delivery,
        Delivery::Fresh,
        "no replay of alice's result"
    );
}

async fn restart_between_executing_and_the_outcome(open: impl Fn() -> Arc<dyn ControlStore>) {
    let remote = Remote::new();
    remote.script(&[Fault::CommitThenHang]);
    let call = create("c1", "t", "b", "k-1");
    {
        let before = dispatcher(&remote, open());
        // The process dies while the handler runs: the dispatch never finishes.
        let crashed = tokio::time::timeout(
            Duration::from_secs(1),
            before.dispatch(&alice(), &call, &Task::unlimited()),
        )
        .await;
        assert!(crashed.is_err());
    }
    let after = dispatcher(&remote, open());
    assert_eq!(
        after.write_state(&alice(), &call).await.unwrap(),
        Some(WriteState::Executing)
    );
    let early = run(&after, &call).await;
    assert_eq!(
        code(&early),
        Some(ErrorCode::OperationInProgress),
        "the old lease may still run"
    );

    advance_clock(Duration::from_secs(3600));
    let recovered = run(&after, &create("c2", "t", "b", "k-1")).await;
    assert_eq!(
        recovered.result.model.execution().delivery,
        Delivery::ReceiptReconciled
    );
    assert_eq!(
        recovered.result.model.data(),
        Some(json!({ "number": 241 }))
    );
    assert_eq!(recovered.attempts, 0);
    assert_eq!(remote.requests(&sent("k-1")), 1, "not re-dispatched");
}

#[tokio::test(start_paused = true)]
async fn a_restart_between_executing_and_the_outcome_is_reconciled_not_rerun_in_memory() {
    let ledger = MemoryStore::new();
    restart_between_executing_and_the_outcome(|| Arc::new(ledger.clone())).await;
}

#[tokio::test(start_paused = true)]
async fn a_restart_between_executing_and_the_outcome_is_reconciled_not_rerun_on_sqlite() {
    let path = std::env::temp_dir().join(format!(
        "tool-contract-restart-{}.sqlite",
        std::process::id()
    ));
    restart_between_executing_and_the_outcome(|| Arc::new(SqliteStore::open(&path).unwrap())).await;
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

#[tokio::test(start_paused = true)]
async fn a_write_lost_without_a_status_query_stays_unknown_after_a_restart() {
    let remote = Remote::new();
    remote.script(&[
        Fault::CommitThenHang,
        Fault::CommitThenHang,
        Fault::CommitThenHang,
    ]);
    let ledger = MemoryStore::new();
    let call = context(
        "c1",
        "label_issue",
        json!({ "number": 241, "label": "bug" }),
        "op-1",
        "k-1",
    );
    let first = dispatcher(&remote, Arc::new(ledger.clone()));
    let lost = run(&first, &call).await;
    assert_eq!(lost.attempts, OPTIONS.retry.max_attempts);
    assert_eq!(lost.write_state, Some(WriteState::Unknown));
    assert_eq!(code(&lost), Some(ErrorCode::OutcomeUnconfirmed));
    let second = dispatcher(&remote, Arc::new(ledger));
    let still = run(&second, &call).await;
    assert_eq!(code(&still), Some(ErrorCode::OutcomeUnconfirmed));
    assert_eq!(still.attempts, 0);
    assert_eq!(remote.requests(&sent("k-1")), 3);
}

/// Runs a create whose remote behaves as `fault`, and asks to cancel it 500 ms in.
async fn cancelled_half_a_second_in(fault: Fault) -> (Dispatcher, Dispatch, Option<WriteState>) {
    let remote = Remote::new();
    remote.script(&[fault]);
    let dispatcher = memory_dispatcher(&remote);
    let call = create("c1", "t", "b", "k-1");
    let (principal, task) = (alice(), Task::unlimited());
    let (dispatch, asked) = tokio::join!(dispatcher.dispatch(&principal, &call, &task), async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        dispatcher.cancel(&principal, &call).await.unwrap()
    });
    (dispatcher, dispatch, asked)
}

#[tokio::test(start_paused = true)]
async fn cancelling_a_running_write_reports_cancel_requested_until_the_handler_confirms() {
    let (_, dispatch, asked) = cancelled_half_a_second_in(Fault::HonourCancel).await;
    assert_eq!(asked, Some(WriteState::CancelRequested));
    assert_eq!(code(&dispatch), Some(ErrorCode::Cancelled));
    assert_eq!(dispatch.write_state, Some(WriteState::Cancelled));
    assert_eq!(
        dispatch.result.model.execution().outcome,
        Outcome::NotStarted
    );
}

#[tokio::test(start_paused = true)]
async fn a_cancel_the_handler_never_confirms_is_not_reported_as_nothing_happened() {
    let (dispatcher, dispatch, asked) = cancelled_half_a_second_in(Fault::CommitThenHang).await;
    let call = create("c1", "t", "b", "k-1");
    assert_eq!(asked, Some(WriteState::CancelRequested));
    assert_eq!(dispatch.result.model.status(), Status::Unknown);
    assert_eq!(dispatch.write_state, Some(WriteState::Unknown));
    assert_eq!(
        dispatcher.write_state(&alice(), &call).await.unwrap(),
        Some(WriteState::Unknown)
    );
}

#[tokio::test(start_paused = true)]
async fn cancelling_a_finished_write_changes_nothing() {
    let remote = Remote::new();
    let dispatcher = memory_dispatcher(&remote);
    let call = create("c1", "t", "b", "k-1");
    run(&dispatcher, &call).await;
    assert_eq!(
        dispatcher.cancel(&alice(), &call).await.unwrap(),
        Some(WriteState::Succeeded)
    );
    assert_eq!(
        dispatcher
            .cancel(&alice(), &create("c2", "t", "b", "k-none"))
            .await
            .unwrap(),
        None
    );
}

#[test]
fn one_write_dispatched_from_many_threads_at_once_runs_once() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_time()
        .build()
        .unwrap();
    let remote = Remote::new();
    let dispatcher = Arc::new(memory_dispatcher(&remote));
    let outcomes: Vec<Dispatch> = runtime.block_on(async {
        let tasks: Vec<_> = (0..16)
            .map(|index| {
                let dispatcher = Arc::clone(&dispatcher);
                tokio::spawn(async move {
                    let call = create(&format!("c{index}"), "t", "b", "k-1");
                    run(&dispatcher, &call).await
                })
            })
            .collect();
        let mut outcomes = Vec::new();
        for task in tasks {
            outcomes.push(task.await.unwrap());
        }
        outcomes
    });
    assert_eq!(remote.creations(&sent("k-1")), 1);
    for dispatch in &outcomes {
        let fine = dispatch.result.model.status() == Status::Succeeded
            || code(dispatch) == Some(ErrorCode::OperationInProgress);
        assert!(fine, "{:?}", dispatch.result.model.error());
    }
}

#[tokio::test(start_paused = true)]
async fn a_key_is_replayed_within_its_retention_and_free_after_it() {
    let remote = Remote::new();
    let dispatcher = tool_contract_tests::tracker::builder(&remote)
        .retention(Duration::from_secs(3600))
        .build()
        .unwrap();
    let call = create("c1", "t", "b", "k-1");
    run(&dispatcher, &call).await;
    advance_clock(Duration::from_secs(1800));
    let kept = run(&dispatcher, &call).await;
    assert_eq!(
        kept.result.model.execution().delivery,
        Delivery::LocalReplay
    );
    advance_clock(Duration::from_secs(1801));
    let expired = run(&dispatcher, &call).await;
    assert_eq!(expired.result.model.execution().delivery, Delivery::Fresh);
    assert_eq!(expired.result.model.data(), Some(json!({ "number": 242 })));
}

#[tokio::test(start_paused = true)]
async fn reconciling_a_write_whose_process_died_asks_the_status_query() {
    let remote = Remote::new();
    remote.script(&[Fault::CommitThenHang]);
    let ledger = MemoryStore::new();
    let call = create("c1", "t", "b", "k-1");
    {
        let before = dispatcher(&remote, Arc::new(ledger.clone()));
        let crashed = tokio::time::timeout(Duration::from_secs(1), run(&before, &call)).await;
        assert!(crashed.is_err());
    }
    let after = dispatcher(&remote, Arc::new(ledger));
    assert_eq!(
        code(&after.reconcile(&alice(), &call, &Task::unlimited()).await),
        Some(ErrorCode::OperationInProgress)
    );
    advance_clock(Duration::from_secs(3600));
    assert_eq!(
        after.write_state(&alice(), &call).await.unwrap(),
        Some(WriteState::Unknown)
    );
    let settled = after.reconcile(&alice(), &call, &Task::unlimited()).await;
    assert_eq!(
        settled.result.model.execution().delivery,
        Delivery::ReceiptReconciled
    );
    assert_eq!(settled.write_state, Some(WriteState::Succeeded));
    assert_eq!(remote.requests(&sent("k-1")), 1);
}

#[tokio::test(start_paused = true)]
async fn reconciling_an_operation_nobody_started_finds_nothing() {
    let remote = Remote::new();
    let dispatcher = memory_dispatcher(&remote);
    let settled = dispatcher
        .reconcile(
            &alice(),
            &create("c1", "t", "b", "k-none"),
            &Task::unlimited(),
        )
        .await;
    assert_eq!(code(&settled), Some(ErrorCode::NotFound));
    assert_eq!(remote.status_queries(), 0);
}

#[tokio::test(start_paused = true)]
async fn expired_keys_are_purged_on_request_and_every_so_many_writes() {
    let remote = Remote::new();
    let ledger = MemoryStore::new();
    let dispatcher = tool_contract_tests::tracker::builder(&remote)
        .store(Arc::new(ledger.clone()))
        .retention(Duration::from_secs(60))
        .build()
        .unwrap();
    run(&dispatcher, &create("c0", "t", "b", "k-0")).await;
    advance_clock(Duration::from_secs(61));
    assert_eq!(dispatcher.purge_expired().await.unwrap().records, 1);

    // The first write above and these fill all but the last write of a round.
    for index in 0..tool_contract::dispatch::PURGE_EVERY - 2 {
        run(
            &dispatcher,
            &create(&format!("c{index}"), "t", "b", &format!("k-{index}")),
        )
        .await;
    }
    advance_clock(Duration::from_secs(61));
    // The write that completes the next round of PURGE_EVERY purges what expired.
    run(&dispatcher, &create("c-last", "t", "b", "k-last")).await;
    for index in [0, 1, 253] {
        assert_eq!(
            ledger
                .get(&format!(
                    "{}:k-{index}",
                    tool_contract_tests::tracker::keys().principal_ref(&alice())
                ))
                .await
                .unwrap(),
            None
        );
    }
}
