//! Approvals people can live with: a policy over the typed arguments decides when a person is
//! asked, a person may approve with edits (the edited request runs, and the model is told so),
//! and a rejection may say why, from a fixed list the model reads as trusted control data.

use std::time::Duration;

use serde_json::{Value, json};
use tool_contract::ErrorCode;
use tool_contract::control::{ApprovalError, RejectionReason};
use tool_contract::dispatch::{BuildError, Dispatcher};
use tool_contract::results::{Recovery, Trust};
use tool_contract_tests::tracker::{
    CreateIssue, Remote, SendMessage, alice, builder, clock, code, message, pending_approval, run,
};

/// Mail inside the organisation runs; mail to anyone else waits for a person.
fn outside_needs_a_person(message: &SendMessage) -> bool {
    !message.to.ends_with("@acme.example")
}

#[tokio::test]
async fn a_policy_asks_a_person_only_when_the_typed_arguments_call_for_it() {
    let remote = Remote::new();
    let dispatcher = builder(&remote)
        .approval_when(outside_needs_a_person)
        .build()
        .unwrap();

    let inside = run(&dispatcher, &message("m1", "carol@acme.example")).await;
    assert_eq!(code(&inside), None, "ran without asking");
    assert!(inside.pending_approval.is_none());
    assert_eq!(remote.all_requests(), 1);

    let outside = run(&dispatcher, &message("m2", "bob@globex.example")).await;
    assert_eq!(code(&outside), Some(ErrorCode::ApprovalRequired));
    assert!(outside.pending_approval.is_some());
    assert_eq!(remote.all_requests(), 1, "nothing more ran");
}

#[tokio::test]
async fn without_a_policy_every_write_of_a_contract_needing_approval_asks() {
    let remote = Remote::new();
    let dispatcher = builder(&remote).build().unwrap();
    let inside = run(&dispatcher, &message("m1", "carol@acme.example")).await;
    assert_eq!(code(&inside), Some(ErrorCode::ApprovalRequired));
    assert_eq!(remote.all_requests(), 0);
}

#[tokio::test]
async fn a_policy_that_panics_asks_a_person() {
    let remote = Remote::new();
    let dispatcher = builder(&remote)
        .approval_when(|_: &SendMessage| -> bool { panic!("the policy's own bug") })
        .build()
        .unwrap();
    let dispatch = run(&dispatcher, &message("m1", "carol@acme.example")).await;
    assert_eq!(code(&dispatch), Some(ErrorCode::ApprovalRequired));
    assert_eq!(remote.all_requests(), 0);
}

#[test]
fn a_policy_never_adds_an_approval_the_contract_does_not_ask_for() {
    let remote = Remote::new();
    let Err(errors) = builder(&remote)
        .approval_when(|_: &CreateIssue| true)
        .build()
    else {
        panic!("a policy for a tool without approval was accepted");
    };
    assert!(
        errors.contains(&BuildError::PolicyWithoutApproval("create_issue")),
        "{errors:?}"
    );
}

async fn rejected(dispatcher: &Dispatcher, reason: Option<RejectionReason>) -> Value {
    let call = message("m1", "bob@globex.example");
    let pending = pending_approval(dispatcher, &call).await;
    match reason {
        Some(reason) => {
            dispatcher
                .reject_because(&pending.approval_id, reason)
                .await
        }
        None => dispatcher.reject(&pending.approval_id).await,
    }
    .expect("rejected");
    let dispatch = run(dispatcher, &call).await;
    assert_eq!(
        dispatch.result.model.provenance().trust,
        Trust::TrustedControl
    );
    serde_json::to_value(&dispatch.result.model).unwrap()
}

#[tokio::test]
async fn a_rejection_for_a_reason_reaches_the_model_as_that_reasons_catalog_entry() {
    for (reason, expected, recovery) in [
        (
            RejectionReason::WrongDetails,
            ErrorCode::RejectedWrongDetails,
            Recovery::CorrectInput,
        ),
        (
            RejectionReason::NotPermitted,
            ErrorCode::RejectedNotPermitted,
            Recovery::None,
        ),
        (
            RejectionReason::Duplicate,
            ErrorCode::RejectedDuplicate,
            Recovery::None,
        ),
    ] {
        let remote = Remote::new();
        let dispatcher = builder(&remote).build().unwrap();
        let model = rejected(&dispatcher, Some(reason)).await;
        assert_eq!(model["error"]["code"], expected.as_str(), "{model}");
        assert_eq!(model["error"]["message"], expected.entry().message);
        assert_eq!(
            model["error"]["recovery"],
            serde_json::to_value(recovery).unwrap()
        );
        assert_eq!(remote.all_requests(), 0);
    }
}

#[tokio::test]
async fn a_rejection_without_a_reason_still_reads_blocked() {
    let remote = Remote::new();
    let dispatcher = builder(&remote).build().unwrap();
    let model = rejected(&dispatcher, None).await;
    assert_eq!(model["error"]["code"], "BLOCKED", "{model}");
}

#[tokio::test]
async fn an_approval_with_edits_runs_the_edited_request_only_and_tells_the_model_so() {
    let remote = Remote::new();
    let dispatcher = builder(&remote).build().unwrap();
    let call = message("m1", "bob@globex.example");
    let pending = pending_approval(&dispatcher, &call).await;
    let edited = json!({ "to": "bob@globex.example", "text": "hello, and welcome" });
    dispatcher
        .approve_with_edits(
            &pending.approval_id,
            &pending.preview_sha256,
            &edited,
            "supervisor",
            clock() + Duration::from_secs(3600),
        )
        .await
        .expect("approved as edited")
        .grant()
        .expect("one approver grants it");

    // The model's own call, sent again, redeems the grant: the edited request runs.
    let dispatch = run(&dispatcher, &call).await;
    assert_eq!(remote.arrivals(), ["bob@globex.example|hello, and welcome"]);
    let model = serde_json::to_value(&dispatch.result.model).unwrap();
    assert_eq!(model["error"]["code"], "APPROVED_WITH_CHANGES", "{model}");
    assert_eq!(model["execution"]["outcome"], "committed");
    assert_eq!(model["provenance"]["trust"], "trusted_control");
    // Bound to the call the model made, so its writer verifies it.
    dispatcher
        .binder()
        .verify(&alice(), &call, &dispatch.result)
        .expect("verifies against the model's call");
    let approval = dispatch
        .result
        .audit
        .approval
        .as_ref()
        .expect("the approval");
    assert_eq!(
        approval.edited_arguments.as_deref(),
        Some(r#"{"text":"hello, and welcome","to":"bob@globex.example"}"#)
    );

    // Again: replayed from the ledger, never run again.
    let again = run(&dispatcher, &call).await;
    let again = serde_json::to_value(&again.result.model).unwrap();
    assert_eq!(again["error"]["code"], "APPROVED_WITH_CHANGES");
    assert_eq!(again["execution"]["delivery"], "local_replay");
    assert_eq!(remote.arrivals().len(), 1);
}

#[tokio::test]
async fn an_edit_that_breaks_the_contract_is_refused_and_the_approval_stays_pending() {
    let remote = Remote::new();
    let dispatcher = builder(&remote).build().unwrap();
    let call = message("m1", "bob@globex.example");
    let pending = pending_approval(&dispatcher, &call).await;
    for edited in [
        json!({ "to": "bob@globex.example" }),
        json!({ "to": "bob@globex.example", "text": "hi", "cc": "eve@evil.example" }),
        json!({ "to": "x".repeat(201), "text": "hi" }),
    ] {
        let refused = dispatcher
            .approve_with_edits(
                &pending.approval_id,
                &pending.preview_sha256,
                &edited,
                "supervisor",
                clock() + Duration::from_secs(3600),
            )
            .await;
        assert!(
            matches!(refused, Err(ApprovalError::InvalidEdit(_))),
            "{refused:?}"
        );
    }
    assert_eq!(dispatcher.pending_approvals().await.unwrap().len(), 1);
    let dispatch = run(&dispatcher, &call).await;
    assert_eq!(code(&dispatch), Some(ErrorCode::ApprovalRequired));
    assert_eq!(remote.all_requests(), 0);
}

#[tokio::test]
async fn a_pending_approval_is_approved_in_one_call_and_the_models_next_identical_call_runs() {
    let remote = Remote::new();
    let dispatcher = builder(&remote).build().unwrap();
    let call = message("m1", "bob@globex.example");
    let pending = pending_approval(&dispatcher, &call).await;
    let grant = dispatcher
        .approve_pending(&pending, "supervisor", Duration::from_secs(600))
        .await
        .expect("approved");
    let grant = grant.grant().expect("one approver is enough");
    assert_eq!(grant.expires_at, clock() + Duration::from_secs(600));
    let ran = run(&dispatcher, &call).await;
    assert_eq!(code(&ran), None, "ran");
    assert_eq!(remote.arrivals(), ["bob@globex.example|hello"]);
}

#[test]
fn a_policy_for_a_tool_the_registry_does_not_hold_is_a_build_error() {
    use tool_contract_tests::kb::SearchKb;
    let remote = Remote::new();
    let Err(errors) = builder(&remote).approval_when(|_: &SearchKb| true).build() else {
        panic!("a policy for an unregistered tool was accepted");
    };
    assert!(
        errors.contains(&BuildError::UnregisteredPolicy("search_kb")),
        "{errors:?}"
    );
}

/// Mail outside the organisation needs two people; inside, one.
fn outside_needs_two(message: &SendMessage) -> bool {
    !message.to.ends_with("@acme.example")
}

async fn approve_edit(
    dispatcher: &Dispatcher,
    pending: &tool_contract::control::PendingApproval,
    edited: &Value,
    approver: &str,
) -> Result<tool_contract::control::Approved, ApprovalError> {
    dispatcher
        .approve_with_edits(
            &pending.approval_id,
            &pending.preview_sha256,
            edited,
            approver,
            clock() + Duration::from_secs(3600),
        )
        .await
}

#[tokio::test]
async fn an_edit_that_needs_more_approvers_waits_for_them() {
    let remote = Remote::new();
    let dispatcher = builder(&remote)
        .approvers_when(2, outside_needs_two)
        .build()
        .unwrap();
    let call = message("m1", "carol@acme.example");
    let pending = pending_approval(&dispatcher, &call).await;
    assert_eq!(pending.approvals_required, 1, "inside: one person");

    // One person sends it outside instead: that needs two.
    let edited = json!({ "to": "bob@globex.example", "text": "hello" });
    let first = approve_edit(&dispatcher, &pending, &edited, "ana")
        .await
        .expect("recorded");
    assert_eq!(first.still_needed(), 1, "the edit needs a second person");
    let dispatch = run(&dispatcher, &call).await;
    assert_eq!(code(&dispatch), Some(ErrorCode::ApprovalRequired));
    assert_eq!(remote.all_requests(), 0, "one person alone ran nothing");
    let waiting = dispatcher.pending_approvals().await.unwrap();
    assert_eq!(
        waiting[0].approvals_required, 2,
        "the pending approval says so"
    );

    // The second person approves the same edit: now it runs, as edited.
    let second = approve_edit(&dispatcher, &pending, &edited, "ben")
        .await
        .expect("granted");
    assert!(second.grant().is_some());
    let ran = run(&dispatcher, &call).await;
    assert_eq!(code(&ran), Some(ErrorCode::ApprovedWithChanges));
    assert_eq!(remote.arrivals(), ["bob@globex.example|hello"]);
}

#[tokio::test]
async fn an_edit_never_lowers_the_approvers_a_request_needs() {
    let remote = Remote::new();
    let dispatcher = builder(&remote)
        .approvers_when(2, outside_needs_two)
        .build()
        .unwrap();
    let call = message("m1", "bob@globex.example");
    let pending = pending_approval(&dispatcher, &call).await;
    assert_eq!(pending.approvals_required, 2);
    let edited = json!({ "to": "carol@acme.example", "text": "hello" });
    let first = approve_edit(&dispatcher, &pending, &edited, "ana")
        .await
        .expect("recorded");
    assert_eq!(first.still_needed(), 1, "asked of two, still two");
    run(&dispatcher, &call).await;
    assert_eq!(remote.all_requests(), 0);
}

#[tokio::test]
async fn an_edit_a_gate_refuses_never_runs() {
    use tool_contract::dispatch::{GateCall, GateDecision};
    let remote = Remote::new();
    let dispatcher = builder(&remote)
        .gate(|call: &GateCall<'_>| {
            if call.arguments["to"] == "eve@evil.example" {
                GateDecision::Block {
                    reason: "a recipient no one may write to".to_owned(),
                }
            } else {
                GateDecision::Proceed
            }
        })
        .build()
        .unwrap();
    let call = message("m1", "bob@globex.example");
    let pending = pending_approval(&dispatcher, &call).await;
    let edited = json!({ "to": "eve@evil.example", "text": "hello" });
    approve_edit(&dispatcher, &pending, &edited, "ana")
        .await
        .expect("the approval is recorded")
        .grant()
        .expect("one person grants it");
    for _ in 0..2 {
        let dispatch = run(&dispatcher, &call).await;
        assert_eq!(code(&dispatch), Some(ErrorCode::Blocked), "{dispatch:?}");
        assert_eq!(remote.all_requests(), 0, "the edited call never ran");
    }
}
