//! The four-eyes rule: a write a policy gives N approvers runs only when N different people
//! approved the same preview; one rejection refuses it; one person approving twice counts
//! once; approvals given on different replicas, in different processes, combine.

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tool_contract::control::{ApprovalError, Approved, ControlStore, PendingApproval};
use tool_contract::dispatch::{BuildError, Dispatcher, DispatcherBuilder};
use tool_contract::{ErrorCode, Status};
use tool_contract_tests::backends::{Backend, Memory, Postgres, sqlite_file};
use tool_contract_tests::postgres::Schema;
use tool_contract_tests::tracker::{
    CreateIssue, Remote, SendMessage, advance_clock, builder, clock, code, context, message,
    pending_approval, run,
};

fn outside(message: &SendMessage) -> bool {
    !message.to.ends_with("@acme.example")
}

fn two_for_outside(remote: &Arc<Remote>) -> DispatcherBuilder {
    builder(remote).approvers_when(2, outside)
}

/// `approver`'s approval of `pending`, having seen `preview_sha256`, for an hour.
async fn approve_seen(
    dispatcher: &Dispatcher,
    pending: &PendingApproval,
    preview_sha256: &str,
    approver: &str,
) -> Result<Approved, ApprovalError> {
    dispatcher
        .approve(
            &pending.approval_id,
            preview_sha256,
            approver,
            clock() + Duration::from_secs(3600),
        )
        .await
}

async fn approve_as(
    dispatcher: &Dispatcher,
    pending: &PendingApproval,
    approver: &str,
) -> Approved {
    approve_seen(dispatcher, pending, &pending.preview_sha256, approver)
        .await
        .expect("the approval is recorded")
}

#[tokio::test]
async fn a_write_needing_two_approvers_runs_only_after_the_second() {
    let remote = Remote::new();
    let dispatcher = two_for_outside(&remote).build().unwrap();
    let call = message("m1", "bob@globex.example");
    let pending = pending_approval(&dispatcher, &call).await;
    assert_eq!(pending.approvals_required, 2);
    assert_eq!(pending.approvals_still_needed(), 2);

    let first = approve_as(&dispatcher, &pending, "carol").await;
    let Approved::Awaiting(waiting) = &first else {
        panic!("one approver granted a four-eyes write: {first:?}");
    };
    assert_eq!(first.still_needed(), 1);
    assert_eq!(waiting.approvals[0].approver, "carol");
    let asked_again = run(&dispatcher, &call).await;
    assert_eq!(code(&asked_again), Some(ErrorCode::ApprovalRequired));
    let shown = asked_again.pending_approval.expect("still pending");
    assert_eq!(shown.approval_id, pending.approval_id, "the same approval");
    assert_eq!(shown.approvals_still_needed(), 1);
    assert_eq!(remote.all_requests(), 0, "nothing ran on one approval");

    let second = approve_as(&dispatcher, &pending, "dave").await;
    let grant = second.grant().expect("two approvers grant it");
    assert_eq!(grant.approvers().collect::<Vec<_>>(), ["carol", "dave"]);
    let ran = run(&dispatcher, &call).await;
    assert_eq!(ran.result.model.status(), Status::Succeeded, "{ran:?}");
    assert_eq!(remote.arrivals(), ["bob@globex.example|hello"]);
    let approval = ran.result.audit.approval.expect("the audit names them");
    assert_eq!(approval.approvers, ["carol", "dave"]);
}

#[tokio::test]
async fn the_same_person_approving_twice_counts_once() {
    let remote = Remote::new();
    let dispatcher = two_for_outside(&remote).build().unwrap();
    let call = message("m1", "bob@globex.example");
    let pending = pending_approval(&dispatcher, &call).await;
    for _ in 0..3 {
        let again = approve_as(&dispatcher, &pending, "carol").await;
        assert_eq!(again.still_needed(), 1, "{again:?}");
    }
    let listed = dispatcher.pending_approvals().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].approvals.len(), 1);
    assert_eq!(
        code(&run(&dispatcher, &call).await),
        Some(ErrorCode::ApprovalRequired)
    );
    assert_eq!(remote.all_requests(), 0);
}

#[tokio::test]
async fn a_rejection_by_any_one_approver_refuses_the_write() {
    let remote = Remote::new();
    let dispatcher = two_for_outside(&remote).build().unwrap();
    let call = message("m1", "bob@globex.example");
    let pending = pending_approval(&dispatcher, &call).await;
    let _ = approve_as(&dispatcher, &pending, "carol").await;
    dispatcher.reject(&pending.approval_id).await.unwrap();
    let refused = approve_seen(&dispatcher, &pending, &pending.preview_sha256, "dave").await;
    assert!(
        matches!(refused, Err(ApprovalError::NotPending)),
        "{refused:?}"
    );
    assert_eq!(
        code(&run(&dispatcher, &call).await),
        Some(ErrorCode::Blocked)
    );
    assert_eq!(remote.all_requests(), 0);
}

#[tokio::test]
async fn an_approval_of_another_preview_does_not_count() {
    let remote = Remote::new();
    let dispatcher = two_for_outside(&remote).build().unwrap();
    let call = message("m1", "bob@globex.example");
    let pending = pending_approval(&dispatcher, &call).await;
    let _ = approve_as(&dispatcher, &pending, "carol").await;
    let other = approve_seen(&dispatcher, &pending, &"0".repeat(64), "dave").await;
    assert!(
        matches!(other, Err(ApprovalError::PreviewMismatch)),
        "{other:?}"
    );
    let listed = dispatcher.pending_approvals().await.unwrap();
    assert_eq!(listed[0].approvals_still_needed(), 1);
}

#[tokio::test]
async fn an_approval_that_lapsed_before_the_second_no_longer_counts() {
    let remote = Remote::new();
    let dispatcher = two_for_outside(&remote).build().unwrap();
    let call = message("m1", "bob@globex.example");
    let pending = pending_approval(&dispatcher, &call).await;
    let short_lived = dispatcher
        .approve(
            &pending.approval_id,
            &pending.preview_sha256,
            "carol",
            clock() + Duration::from_secs(60),
        )
        .await
        .unwrap();
    assert_eq!(short_lived.still_needed(), 1);
    advance_clock(Duration::from_secs(61));
    let late = approve_as(&dispatcher, &pending, "dave").await;
    let Approved::Awaiting(waiting) = &late else {
        panic!("a lapsed approval counted: {late:?}");
    };
    assert_eq!(waiting.approvals.len(), 1);
    assert_eq!(waiting.approvals[0].approver, "dave");
    let again = approve_as(&dispatcher, &pending, "carol").await;
    let grant = again.grant().expect("two live approvals");
    assert_eq!(grant.approvers().collect::<Vec<_>>(), ["dave", "carol"]);
}

#[tokio::test]
async fn approvals_with_other_edits_do_not_combine() {
    let remote = Remote::new();
    let dispatcher = two_for_outside(&remote).build().unwrap();
    let call = message("m1", "bob@globex.example");
    let pending = pending_approval(&dispatcher, &call).await;
    let edited = json!({ "to": "bob@globex.example", "text": "hello, and welcome" });
    let first = dispatcher
        .approve_with_edits(
            &pending.approval_id,
            &pending.preview_sha256,
            &edited,
            "carol",
            clock() + Duration::from_secs(3600),
        )
        .await
        .unwrap();
    assert_eq!(first.still_needed(), 1);
    let unedited = approve_seen(&dispatcher, &pending, &pending.preview_sha256, "dave").await;
    assert!(
        matches!(unedited, Err(ApprovalError::EditsDiffer)),
        "{unedited:?}"
    );
    let same_edits = dispatcher
        .approve_with_edits(
            &pending.approval_id,
            &pending.preview_sha256,
            &edited,
            "dave",
            clock() + Duration::from_secs(3600),
        )
        .await
        .unwrap();
    assert!(same_edits.grant().is_some(), "{same_edits:?}");
    let ran = run(&dispatcher, &call).await;
    assert_eq!(code(&ran), Some(ErrorCode::ApprovedWithChanges), "{ran:?}");
    assert_eq!(remote.arrivals(), ["bob@globex.example|hello, and welcome"]);
}

#[tokio::test]
async fn the_rule_gives_two_approvers_only_to_the_arguments_it_names() {
    let remote = Remote::new();
    let dispatcher = two_for_outside(&remote).build().unwrap();
    let inside = pending_approval(&dispatcher, &message("m1", "carol@acme.example")).await;
    assert_eq!(inside.approvals_required, 1, "the contract's one approver");
    let outside = pending_approval(&dispatcher, &message("m2", "bob@globex.example")).await;
    assert_eq!(outside.approvals_required, 2);
}

#[tokio::test]
async fn a_waived_write_still_needs_two_where_the_rule_applies_and_none_elsewhere() {
    let remote = Remote::new();
    let dispatcher = builder(&remote)
        .approval_when(|_: &SendMessage| false)
        .approvers_when(2, |message: &SendMessage| message.text.len() > 3)
        .build()
        .unwrap();
    let short = run(&dispatcher, &message("m1", "bob@globex.example")).await;
    assert_eq!(
        code(&short),
        Some(ErrorCode::ApprovalRequired),
        "hello is > 3"
    );
    assert_eq!(short.pending_approval.unwrap().approvals_required, 2);
    let call = context(
        "m2",
        "send_message",
        json!({ "to": "bob@globex.example", "text": "hi" }),
        "m2",
        "m2",
    );
    assert_eq!(code(&run(&dispatcher, &call).await), None, "waived, ran");
}

#[tokio::test]
async fn a_rule_that_panics_asks_for_its_approvers() {
    let remote = Remote::new();
    let dispatcher = builder(&remote)
        .approvers_when(3, |_: &SendMessage| -> bool {
            panic!("the rule's own bug")
        })
        .build()
        .unwrap();
    let pending = pending_approval(&dispatcher, &message("m1", "carol@acme.example")).await;
    assert_eq!(pending.approvals_required, 3);
}

#[test]
fn a_policy_for_no_approvers_or_a_write_without_approval_does_not_build() {
    let remote = Remote::new();
    let Err(errors) = builder(&remote)
        .approvers::<SendMessage>(0)
        .approvers::<CreateIssue>(2)
        .build()
    else {
        panic!("built");
    };
    assert!(
        errors.contains(&BuildError::NoApprovers("send_message")),
        "{errors:?}"
    );
    assert!(
        errors.contains(&BuildError::PolicyWithoutApproval("create_issue")),
        "{errors:?}"
    );
}

/// Two approvals given on two replicas sharing `store`: the write runs on a third, once.
async fn approvals_on_two_replicas_combine(store: &impl Backend) {
    let remote = Remote::new();
    let on = |store: Arc<dyn ControlStore>| {
        builder(&remote)
            .approvers::<SendMessage>(2)
            .store(store)
            .build()
            .unwrap()
    };
    let (asking, first, second) = (
        on(store.open().await),
        on(store.open().await),
        on(store.open().await),
    );
    let call = message("m1", "bob@globex.example");
    let pending = pending_approval(&asking, &call).await;
    assert_eq!(
        approve_as(&first, &pending, "carol").await.still_needed(),
        1
    );
    let listed = second.pending_approvals().await.unwrap();
    assert_eq!(
        listed[0].approvals[0].approver, "carol",
        "seen on another replica"
    );
    assert!(
        approve_as(&second, &pending, "dave")
            .await
            .grant()
            .is_some()
    );
    let ran = run(&asking, &call).await;
    assert_eq!(ran.result.model.status(), Status::Succeeded, "{ran:?}");
    assert_eq!(remote.all_requests(), 1);
    let replayed = run(&first, &call).await;
    assert_eq!(replayed.result.model.status(), Status::Succeeded);
    assert_eq!(remote.all_requests(), 1, "replayed, not rerun");
}

#[tokio::test]
async fn approvals_on_two_replicas_combine_in_memory() {
    approvals_on_two_replicas_combine(&Memory(tool_contract::control::MemoryStore::new())).await;
}

#[tokio::test]
async fn approvals_on_two_replicas_combine_on_one_sqlite_file() {
    approvals_on_two_replicas_combine(&sqlite_file()).await;
}

#[tokio::test]
async fn approvals_on_two_replicas_combine_on_postgres() {
    if let Some(schema) = Schema::new("approvals_on_two_replicas_combine_on_postgres") {
        approvals_on_two_replicas_combine(&Postgres(schema)).await;
    }
}

/// Runs the `approver` binary: one supervisor's replica in a process of its own.
fn approve_in_another_process(
    schema: &Schema,
    pending: &PendingApproval,
    approver: &str,
) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_approver"))
        .args([
            &schema.url,
            &schema.name,
            &pending.approval_id,
            &pending.preview_sha256,
            approver,
        ])
        .output()
        .expect("the approver process starts");
    let stdout = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    assert!(
        output.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[tokio::test(flavor = "multi_thread")]
async fn approvals_given_in_two_processes_on_postgres_combine() {
    let Some(schema) = Schema::new("approvals_given_in_two_processes_on_postgres_combine") else {
        return;
    };
    let remote = Remote::new();
    let dispatcher = builder(&remote)
        .approvers::<SendMessage>(2)
        .store(Arc::new(schema.store().await))
        .build()
        .unwrap();
    let call = message("m1", "bob@globex.example");
    let pending = pending_approval(&dispatcher, &call).await;
    assert_eq!(
        approve_in_another_process(&schema, &pending, "carol"),
        "awaiting 1"
    );
    assert_eq!(
        approve_in_another_process(&schema, &pending, "carol"),
        "awaiting 1",
        "the same person in another process counts once"
    );
    assert_eq!(
        code(&run(&dispatcher, &call).await),
        Some(ErrorCode::ApprovalRequired)
    );
    assert_eq!(
        approve_in_another_process(&schema, &pending, "dave"),
        "granted"
    );
    let ran = run(&dispatcher, &call).await;
    assert_eq!(ran.result.model.status(), Status::Succeeded, "{ran:?}");
    assert_eq!(
        ran.result.audit.approval.unwrap().approvers,
        ["carol", "dave"]
    );
    assert_eq!(remote.all_requests(), 1);
}

#[tokio::test]
async fn one_person_is_one_approver_however_the_name_is_spelled() {
    let remote = Remote::new();
    let dispatcher = two_for_outside(&remote).build().unwrap();
    let call = message("m1", "bob@globex.example");
    let pending = pending_approval(&dispatcher, &call).await;
    approve_as(&dispatcher, &pending, "carol@acme.example").await;
    for spelled in [
        "Carol@acme.example",
        "carol@ACME.EXAMPLE",
        "carol@acme.example ",
        "carol@acme.example\t",
        "car\u{200b}ol@acme.example",
        "\u{feff}carol@acme.example",
        "ｃａｒｏｌ@acme.example",
        "c\u{430}rol@acme.example",
    ] {
        let again = approve_as(&dispatcher, &pending, spelled).await;
        assert_eq!(
            again.still_needed(),
            1,
            "{spelled:?} counted as a second person"
        );
    }
    assert_eq!(remote.all_requests(), 0);

    // José, composed and decomposed, is one person too.
    let call = message("m2", "bob@globex.example");
    let pending = pending_approval(&dispatcher, &call).await;
    approve_as(&dispatcher, &pending, "jos\u{e9}@acme.example").await;
    let again = approve_as(&dispatcher, &pending, "jose\u{301}@acme.example").await;
    assert_eq!(again.still_needed(), 1);

    // A different person still completes the rule.
    let granted = approve_as(&dispatcher, &pending, "dave@acme.example").await;
    assert!(granted.grant().is_some());
}

#[tokio::test]
async fn a_name_of_nothing_but_spaces_and_invisible_characters_approves_nothing() {
    let remote = Remote::new();
    let dispatcher = two_for_outside(&remote).build().unwrap();
    let pending = pending_approval(&dispatcher, &message("m1", "bob@globex.example")).await;
    let refused = approve_seen(
        &dispatcher,
        &pending,
        &pending.preview_sha256,
        " \u{200b}\t",
    )
    .await;
    assert!(
        matches!(refused, Err(ApprovalError::NoApprover)),
        "{refused:?}"
    );
}
