//! The model-result envelope, declared once: over arbitrary model results, the bytes the model
//! is sent are RFC 8785 of the serde form (by our writer and by `serde_jcs`), they read back as
//! the same result, and they conform to `ToolSpec::model_result_schema`.

use std::sync::OnceLock;

use jsonschema::Validator;
use proptest::prelude::*;
use serde_json::{Value, json};
use tool_contract::json::canonical;
use tool_contract::results::{CONTROL_PRODUCER_REVISION, CONTROL_SOURCE_LABEL, ModelError};
use tool_contract::{ErrorCode, ModelResult, ToolContract};
use tool_contract_tests::kb::SearchKb;

fn validator() -> &'static Validator {
    static VALIDATOR: OnceLock<Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| {
        jsonschema::draft202012::options()
            .should_validate_formats(true)
            .build(&SearchKb::spec().model_result_schema())
            .expect("the schema compiles")
    })
}

/// Text of every kind: quotes, backslashes, controls, U+2028, astral characters.
fn text(max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            any::<char>(),
            prop::sample::select(vec![
                '"', '\\', '\n', '\u{0}', '\u{1f}', '\u{2028}', '😀', 'é'
            ]),
        ],
        0..max,
    )
    .prop_map(String::from_iter)
}

/// A `search_kb` output: what the contract allows as `data`.
fn kb_data() -> impl Strategy<Value = Value> {
    let hit = (0u32..100_000, text(40), text(80)).prop_map(|(number, title, body)| {
        json!({ "article_id": format!("KB-{number}"), "title": title, "text": body })
    });
    (text(30), prop::collection::vec(hit, 0..4))
        .prop_map(|(query, hits)| json!({ "query": query, "hits": hits }))
}

fn observed_at() -> impl Strategy<Value = String> {
    (0i64..4_102_444_800).prop_map(|seconds| {
        let time = time::OffsetDateTime::from_unix_timestamp(seconds).expect("in range");
        time.format(&time::format_description::well_known::Rfc3339)
            .expect("formats")
    })
}

fn delivery() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["fresh", "local_replay", "receipt_reconciled"])
}

fn succeeded() -> impl Strategy<Value = Value> {
    let revision = prop::option::of("[A-Za-z0-9._:/+=@-]{1,40}");
    (
        kb_data(),
        delivery(),
        any::<bool>(),
        revision,
        observed_at(),
    )
        .prop_map(
            |(data, delivery, truncated, resource_revision, observed_at)| {
                json!({
                    "schema_version": "tool-model-result-v2",
                    "status": "succeeded",
                    "data": data,
                    "error": null,
                    "execution": { "outcome": "committed", "delivery": delivery,
                                   "complete": !truncated, "truncated": truncated },
                    "provenance": { "source_label": "knowledge-base", "producer_revision": "kb-v1",
                                    "resource_revision": resource_revision,
                                    "observed_at": observed_at, "trust": "untrusted_data" },
                })
            },
        )
}

/// Every catalog code, as the dispatcher can make it: waits, paths, redirects, hints.
fn model_error() -> impl Strategy<Value = ModelError> {
    let code = prop::sample::select(ErrorCode::ALL.to_vec());
    (code, 0u64..400_000, any::<bool>(), any::<bool>()).prop_map(
        |(code, wait_ms, alternate, with_wait)| match code {
            ErrorCode::PrerequisiteRequired => ModelError::prerequisite("search_kb"),
            ErrorCode::InvalidArguments => {
                let violations = SearchKb::parse_arguments(br#"{"query":7,"extra":1}"#)
                    .expect_err("invalid arguments");
                ModelError::invalid_arguments(&violations)
            }
            code if with_wait => ModelError::retry_after(code, wait_ms),
            code => ModelError::new(code).with_alternate_source(alternate),
        },
    )
}

fn failed() -> impl Strategy<Value = Value> {
    (model_error(), delivery(), any::<bool>(), observed_at()).prop_map(
        |(error, delivery, control, observed_at)| {
            let code = error.code();
            let status = if code.is_unknown_outcome() { "unknown" } else { "failed" };
            let (source_label, producer_revision, trust) = if control {
                (CONTROL_SOURCE_LABEL, CONTROL_PRODUCER_REVISION, "trusted_control")
            } else {
                ("knowledge-base", "kb-v1", "untrusted_data")
            };
            json!({
                "schema_version": "tool-model-result-v2",
                "status": status,
                "data": null,
                "error": error,
                "execution": { "outcome": code.entry().outcome.as_str(), "delivery": delivery,
                               "complete": false, "truncated": false },
                "provenance": { "source_label": source_label, "producer_revision": producer_revision,
                                "resource_revision": null, "observed_at": observed_at,
                                "trust": trust },
            })
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1_000))]

    #[test]
    fn the_bytes_sent_are_rfc_8785_of_the_serde_form_and_conform_to_the_schema(
        wire in prop_oneof![succeeded(), failed()],
    ) {
        let model = ModelResult::from_json(&serde_json::to_vec(&wire).unwrap())
            .expect("a consistent result reads");
        let serde_form = serde_json::to_value(&model).unwrap();
        prop_assert_eq!(&serde_form, &wire);
        let sent = model.to_canonical_json();
        prop_assert_eq!(&sent, &canonical::to_vec(&serde_form).unwrap());
        prop_assert_eq!(&sent, &serde_jcs::to_vec(&serde_form).unwrap());
        let errors: Vec<String> = validator().iter_errors(&serde_form).map(|e| e.to_string()).collect();
        prop_assert!(errors.is_empty(), "{:?}", errors);
        prop_assert_eq!(ModelResult::from_json(&sent).unwrap(), model);
    }
}

#[test]
fn a_member_the_envelope_does_not_declare_is_refused_at_every_level() {
    let base = json!({
        "schema_version": "tool-model-result-v2", "status": "failed", "data": null,
        "error": ModelError::new(ErrorCode::ToolError),
        "execution": { "outcome": "not_started", "delivery": "fresh", "complete": false, "truncated": false },
        "provenance": { "source_label": "knowledge-base", "producer_revision": "kb-v1",
                        "resource_revision": null, "observed_at": "2026-08-22T10:00:00Z",
                        "trust": "untrusted_data" },
    });
    assert!(ModelResult::from_json(&serde_json::to_vec(&base).unwrap()).is_ok());
    for pointer in ["", "/execution", "/provenance", "/error"] {
        let mut extra = base.clone();
        extra
            .pointer_mut(pointer)
            .and_then(Value::as_object_mut)
            .unwrap()
            .insert("audit".to_owned(), json!({}));
        let bytes = serde_json::to_vec(&extra).unwrap();
        assert!(ModelResult::from_json(&bytes).is_err(), "{pointer}");
    }
}

#[test]
fn a_duplicate_member_is_refused_where_serde_json_would_keep_the_last() {
    let text = br#"{"schema_version":"tool-model-result-v2","status":"failed","status":"succeeded","data":null,"error":null,"execution":{"outcome":"committed","delivery":"fresh","complete":true,"truncated":false},"provenance":{"source_label":"knowledge-base","producer_revision":"kb-v1","resource_revision":null,"observed_at":"2026-08-22T10:00:00Z","trust":"untrusted_data"}}"#;
    let error = ModelResult::from_json(text).unwrap_err();
    assert!(
        error.to_string().contains("tool-model-result-v2"),
        "{error}"
    );
}
