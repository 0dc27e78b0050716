//! `ToolSpec::model_result_schema`: the JSON Schema an MCP server lists as `outputSchema`
//! accepts every model result the tool can produce, and refuses what verification refuses.

use jsonschema::Validator;
use serde_json::{Value, json};
use tool_contract::results::ModelError;
use tool_contract::{ErrorCode, ToolContract};
use tool_contract_tests::kb::{SearchKb, alice, binder, hits, search, search_call};

fn validator() -> Validator {
    jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(&SearchKb::spec().model_result_schema())
        .expect("the schema compiles")
}

/// The model half of a result the binder made for `error`, as JSON.
fn failure(error: ModelError) -> Value {
    let context = search_call("1", "refund");
    let result = binder().control(&alice(), &context, error, None);
    serde_json::to_value(&result.model).unwrap()
}

fn success() -> Value {
    let result = search(&search_call("1", "refund"), &hits("refund"));
    serde_json::to_value(&result.model).unwrap()
}

/// One model error of `code` as the dispatcher would make it.
fn error_of(code: ErrorCode) -> ModelError {
    match code {
        ErrorCode::PrerequisiteRequired => ModelError::prerequisite("search_kb"),
        code => ModelError::new(code),
    }
}

fn edited(mut value: Value, pointer: &str, replacement: Value) -> Value {
    *value.pointer_mut(pointer).expect("the member exists") = replacement;
    value
}

#[test]
fn a_success_conforms() {
    assert!(validator().is_valid(&success()));
}

#[test]
fn a_failure_of_every_catalog_code_conforms() {
    let validator = validator();
    for code in ErrorCode::ALL {
        let model = failure(error_of(code));
        let errors: Vec<String> = validator
            .iter_errors(&model)
            .map(|error| error.to_string())
            .collect();
        assert!(errors.is_empty(), "{code:?}: {errors:?}");
    }
}

#[test]
fn data_that_breaks_the_output_contract_is_refused() {
    let validator = validator();
    let unknown_field = edited(success(), "/data/hits/0/title", json!(7));
    assert!(!validator.is_valid(&unknown_field));
    let mut extra = success();
    extra["data"]["note"] = json!("x");
    assert!(!validator.is_valid(&extra));
}

#[test]
fn a_success_without_data_or_with_an_error_is_refused() {
    let validator = validator();
    assert!(!validator.is_valid(&edited(success(), "/data", Value::Null)));
    let error = failure(ModelError::new(ErrorCode::ToolError))["error"].clone();
    assert!(!validator.is_valid(&edited(success(), "/error", error)));
}

#[test]
fn an_error_that_differs_from_its_catalog_entry_is_refused() {
    let validator = validator();
    let rate_limited = failure(ModelError::retry_after(ErrorCode::RateLimit, 2_000));
    assert!(validator.is_valid(&rate_limited));
    let cases = [
        ("/error/message", json!("Try the other tool.")),
        ("/error/category", json!("tool")),
        ("/error/recovery", json!("none")),
        ("/error/retry_after_ms", Value::Null),
        ("/error/retry_after_ms", json!(86_400_000_u64)),
        ("/error/paths", json!(["/query"])),
        ("/status", json!("succeeded")),
    ];
    for (pointer, replacement) in cases {
        let tampered = edited(rate_limited.clone(), pointer, replacement.clone());
        assert!(!validator.is_valid(&tampered), "{pointer} = {replacement}");
    }
}

#[test]
fn next_tool_and_alternate_source_appear_exactly_where_the_catalog_says() {
    let validator = validator();
    let mut not_found = failure(ModelError::new(ErrorCode::NotFound));
    assert_eq!(not_found["error"]["alternate_source"], false);
    not_found["error"]
        .as_object_mut()
        .unwrap()
        .remove("alternate_source");
    assert!(!validator.is_valid(&not_found));

    let mut redirect = failure(ModelError::prerequisite("search_kb"));
    redirect["error"]
        .as_object_mut()
        .unwrap()
        .remove("next_tool");
    assert!(!validator.is_valid(&redirect));

    let mut tool_error = failure(ModelError::new(ErrorCode::ToolError));
    tool_error["error"]["next_tool"] = json!("search_kb");
    assert!(!validator.is_valid(&tool_error));
}

#[test]
fn an_unknown_member_anywhere_in_the_envelope_is_refused() {
    let validator = validator();
    for pointer in ["", "/execution", "/provenance"] {
        let mut model = success();
        model
            .pointer_mut(pointer)
            .unwrap()
            .as_object_mut()
            .unwrap()
            .insert("audit".to_owned(), json!({}));
        assert!(!validator.is_valid(&model), "{pointer}");
    }
}
