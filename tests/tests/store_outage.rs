//! Issue 16, point 3: an unreachable or failing store fails closed. The write does not run
//! without a claim, the model reads a catalog error it may retry after, and nothing is lost.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tool_contract::control::{ApprovalError, MemoryStore, StoreError, WriteState};
use tool_contract::dispatch::{Dispatch, Dispatcher};
use tool_contract::results::{Delivery, Outcome, Recovery};
use tool_contract::{CallContext, ErrorCode, Status};
use tool_contract_tests::hooked::Hooked;
use tool_contract_tests::postgres::{Relay, Schema};
use tool_contract_tests::tracker::{
    Fault, Remote, advance_clock, alice, builder, clock, context, create, run, sent,
};

fn code(dispatch: &Dispatch) -> Option<ErrorCode> {
    dispatch.result.model.error().map(|error| error.code())
}

/// What the model reads when the store is down: nothing happened, try again later.
fn assert_refused_safely(dispatch: &Dispatch) {
    let error = dispatch.result.model.error().expect("an error");
    let entry = error.code().entry();
    assert_eq!(error.code(), ErrorCode::StoreUnavailable);
    assert_eq!(entry.outcome, Outcome::NotStarted);
    assert_eq!(entry.recovery, Recovery::RetryAfter);
}

/// Runs `call` after the store came back. On a loaded machine the pool may not reach the
/// database again at once (seen as a pool timeout): until it does, the model reads the safe
/// refusal (nothing ran, retry after) and retries, as it would.
async fn run_once_the_store_is_back(dispatcher: &Dispatcher, call: &CallContext) -> Dispatch {
    let mut dispatch = run(dispatcher, call).await;
    for _ in 0..20 {
        if code(&dispatch) != Some(ErrorCode::StoreUnavailable) {
            break;
        }
        assert_refused_safely(&dispatch);
        tokio::time::sleep(Duration::from_millis(100)).await;
        dispatch = run(dispatcher, call).await;
    }
    dispatch
}

async fn through_relay(schema: &Schema, relay: &Relay, remote: &Arc<Remote>) -> Dispatcher {
    let options = schema
        .options()
        .with_connect_timeout(Duration::from_millis(500));
    let store = relay.store(schema, options).await;
    builder(remote).store(Arc::new(store)).build().unwrap()
}

#[tokio::test]
async fn a_write_whose_store_went_away_does_not_run_and_runs_once_it_is_back() {
    let Some(schema) = Schema::new("a_write_whose_store_went_away_does_not_run") else {
        return;
    };
    let relay = Relay::start(&schema.url);
    let remote = Remote::new();
    let dispatcher = through_relay(&schema, &relay, &remote).await;
    let first = run(&dispatcher, &create("c1", "Printer", "jammed", "k1")).await;
    assert_eq!(first.result.model.status(), Status::Succeeded);
    relay.cut();
    let refused = run(&dispatcher, &create("c2", "Scanner", "jammed", "k2")).await;
    assert_refused_safely(&refused);
    assert_eq!(
        remote.requests(&sent("k2")),
        0,
        "no write ran without a claim"
    );
    let file = context(
        "c3",
        "file_issue",
        json!({ "title": "t", "body": "b" }),
        "op-k3",
        "k3",
    );
    assert_refused_safely(&run(&dispatcher, &file).await);
    assert!(matches!(
        dispatcher
            .approve(
                "apr_x",
                "0",
                "supervisor",
                clock() + Duration::from_secs(60)
            )
            .await,
        Err(ApprovalError::Store(StoreError::Store(_)))
    ));
    relay.restore();
    let again =
        run_once_the_store_is_back(&dispatcher, &create("c2", "Scanner", "jammed", "k2")).await;
    assert_eq!(
        again.result.model.status(),
        Status::Succeeded,
        "{:?}",
        code(&again)
    );
    assert_eq!(remote.creations(&sent("k2")), 1);
}

#[tokio::test]
async fn a_store_lost_while_a_write_runs_loses_nothing() {
    let Some(schema) = Schema::new("a_store_lost_while_a_write_runs_loses_nothing") else {
        return;
    };
    let relay = Relay::start(&schema.url);
    let remote = Remote::new();
    let dispatcher = Arc::new(through_relay(&schema, &relay, &remote).await);
    let call = create("c1", "Printer", "jammed", "k1");
    remote.script(&[Fault::CommitAfter(Duration::from_millis(300))]);
    let running = {
        let (dispatcher, call) = (dispatcher.clone(), call.clone());
        tokio::spawn(async move { run(&dispatcher, &call).await })
    };
    while remote.requests(&sent("k1")) == 0 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    // The claim is on record; the store goes before the outcome can be.
    relay.cut();
    let ran = running.await.unwrap();
    assert_eq!(
        ran.result.model.status(),
        Status::Succeeded,
        "the output it got is delivered"
    );
    assert_eq!(
        ran.write_state,
        Some(WriteState::Unknown),
        "but not recorded"
    );
    assert!(ran.audit_error.is_none(), "the audit holds it");
    relay.restore();
    // The record still says executing; once its lease lapses, the status query settles it.
    advance_clock(Duration::from_secs(3600));
    let settled = run_once_the_store_is_back(&dispatcher, &call).await;
    assert_eq!(
        settled.result.model.execution().delivery,
        Delivery::ReceiptReconciled,
        "{:?} {:?}",
        code(&settled),
        settled.result.audit.detail
    );
    assert_eq!(settled.write_state, Some(WriteState::Succeeded));
    assert_eq!(remote.creations(&sent("k1")), 1);
}

#[tokio::test]
async fn every_store_step_that_fails_before_the_claim_runs_nothing() {
    for failing in ["get", "check_approval", "claim"] {
        let remote = Remote::new();
        let store = Hooked::new(Arc::new(MemoryStore::new()), move |step| {
            if step == failing {
                Err(StoreError::store(std::io::Error::other("connection reset")))
            } else {
                Ok(())
            }
        });
        let dispatcher = builder(&remote).store(Arc::new(store)).build().unwrap();
        let create = create("c1", "Printer", "jammed", "k1");
        let file = context(
            "c2",
            "file_issue",
            json!({ "title": "t", "body": "b" }),
            "op-k2",
            "k2",
        );
        for (call, key) in [(&create, "k1"), (&file, "k2")] {
            if failing == "check_approval" && key == "k1" {
                continue; // create_issue needs no approval
            }
            let task = tool_contract::dispatch::Task::unlimited();
            let mut refused = dispatcher.dispatch(&alice(), call, &task).await;
            if let Some(pending) = refused.pending_approval.take() {
                // Approved, so the write goes on to the claim that fails.
                dispatcher
                    .approve(
                        &pending.approval_id,
                        &pending.preview_sha256,
                        "supervisor",
                        clock() + Duration::from_secs(60),
                    )
                    .await
                    .unwrap()
                    .grant()
                    .expect("one approver grants it");
                refused = dispatcher.dispatch(&alice(), call, &task).await;
            }
            assert_refused_safely(&refused);
            assert!(
                tool_contract_tests::tracker::detail(&refused).contains("connection reset"),
                "the audit says why: {}",
                tool_contract_tests::tracker::detail(&refused)
            );
            assert_eq!(remote.requests(&sent(key)), 0, "{failing}: nothing ran");
        }
    }
}
