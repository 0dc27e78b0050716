//! Issue 5, point 1: a source that cannot be read fails fast with its kind; a source that
//! was read and holds nothing is a result with its evidence.

use serde_json::json;
use tool_contract::results::{Category, ModelError, Outcome, Recovery, Trust};
use tool_contract::{ErrorCode, FailureKind, Status, ToolContract, ToolFailure};
use tool_contract_tests::schools::{Web, call, dispatcher, redactions, run, verified};
use tool_contract_tests::tracker::alice;

fn staff_call() -> tool_contract::CallContext {
    call(
        "c1",
        "discover_advisors",
        json!({ "schools": ["Lund University"] }),
    )
}

async fn failed_read(
    kind: FailureKind,
    alternate_source: bool,
) -> tool_contract::dispatch::Dispatch {
    let web = Web::new();
    web.fail_next(kind, alternate_source);
    let dispatcher = dispatcher(&web);
    let dispatch = run(&dispatcher, &staff_call()).await;
    assert_eq!(
        web.requests(),
        1,
        "a source failure is not retried: it fails fast"
    );
    verified(&dispatcher, &staff_call(), &dispatch);
    dispatch
}

fn error(dispatch: &tool_contract::dispatch::Dispatch) -> &ModelError {
    dispatch.result.model.error().expect("a failure")
}

/// What the model reads of a read whose source failed so: code, recovery, hint.
async fn reads(kind: FailureKind, alternate_source: bool) -> (ErrorCode, Recovery, Option<bool>) {
    let dispatch = failed_read(kind, alternate_source).await;
    let error = error(&dispatch);
    (error.code(), error.recovery(), error.alternate_source())
}

#[tokio::test(start_paused = true)]
async fn a_blocked_source_reads_source_blocked_with_no_retry() {
    assert_eq!(
        reads(FailureKind::Blocked, true).await,
        (ErrorCode::SourceBlocked, Recovery::None, Some(true))
    );
    assert_eq!(ErrorCode::SourceBlocked.entry().category, Category::Source);
}

#[tokio::test(start_paused = true)]
async fn a_page_that_changed_reads_source_unreadable() {
    assert_eq!(
        reads(FailureKind::ParseFailed, false).await,
        (ErrorCode::SourceUnreadable, Recovery::None, Some(false))
    );
}

#[tokio::test(start_paused = true)]
async fn an_unreachable_source_reads_source_unreachable_with_a_wait() {
    assert_eq!(
        reads(FailureKind::Network, true).await,
        (
            ErrorCode::SourceUnreachable,
            Recovery::RetryAfter,
            Some(true)
        )
    );
}

#[tokio::test(start_paused = true)]
async fn a_source_that_times_out_reads_source_timeout_with_a_wait() {
    assert_eq!(
        reads(FailureKind::Timeout, false).await,
        (ErrorCode::SourceTimeout, Recovery::RetryAfter, Some(false))
    );
}

#[tokio::test(start_paused = true)]
async fn a_missing_resource_reads_not_found_with_its_hint() {
    assert_eq!(
        reads(FailureKind::NotFound, true).await,
        (ErrorCode::NotFound, Recovery::None, Some(true))
    );
}

#[tokio::test(start_paused = true)]
async fn every_source_failure_is_a_failure_with_no_data_and_nothing_done() {
    for kind in [
        FailureKind::NotFound,
        FailureKind::Blocked,
        FailureKind::ParseFailed,
        FailureKind::Network,
        FailureKind::Timeout,
    ] {
        let dispatch = failed_read(kind, false).await;
        let model = &dispatch.result.model;
        assert_eq!(model.status(), Status::Failed, "{kind:?}");
        assert_eq!(model.data(), None, "{kind:?}: no fallback data");
        assert_eq!(model.execution().outcome, Outcome::NotStarted, "{kind:?}");
        assert_eq!(model.provenance().trust, Trust::UntrustedData, "{kind:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn the_model_never_sees_the_internal_text_of_a_source_failure() {
    let dispatch = failed_read(FailureKind::Blocked, true).await;
    let model_json = String::from_utf8(dispatch.result.model.to_canonical_json()).unwrap();
    assert!(!model_json.contains("internal"), "{model_json}");
    assert!(!model_json.contains("7f3a"), "{model_json}");
    let detail = dispatch.result.audit.detail.as_deref().unwrap_or_default();
    assert!(
        detail.contains("trace 7f3a"),
        "the audit keeps it: {detail}"
    );
    assert_eq!(dispatch.result.audit.redactions[0].reason, "blocked");
}

#[test]
fn an_unauthorized_failure_never_hints_at_another_source() {
    let web = Web::new();
    let dispatcher = dispatcher(&web);
    let binder = dispatcher.binder();
    let hidden = binder.project_failure(
        &alice(),
        &staff_call(),
        ToolFailure::new(FailureKind::Unauthorized, "hidden").with_alternate_source(true),
    );
    let missing = binder.project_failure(
        &alice(),
        &staff_call(),
        ToolFailure::new(FailureKind::NotFound, "missing"),
    );
    assert_eq!(hidden.model.error(), missing.model.error());
    assert_eq!(
        hidden.model.error().unwrap().alternate_source(),
        Some(false)
    );
}

#[tokio::test(start_paused = true)]
async fn a_write_whose_source_fails_after_sending_is_unknown_not_failed() {
    for kind in [
        FailureKind::Network,
        FailureKind::Timeout,
        FailureKind::ParseFailed,
    ] {
        let web = Web::new();
        web.fail_next(kind, true);
        let dispatcher = dispatcher(&web);
        let write = call(
            "w1",
            "request_introduction",
            json!({ "email": "ada.byron@fysik.lu.se" }),
        );
        let dispatch = run(&dispatcher, &write).await;
        let error = error(&dispatch);
        assert_eq!(dispatch.result.model.status(), Status::Unknown, "{kind:?}");
        assert_eq!(error.code(), ErrorCode::OutcomeUnconfirmed, "{kind:?}");
        assert_eq!(error.alternate_source(), None);
        assert_eq!(
            web.requests(),
            1,
            "{kind:?}: a write that may have acted is not resent"
        );
    }
}

#[test]
fn a_write_failure_that_may_have_acted_projects_as_outcome_unknown() {
    let web = Web::new();
    let dispatcher = dispatcher(&web);
    let write = call("w1", "request_introduction", json!({ "email": "a@b.se" }));
    let result = dispatcher.binder().project_failure(
        &alice(),
        &write,
        ToolFailure::new(FailureKind::Timeout, "read timed out after the POST"),
    );
    assert_eq!(
        result.model.error().unwrap().code(),
        ErrorCode::OutcomeUnknown
    );
}

#[test]
fn a_blocked_write_is_a_failure_where_nothing_happened() {
    let web = Web::new();
    let dispatcher = dispatcher(&web);
    let write = call("w1", "request_introduction", json!({ "email": "a@b.se" }));
    let result = dispatcher.binder().project_failure(
        &alice(),
        &write,
        ToolFailure::new(FailureKind::Blocked, "403 from the mailer"),
    );
    assert_eq!(result.model.status(), Status::Failed);
    assert_eq!(
        result.model.error().unwrap().code(),
        ErrorCode::SourceBlocked
    );
}

#[tokio::test(start_paused = true)]
async fn a_legitimate_empty_result_is_a_success_with_evidence() {
    let web = Web::new();
    let dispatcher = dispatcher(&web);
    let empty = call(
        "c1",
        "list_candidate_schools",
        json!({ "field": "alchemy" }),
    );
    let dispatch = run(&dispatcher, &empty).await;
    let model = &dispatch.result.model;
    assert_eq!(model.status(), Status::Succeeded);
    let data = model.data().unwrap();
    assert_eq!(data["names"], json!([]));
    assert_eq!(
        data["sources"][0]["snippet"],
        "0 accredited programmes in alchemy"
    );
    verified(&dispatcher, &empty, &dispatch);
}

#[tokio::test(start_paused = true)]
async fn an_empty_result_without_evidence_is_withheld_not_passed_off_as_nothing_found() {
    let web = Web::new();
    web.answer_next(json!({ "names": [], "sources": [] }));
    let dispatcher = dispatcher(&web);
    let empty = call(
        "c1",
        "list_candidate_schools",
        json!({ "field": "alchemy" }),
    );
    let dispatch = run(&dispatcher, &empty).await;
    assert_eq!(error(&dispatch).code(), ErrorCode::OutputContractViolation);
    let missing = ("/sources".to_owned(), "missing_sources".to_owned());
    assert!(redactions(&dispatch).contains(&missing));
}

#[test]
fn the_alternate_source_hint_is_part_of_the_catalog_check() {
    let hinted = ModelError::new(ErrorCode::SourceTimeout).with_alternate_source(true);
    assert!(hinted.check().is_ok());

    let mut planted = serde_json::to_value(ModelError::new(ErrorCode::RateLimit)).unwrap();
    planted["alternate_source"] = json!(true);
    let planted: ModelError = serde_json::from_value(planted).unwrap();
    assert_eq!(
        planted.check(),
        Err(tool_contract::results::CatalogMismatch::AlternateSource)
    );

    let mut dropped = serde_json::to_value(ModelError::new(ErrorCode::SourceBlocked)).unwrap();
    dropped.as_object_mut().unwrap().remove("alternate_source");
    let dropped: ModelError = serde_json::from_value(dropped).unwrap();
    assert_eq!(
        dropped.check(),
        Err(tool_contract::results::CatalogMismatch::AlternateSource)
    );
}

#[test]
fn each_failure_kind_has_one_code() {
    let web = Web::new();
    let dispatcher = dispatcher(&web);
    let binder = dispatcher.binder();
    let expected = [
        (FailureKind::NotFound, ErrorCode::NotFound),
        (FailureKind::Unauthorized, ErrorCode::NotFound),
        (FailureKind::Blocked, ErrorCode::SourceBlocked),
        (FailureKind::ParseFailed, ErrorCode::SourceUnreadable),
        (FailureKind::Network, ErrorCode::SourceUnreachable),
        (FailureKind::Timeout, ErrorCode::SourceTimeout),
        (FailureKind::Failed, ErrorCode::ToolError),
        (FailureKind::NotSent, ErrorCode::TimeoutBeforeExecute),
        (FailureKind::Cancelled, ErrorCode::Cancelled),
        (FailureKind::OutcomeUnknown, ErrorCode::OutcomeUnknown),
    ];
    for (kind, code) in expected {
        let result = binder.project_failure(&alice(), &staff_call(), ToolFailure::new(kind, ""));
        let error = result.model.error().unwrap();
        assert_eq!(error.code(), code, "{kind:?}");
        assert!(error.check().is_ok(), "{kind:?}");
    }
    // The contract of the call above is a read: its effect is what the codes are for.
    assert!(!tool_contract_tests::schools::DiscoverAdvisors::EFFECT.is_write());
}

#[tokio::test(start_paused = true)]
async fn the_hint_is_in_the_bytes_the_model_reads_and_its_digest_covers() {
    for alternate_source in [true, false] {
        let dispatch = failed_read(FailureKind::Blocked, alternate_source).await;
        let model = &dispatch.result.model;
        let sent = model.to_canonical_json();
        let expected = format!("{{\"alternate_source\":{alternate_source},\"category\":\"source\"");
        assert!(
            String::from_utf8_lossy(&sent).contains(&expected),
            "{}",
            String::from_utf8_lossy(&sent)
        );
        let serde_form = serde_json::to_value(model).unwrap();
        assert_eq!(
            sent,
            tool_contract::json::canonical::to_vec(&serde_form).unwrap()
        );
    }
}
