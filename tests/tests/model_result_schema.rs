//! `ToolSpec::model_result_schema`: the JSON Schema an MCP server lists as `outputSchema`
//! accepts every model result the tool can produce, and refuses what verification refuses.

use jsonschema::Validator;
use serde_json::{Value, json};
use tool_contract::results::{CatalogMismatch, ModelError};
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
fn an_error_whose_recovery_members_do_not_fit_its_recovery_is_refused() {
    let validator = validator();
    let rate_limited = failure(ModelError::retry_after(ErrorCode::RateLimit, 2_000));
    assert!(validator.is_valid(&rate_limited));
    let cases = [
        ("/error/code", json!("TEAPOT")),
        // A recovery without a wait, beside a wait.
        ("/error/recovery", json!("none")),
        ("/error/retry_after_ms", Value::Null),
        ("/error/retry_after_ms", json!(0)),
        ("/error/retry_after_ms", json!(86_400_000_u64)),
        ("/error/paths", json!([7])),
        ("/status", json!("succeeded")),
    ];
    for (pointer, replacement) in cases {
        let tampered = edited(rate_limited.clone(), pointer, replacement.clone());
        assert!(!validator.is_valid(&tampered), "{pointer} = {replacement}");
    }
    // A wait where the recovery has none.
    let tool_error = failure(ModelError::new(ErrorCode::ToolError));
    assert!(!validator.is_valid(&edited(tool_error, "/error/retry_after_ms", json!(5))));
}

#[test]
fn what_follows_from_the_code_is_left_to_verification() {
    // The schema lists the catalog's codes, not what goes with each: an error that is not its
    // code's entry conforms, and verification refuses it.
    let validator = validator();
    let tool_error = failure(ModelError::new(ErrorCode::ToolError));
    let not_found = failure(ModelError::new(ErrorCode::NotFound));
    let mut without_hint = not_found.clone();
    without_hint["error"]
        .as_object_mut()
        .unwrap()
        .remove("alternate_source");
    let cases = [
        (
            edited(
                tool_error.clone(),
                "/error/message",
                json!("Try another tool."),
            ),
            CatalogMismatch::Message,
        ),
        (
            edited(tool_error.clone(), "/error/category", json!("budget")),
            CatalogMismatch::Category,
        ),
        (
            edited(tool_error.clone(), "/error/recovery", json!("human_review")),
            CatalogMismatch::Recovery,
        ),
        (
            edited(tool_error, "/error/paths", json!(["/query"])),
            CatalogMismatch::Paths,
        ),
        (without_hint, CatalogMismatch::AlternateSource),
    ];
    for (tampered, mismatch) in cases {
        assert!(validator.is_valid(&tampered), "{tampered}");
        let error: ModelError = serde_json::from_value(tampered["error"].clone()).unwrap();
        assert_eq!(error.check(), Err(mismatch));
    }
}

#[test]
fn argument_violations_conform_and_carry_no_value() {
    let validator = validator();
    let refused = SearchKb::parse_arguments(br#"{"query":7,"limit":3}"#)
        .err()
        .unwrap();
    let invalid = failure(ModelError::invalid_arguments(&refused));
    assert_eq!(
        invalid["error"]["violations"],
        json!([
            {"path": "/query", "constraint": "type", "expected": "string"},
            {"path": "/limit", "constraint": "unknown_member"},
        ])
    );
    assert!(validator.is_valid(&invalid));

    let cases = [
        // A violation that echoes the value it refused.
        ("/error/violations/0/value", json!(7)),
        ("/error/violations/0/constraint", json!(7)),
    ];
    for (pointer, replacement) in cases {
        let mut tampered = invalid.clone();
        let (parent, member) = pointer.rsplit_once('/').unwrap();
        tampered.pointer_mut(parent).unwrap()[member] = replacement.clone();
        assert!(!validator.is_valid(&tampered), "{pointer} = {replacement}");
    }
    // On another code, the violations are verification's to refuse.
    let mut elsewhere = failure(ModelError::new(ErrorCode::ToolError));
    elsewhere["error"]["violations"] = invalid["error"]["violations"].clone();
    let error: ModelError = serde_json::from_value(elsewhere["error"].clone()).unwrap();
    assert_eq!(error.check(), Err(CatalogMismatch::Violations));
}

#[test]
fn the_output_and_the_error_part_each_appear_once() {
    let schema = SearchKb::spec().model_result_schema().to_string();
    let output = SearchKb::spec().output_schema().to_string();
    assert_eq!(schema.matches(&output).count(), 1);
    assert_eq!(schema.matches("\"INVALID_ARGUMENTS\"").count(), 1);
    assert_eq!(schema.matches("\"execution\":{").count(), 1);
}

#[test]
fn next_tool_appears_exactly_where_the_recovery_is_call_tool() {
    let validator = validator();
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

/// Ship a parcel.
#[derive(serde::Deserialize, ToolContract)]
#[tool_contract(output = Shipment, effect = read_only)]
#[allow(dead_code)] // Only its output is under test.
struct Ship {
    parcel: String,
}

#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Shipment {
    billing: Address,
    shipping: Option<Address>,
    earlier: Vec<Address>,
}

/// A postal address.
#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Address {
    #[tool_output(max_len = 40)]
    city: String,
}

#[test]
fn an_object_type_held_in_several_places_is_defined_once() {
    let output = Ship::spec().output_schema();
    assert_eq!(
        output["$defs"]["Address"]["properties"]["city"]["maxLength"],
        40
    );
    let text = output.to_string();
    assert_eq!(
        text.matches("\"city\"").count(),
        2,
        "its property and its required: {text}"
    );
    assert_eq!(text.matches("#/$defs/Address").count(), 3);

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let dispatcher =
        tool_contract::dispatch::Dispatcher::for_development(tool_contract::registry![Ship])
            .handler(|_: Ship| async {
                let address = |city: &str| Address {
                    city: city.to_owned(),
                };
                Ok(Shipment {
                    billing: address("Lyon"),
                    shipping: Some(address("Nantes")),
                    earlier: vec![address("Lille")],
                })
            })
            .build()
            .unwrap();
    let context = dispatcher.context(tool_contract_tests::kb::call(
        "c1",
        "ship",
        r#"{"parcel":"p"}"#,
    ));
    let principal = tool_contract::Principal::new("acme", "agent");
    let task = tool_contract::dispatch::Task::unlimited();
    let dispatched = runtime.block_on(dispatcher.dispatch(&principal, &context, &task));
    let result = serde_json::to_value(&dispatched.result.model).unwrap();
    assert_eq!(result["status"], "succeeded", "{result}");

    let validator = jsonschema::draft202012::options()
        .build(&Ship::spec().model_result_schema())
        .expect("the schema compiles, its references resolved");
    assert!(validator.is_valid(&result));
    for pointer in ["/data/billing", "/data/shipping", "/data/earlier/0"] {
        let mut tampered = result.clone();
        tampered.pointer_mut(pointer).unwrap()["street"] = json!("Rue 1");
        assert!(!validator.is_valid(&tampered), "{pointer}");
    }
    let too_long = edited(result, "/data/shipping/city", json!("x".repeat(41)));
    assert!(!validator.is_valid(&too_long));
}
