//! Integrity findings of the adversarial review (issue 14): each test reproduces one finding
//! and is named after what must hold instead.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tool_contract::control::SqliteStore;
use tool_contract::control::{ControlStore, MemoryAuditLog, MemoryStore, WriteState};
use tool_contract::dispatch::{Budget, Dispatcher, HandlerContext, Task};
use tool_contract::results::{Delivery, Outcome};
use tool_contract::{ErrorCode, Principal, Status};
use tool_contract_tests::tracker::{
    Fault, OPTIONS, Remote, advance_clock, alice, audit_key, clock, context, create, detail,
    dispatcher, keys, run, sent,
};

/// A SQLite file of this process's own, with nothing left of an earlier one (nor its WAL).
fn fresh_db(name: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("{name}-{}.db", std::process::id()));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    path
}

fn bob() -> Principal {
    Principal::new("globex", "bob")
}

/// Finding 1: a write of one tenant reconciled with another tenant's record.
#[tokio::test(start_paused = true)]
async fn two_tenants_never_share_a_downstream_idempotency_key() {
    let remote = Remote::new();
    let dispatcher = dispatcher(&remote, Arc::new(MemoryStore::new()));
    // Alice's write under key k-1 happens.
    let alices = run(&dispatcher, &create("c1", "Printer", "jammed", "k-1")).await;
    assert_eq!(alices.result.model.status(), Status::Succeeded);
    // Bob picks the same key; his request never reaches the tracker, his answer is lost.
    remote.script(&[Fault::HangBeforeCommit]);
    let call = create("c2", "Desk", "wobbly", "k-1");
    let task = Task::unlimited();
    let lost = dispatcher.dispatch(&bob(), &call, &task).await;
    assert_eq!(lost.write_state, Some(WriteState::Unknown));
    // His status query must not find Alice's issue.
    let settled = dispatcher.dispatch(&bob(), &call, &task).await;
    let error = settled.result.model.error().map(|error| error.code());
    assert_eq!(
        error,
        Some(ErrorCode::ToolError),
        "{:?}",
        settled.result.model
    );
    assert_eq!(settled.write_state, Some(WriteState::Failed));
    assert_ne!(
        keys().downstream_key(&alice(), "k-1"),
        keys().downstream_key(&bob(), "k-1")
    );
}

/// Finding 2: an `idempotent_write` whose first attempt may have committed, ended by a later
/// attempt's budget stop, rate limit or connection failure, read "nothing happened".
#[tokio::test(start_paused = true)]
async fn a_write_that_may_have_committed_is_never_reported_as_not_having_happened() {
    let schedules: [(&str, &[Fault], Budget); 3] = [
        (
            "budget stop",
            &[Fault::CommitThenHang],
            Budget::default().with_tool_calls(1),
        ),
        (
            "two rate limits",
            &[
                Fault::CommitThenHang,
                Fault::RateLimit(100),
                Fault::RateLimit(100),
            ],
            Budget::default(),
        ),
        (
            "two connection failures",
            &[Fault::CommitThenHang, Fault::NotSent, Fault::NotSent],
            Budget::default(),
        ),
    ];
    for (name, faults, budget) in schedules {
        let remote = Remote::new();
        let dispatcher = dispatcher(&remote, Arc::new(MemoryStore::new()));
        remote.script(faults);
        let call = context(
            "c1",
            "label_issue",
            json!({ "number": 7, "label": "bug" }),
            "op-1",
            "k-1",
        );
        let dispatch = dispatcher
            .dispatch(&alice(), &call, &Task::new(budget))
            .await;
        let model = &dispatch.result.model;
        assert_eq!(model.status(), Status::Unknown, "{name}: {model:?}");
        assert_eq!(model.execution().outcome, Outcome::Unknown, "{name}");
        assert_eq!(dispatch.write_state, Some(WriteState::Unknown), "{name}");
        // The key is kept, not given back: the next call runs nothing and is still unknown.
        let sent_before = remote.requests(&sent("k-1"));
        let again = run(&dispatcher, &call).await;
        assert_eq!(again.result.model.status(), Status::Unknown, "{name}");
        assert_eq!(remote.requests(&sent("k-1")), sent_before, "{name}");
    }
}

/// Finding 3: the wall clock jumps past the lease (a VM resumed, an NTP step) while the write
/// still runs here; a repeat must not settle it as never having happened.
#[tokio::test(start_paused = true)]
async fn a_lease_this_process_holds_is_in_progress_whatever_the_wall_clock_says() {
    let remote = Remote::new();
    let dispatcher = dispatcher(&remote, Arc::new(MemoryStore::new()));
    remote.script(&[Fault::CommitAfter(Duration::from_secs(2))]);
    let call = create("c1", "Printer", "jammed", "k-1");
    let (first, repeat) = tokio::join!(run(&dispatcher, &call), async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        advance_clock(Duration::from_secs(600));
        run(&dispatcher, &call).await
    });
    let error = repeat.result.model.error().map(|error| error.code());
    assert_eq!(error, Some(ErrorCode::OperationInProgress), "{repeat:?}");
    assert_eq!(first.result.model.status(), Status::Succeeded);
    assert_eq!(first.write_state, Some(WriteState::Succeeded));
    assert_eq!(
        dispatcher.write_state(&alice(), &call).await.unwrap(),
        Some(WriteState::Succeeded)
    );
    assert!(remote.created(&sent("k-1")).is_some());
}

/// Finding 3, across processes: another replica settled the write as never having happened
/// (its lease looked lapsed), then the write committed. The commit is a conflict for a person,
/// never dropped.
#[tokio::test(start_paused = true)]
async fn a_commit_after_its_record_was_settled_otherwise_is_a_status_conflict() {
    let remote = Remote::new();
    let ledger: Arc<MemoryStore> = Arc::new(MemoryStore::new());
    let running = dispatcher(&remote, ledger.clone());
    let other = dispatcher(&remote, ledger);
    remote.script(&[Fault::CommitAfter(Duration::from_secs(2))]);
    let call = create("c1", "Printer", "jammed", "k-1");
    let (late, settled) = tokio::join!(run(&running, &call), async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        advance_clock(Duration::from_secs(600));
        run(&other, &call).await
    });
    assert_eq!(settled.write_state, Some(WriteState::Failed), "{settled:?}");
    let error = late.result.model.error().map(|error| error.code());
    assert_eq!(error, Some(ErrorCode::StatusConflict), "{late:?}");
    assert_eq!(late.result.model.execution().outcome, Outcome::Unknown);
    assert!(
        detail(&late).contains("after its record was settled"),
        "{}",
        detail(&late)
    );
    // The write did happen: the remote holds it, and the audit kept its output.
    assert!(remote.created(&sent("k-1")).is_some());
}

/// The tracker's `label_issue` after a deploy that bumped only its producer revision.
mod deployed {
    use tool_contract::ToolContract;
    use tool_contract_tests::tracker::IssueRef;

    /// Put a label on an issue (the tracker applies one key once).
    #[derive(Debug, serde::Deserialize, ToolContract)]
    #[tool_contract(name = "label_issue", output = IssueRef, effect = idempotent_write, operation = same_arguments,
                    approval = not_required, source_label = "tracker",
                    producer_revision = "tracker-v2")]
    pub struct LabelIssue {
        /// The issue.
        #[tool_contract(maximum = 1000000)]
        pub number: u32,
        /// The label.
        #[tool_contract(min_len = 1, max_len = 50)]
        pub label: String,
    }
}

/// A dispatcher running the deployed `label_issue` over `ledger`.
fn deployed_dispatcher(remote: &Arc<Remote>, ledger: Arc<dyn ControlStore>) -> Dispatcher {
    let registry = tool_contract::registry![deployed::LabelIssue]
        .into_builder()
        .all_adapters()
        .build();
    let remote = remote.clone();
    Dispatcher::builder(registry, keys())
        .clock(clock)
        .store(ledger)
        .audit_sink(Arc::new(MemoryAuditLog::new(audit_key())))
        .handler_with(
            move |input: deployed::LabelIssue, cx: HandlerContext| {
                let remote = remote.clone();
                async move { remote.label(cx.idempotency_key(), input.number).await }
            },
            OPTIONS,
        )
        .build()
        .expect("the deployed dispatcher builds")
}

fn label(call_id: &str) -> tool_contract::CallContext {
    context(
        call_id,
        "label_issue",
        json!({ "number": 7, "label": "bug" }),
        "op-1",
        "k-1",
    )
}

/// Finding 4: after a deploy that bumps only `producer_revision`, a write replayed from the
/// ledger matched its key but failed verification, so every provider writer refused the turn.
#[tokio::test(start_paused = true)]
async fn a_write_replayed_after_a_deploy_verifies_under_the_deployed_contract() {
    let remote = Remote::new();
    let ledger: Arc<MemoryStore> = Arc::new(MemoryStore::new());
    let before = dispatcher(&remote, ledger.clone());
    let first = run(&before, &label("c1")).await;
    assert_eq!(first.result.model.status(), Status::Succeeded);

    let after = deployed_dispatcher(&remote, ledger);
    let call = label("c2");
    let replayed = run(&after, &call).await;
    let model = &replayed.result.model;
    assert_eq!(model.status(), Status::Succeeded, "{model:?}");
    assert_eq!(model.execution().delivery, Delivery::LocalReplay);
    assert_eq!(model.data(), first.result.model.data());
    assert_eq!(model.provenance().producer_revision, "tracker-v2");
    assert_eq!(
        model.provenance().observed_at,
        first.result.model.provenance().observed_at
    );
    assert!(
        detail(&replayed).contains("\"tracker-v1\""),
        "{}",
        detail(&replayed)
    );
    after
        .binder()
        .verify(&alice(), &call, &replayed.result)
        .expect("a replay verifies under the deployed contract");
    assert_eq!(remote.requests(&sent("k-1")), 1, "replayed, not run again");
}

/// Finding 11: a ledger row edited in the database was replayed to the model with fresh,
/// valid digests. The edit here stays within the contract (another issue number).
#[tokio::test(start_paused = true)]
async fn a_ledger_row_edited_in_the_database_is_not_replayed() {
    let path = fresh_db("tc-edited-row");
    let remote = Remote::new();
    let ledger = Arc::new(SqliteStore::open(&path).unwrap());
    let dispatcher = dispatcher(&remote, ledger);
    let first = run(&dispatcher, &label("c1")).await;
    assert_eq!(first.result.model.status(), Status::Succeeded);

    let edit = rusqlite::Connection::open(&path).unwrap();
    let edited = edit
        .execute(
            "UPDATE tool_contract_ledger SET result = replace(result, '\"number\":', '\"number\":1')",
            [],
        )
        .unwrap();
    assert_eq!(edited, 1);
    drop(edit);

    let replayed = run(&dispatcher, &label("c2")).await;
    let error = replayed.result.model.error().map(|error| error.code());
    assert_eq!(
        error,
        Some(ErrorCode::OutputContractViolation),
        "{replayed:?}"
    );
    assert_eq!(replayed.result.model.data(), None);
    assert_eq!(remote.requests(&sent("k-1")), 1, "never run again");
    let _ = std::fs::remove_file(&path);
}

/// Finding 10: `reconcile = FindIssue` was metadata. A model that answers `OUTCOME_UNKNOWN`
/// by calling the status tool, for the same operation, now runs it as the write's status
/// query, and what it finds settles the write.
#[tokio::test(start_paused = true)]
async fn a_model_that_calls_the_declared_status_tool_settles_the_unknown_write() {
    for (found, settled) in [(true, WriteState::Succeeded), (false, WriteState::Failed)] {
        let remote = Remote::new();
        let dispatcher = dispatcher(&remote, Arc::new(MemoryStore::new()));
        let fault = if found {
            Fault::CommitThenHang
        } else {
            Fault::HangBeforeCommit
        };
        remote.script(&[fault]);
        let write = create("c1", "Printer", "jammed", "k-1");
        let lost = run(&dispatcher, &write).await;
        assert_eq!(lost.write_state, Some(WriteState::Unknown));

        // The model calls the status tool under the write's operation.
        let query = context(
            "c2",
            "find_issue",
            json!({ "title": "Printer" }),
            "op-k-1",
            "k-1",
        );
        let answer = run(&dispatcher, &query).await;
        assert_eq!(answer.write_state, Some(settled), "{answer:?}");
        assert_eq!(answer.result.model.status() == Status::Succeeded, found);
        assert!(
            detail(&answer).contains("status query"),
            "{}",
            detail(&answer)
        );
        assert_eq!(
            dispatcher.write_state(&alice(), &write).await.unwrap(),
            Some(settled)
        );
        // The write, called again, is replayed as settled: never run a second time.
        let again = run(&dispatcher, &write).await;
        assert_eq!(
            again.result.model.execution().delivery,
            Delivery::LocalReplay
        );
        assert_eq!(again.result.model.status() == Status::Succeeded, found);
        assert_eq!(remote.requests(&sent("k-1")), 1);
    }
}

/// The same tool called for an operation with no unknown write is an ordinary read.
#[tokio::test(start_paused = true)]
async fn the_status_tool_is_an_ordinary_read_outside_an_unknown_write() {
    let remote = Remote::new();
    let dispatcher = dispatcher(&remote, Arc::new(MemoryStore::new()));
    let query = context(
        "c2",
        "find_issue",
        json!({ "title": "Printer" }),
        "op-9",
        "k-9",
    );
    let answer = run(&dispatcher, &query).await;
    assert_eq!(answer.write_state, None);
    let error = answer.result.model.error().map(|error| error.code());
    assert_eq!(error, Some(ErrorCode::NotFound));
}

/// Finding 11: `Dispatcher::reconcile` skipped the gates and the authorizer, so a status
/// query ran for a principal whose permission had been taken away.
#[tokio::test(start_paused = true)]
async fn reconcile_is_admitted_as_a_dispatch_is() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let allowed = Arc::new(AtomicBool::new(true));
    let permission = allowed.clone();
    let remote = Remote::new();
    let dispatcher = tool_contract_tests::tracker::builder(&remote)
        .authorizer(
            move |_: &Principal, _: &tool_contract::ToolSpec, _: &serde_json::Value| {
                permission.load(Ordering::Relaxed)
            },
        )
        .build()
        .unwrap();
    remote.script(&[Fault::CommitThenHang]);
    let write = create("c1", "Printer", "jammed", "k-1");
    assert_eq!(
        run(&dispatcher, &write).await.write_state,
        Some(WriteState::Unknown)
    );
    allowed.store(false, Ordering::Relaxed);
    let refused = dispatcher
        .reconcile(&alice(), &write, &Task::unlimited())
        .await;
    assert!(refused.result.model.error().is_some(), "{refused:?}");
    assert_eq!(
        remote.status_queries(),
        0,
        "no status query once permission is gone"
    );
    allowed.store(true, Ordering::Relaxed);
    let settled = dispatcher
        .reconcile(&alice(), &write, &Task::unlimited())
        .await;
    assert_eq!(settled.write_state, Some(WriteState::Succeeded));
    assert_eq!(remote.status_queries(), 1);
}

/// Invitations, whose status query finds a made-up address.
mod invitations {
    use tool_contract::{ToolContract, ToolOutput};

    /// Invite an advisor.
    #[derive(Debug, serde::Deserialize, ToolContract)]
    #[tool_contract(output = Invited, effect = non_idempotent_write, operation = same_arguments, approval = not_required,
                    reconcile = FindInvitation, source_label = "mail",
                    producer_revision = "mail-1")]
    pub struct Invite {
        /// Who.
        #[tool_contract(max_len = 100)]
        pub name: String,
    }

    /// Find an invitation.
    #[derive(Debug, serde::Deserialize, ToolContract)]
    #[tool_contract(output = Invited, effect = read_only, source_label = "mail",
                    producer_revision = "mail-1")]
    pub struct FindInvitation {
        /// Who.
        #[tool_contract(max_len = 100)]
        pub name: String,
    }

    /// An invitation sent.
    #[derive(Debug, serde::Serialize, ToolOutput)]
    pub struct Invited {
        /// Where it went.
        #[tool_output(max_len = 100, strip_synthetic(placeholder_email))]
        pub email: Option<String>,
    }
}

/// A dispatcher whose `invite` write never answers, so its outcome is unknown, and whose
/// status tool `find_invitation` runs `status` on the input `status_input` builds; the key
/// each write was sent with is kept in `sent_key`.
fn invitation_desk<M: 'static>(
    status_input: fn(&invitations::Invite) -> invitations::FindInvitation,
    status: impl tool_contract::dispatch::Handler<invitations::FindInvitation, M>,
    sent_key: Arc<std::sync::Mutex<String>>,
) -> Dispatcher {
    use invitations::{FindInvitation, Invite};
    use tool_contract::{FailureKind, ToolFailure};
    let registry = tool_contract::registry![Invite, FindInvitation]
        .into_builder()
        .all_adapters()
        .build();
    Dispatcher::builder(registry, keys())
        .clock(clock)
        .audit_sink(Arc::new(MemoryAuditLog::new(audit_key())))
        .write_handler(
            move |_: Invite, cx: HandlerContext| {
                *sent_key.lock().unwrap() = cx.idempotency_key().to_owned();
                async {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    Err::<invitations::Invited, _>(ToolFailure::new(FailureKind::Failed, "never"))
                }
            },
            status_input,
            OPTIONS,
        )
        .handler_with(status, OPTIONS)
        .build()
        .unwrap()
}

/// Invites Jane, whose answer is lost; then asks the dispatcher to reconcile, and expects the
/// status tool to find the write.
async fn invite_lost_then_reconciled(
    dispatcher: &Dispatcher,
    before_reconcile: impl FnOnce(),
) -> tool_contract::dispatch::Dispatch {
    let call = context("c1", "invite", json!({ "name": "Jane" }), "op-1", "k-1");
    assert_eq!(
        run(dispatcher, &call).await.write_state,
        Some(WriteState::Unknown)
    );
    before_reconcile();
    let reconciled = dispatcher
        .reconcile(&alice(), &call, &Task::unlimited())
        .await;
    assert_eq!(
        reconciled.write_state,
        Some(WriteState::Succeeded),
        "{reconciled:?}"
    );
    assert_eq!(
        reconciled.result.model.execution().delivery,
        Delivery::ReceiptReconciled
    );
    reconciled
}

fn invitation(email: &str) -> tool_contract::RawResult {
    let output = json!({ "email": email }).to_string();
    let provenance = tool_contract::RawProvenance::new("mail-1", "2026-08-22T10:00:00Z");
    tool_contract::RawResult::new(output, provenance)
}

/// Finding 11: a reconciled result was sealed anew without the redactions its projection
/// made, so the audit lost what was kept from the model.
#[tokio::test(start_paused = true)]
async fn a_reconciled_result_keeps_its_redactions() {
    use invitations::{FindInvitation, Invite};
    use tool_contract::{FailureKind, ToolFailure};
    let dispatcher = invitation_desk(
        |invite: &Invite| FindInvitation {
            name: invite.name.clone(),
        },
        |_: FindInvitation, cx: HandlerContext| async move {
            match cx.reconciling() {
                // A made-up address, which the output's detector strips.
                Some(_) => Ok(invitation("jane@example.com")),
                None => Err(ToolFailure::new(FailureKind::NotFound, "none")),
            }
        },
        Arc::default(),
    );
    let reconciled = invite_lost_then_reconciled(&dispatcher, || {}).await;
    assert_eq!(
        reconciled.result.model.data(),
        Some(json!({ "email": null }))
    );
    let reasons: Vec<&str> = reconciled
        .result
        .audit
        .redactions
        .iter()
        .map(|redaction| redaction.reason.as_str())
        .collect();
    assert_eq!(
        reasons,
        ["synthetic_stripped:placeholder_email"],
        "{reconciled:?}"
    );
}

/// Finding 10: the dispatcher reconciled through a closure beside the write, never through
/// the status tool the contract names. Now the declared tool's own handler runs, on the input
/// `write_handler` builds, told whose status it answers and under which key.
#[tokio::test(start_paused = true)]
async fn the_dispatcher_reconciles_an_unknown_write_by_running_its_status_tools_handler() {
    use invitations::{FindInvitation, Invite};
    use std::sync::Mutex;
    let sent_key = Arc::new(Mutex::new(String::new()));
    let asked = Arc::new(Mutex::new(Vec::new()));
    let query_saw = asked.clone();
    let dispatcher = invitation_desk(
        |invite: &Invite| FindInvitation {
            name: format!("{} (status)", invite.name),
        },
        move |input: FindInvitation, cx: HandlerContext| {
            let seen = (
                input.name,
                cx.reconciling().map(str::to_owned),
                cx.idempotency_key().to_owned(),
            );
            query_saw.lock().unwrap().push(seen);
            async { Ok(invitation("jane@hillside.edu")) }
        },
        sent_key.clone(),
    );
    let reconciled = invite_lost_then_reconciled(&dispatcher, || {
        assert!(
            asked.lock().unwrap().is_empty(),
            "no query before reconcile"
        );
    })
    .await;
    assert_eq!(
        reconciled.result.model.data(),
        Some(json!({ "email": "jane@hillside.edu" }))
    );
    let key = sent_key.lock().unwrap().clone();
    assert_eq!(
        *asked.lock().unwrap(),
        [("Jane (status)".to_owned(), Some("invite".to_owned()), key)]
    );
}

/// Finding 11: the approval preview showed bidi and invisible characters as they are, so a
/// person could approve `invoice\u{202e}fdp.exe` reading it as `invoiceexe.pdf`.
#[tokio::test(start_paused = true)]
async fn the_approval_preview_shows_hidden_characters_escaped() {
    let remote = Remote::new();
    let dispatcher = dispatcher(&remote, Arc::new(MemoryStore::new()));
    let text = "see invoice\u{202e}fdp.exe\u{200b} attached";
    let call = context(
        "c1",
        "send_message",
        json!({ "to": "bob@globex.example", "text": text }),
        "op-1",
        "k-1",
    );
    let pending = tool_contract_tests::tracker::pending_approval(&dispatcher, &call).await;
    let shown = pending.preview.to_text();
    assert!(
        shown.contains(r"invoice\u202efdp.exe\u200b attached"),
        "{shown}"
    );
    assert!(
        !shown.contains('\u{202e}') && !shown.contains('\u{200b}'),
        "{shown}"
    );
    // What is shown still says exactly what runs.
    let read: serde_json::Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(read["arguments"]["text"], text);
}

/// Finding 11: a grant was spent by a dispatch that a budget stopped before any attempt, so
/// the person had to approve again a write that never ran.
#[tokio::test(start_paused = true)]
async fn a_grant_is_spent_only_by_an_execution() {
    let remote = Remote::new();
    let dispatcher = dispatcher(&remote, Arc::new(MemoryStore::new()));
    let call = context(
        "c1",
        "send_message",
        json!({ "to": "bob@globex.example", "text": "hello" }),
        "op-1",
        "k-1",
    );
    tool_contract_tests::tracker::approve(&dispatcher, &call, "carol").await;
    let spent = Task::new(Budget::default().with_tool_calls(0));
    let stopped = dispatcher.dispatch(&alice(), &call, &spent).await;
    let error = stopped.result.model.error().map(|error| error.code());
    assert_eq!(error, Some(ErrorCode::BudgetExhausted), "{stopped:?}");
    assert_eq!(stopped.attempts, 0);
    let ran = run(&dispatcher, &call).await;
    assert_eq!(ran.result.model.status(), Status::Succeeded, "{ran:?}");
    assert_eq!(
        ran.result
            .audit
            .approval
            .as_ref()
            .map(|a| a.approvers.clone()),
        Some(vec!["carol".to_owned()])
    );
}

/// Finding 11: `retention(Duration::MAX)` panicked inside `dispatch`.
#[tokio::test(start_paused = true)]
async fn the_longest_retention_is_kept_as_long_as_a_store_can() {
    let path = fresh_db("tc-retention");
    let ledgers: [Arc<dyn ControlStore>; 2] = [
        Arc::new(MemoryStore::new()),
        Arc::new(SqliteStore::open(&path).unwrap()),
    ];
    for ledger in ledgers {
        let remote = Remote::new();
        let dispatcher = tool_contract_tests::tracker::builder(&remote)
            .store(ledger)
            .retention(Duration::MAX)
            .build()
            .unwrap();
        let first = run(&dispatcher, &label("c1")).await;
        assert_eq!(first.result.model.status(), Status::Succeeded, "{first:?}");
        // A pending approval, then the housekeeping a dispatch runs now and then.
        let message = json!({ "to": "bob@globex.example", "text": "hello" });
        let send = context("c3", "send_message", message, "op-2", "k-2");
        assert!(run(&dispatcher, &send).await.pending_approval.is_some());
        dispatcher.purge_expired().await.unwrap();
        advance_clock(Duration::from_secs(10 * 365 * 24 * 3600));
        let again = run(&dispatcher, &label("c2")).await;
        assert_eq!(
            again.result.model.execution().delivery,
            Delivery::LocalReplay
        );
    }
    let _ = std::fs::remove_file(&path);
}

/// Finding 11: gates, authorizers, stores and sinks ran outside `catch_unwind`, so a panic
/// in the application's code unwound through `dispatch`. Each now fails closed.
#[tokio::test(start_paused = true)]
async fn the_applications_code_that_panics_fails_closed_and_never_unwinds_through_dispatch() {
    use tool_contract::control::{AuditLogError, AuditSink};
    use tool_contract::dispatch::{GateCall, GateDecision};
    let remote = Remote::new();
    let read = context("c1", "read_doc", json!({ "doc_id": "d-1" }), "op-1", "k-1");
    let code = |dispatch: &tool_contract::dispatch::Dispatch| {
        dispatch.result.model.error().map(|error| error.code())
    };

    let gated = tool_contract_tests::tracker::builder(&remote)
        .gate(|_: &GateCall<'_>| -> GateDecision { panic!("a gate bug") })
        .build()
        .unwrap();
    assert_eq!(code(&run(&gated, &read).await), Some(ErrorCode::Blocked));

    let authorized = tool_contract_tests::tracker::builder(&remote)
        .authorizer(
            |_: &Principal, _: &tool_contract::ToolSpec, _: &serde_json::Value| -> bool {
                panic!("an authorizer bug")
            },
        )
        .build()
        .unwrap();
    assert_eq!(
        code(&run(&authorized, &read).await),
        Some(ErrorCode::NotFound)
    );

    // A store bug: a panic on a claim (the first look at the key answers nothing).
    let panicking =
        tool_contract_tests::hooked::Hooked::new(Arc::new(MemoryStore::new()), |step| {
            if step == "get" {
                Ok(())
            } else {
                panic!("a store bug")
            }
        });
    let stored = tool_contract_tests::tracker::builder(&remote)
        .store(Arc::new(panicking))
        .build()
        .unwrap();
    let write = create("c2", "Printer", "jammed", "k-2");
    let refused = run(&stored, &write).await;
    assert_eq!(code(&refused), Some(ErrorCode::StoreUnavailable));
    assert!(
        detail(&refused).contains("panicked"),
        "{}",
        detail(&refused)
    );
    assert_eq!(remote.requests(&sent("k-2")), 0, "nothing ran");

    struct PanickingSink;
    impl AuditSink for PanickingSink {
        fn append<'a>(
            &'a self,
            _: &'a tool_contract::ModelResult,
            _: &'a tool_contract::results::ProtectedAudit,
        ) -> tool_contract::control::AuditFuture<'a> {
            Box::pin(async { panic!("a sink bug") })
        }
    }
    let audited = tool_contract_tests::tracker::builder(&remote)
        .audit_sink(Arc::new(PanickingSink))
        .build()
        .unwrap();
    let answered = run(&audited, &read).await;
    assert_eq!(answered.result.model.status(), Status::Succeeded);
    assert!(matches!(
        answered.audit_error,
        Some(AuditLogError::Panicked)
    ));
}

/// Finding 11: a read the timeout stopped mid-run read `TIMEOUT_BEFORE_EXECUTE` ("the call
/// ran out of time before the tool ran"), though the tool had run.
#[tokio::test(start_paused = true)]
async fn a_read_the_timeout_stopped_mid_run_is_not_said_never_to_have_run() {
    let remote = Remote::new();
    let dispatcher = dispatcher(&remote, Arc::new(MemoryStore::new()));
    remote.script(&[Fault::HangBeforeCommit; 3]);
    let read = context("c1", "read_doc", json!({ "doc_id": "d-1" }), "op-1", "k-1");
    let timed_out = run(&dispatcher, &read).await;
    let error = timed_out.result.model.error().unwrap();
    assert_eq!(error.code(), ErrorCode::SourceTimeout, "{timed_out:?}");
    assert!(!error.message().contains("before the tool ran"));
    assert_eq!(remote.reads(), 3, "every attempt ran");
}

// Issue 29: approval rows are sealed like ledger rows. A row edited or inserted in the
// database by anything but the store's own steps is refused, nothing runs, and the refusal is
// audited; on SQLite and PostgreSQL (the memory store runs the same steps, but nothing outside
// the process can reach its rows).

/// Where the approval rows of a test live, and a way to write to them behind the store.
enum Tables {
    Sqlite(std::path::PathBuf),
    Postgres(tool_contract_tests::postgres::Schema),
}

impl Tables {
    async fn store(&self) -> Arc<dyn ControlStore> {
        match self {
            Tables::Sqlite(path) => Arc::new(SqliteStore::open(path).unwrap()),
            Tables::Postgres(schema) => Arc::new(schema.store().await),
        }
    }

    fn execute(&self, sql: &str) {
        match self {
            Tables::Sqlite(path) => {
                rusqlite::Connection::open(path)
                    .unwrap()
                    .execute_batch(sql)
                    .unwrap();
            }
            Tables::Postgres(schema) => {
                let qualified = sql.replace(
                    "tool_contract_approvals",
                    &format!("{}.tool_contract_approvals", schema.name),
                );
                schema.execute(&qualified);
            }
        }
    }

    /// Both backends, PostgreSQL when it is configured.
    fn both(test: &str) -> Vec<Tables> {
        let mut tables = vec![Tables::Sqlite(fresh_db(test))];
        tables.extend(tool_contract_tests::postgres::Schema::new(test).map(Tables::Postgres));
        tables
    }
}

/// A message outside the organisation: it waits for a person.
fn outside(id: &str) -> tool_contract::CallContext {
    tool_contract_tests::tracker::message(id, "bob@globex.example")
}

#[tokio::test]
async fn a_granted_row_inserted_behind_the_store_runs_nothing_and_is_audited() {
    for tables in Tables::both("sealed_grant") {
        let remote = Remote::new();
        let dispatcher = tool_contract_tests::tracker::builder(&remote)
            .store(tables.store().await)
            .build()
            .unwrap();
        let call = outside("m1");
        let pending = tool_contract_tests::tracker::pending_approval(&dispatcher, &call).await;
        // A grant nobody gave, in the stored form, named after an approver nobody heard of.
        let at = "2026-08-22T10:00:00Z";
        let body = json!({
            "approval_id": pending.approval_id,
            "request_sha256": pending.request_sha256,
            "preview_sha256": pending.preview_sha256,
            "tool": "send_message",
            "principal_ref": pending.principal_ref,
            "operation_id": pending.operation_id,
            "approvals": [{ "approver": "mallory", "approved_at": at, "expires_at": "2099-01-01T00:00:00Z" }],
            "expires_at": "2099-01-01T00:00:00Z",
            "ledger_key": pending.ledger_key,
        });
        tables.execute(&format!(
            "UPDATE tool_contract_approvals SET state = 'granted', body = '{body}' \
             WHERE approval_id = '{}'",
            pending.approval_id
        ));
        let dispatch = run(&dispatcher, &call).await;
        assert_eq!(
            dispatch.result.model.error().map(|error| error.code()),
            Some(ErrorCode::Blocked),
            "{:?}",
            dispatch.result.model
        );
        assert_eq!(remote.all_requests(), 0, "the forged grant ran nothing");
        assert!(
            dispatch.result.audit.approval.is_none(),
            "no approval recorded"
        );
        assert!(detail(&dispatch).contains("seal"), "{}", detail(&dispatch));
        assert!(
            dispatch.audit_error.is_none(),
            "the refusal is in the audit log"
        );
    }
}

#[tokio::test]
async fn a_pending_row_edited_to_need_one_approver_is_refused() {
    use tool_contract::control::{ApprovalError, StoreError};
    for tables in Tables::both("sealed_pending") {
        let remote = Remote::new();
        let dispatcher = tool_contract_tests::tracker::builder(&remote)
            .approvers::<tool_contract_tests::tracker::SendMessage>(2)
            .store(tables.store().await)
            .build()
            .unwrap();
        let call = outside("m1");
        let pending = tool_contract_tests::tracker::pending_approval(&dispatcher, &call).await;
        assert_eq!(pending.approvals_required, 2);
        tables.execute(
            "UPDATE tool_contract_approvals \
             SET body = replace(body, ',\"approvals_required\":2', '')",
        );
        let approved = dispatcher
            .approve_pending(&pending, "ana", Duration::from_secs(600))
            .await;
        assert!(
            matches!(approved, Err(ApprovalError::Store(StoreError::Unsealed(_)))),
            "{approved:?}"
        );
        assert!(
            dispatcher.pending_approvals().await.is_err(),
            "the queue fails closed"
        );
        let dispatch = run(&dispatcher, &call).await;
        assert_eq!(
            dispatch.result.model.error().map(|error| error.code()),
            Some(ErrorCode::Blocked)
        );
        assert_eq!(remote.all_requests(), 0);
    }
}
