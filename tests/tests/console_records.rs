//! Issue 32, the console beyond a plain decision: approving with changes from the form the
//! tool's input schema builds (checked by the contract before anything is signed, the diff
//! shown to whoever approves next), and the pages over the audit log: receipts verified and
//! downloaded, the chain's state, the last day per tool (calls, pending, granted, rejected,
//! unknown outcomes reconciled).

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::json;
use tool_contract::console::{Console, ConsoleOptions};
use tool_contract::control::{AuditHistory, History, HistoryFuture, JsonLinesAuditLog};
use tool_contract::dispatch::Task;
use tool_contract::results::{Delivery, KeySet, ReceiptSigner};
use tool_contract::{CallContext, ErrorCode, SecretKey, Status};
use tool_contract_tests::console::{Desk, Visit, desk, serve};
use tool_contract_tests::passkey::{ORIGIN, SoftAuthenticator};
use tool_contract_tests::tracker::{
    Fault, alice, approve, audit_key, code, create, message, pending_approval, run,
};

/// Sends `m-1` to bob, approved by Ana and Ben with their passkeys, and runs it: the
/// receipted write of the pages over the log. Its approval id, and Ana's browser and
/// authenticator.
async fn approved_and_run(desk: &Desk) -> (String, Visit, SoftAuthenticator) {
    let (ana, ana_key) = desk.enrolled("sup-ana").await;
    let (ben, ben_key) = desk.enrolled("sup-ben").await;
    let mut approvers = [(ana, ana_key), (ben, ben_key)];
    let approval_id = run_approved(desk, &message("m-1", "bob"), &mut approvers).await;
    let [(ana, ana_key), _] = approvers;
    (approval_id, ana, ana_key)
}

/// Sends `call`, approved by each of `approvers` with their passkeys, and runs it: its
/// approval id.
async fn run_approved(
    desk: &Desk,
    call: &CallContext,
    approvers: &mut [(Visit, SoftAuthenticator)],
) -> String {
    let pending = pending_approval(&desk.dispatcher, call).await;
    for (visit, key) in approvers.iter_mut() {
        let decided = visit.decide(&pending.approval_id, "approve", key).await;
        assert_eq!(decided.status, 200, "{}", decided.text);
    }
    let ran = run(&desk.dispatcher, call).await;
    assert_eq!(code(&ran), None, "{:?}", ran.result.model);
    pending.approval_id
}

/// A console over the desk's dispatcher and log whose pages read `records` records, served,
/// with `approver_id` signed in with `key`.
async fn paged(
    desk: &Desk,
    records: usize,
    approver_id: &str,
    key: &mut SoftAuthenticator,
) -> Visit {
    let console = Console::new(
        desk.dispatcher.clone(),
        SecretKey::new([0x33; 32]).unwrap(),
        ConsoleOptions::new(ORIGIN, "/console").with_page_records(records),
    )
    .unwrap()
    .with_audit_log(desk.log.clone(), audit_key(), desk.published.clone());
    let mut visit = Visit::new(&serve(&console).await);
    assert_eq!(visit.sign_in(approver_id, key).await.status, 200);
    visit
}

/// The href of the link `id` on `page`, without the console's base path.
fn link(page: &str, id: &str) -> Option<String> {
    let tail = page.split_once(&format!(r#"id="{id}" href=""#))?.1;
    let href = unescaped(tail.split_once('"')?.0);
    Some(href.strip_prefix("/console")?.to_owned())
}

/// `text` as the page's HTML escaping wrote it, read back.
fn unescaped(text: &str) -> String {
    text.replace("&#x2f;", "/").replace("&amp;", "&")
}

/// A log file read back by another reader than its writer, as an auditor's copy would be.
struct Copy(PathBuf);

impl AuditHistory for Copy {
    fn read_back(&self) -> HistoryFuture<'_> {
        let read = JsonLinesAuditLog::records(&self.0).and_then(|lines| {
            Ok(History {
                log: "audit.jsonl".to_owned(),
                lines,
                tree_heads: JsonLinesAuditLog::tree_heads(&self.0)?,
            })
        });
        Box::pin(std::future::ready(read))
    }
}

#[tokio::test]
async fn the_approval_page_draws_a_form_of_the_tools_arguments_filled_with_the_request() {
    let desk = desk().await;
    let (mut ana, _) = desk.enrolled("sup-ana").await;
    let pending = pending_approval(&desk.dispatcher, &message("m-1", "bob")).await;
    let page = ana
        .get(&format!("/approvals/{}", pending.approval_id))
        .await;
    assert!(
        page.text.contains(r#"id="approve-edited""#),
        "{}",
        page.text
    );
    assert!(
        page.text.contains(r#"name="edit.to" value="bob""#),
        "{}",
        page.text
    );
    assert!(
        page.text.contains(r#"name="edit.text" value="hello""#),
        "{}",
        page.text
    );
    assert!(page.text.contains(r#"maxlength="5000""#), "{}", page.text);
}

#[tokio::test]
async fn a_change_outside_the_contract_is_refused_before_anything_is_signed() {
    let desk = desk().await;
    let (mut ana, mut ana_key) = desk.enrolled("sup-ana").await;
    let pending = pending_approval(&desk.dispatcher, &message("m-1", "bob")).await;
    let too_long = "x".repeat(5001);
    let refused = ana
        .decide_with(
            &pending.approval_id,
            &json!({"decision": "approve", "edit.to": "carol", "edit.text": too_long}),
            &mut ana_key,
        )
        .await;
    assert_eq!(refused.status, 422, "{}", refused.text);
    assert!(
        refused.text.contains("/text"),
        "names the argument: {}",
        refused.text
    );
    let unknown = ana
        .decide_with(
            &pending.approval_id,
            &json!({"decision": "approve", "edit.to": "carol", "edit.text": "hi", "edit.cc": "eve"}),
            &mut ana_key,
        )
        .await;
    assert_eq!(unknown.status, 422, "{}", unknown.text);
    assert!(
        unknown.text.contains("cc is not an argument"),
        "{}",
        unknown.text
    );
    let still = desk.dispatcher.pending_approval(&pending.approval_id).await;
    assert!(
        still.unwrap().unwrap().approvals.is_empty(),
        "nothing recorded"
    );
}

#[tokio::test]
async fn a_change_is_shown_to_the_next_approver_who_approves_it_and_the_changed_write_runs() {
    let desk = desk().await;
    let (mut ana, mut ana_key) = desk.enrolled("sup-ana").await;
    let (mut ben, mut ben_key) = desk.enrolled("sup-ben").await;
    let call = message("m-1", "bob");
    let pending = pending_approval(&desk.dispatcher, &call).await;
    let changed = ana
        .decide_with(
            &pending.approval_id,
            &json!({"decision": "approve", "edit.to": "carol", "edit.text": "hello"}),
            &mut ana_key,
        )
        .await;
    assert_eq!(changed.status, 200, "{}", changed.text);

    let page = ben
        .get(&format!("/approvals/{}", pending.approval_id))
        .await;
    assert!(
        page.text.contains(r#"id="edits""#),
        "the diff: {}",
        page.text
    );
    assert!(
        page.text
            .contains("<code>&quot;bob&quot;</code></td><td><code>&quot;carol&quot;</code>"),
        "{}",
        page.text
    );
    assert!(
        page.text.contains(r#"name="edit.to" value="carol""#),
        "{}",
        page.text
    );
    let approved = ben
        .decide(&pending.approval_id, "approve", &mut ben_key)
        .await;
    assert_eq!(approved.status, 200, "{}", approved.text);

    let ran = run(&desk.dispatcher, &call).await;
    assert_eq!(code(&ran), Some(ErrorCode::ApprovedWithChanges));
    let approval = ran.result.audit.approval.expect("ran on the approval");
    assert_eq!(
        approval.edited_arguments.as_deref(),
        Some(r#"{"text":"hello","to":"carol"}"#)
    );
    assert_eq!(desk.remote.all_requests(), 1);
}

#[tokio::test]
async fn receipts_are_listed_verified_and_downloaded_as_the_text_that_verifies_offline() {
    let desk = desk().await;
    let (approval_id, mut ana, _) = approved_and_run(&desk).await;

    let list = ana.get("/receipts").await;
    assert_eq!(list.status, 200, "{}", list.text);
    assert!(list.text.contains(&approval_id), "{}", list.text);
    assert!(
        list.text.contains(r#"<td class="ok">verified</td>"#),
        "{}",
        list.text
    );
    assert!(list.text.contains("sup-ana, sup-ben"), "{}", list.text);

    let download = ana.get(&format!("/receipts/{approval_id}")).await;
    assert_eq!(download.status, 200, "{}", download.text);
    assert!(
        download
            .header("content-disposition")
            .starts_with("attachment;")
    );
    let approvers = desk
        .dispatcher
        .published_approvers()
        .await
        .unwrap()
        .expect("a relying party");
    let receipt = desk
        .published
        .verify_with_approvers(download.text.as_bytes(), &approvers)
        .expect("the downloaded receipt verifies offline");
    assert_eq!(receipt.approval_id, approval_id);
    assert_eq!(receipt.approvals.len(), 2);
}

#[tokio::test]
async fn a_receipt_checked_with_keys_that_did_not_sign_it_does_not_verify() {
    let desk = desk().await;
    let (_, _, mut ana_key) = approved_and_run(&desk).await;
    let other_signer = ReceiptSigner::new("other", [0x77; 32], time::OffsetDateTime::UNIX_EPOCH);
    // The same records, read through a second console whose published keys are another's.
    let console = Console::new(
        desk.dispatcher.clone(),
        SecretKey::new([0x33; 32]).unwrap(),
        ConsoleOptions::new(ORIGIN, "/console"),
    )
    .unwrap()
    .with_audit_log(
        Arc::new(Copy(desk.audit_log.clone())),
        audit_key(),
        KeySet::new([other_signer.published_key()]).unwrap(),
    );
    let mut ana = Visit::new(&serve(&console).await);
    assert_eq!(ana.sign_in("sup-ana", &mut ana_key).await.status, 200);
    let list = ana.get("/receipts").await;
    assert!(list.text.contains("does not verify"), "{}", list.text);
    assert!(
        !list.text.contains(r#"<td class="ok">verified</td>"#),
        "{}",
        list.text
    );
}

#[tokio::test]
async fn a_supervisor_sees_only_the_receipts_they_approved_and_no_auditors_page() {
    let desk = desk().await;
    let (approval_id, _, _) = approved_and_run(&desk).await;
    let (mut cy, _) = desk.enrolled("sup-cy").await;
    let list = cy.get("/receipts").await;
    assert!(!list.text.contains(&approval_id), "{}", list.text);
    assert!(list.text.contains("No receipt yet"), "{}", list.text);
    let download = cy.get(&format!("/receipts/{approval_id}")).await;
    assert_eq!(download.status, 404);
    assert!(
        !download.text.contains("approval-receipt"),
        "{}",
        download.text
    );
    for page in ["/audit", "/overview"] {
        let refused = cy.get(page).await;
        assert_eq!(refused.status, 403, "{page}: {}", refused.text);
    }
}

#[tokio::test]
async fn an_auditor_sees_every_receipt_and_the_chain_held_through_its_signed_tree_heads() {
    let desk = desk().await;
    let (approval_id, _, _) = approved_and_run(&desk).await;
    let (mut dee, _) = desk.enrolled("aud-dee").await;
    assert!(dee.get("/receipts").await.text.contains(&approval_id));

    let records = JsonLinesAuditLog::records(&desk.audit_log).unwrap().len();
    let chain = dee.get("/audit?whole").await;
    assert_eq!(chain.status, 200, "{}", chain.text);
    assert!(
        chain
            .text
            .contains(&format!("holds through record {records}")),
        "{}",
        chain.text
    );
    // A head is signed every two records.
    let signed_through = records - records % 2;
    assert!(
        chain.text.contains(&format!(
            "verified through record {signed_through} of {records}"
        )),
        "{}",
        chain.text
    );
    assert!(chain.text.contains("desk-2026"), "{}", chain.text);
}

#[tokio::test]
async fn a_log_whose_oldest_segment_was_removed_says_which_records_it_no_longer_holds() {
    let desk = desk().await;
    approved_and_run(&desk).await;
    let (mut dee, _) = desk.enrolled("aud-dee").await;
    let before = JsonLinesAuditLog::records(&desk.audit_log).unwrap().len();
    desk.log.rotate().unwrap();
    // The oldest segment, removed (by retention, or by someone who wanted it gone).
    let oldest = desk.audit_log.with_file_name(format!(
        "{}.000001",
        desk.audit_log.file_name().unwrap().to_str().unwrap()
    ));
    std::fs::remove_file(&oldest).unwrap();

    let chain = dee.get("/audit?whole").await;
    assert_eq!(chain.status, 200, "{}", chain.text);
    assert!(
        !chain.text.contains("holds through record"),
        "the keyed chain is not said to hold from the start: {}",
        chain.text
    );
    assert!(
        chain
            .text
            .contains(&format!("records 1 to {before} are not in this log")),
        "{}",
        chain.text
    );
}

#[tokio::test]
async fn an_edited_record_shows_where_the_chain_breaks() {
    let desk = desk().await;
    approved_and_run(&desk).await;
    let (mut dee, _) = desk.enrolled("aud-dee").await;
    let text = std::fs::read_to_string(&desk.audit_log).unwrap();
    let edited = text.replacen("\"number\":241", "\"number\":242", 1);
    assert_ne!(text, edited, "a record holds the message number");
    std::fs::write(&desk.audit_log, edited).unwrap();

    let chain = dee.get("/audit?whole").await;
    assert!(
        chain
            .text
            .contains("breaks: the audit chain breaks at line"),
        "{}",
        chain.text
    );
    assert!(chain.text.contains("do not hold"), "{}", chain.text);
}

/// Two receipted writes, `m-1` then `m-2`, each approved by Ana and Ben: their approval ids,
/// and Ana's authenticator.
async fn two_receipts(desk: &Desk, rotate_between: bool) -> ([String; 2], SoftAuthenticator) {
    let (ana, ana_key) = desk.enrolled("sup-ana").await;
    let (ben, ben_key) = desk.enrolled("sup-ben").await;
    let mut approvers = [(ana, ana_key), (ben, ben_key)];
    let first = run_approved(desk, &message("m-1", "bob"), &mut approvers).await;
    if rotate_between {
        desk.log.rotate().unwrap();
    }
    let second = run_approved(desk, &message("m-2", "carol"), &mut approvers).await;
    let [(_, ana_key), _] = approvers;
    ([first, second], ana_key)
}

#[tokio::test]
async fn receipts_are_paged_newest_first_with_older_records_a_link_away() {
    let desk = desk().await;
    let ([first, second], mut ana_key) = two_receipts(&desk, false).await;
    let records = JsonLinesAuditLog::records(&desk.audit_log).unwrap().len();
    let mut ana = paged(&desk, 1, "sup-ana", &mut ana_key).await;

    let newest = ana.get("/receipts").await;
    assert_eq!(newest.status, 200, "{}", newest.text);
    assert!(newest.text.contains(&second), "{}", newest.text);
    assert!(!newest.text.contains(&first), "{}", newest.text);
    assert!(
        newest.text.contains(&format!(
            "records {records} to {records} of {records} in <code>audit.jsonl</code>"
        )),
        "{}",
        newest.text
    );
    assert!(link(&newest.text, "newest").is_none());
    // A place that does not read as one is left out: the newest records again.
    let mangled = ana
        .get("/receipts?before=%ff&before=18446744073709551616:audit.jsonl&before=x")
        .await;
    assert_eq!(mangled.status, 200, "{}", mangled.text);
    assert!(mangled.text.contains(&second), "{}", mangled.text);

    // Older pages, one record each, until the first receipt.
    let mut page = newest;
    let mut pages = 1;
    while !page.text.contains(&first) {
        let older = link(&page.text, "older").expect("an older page while records remain");
        page = ana.get(&older).await;
        assert_eq!(page.status, 200, "{}", page.text);
        assert!(link(&page.text, "newest").is_some(), "{}", page.text);
        pages += 1;
        assert!(pages <= records, "the first receipt was never shown");
    }
    assert!(!page.text.contains(&second), "{}", page.text);

    // Its download reads the one record the link names, and verifies offline.
    let href = unescaped(&page.text)
        .split_once(&format!("/console/receipts/{first}?at="))
        .map(|(_, rest)| format!("/receipts/{first}?at={}", rest.split_once('"').unwrap().0))
        .expect("a download link naming its record");
    let download = ana.get(&href).await;
    assert_eq!(download.status, 200, "{}", download.text);
    let approvers = desk
        .dispatcher
        .published_approvers()
        .await
        .unwrap()
        .unwrap();
    let receipt = desk
        .published
        .verify_with_approvers(download.text.as_bytes(), &approvers)
        .unwrap();
    assert_eq!(receipt.approval_id, first);
    // Another record named for it: not there.
    let elsewhere = ana
        .get(&format!("/receipts/{first}?at=1:audit.jsonl"))
        .await;
    assert_eq!(elsewhere.status, 404, "{}", elsewhere.text);
}

#[tokio::test]
async fn the_newest_page_reads_nothing_of_the_oldest_segment() {
    let desk = desk().await;
    let ([first, second], mut ana_key) = two_receipts(&desk, true).await;
    // The oldest segment made unreadable: a directory where its file was. A page that read
    // the whole log would fail on it.
    let oldest = desk.audit_log.with_file_name("audit.jsonl.000001");
    std::fs::remove_file(&oldest).unwrap();
    std::fs::create_dir(&oldest).unwrap();
    // The active segment: its start, m-2 asked, m-2 ran.
    let mut ana = paged(&desk, 3, "sup-ana", &mut ana_key).await;
    let receipts = ana.get("/receipts").await;
    assert_eq!(receipts.status, 200, "{}", receipts.text);
    assert!(receipts.text.contains(&second), "{}", receipts.text);
    assert!(!receipts.text.contains(&first), "{}", receipts.text);

    let (mut dee, mut dee_key) = desk.enrolled("aud-dee").await;
    drop(dee.get("/approvals").await);
    let mut dee = paged(&desk, 3, "aud-dee", &mut dee_key).await;
    let chain = dee.get("/audit").await;
    assert_eq!(chain.status, 200, "{}", chain.text);
    let whole = dee.get("/audit?whole").await;
    assert_eq!(
        whole.status, 503,
        "the whole log cannot be read: {}",
        whole.text
    );
}

#[tokio::test]
async fn the_audit_page_checks_its_newest_records_and_the_whole_log_when_asked() {
    let desk = desk().await;
    approved_and_run(&desk).await;
    let records = JsonLinesAuditLog::records(&desk.audit_log).unwrap().len();
    let (_, mut dee_key) = desk.enrolled("aud-dee").await;
    let mut dee = paged(&desk, 1, "aud-dee", &mut dee_key).await;

    let page = dee.get("/audit").await;
    assert_eq!(page.status, 200, "{}", page.text);
    let from = records;
    assert!(
        page.text.contains(&format!(
            "records {from} to {records} hold; records before {from} were not read for this page"
        )),
        "{}",
        page.text
    );
    assert!(!page.text.contains("verified through"), "{}", page.text);
    let whole = dee
        .get(&link(&page.text, "whole").expect("a link to the whole check"))
        .await;
    assert!(
        whole
            .text
            .contains(&format!("holds through record {records}")),
        "{}",
        whole.text
    );
    assert!(
        whole.text.contains("verified through record"),
        "{}",
        whole.text
    );

    // A page whose first record was edited: its own keyed digest no longer holds.
    let text = std::fs::read_to_string(&desk.audit_log).unwrap();
    let last_line_start = text[..text.len() - 1].rfind('\n').unwrap() + 1;
    let (before, last) = text.split_at(last_line_start);
    let edited = format!(
        "{before}{}",
        last.replacen("\"number\":241", "\"number\":242", 1)
    );
    assert_ne!(text, edited, "the last record holds the message number");
    std::fs::write(&desk.audit_log, edited).unwrap();
    let page = dee.get("/audit").await;
    assert!(
        page.text.contains(&format!(
            "breaks at record {records}: record_sha256 does not match"
        )),
        "{}",
        page.text
    );
}

#[tokio::test]
async fn the_overview_reads_back_to_the_day_and_no_further() {
    use tool_contract::control::AuditSink;
    use tool_contract::results::ModelResult;

    let desk = desk().await;
    // A call observed two days ago (run elsewhere, dated back), appended twice: into a
    // segment since made unreadable, and after it. Today: three calls.
    let elsewhere = tool_contract_tests::tracker::builder(&desk.remote)
        .build()
        .unwrap();
    let ran = run(&elsewhere, &create("c1", "Printer on fire", "3", "k-1")).await;
    let mut model = serde_json::to_value(&ran.result.model).unwrap();
    model["provenance"]["observed_at"] = json!("2026-08-20T10:00:00Z");
    let aged: ModelResult = serde_json::from_value(model).unwrap();
    let log = &desk.log;
    log.append(&aged, &ran.result.audit).await.unwrap();
    log.rotate().unwrap();
    log.append(&aged, &ran.result.audit).await.unwrap();
    for number in 2..5 {
        let call = create(
            &format!("c{number}"),
            "Printer on fire",
            "3",
            &format!("k-{number}"),
        );
        run(&desk.dispatcher, &call).await;
    }
    let oldest = desk.audit_log.with_file_name("audit.jsonl.000001");
    std::fs::remove_file(&oldest).unwrap();
    std::fs::create_dir(&oldest).unwrap();

    let (_, mut dee_key) = desk.enrolled("aud-dee").await;
    let mut dee = paged(&desk, 1, "aud-dee", &mut dee_key).await;
    let overview = dee.get("/overview").await;
    assert_eq!(overview.status, 200, "{}", overview.text);
    assert!(
        overview.text.contains(
            r#"<tr data-tool="create_issue"><td><code>create_issue</code></td><td>3</td>"#
        ),
        "{}",
        overview.text
    );
}

#[tokio::test]
async fn the_overview_counts_the_last_day_per_tool_and_draws_it() {
    let desk = desk().await;
    let (_, mut ana, mut ana_key) = approved_and_run(&desk).await;
    pending_approval(&desk.dispatcher, &message("m-2", "carol")).await;
    let refused = message("m-3", "mallory");
    let pending = pending_approval(&desk.dispatcher, &refused).await;
    let rejected = ana
        .decide(&pending.approval_id, "reject_wrong_details", &mut ana_key)
        .await;
    assert_eq!(rejected.status, 200, "{}", rejected.text);
    let told = run(&desk.dispatcher, &refused).await;
    assert_eq!(code(&told), Some(ErrorCode::RejectedWrongDetails));

    let (mut dee, _) = desk.enrolled("aud-dee").await;
    let overview = dee.get("/overview").await;
    assert_eq!(overview.status, 200, "{}", overview.text);
    // m-1 asked (approval required), then ran on its grant; m-2 asked and waits; m-3 asked,
    // was rejected, and the model was told so: five calls, one pending, one granted, one
    // rejected.
    assert!(
        overview.text.contains(
            r#"<tr data-tool="send_message"><td><code>send_message</code></td><td>5</td><td>1</td><td>1</td><td>1</td><td>0</td></tr>"#
        ),
        "{}",
        overview.text
    );
    assert!(
        overview.text.contains(r#"<svg id="chart""#),
        "{}",
        overview.text
    );
    assert!(
        overview.text.contains(r#"class="bar calls""#),
        "{}",
        overview.text
    );
}

#[tokio::test]
async fn the_overview_counts_an_unknown_outcome_settled_by_its_status_query() {
    let desk = desk().await;
    desk.remote.script(&[Fault::CommitThenHang]);
    // The handler's timeout passes in paused time: the write ends unknown, then its status
    // query finds it committed.
    tokio::time::pause();
    let timed_out = run(
        &desk.dispatcher,
        &create("c1", "Printer on fire", "3", "k-1"),
    )
    .await;
    assert_eq!(timed_out.result.model.status(), Status::Unknown);
    let settled = desk
        .dispatcher
        .reconcile(
            &alice(),
            &create("c2", "Printer on fire", "3", "k-1"),
            &Task::unlimited(),
        )
        .await;
    assert_eq!(
        settled.result.model.execution().delivery,
        Delivery::ReceiptReconciled
    );
    tokio::time::resume();

    let (mut dee, _) = desk.enrolled("aud-dee").await;
    let overview = dee.get("/overview").await;
    assert!(
        overview.text.contains(
            r#"<tr data-tool="create_issue"><td><code>create_issue</code></td><td>2</td><td>0</td><td>0</td><td>0</td><td>1</td></tr>"#
        ),
        "{}",
        overview.text
    );
}

#[tokio::test]
async fn a_decision_posted_with_other_edits_than_those_signed_is_refused_and_nothing_recorded() {
    let desk = desk().await;
    let (mut ana, mut ana_key) = desk.enrolled("sup-ana").await;
    let pending = pending_approval(&desk.dispatcher, &message("m-1", "bob")).await;
    let page = format!("/approvals/{}", pending.approval_id);
    ana.get(&page).await;
    let asked = ana
        .post(
            &format!("{page}/statement"),
            &json!({"decision": "approve", "edit.to": "carol", "edit.text": "hello"}),
        )
        .await;
    assert_eq!(asked.status, 200, "{}", asked.text);
    let asked = asked.json();
    assert_eq!(
        asked["edited_arguments"],
        json!({"to": "carol", "text": "hello"})
    );
    let credential = ana_key.sign(&asked["options"]).await;
    let credential: serde_json::Value = serde_json::from_slice(&credential).unwrap();
    let swapped = ana
        .post(
            &format!("{page}/decision"),
            &json!({
                "statement": asked["statement"],
                "edited_arguments": {"to": "mallory", "text": "hello"},
                "credential": credential,
            }),
        )
        .await;
    assert_eq!(swapped.status, 403, "{}", swapped.text);
    assert!(
        swapped.text.contains("edited_arguments_sha256"),
        "{}",
        swapped.text
    );
    let still = desk.dispatcher.pending_approval(&pending.approval_id).await;
    assert!(
        still.unwrap().unwrap().approvals.is_empty(),
        "nothing recorded"
    );
}

#[tokio::test]
async fn a_statement_asked_with_a_body_the_page_never_sends_is_refused_with_its_reason() {
    let desk = desk().await;
    let (mut ana, pending, statement) = desk.ana_on_a_pending_approval().await;
    for (body, status, says) in [
        (json!(["approve"]), 400, "not what this page sends"),
        (json!({}), 400, "no decision"),
        (
            json!({"decision": "approve_everything"}),
            400,
            "no decision",
        ),
        (
            json!({"decision": "approve", "edit.to": 7}),
            422,
            "to is not a form field's text",
        ),
        (
            json!({"decision": "approve", "edit-json.to": "{"}),
            422,
            "to does not read as json",
        ),
        (
            json!({"decision": "reject_duplicate", "edit.to": "carol", "edit.text": "x"}),
            422,
            "a rejection carries no edits",
        ),
    ] {
        let refused = ana.post(&statement, &body).await;
        assert_eq!(refused.status, status, "{body}: {}", refused.text);
        assert!(refused.text.contains(says), "{body}: {}", refused.text);
    }
    let still = desk.dispatcher.pending_approval(&pending.approval_id).await;
    assert!(
        still.unwrap().unwrap().approvals.is_empty(),
        "nothing recorded"
    );
}

#[tokio::test]
async fn a_console_in_front_of_two_replicas_shows_the_receipts_and_chains_of_both() {
    use tool_contract::control::{Approver, PostgresAuditLog};
    use tool_contract::results::RelyingParty;
    use tool_contract_tests::console::{invitation, receipt_signer};
    use tool_contract_tests::passkey::RP_ID;
    use tool_contract_tests::postgres::Schema;
    use tool_contract_tests::tracker::{Remote, builder};

    let Some(schema) = Schema::new("a_console_in_front_of_two_replicas") else {
        return;
    };
    let store = Arc::new(schema.store().await);
    let remote = Remote::new();
    let replica = |log: &Arc<PostgresAuditLog>| {
        Arc::new(
            builder(&remote)
                .store(store.clone())
                .audit_sink(log.clone())
                .relying_party(RelyingParty::new(RP_ID, "desk", [ORIGIN]).unwrap())
                .approval_receipts(receipt_signer())
                .build()
                .unwrap(),
        )
    };
    let (log_a, log_b) = (
        Arc::new(PostgresAuditLog::new(&store, audit_key())),
        Arc::new(PostgresAuditLog::new(&store, audit_key())),
    );
    let (a, b) = (replica(&log_a), replica(&log_b));
    // One write redeemed on each replica, each receipt in that replica's stream.
    let mut approval_ids = Vec::new();
    for (number, runs_on) in [(1, &a), (2, &b)] {
        let call = message(&format!("m-{number}"), "bob");
        let pending = approve(&a, &call, "supervisor").await;
        assert_eq!(code(&run(runs_on, &call).await), None);
        approval_ids.push(pending.approval_id);
    }

    // The console of replica A, over A's own log.
    let console = Console::new(
        a.clone(),
        SecretKey::new([0x33; 32]).unwrap(),
        ConsoleOptions::new(ORIGIN, "/console"),
    )
    .unwrap()
    .with_audit_log(
        log_a.clone(),
        audit_key(),
        KeySet::new([receipt_signer().published_key()]).unwrap(),
    );
    let base = serve(&console).await;
    a.put_approver(Approver::new("aud-dee", "Dee", ["*"], ["*"]))
        .await
        .unwrap();
    let mut dee = Visit::new(&base);
    let invited = invitation(&console, "aud-dee").await;
    let mut dee_key = SoftAuthenticator::new();
    assert_eq!(dee.enrol(&invited, &mut dee_key).await.status, 200);
    let receipts = dee.get("/receipts").await;
    for approval_id in &approval_ids {
        assert!(
            receipts.text.contains(approval_id),
            "{approval_id}: {}",
            receipts.text
        );
    }
    let chains = dee.get("/audit").await;
    for stream in [log_a.stream(), log_b.stream()] {
        assert!(chains.text.contains(stream), "{stream}: {}", chains.text);
    }
    // Both streams' calls, from the counts the log keeps: m-1 and m-2 each asked, then ran
    // on their grants.
    let overview = dee.get("/overview").await;
    assert!(
        overview.text.contains(
            r#"<tr data-tool="send_message"><td><code>send_message</code></td><td>4</td><td>0</td><td>2</td><td>0</td><td>0</td></tr>"#
        ),
        "{}",
        overview.text
    );

    // Pages of one record of each stream: A holds m-1 asked, m-1 ran, m-2 asked; B m-2 ran.
    let paged = Console::new(
        a.clone(),
        SecretKey::new([0x33; 32]).unwrap(),
        ConsoleOptions::new(ORIGIN, "/console").with_page_records(1),
    )
    .unwrap()
    .with_audit_log(
        log_a.clone(),
        audit_key(),
        KeySet::new([receipt_signer().published_key()]).unwrap(),
    );
    let mut dee = Visit::new(&serve(&paged).await);
    assert_eq!(dee.sign_in("aud-dee", &mut dee_key).await.status, 200);
    let newest = dee.get("/receipts").await;
    assert!(newest.text.contains(&approval_ids[1]), "{}", newest.text);
    assert!(!newest.text.contains(&approval_ids[0]), "{}", newest.text);
    let older = dee
        .get(&link(&newest.text, "older").expect("A has older records"))
        .await;
    assert!(older.text.contains(&approval_ids[0]), "{}", older.text);
    assert!(!older.text.contains(&approval_ids[1]), "{}", older.text);
    let (stream_a, stream_b) = (log_a.stream(), log_b.stream());
    let read = older
        .text
        .split_once(r#"<p id="records-read">"#)
        .and_then(|(_, rest)| rest.split_once("</p>"))
        .expect("what the page read")
        .0;
    assert_eq!(
        read,
        format!("Read for this page: records 2 to 2 of 3 in <code>{stream_a}</code>."),
        "B has no older record ({stream_b})"
    );
}

/// The default audit page reads only the newest records, and holds them against the newest
/// signed tree head: where the head's last record is on the page, the page's records are
/// those it vouched for; a log whose oldest segment was removed no longer keeps what the head
/// vouches for, and the page breaks there, without reading the log whole.
#[tokio::test]
async fn the_audit_page_holds_its_newest_records_against_the_newest_signed_tree_head() {
    let desk = desk().await;
    let ([_, _], _) = two_receipts(&desk, true).await;
    let (_, mut dee_key) = desk.enrolled("aud-dee").await;
    let mut dee = paged(&desk, 100, "aud-dee", &mut dee_key).await;
    let page = dee.get("/audit").await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert!(
        page.text
            .contains("and this page&#x27;s are those it vouched for")
            || page
                .text
                .contains("and this page's are those it vouched for"),
        "{}",
        page.text
    );

    std::fs::remove_file(desk.audit_log.with_file_name("audit.jsonl.000001")).unwrap();
    let cut = dee.get("/audit").await;
    assert_eq!(cut.status, 200, "{}", cut.text);
    assert!(
        cut.text.contains("breaks: the log&#x27;s oldest record is")
            || cut.text.contains("breaks: the log's oldest record is"),
        "{}",
        cut.text
    );
}
