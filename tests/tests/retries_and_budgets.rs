//! Issue 4, points 6 and 7: retries by effect, backoff with full jitter, budgets checked
//! before each call, timeouts of reads.

use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use rand::SeedableRng;
use rand::rngs::SmallRng;
use serde_json::json;
use tokio::time::Instant;
use tool_contract::control::{MemoryStore, WriteState};
use tool_contract::dispatch::{Budget, Dispatch, Dispatcher, RetryPolicy, StopReason, Task};
use tool_contract::results::Recovery;
use tool_contract::{ErrorCode, Status};
use tool_contract_tests::tracker::{
    Fault, OPTIONS, ReadDoc, Remote, alice, builder, context, create, dispatcher, run, sent,
};

fn memory_dispatcher(remote: &Arc<Remote>) -> Dispatcher {
    dispatcher(remote, Arc::new(MemoryStore::new()))
}

fn code(dispatch: &Dispatch) -> Option<ErrorCode> {
    dispatch.result.model.error().map(|error| error.code())
}

fn read(call_id: &str) -> tool_contract::CallContext {
    context(
        call_id,
        "read_doc",
        json!({ "doc_id": "d" }),
        &format!("op-{call_id}"),
        &format!("k-{call_id}"),
    )
}

fn label(call_id: &str, key: &str) -> tool_contract::CallContext {
    context(
        call_id,
        "label_issue",
        json!({ "number": 241, "label": "bug" }),
        "op-label",
        key,
    )
}

#[test]
fn the_backoff_ceiling_doubles_up_to_the_cap() {
    let policy = RetryPolicy::DEFAULT
        .with_max_attempts(10)
        .with_base(Duration::from_millis(100))
        .with_cap(Duration::from_millis(1_000))
        .with_max_total_wait(Duration::from_secs(60));
    let ceilings: Vec<u128> = (0..6)
        .map(|retry| policy.ceiling(retry).as_millis())
        .collect();
    assert_eq!(ceilings, [100, 200, 400, 800, 1_000, 1_000]);
    assert_eq!(
        policy.ceiling(200),
        Duration::from_millis(1_000),
        "no overflow"
    );
}

proptest! {
    #[test]
    fn full_jitter_stays_under_the_ceiling_and_never_under_the_servers_wait(
        seed in any::<u64>(),
        retry in 0_u32..40,
        hint_ms in proptest::option::of(0_u64..120_000),
    ) {
        let policy = RetryPolicy::DEFAULT;
        let mut rng = SmallRng::seed_from_u64(seed);
        let wait = policy.wait(retry, hint_ms.map(Duration::from_millis), &mut rng);
        let hint = Duration::from_millis(hint_ms.unwrap_or(0));
        prop_assert!(wait >= hint);
        prop_assert!(wait <= policy.ceiling(retry).max(hint));
    }
}

#[test]
fn full_jitter_spreads_over_the_whole_range() {
    let policy = RetryPolicy::DEFAULT;
    let mut rng = SmallRng::seed_from_u64(7);
    let waits: Vec<u128> = (0..200)
        .map(|_| policy.wait(3, None, &mut rng).as_millis())
        .collect();
    let ceiling = policy.ceiling(3).as_millis();
    assert!(waits.iter().any(|wait| *wait < ceiling / 4));
    assert!(waits.iter().any(|wait| *wait > ceiling * 3 / 4));
}

#[tokio::test(start_paused = true)]
async fn a_rate_limited_read_is_retried_after_the_servers_wait() {
    let remote = Remote::new();
    remote.script(&[Fault::RateLimit(1_500)]);
    let dispatcher = memory_dispatcher(&remote);
    let started = Instant::now();
    let dispatch = dispatcher
        .dispatch(&alice(), &read("c1"), &Task::unlimited())
        .await;
    assert_eq!(dispatch.result.model.status(), Status::Succeeded);
    assert_eq!(dispatch.attempts, 2);
    assert!(
        started.elapsed() >= Duration::from_millis(1_500),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test(start_paused = true)]
async fn a_read_that_times_out_is_retried_within_budget() {
    let remote = Remote::new();
    remote.script(&[Fault::HangBeforeCommit]);
    let dispatcher = memory_dispatcher(&remote);
    let started = Instant::now();
    let dispatch = dispatcher
        .dispatch(&alice(), &read("c1"), &Task::unlimited())
        .await;
    assert_eq!(dispatch.result.model.status(), Status::Succeeded);
    assert_eq!(dispatch.attempts, 2);
    assert!(started.elapsed() >= OPTIONS.timeout);
}

#[tokio::test(start_paused = true)]
async fn a_read_that_keeps_failing_stops_after_its_attempts_with_the_servers_wait() {
    let remote = Remote::new();
    remote.script(&[
        Fault::RateLimit(700),
        Fault::RateLimit(700),
        Fault::RateLimit(2_500),
    ]);
    let dispatcher = memory_dispatcher(&remote);
    let dispatch = dispatcher
        .dispatch(&alice(), &read("c1"), &Task::unlimited())
        .await;
    assert_eq!(code(&dispatch), Some(ErrorCode::RateLimit));
    let error = dispatch.result.model.error().unwrap();
    assert_eq!(error.recovery(), Recovery::RetryAfter);
    assert_eq!(error.retry_after_ms(), Some(2_500));
    assert_eq!(dispatch.attempts, OPTIONS.retry.max_attempts);
    assert_eq!(dispatch.stop, Some(StopReason::AttemptsExhausted));
    assert_eq!(remote.reads(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_read_whose_server_asks_for_too_long_a_wait_stops_at_the_wait_allowance() {
    let remote = Remote::new();
    remote.script(&[Fault::RateLimit(60_000)]);
    let dispatcher = memory_dispatcher(&remote);
    let dispatch = dispatcher
        .dispatch(&alice(), &read("c1"), &Task::unlimited())
        .await;
    assert_eq!(code(&dispatch), Some(ErrorCode::RateLimit));
    assert_eq!(dispatch.stop, Some(StopReason::RetryWaitExhausted));
    assert_eq!(dispatch.attempts, 1);
}

#[tokio::test(start_paused = true)]
async fn a_non_idempotent_write_is_never_retried_once_dispatched() {
    let remote = Remote::new();
    remote.script(&[Fault::RateLimit(100)]);
    let dispatcher = memory_dispatcher(&remote);
    let call = create("c1", "t", "b", "k-1");
    let dispatch = run(&dispatcher, &call).await;
    assert_eq!(code(&dispatch), Some(ErrorCode::RateLimit));
    assert_eq!(dispatch.stop, Some(StopReason::NotRetryable));
    assert_eq!(dispatch.attempts, 1);
    assert_eq!(remote.requests(&sent("k-1")), 1);
    // Refused by the remote: nothing happened, so the key is free again.
    assert_eq!(dispatch.write_state, None);
    let again = run(&dispatcher, &call).await;
    assert_eq!(again.result.model.status(), Status::Succeeded);
    assert_eq!(remote.requests(&sent("k-1")), 2);
}

#[tokio::test(start_paused = true)]
async fn a_non_idempotent_write_that_was_never_sent_is_retried() {
    let remote = Remote::new();
    remote.script(&[Fault::NotSent]);
    let dispatcher = memory_dispatcher(&remote);
    let dispatch = run(&dispatcher, &create("c1", "t", "b", "k-1")).await;
    assert_eq!(dispatch.result.model.status(), Status::Succeeded);
    assert_eq!(dispatch.attempts, 2);
    assert_eq!(remote.requests(&sent("k-1")), 1);
    assert_eq!(dispatch.write_state, Some(WriteState::Succeeded));
}

#[tokio::test(start_paused = true)]
async fn an_idempotent_write_that_times_out_is_retried_under_the_same_key() {
    let remote = Remote::new();
    remote.script(&[Fault::CommitThenHang]);
    let dispatcher = memory_dispatcher(&remote);
    let dispatch = dispatcher
        .dispatch(&alice(), &label("c1", "k-label"), &Task::unlimited())
        .await;
    assert_eq!(dispatch.result.model.status(), Status::Succeeded);
    assert_eq!(dispatch.attempts, 2);
    assert_eq!(
        remote.requests(&sent("k-label")),
        2,
        "both attempts carried the one key"
    );
    assert_eq!(remote.created(&sent("k-label")), Some(241));
}

#[tokio::test(start_paused = true)]
async fn a_budget_exhausted_mid_task_stops_with_that_reason_and_no_call_over_it() {
    let remote = Remote::new();
    let dispatcher = memory_dispatcher(&remote);
    let task = Task::new(Budget::default().with_tool_calls(2));
    for call_id in ["c1", "c2"] {
        let dispatch = dispatcher.dispatch(&alice(), &read(call_id), &task).await;
        assert_eq!(dispatch.result.model.status(), Status::Succeeded);
    }
    let over = dispatcher.dispatch(&alice(), &read("c3"), &task).await;
    assert_eq!(code(&over), Some(ErrorCode::BudgetExhausted));
    assert_eq!(over.stop, Some(StopReason::ToolCallsExhausted));
    assert_eq!(over.attempts, 0);
    assert_eq!(remote.reads(), 2);
    assert_eq!(task.remaining().tool_calls, Some(0));
}

#[tokio::test(start_paused = true)]
async fn retries_count_against_the_budget_too() {
    let remote = Remote::new();
    remote.script(&[Fault::RateLimit(10), Fault::RateLimit(10)]);
    let dispatcher = memory_dispatcher(&remote);
    let task = Task::new(Budget::default().with_tool_calls(2));
    let dispatch = dispatcher.dispatch(&alice(), &read("c1"), &task).await;
    assert_eq!(code(&dispatch), Some(ErrorCode::BudgetExhausted));
    assert_eq!(dispatch.stop, Some(StopReason::ToolCallsExhausted));
    assert_eq!(remote.reads(), 2);
}

#[tokio::test(start_paused = true)]
async fn cost_units_are_checked_before_the_call_they_would_pay_for() {
    let remote = Remote::new();
    let dispatcher = builder(&remote)
        .handler_with(
            {
                let remote = remote.clone();
                move |input: ReadDoc, _| {
                    let remote = remote.clone();
                    async move { remote.read(&input.doc_id).await }
                }
            },
            OPTIONS.with_cost_units(2),
        )
        .build()
        .unwrap();
    let task = Task::new(Budget::default().with_cost_units(3));
    assert_eq!(
        dispatcher
            .dispatch(&alice(), &read("c1"), &task)
            .await
            .result
            .model
            .status(),
        Status::Succeeded
    );
    let over = dispatcher.dispatch(&alice(), &read("c2"), &task).await;
    assert_eq!(over.stop, Some(StopReason::CostUnitsExhausted));
    assert_eq!(remote.reads(), 1);
    assert_eq!(task.remaining().cost_units, Some(1));
}

#[tokio::test(start_paused = true)]
async fn the_deadline_bounds_attempts_and_waits() {
    let remote = Remote::new();
    remote.script(&[Fault::HangBeforeCommit, Fault::HangBeforeCommit]);
    let dispatcher = memory_dispatcher(&remote);
    let started = Instant::now();
    let task = Task::new(Budget::default().with_deadline(started + Duration::from_secs(7)));
    let dispatch = dispatcher.dispatch(&alice(), &read("c1"), &task).await;
    // The read ran, and its source did not answer in time.
    assert_eq!(code(&dispatch), Some(ErrorCode::SourceTimeout));
    assert!(
        started.elapsed() <= Duration::from_secs(7),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(dispatch.stop, Some(StopReason::DeadlineReached));

    let late = dispatcher.dispatch(&alice(), &read("c2"), &task).await;
    assert_eq!(code(&late), Some(ErrorCode::TimeoutBeforeExecute));
    assert_eq!(late.attempts, 0, "nothing runs past the deadline");
}

#[test]
fn model_turns_are_counted_before_each_turn() {
    let task = Task::new(Budget::default().with_model_turns(2));
    assert_eq!(task.begin_model_turn(), Ok(()));
    assert_eq!(task.begin_model_turn(), Ok(()));
    assert_eq!(
        task.begin_model_turn(),
        Err(StopReason::ModelTurnsExhausted)
    );
    assert_eq!(task.remaining().model_turns, Some(0));
}
