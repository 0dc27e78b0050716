//! Issue 5, point 2: grounded outputs carry their sources; a source claims no more trust than
//! its contract declares; synthetic values are refused or stripped, and the audit says so.

use serde_json::{Value, json};
use tool_contract::evidence::{Detector, GroundingSource, SourceTier};
use tool_contract::{ErrorCode, Status, ToolContract, Violations};
use tool_contract_tests::found;
use tool_contract_tests::schools::{
    AdvisorList, DiscoverAdvisors, EmailHits, ListCandidateSchools, Schools, SearchEmail, Web,
    call, dispatcher, redactions, register_answer, run, source, staff_answer, verified,
};

fn register() -> ListCandidateSchools {
    ListCandidateSchools {
        field: "optics".to_owned(),
    }
}

fn schools(output: &Value) -> Result<Schools, Violations> {
    register().validate_output(output.to_string().as_bytes())
}

fn advisors(output: &Value) -> Result<AdvisorList, Violations> {
    let call = DiscoverAdvisors {
        schools: vec!["Lund University".to_owned()],
    };
    call.validate_output(output.to_string().as_bytes())
}

fn emails(output: &Value) -> Result<EmailHits, Violations> {
    let call = SearchEmail {
        name: "Ada Byron".to_owned(),
    };
    call.validate_output(output.to_string().as_bytes())
}

fn rejected<T: std::fmt::Debug>(result: Result<T, Violations>) -> Vec<(String, &'static str)> {
    match result {
        Ok(value) => panic!("expected violations, got {value:?}"),
        Err(violations) => found(&violations),
    }
}

fn with_source(field: &str, value: Value) -> Value {
    let mut output = register_answer("optics");
    output["sources"][0][field] = value;
    output
}

#[test]
fn a_grounded_output_with_sources_is_valid() {
    let output = schools(&register_answer("optics")).unwrap();
    assert_eq!(output.names, ["Lund University", "Uppsala University"]);
    assert_eq!(output.sources[0].tier(), SourceTier::AuthoritativeDatabase);
    assert_eq!(output.sources[0].confidence(), 1.0);
}

#[test]
fn a_grounded_output_without_sources_fails_validation() {
    let output = json!({ "names": ["Lund University"], "sources": [] });
    assert_eq!(
        rejected(schools(&output)),
        [("/sources".to_owned(), "missing_sources")]
    );
}

#[test]
fn a_confidence_outside_zero_to_one_fails_validation() {
    assert_eq!(
        rejected(schools(&with_source("confidence", json!(1.5)))),
        [("/sources/0/confidence".to_owned(), "above_maximum")]
    );
    assert_eq!(
        rejected(schools(&with_source("confidence", json!(-0.1)))),
        [("/sources/0/confidence".to_owned(), "below_minimum")]
    );
}

#[test]
fn a_source_url_that_is_not_https_fails_validation() {
    for url in [
        "http://register.example.org/",
        "ftp://x.org/",
        "register.example.org",
    ] {
        assert_eq!(
            rejected(schools(&with_source("url", json!(url)))),
            [("/sources/0/url".to_owned(), "invalid_format")],
            "{url}"
        );
    }
    assert!(
        schools(&with_source("url", Value::Null)).is_ok(),
        "a source may have no url"
    );
}

#[test]
fn a_source_without_its_snippet_or_with_unknown_fields_fails_validation() {
    assert_eq!(
        rejected(schools(&with_source("snippet", json!("")))),
        [("/sources/0/snippet".to_owned(), "too_short")]
    );
    assert_eq!(
        rejected(schools(&with_source("verified", json!(true)))),
        [("/sources/0/verified".to_owned(), "unknown_field")]
    );
}

#[test]
fn a_source_may_claim_its_contracts_tier_or_a_lower_one() {
    for tier in ["authoritative_database", "web_search", "community"] {
        assert!(schools(&with_source("tier", json!(tier))).is_ok(), "{tier}");
    }
}

#[test]
fn a_source_claiming_a_tier_above_its_contracts_fails_validation() {
    assert_eq!(
        rejected(schools(&with_source("tier", json!("official")))),
        [("/sources/0/tier".to_owned(), "tier_above_contract")]
    );
    assert_eq!(
        rejected(schools(&with_source("tier", json!("government")))),
        [("/sources/0/tier".to_owned(), "not_in_enum")]
    );
}

#[test]
fn a_field_declared_grounded_requires_sources_of_each_entity_it_holds() {
    let mut output = staff_answer(&[
        "Lund University".to_owned(),
        "Uppsala University".to_owned(),
    ]);
    output["advisors"][1]["sources"] = json!([]);
    assert_eq!(
        rejected(advisors(&output)),
        [("/advisors/1/sources".to_owned(), "missing_sources")]
    );
}

/// Read a page of an unverified directory.
#[derive(serde::Deserialize, ToolContract)]
#[tool_contract(output = Directory, effect = read_only, source_label = "directory",
                producer_revision = "directory-1", source_tier = community)]
struct ReadDirectory {
    #[tool_contract(max_len = 10)]
    page: String,
}

#[derive(Debug, serde::Serialize, tool_contract::ToolOutput)]
struct Directory {
    #[tool_output(max_items = 5)]
    advisors: Vec<tool_contract_tests::schools::Advisor>,
}

#[test]
fn an_entity_outside_a_grounded_field_may_have_no_sources() {
    // `Advisor` is not grounded itself: only a field that declares it so makes it so.
    let mut output = staff_answer(&["Lund University".to_owned()]);
    output["advisors"][0]["sources"] = json!([]);
    let call = ReadDirectory {
        page: "1".to_owned(),
    };
    let directory = call.validate_output(output.to_string().as_bytes()).unwrap();
    assert!(directory.advisors[0].sources.is_empty());
    assert!(
        advisors(&output).is_err(),
        "where it is grounded, it needs them"
    );
}

#[test]
fn the_output_schema_requires_at_least_one_source() {
    let schema = ListCandidateSchools::spec().output_schema();
    assert_eq!(schema["properties"]["sources"]["minItems"], 1);
    let tiers = &schema["properties"]["sources"]["items"]["properties"]["tier"]["enum"];
    assert_eq!(
        *tiers,
        json!([
            "official",
            "authoritative_database",
            "web_search",
            "community"
        ])
    );
}

#[test]
fn the_contract_declares_its_tier_in_its_spec_and_effect_revision() {
    assert_eq!(
        ListCandidateSchools::spec().source_tier(),
        Some(SourceTier::AuthoritativeDatabase)
    );
    assert_eq!(
        DiscoverAdvisors::spec().source_tier(),
        Some(SourceTier::Official)
    );
    // Same effect, another tier: another effect revision.
    assert_ne!(
        ListCandidateSchools::spec().revisions().effect,
        DiscoverAdvisors::spec().revisions().effect
    );
}

#[test]
fn a_placeholder_email_on_a_strip_field_becomes_null_and_the_rest_stands() {
    let output = staff_answer(&[
        "Lund University".to_owned(),
        "Uppsala University".to_owned(),
    ]);
    let call = DiscoverAdvisors {
        schools: vec![
            "Lund University".to_owned(),
            "Uppsala University".to_owned(),
        ],
    };
    let validated = call
        .validate_output_audited(
            output.to_string().as_bytes(),
            &tool_contract::vocabulary::ForbiddenKeys::DEFAULT,
        )
        .unwrap();
    let advisors = &validated.output.advisors;
    assert_eq!(advisors[0].email.as_deref(), Some("ada.byron@fysik.lu.se"));
    assert_eq!(advisors[1].email, None);
    assert_eq!(advisors[1].name, "Carl Svensson");
    assert_eq!(validated.stripped.len(), 1);
    assert_eq!(validated.stripped[0].path, "/advisors/1/email");
    assert_eq!(validated.stripped[0].detector, "placeholder_email");
}

#[test]
fn a_placeholder_email_on_a_reject_field_fails_validation() {
    let output = json!({
        "emails": ["ada@gmail.com", "ada@example.com"],
        "sources": [source("forum", "web_search", "ada@gmail.com", 0.5)],
    });
    assert_eq!(
        rejected(emails(&output)),
        [("/emails/1".to_owned(), "synthetic_value")]
    );
}

#[test]
fn a_custom_detector_is_applied_by_its_path() {
    let output = json!({
        "emails": ["info@fysik.lu.se"],
        "sources": [source("forum", "web_search", "info@fysik.lu.se", 0.5)],
    });
    let violations = emails(&output).unwrap_err();
    assert_eq!(
        violations.as_slice()[0].kind(),
        &tool_contract::ViolationKind::SyntheticValue {
            detector: "crate::schools::role_account"
        }
    );
}

#[tokio::test(start_paused = true)]
async fn a_stripped_value_is_recorded_in_the_audit_and_absent_for_the_model() {
    let web = Web::new();
    let dispatcher = dispatcher(&web);
    let discover = call(
        "c1",
        "discover_advisors",
        json!({ "schools": ["Lund University", "Uppsala University"] }),
    );
    let dispatch = run(&dispatcher, &discover).await;
    assert_eq!(dispatch.result.model.status(), Status::Succeeded);
    let model_json = String::from_utf8(dispatch.result.model.to_canonical_json()).unwrap();
    assert!(!model_json.contains("institution.edu"), "{model_json}");
    assert_eq!(
        redactions(&dispatch),
        [(
            "/advisors/1/email".to_owned(),
            "synthetic_stripped:placeholder_email".to_owned()
        )]
    );
    verified(&dispatcher, &discover, &dispatch);
}

#[tokio::test(start_paused = true)]
async fn a_rejected_synthetic_value_withholds_the_output_with_a_redaction() {
    let web = Web::new();
    web.answer_next(json!({
        "emails": ["ada@institution.edu"],
        "sources": [source("forum", "web_search", "ada@institution.edu", 0.5)],
    }));
    let dispatcher = dispatcher(&web);
    let search = call("c1", "search_email", json!({ "name": "Ada Byron" }));
    let dispatch = run(&dispatcher, &search).await;
    let error = dispatch.result.model.error().unwrap();
    assert_eq!(error.code(), ErrorCode::OutputContractViolation);
    let synthetic = ("/emails/0".to_owned(), "synthetic_value".to_owned());
    assert!(redactions(&dispatch).contains(&synthetic));
}

#[test]
fn the_placeholder_email_detector_knows_reserved_and_stand_in_domains() {
    let detector = Detector::PLACEHOLDER_EMAIL;
    for fake in [
        "jane@institution.edu",
        "jane@example.com",
        "jane@EXAMPLE.ORG",
        "jane@mail.example.net",
        "jane@test.com",
        "jane@lab.test",
        "jane@host.invalid",
        "jane@university.edu.",
        "Contact: <jane@yourdomain.com>",
    ] {
        assert!(detector.detects(fake), "{fake}");
    }
    for real in [
        "jane@gmail.com",
        "jane@fysik.lu.se",
        "jane@example.com.au",
        "jane@notexample.com",
        "no address here",
    ] {
        assert!(!detector.detects(real), "{real}");
    }
}

#[test]
fn a_grounding_source_built_in_code_obeys_the_same_rules() {
    let ok = GroundingSource::new("s-1", "Label", SourceTier::Community, None, "text", 0.0);
    assert!(ok.is_ok());
    let bad = GroundingSource::new(
        "-starts-with-dash",
        "",
        SourceTier::Community,
        Some("http://x.org"),
        "text",
        f64::NAN,
    )
    .unwrap_err();
    assert_eq!(
        found(&bad),
        [
            ("/id".to_owned(), "pattern_mismatch"),
            ("/label".to_owned(), "too_short"),
            ("/url".to_owned(), "invalid_format"),
            // Read by the derived reader from its JSON form, where NaN can only be `null`.
            ("/confidence".to_owned(), "wrong_type"),
        ]
    );
}
