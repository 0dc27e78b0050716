//! Issue 3, point 1: the two projections, consistent by construction.

use serde_json::{Value, json};
use tool_contract::results::{CONTROL_SOURCE_LABEL, Delivery, ModelError, Outcome, Trust};
use tool_contract::{
    ErrorCode, FailureKind, ModelResult, RawProvenance, RawResult, Status, ToolContract,
    ToolFailure,
};
use tool_contract_tests::kb::{
    SearchKb, alice, all_keys, all_strings, binder, hits, kb_provenance, search, search_call,
};

fn model_json(result: &tool_contract::CallResult) -> Value {
    serde_json::to_value(&result.model).unwrap()
}

fn project_with(provenance: RawProvenance) -> tool_contract::CallResult {
    let context = search_call("1", "refund");
    let input = SearchKb::parse_arguments(&context.call.arguments).unwrap();
    let raw = RawResult::new(hits("refund").to_string(), provenance);
    binder().project_output(&alice(), &context, &input, raw)
}

#[test]
fn a_model_result_has_exactly_the_v2_members() {
    let result = search(&search_call("1", "refund"), &hits("refund"));
    let model = model_json(&result);
    let mut members: Vec<&str> = model
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    members.sort_unstable();
    assert_eq!(
        members,
        [
            "data",
            "error",
            "execution",
            "provenance",
            "schema_version",
            "status"
        ]
    );
    assert_eq!(model["schema_version"], "tool-model-result-v2");
    assert_eq!(
        model["execution"],
        json!({"outcome": "committed", "delivery": "fresh", "complete": true, "truncated": false})
    );
    assert_eq!(
        model["provenance"],
        json!({"source_label": "knowledge-base", "producer_revision": "kb-v1", "resource_revision": "kb-index-42",
               "observed_at": "2026-08-22T09:59:00Z", "trust": "untrusted_data"})
    );
}

#[test]
fn succeeded_has_data_and_no_error() {
    let result = search(&search_call("1", "refund"), &hits("refund"));
    assert_eq!(result.model.status(), Status::Succeeded);
    assert_eq!(result.model.data(), Some(hits("refund")));
    assert!(result.model.error().is_none());
}

#[test]
fn failed_has_an_error_and_no_data() {
    let failure = ToolFailure::new(FailureKind::Failed, "db down");
    let result = binder().project_failure(&alice(), &search_call("1", "x"), failure);
    assert_eq!(result.model.status(), Status::Failed);
    assert!(result.model.data().is_none());
    assert_eq!(result.model.error().unwrap().code(), ErrorCode::ToolError);
    assert_eq!(model_json(&result)["data"], Value::Null);
}

#[test]
fn unknown_has_outcome_unknown_and_outcome_unknown_code() {
    let failure = ToolFailure::new(FailureKind::OutcomeUnknown, "socket closed after send");
    let result = binder().project_failure(&alice(), &search_call("1", "x"), failure);
    assert_eq!(result.model.status(), Status::Unknown);
    assert_eq!(result.model.execution().outcome, Outcome::Unknown);
    assert_eq!(
        result.model.error().unwrap().code(),
        ErrorCode::OutcomeUnknown
    );
}

#[test]
fn trusted_control_marks_only_results_the_dispatcher_made() {
    let made = binder().control(
        &alice(),
        &search_call("1", "x"),
        ModelError::new(ErrorCode::UnknownTool),
        None,
    );
    assert_eq!(made.model.provenance().trust, Trust::TrustedControl);
    assert_eq!(made.model.provenance().source_label, CONTROL_SOURCE_LABEL);
    let data = search(&search_call("1", "refund"), &hits("refund"));
    assert_eq!(data.model.provenance().trust, Trust::UntrustedData);
    let reported = binder().project_failure(
        &alice(),
        &search_call("1", "x"),
        ToolFailure::new(FailureKind::Failed, ""),
    );
    assert_eq!(reported.model.provenance().trust, Trust::UntrustedData);
}

#[test]
fn a_deserialized_result_that_breaks_consistency_is_refused() {
    let good = model_json(&search(&search_call("1", "refund"), &hits("refund")));
    let failed = model_json(&binder().project_failure(
        &alice(),
        &search_call("1", "x"),
        ToolFailure::new(FailureKind::Failed, ""),
    ));
    let cases = [
        ("succeeded with an error", {
            let mut v = good.clone();
            v["error"] = failed["error"].clone();
            v
        }),
        ("succeeded without data", {
            let mut v = good.clone();
            v["data"] = Value::Null;
            v
        }),
        ("failed with data", {
            let mut v = failed.clone();
            v["data"] = json!({});
            v
        }),
        ("unknown status on TOOL_ERROR", {
            let mut v = failed.clone();
            v["status"] = json!("unknown");
            v
        }),
        ("succeeded as trusted_control", {
            let mut v = good.clone();
            v["provenance"]["trust"] = json!("trusted_control");
            v
        }),
        ("succeeded with outcome unknown", {
            let mut v = good.clone();
            v["execution"]["outcome"] = json!("unknown");
            v
        }),
        ("another schema version", {
            let mut v = good.clone();
            v["schema_version"] = json!("tool-model-result-v1");
            v
        }),
        ("an extra member", {
            let mut v = good.clone();
            v["note"] = json!("hi");
            v
        }),
        ("truncated yet complete", {
            let mut v = good.clone();
            v["execution"]["truncated"] = json!(true);
            v
        }),
    ];
    for (name, value) in cases {
        assert!(
            serde_json::from_value::<ModelResult>(value).is_err(),
            "{name}"
        );
    }
    assert!(serde_json::from_value::<ModelResult>(good).is_ok());
}

#[test]
fn a_producer_revision_other_than_the_registry_s_withholds_the_output() {
    let result = project_with(RawProvenance::new("kb-v0", "2026-08-22T09:59:00Z"));
    assert_eq!(
        result.model.error().unwrap().code(),
        ErrorCode::OutputContractViolation
    );
    assert!(
        result
            .audit
            .redactions
            .iter()
            .any(|r| r.reason == "producer_revision_mismatch")
    );
}

#[test]
fn a_malformed_resource_revision_withholds_the_output() {
    let result = project_with(
        RawProvenance::new("kb-v1", "2026-08-22T09:59:00Z")
            .with_resource_revision("\"etag with spaces\""),
    );
    assert_eq!(
        result.model.error().unwrap().code(),
        ErrorCode::OutputContractViolation
    );
    assert!(
        result
            .audit
            .redactions
            .iter()
            .any(|r| r.reason == "resource_revision_malformed")
    );
}

#[test]
fn observed_at_must_be_utc_rfc3339() {
    for observed_at in [
        "2026-08-22T11:59:00+02:00",
        "2026-08-22 09:59:00Z",
        "yesterday",
    ] {
        let result = project_with(RawProvenance::new("kb-v1", observed_at));
        assert_eq!(
            result.model.error().unwrap().code(),
            ErrorCode::OutputContractViolation,
            "{observed_at}"
        );
        assert!(
            result
                .audit
                .redactions
                .iter()
                .any(|r| r.reason == "observed_at_not_utc_rfc3339")
        );
    }
}

#[test]
fn the_source_label_comes_from_the_registry_never_the_handler() {
    let result = search(&search_call("1", "refund"), &hits("refund"));
    assert_eq!(
        result.model.provenance().source_label,
        SearchKb::spec().source_label()
    );
    // A handler cannot even say a label: RawProvenance has no such field, and an output
    // member called source_label is an unknown field.
    let mut output = hits("refund");
    output["source_label"] = json!("trusted-admin");
    let result = search(&search_call("1", "refund"), &output);
    assert_eq!(
        result.model.error().unwrap().code(),
        ErrorCode::OutputContractViolation
    );
}

#[test]
fn one_call_produces_both_halves_bound_together() {
    let context = search_call("1", "refund");
    let result = search(&context, &hits("refund"));
    assert_eq!(result.audit.provider_context.call_id, "call_1");
    assert_eq!(result.audit.operation_id, "op-1");
    assert!(binder().verify(&alice(), &context, &result).is_ok());
}

#[test]
fn the_model_half_holds_nothing_of_the_audit_half() {
    let context = search_call("1", "refund");
    let results = [
        search(&context, &hits("refund")),
        binder().project_failure(
            &alice(),
            &context,
            ToolFailure::new(FailureKind::Unauthorized, "tenant acme may not read KB-9"),
        ),
        binder().project_failure(
            &alice(),
            &context,
            ToolFailure::new(FailureKind::OutcomeUnknown, "").with_downstream(
                tool_contract::results::Downstream {
                    request: Some("req-77".into()),
                    receipt: Some("rcpt-88".into()),
                    status_ref: Some("status-99".into()),
                },
            ),
        ),
    ];
    let forbidden_keys = [
        "tenant",
        "subject",
        "principal",
        "principal_ref",
        "operation_id",
        "receipt",
        "idempotency_key",
        "request_sha256",
        "result_sha256",
        "call_binding_sha256",
        "binding",
        "downstream",
        "detail",
    ];
    for result in &results {
        let model = model_json(result);
        for key in all_keys(&model) {
            assert!(
                !forbidden_keys.contains(&key.as_str()),
                "model result has the key {key}"
            );
        }
        let audit = &result.audit;
        let secrets = [
            "acme",
            "alice@acme.example",
            audit.principal_ref.as_str(),
            audit.operation_id.as_str(),
            audit.idempotency_key.as_deref().unwrap(),
            audit.binding.request_sha256.as_str(),
            audit.binding.result_sha256.as_str(),
            audit.binding.call_binding_sha256.as_str(),
            "req-77",
            "rcpt-88",
            "status-99",
            "tenant acme may not read KB-9",
        ];
        let text = serde_json::to_string(&model).unwrap();
        for secret in secrets {
            assert!(!text.contains(secret), "model result contains {secret}");
        }
        assert!(
            all_strings(&model)
                .iter()
                .all(|s| s.len() != 64 || !s.bytes().all(|b| b.is_ascii_hexdigit())),
            "no digest-like string"
        );
    }
}

#[test]
fn the_audit_holds_principal_ref_provider_context_contract_downstream_binding_and_redactions() {
    let context = search_call("1", "refund");
    let failure = ToolFailure::new(FailureKind::Unauthorized, "tenant acme may not read KB-9")
        .with_downstream(tool_contract::results::Downstream {
            request: Some("req-1".into()),
            receipt: None,
            status_ref: Some("s-1".into()),
        });
    let result = binder().project_failure(&alice(), &context, failure);
    let audit = serde_json::to_value(&result.audit).unwrap();
    assert_eq!(audit["principal_ref"].as_str().unwrap().len(), 64);
    assert_eq!(
        audit["provider_context"],
        json!({"provider": "openai", "api": "openai_responses", "response_id": "resp_1",
                                                   "call_id": "call_1", "adapter_revision": "openai-responses/2026-08"})
    );
    let revisions = SearchKb::spec().revisions();
    assert_eq!(audit["tool_contract"]["input"], revisions.input.as_str());
    assert_eq!(audit["tool_contract"]["producer"], "kb-v1");
    assert_eq!(
        audit["downstream"],
        json!({"request": "req-1", "receipt": null, "status_ref": "s-1"})
    );
    for digest in ["request_sha256", "result_sha256", "call_binding_sha256"] {
        let hex = audit["binding"][digest].as_str().unwrap();
        assert!(
            hex.len() == 64
                && hex
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
            "{digest}"
        );
    }
    assert_eq!(
        audit["redactions"],
        json!([{"path": "", "reason": "unauthorized"}])
    );
    assert_eq!(audit["detail"], "tenant acme may not read KB-9");
}

#[test]
fn a_withheld_output_is_listed_in_the_audit_by_path_and_kind_only() {
    let mut output = hits("refund");
    output["hits"][0]["token"] = json!("sk-live-123");
    let result = search(&search_call("1", "refund"), &output);
    let redactions: Vec<(&str, &str)> = result
        .audit
        .redactions
        .iter()
        .map(|r| (r.path.as_str(), r.reason.as_str()))
        .collect();
    assert!(
        redactions.contains(&("/hits/0/token", "forbidden_key")),
        "{redactions:?}"
    );
    assert!(
        !serde_json::to_string(&result.audit)
            .unwrap()
            .contains("sk-live-123")
    );
    assert!(
        !serde_json::to_string(&result.model)
            .unwrap()
            .contains("sk-live-123")
    );
}

#[test]
fn canonical_json_of_a_result_equals_rfc8785_of_its_serde_form() {
    let context = search_call("1", "refund");
    let mut truncated = RawResult::new(hits("refund").to_string(), kb_provenance()).truncated();
    truncated.provenance.resource_revision = None;
    let input = SearchKb::parse_arguments(&context.call.arguments).unwrap();
    let results = [
        search(&context, &hits("refund")),
        binder().project_output(&alice(), &context, &input, truncated),
        binder().project_failure(
            &alice(),
            &context,
            ToolFailure::new(
                FailureKind::RateLimited {
                    retry_after_ms: Some(1500),
                },
                "",
            ),
        ),
        binder().control(
            &alice(),
            &context,
            ModelError::invalid_arguments(&SearchKb::parse_arguments(b"{}").unwrap_err()),
            None,
        ),
    ];
    for result in results {
        let by_serde =
            tool_contract::json::canonical::to_vec(&serde_json::to_value(&result.model).unwrap())
                .unwrap();
        assert_eq!(
            String::from_utf8(result.model.to_canonical_json()).unwrap(),
            String::from_utf8(by_serde).unwrap()
        );
    }
}

#[test]
fn a_truncated_result_is_not_complete() {
    let context = search_call("1", "refund");
    let input = SearchKb::parse_arguments(&context.call.arguments).unwrap();
    let raw = RawResult::new(hits("refund").to_string(), kb_provenance()).truncated();
    let result = binder().project_output(&alice(), &context, &input, raw);
    assert!(!result.model.execution().complete);
    assert!(result.model.execution().truncated);
    assert_eq!(result.model.execution().delivery, Delivery::Fresh);
}
