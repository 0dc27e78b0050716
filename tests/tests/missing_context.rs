//! Issue 5, point 4: a call whose context is incomplete is redirected to the step that
//! fills it, through the gates of the dispatcher.

use serde_json::json;
use tool_contract::results::{Recovery, Trust};
use tool_contract::{ErrorCode, Status};
use tool_contract_tests::schools::{Web, builder, call, dispatcher, run, verified};

#[tokio::test(start_paused = true)]
async fn advisor_discovery_with_no_candidate_schools_is_sent_to_the_register_first() {
    let web = Web::new();
    let dispatcher = dispatcher(&web);
    let premature = call("c1", "discover_advisors", json!({ "schools": [] }));
    let dispatch = run(&dispatcher, &premature).await;
    let error = dispatch.result.model.error().expect("refused");
    assert_eq!(error.code(), ErrorCode::PrerequisiteRequired);
    assert_eq!(error.recovery(), Recovery::CallTool);
    assert_eq!(error.next_tool(), Some("list_candidate_schools"));
    assert_eq!(
        dispatch.result.model.provenance().trust,
        Trust::TrustedControl
    );
    assert_eq!(web.requests(), 0, "no source was read");
    verified(&dispatcher, &premature, &dispatch);
}

#[tokio::test(start_paused = true)]
async fn following_the_redirect_fills_the_context_and_the_call_then_runs() {
    let web = Web::new();
    let dispatcher = dispatcher(&web);
    let premature = call("c1", "discover_advisors", json!({ "schools": [] }));
    let refused = run(&dispatcher, &premature).await;
    let next_tool = refused.result.model.error().unwrap().next_tool().unwrap();

    let fill = call("c2", next_tool, json!({ "field": "optics" }));
    let filled = run(&dispatcher, &fill).await;
    assert_eq!(filled.result.model.status(), Status::Succeeded);
    let schools = filled.result.model.data().unwrap()["names"].clone();
    assert_eq!(schools, json!(["Lund University", "Uppsala University"]));

    let discover = call("c3", "discover_advisors", json!({ "schools": schools }));
    let found = run(&dispatcher, &discover).await;
    assert_eq!(found.result.model.status(), Status::Succeeded);
    let advisors = found.result.model.data().unwrap()["advisors"].clone();
    assert_eq!(advisors[0]["name"], "Ada Byron");
    assert_eq!(advisors[0]["sources"][0]["tier"], "official");
    assert_eq!(web.requests(), 2);
}

#[tokio::test(start_paused = true)]
async fn without_the_gate_the_incomplete_call_would_reach_the_source() {
    // The control: the same call through a dispatcher with no gate runs the handler.
    let web = Web::new();
    let dispatcher = builder(&web).build().unwrap();
    let premature = call("c1", "discover_advisors", json!({ "schools": [] }));
    let dispatch = run(&dispatcher, &premature).await;
    assert_eq!(dispatch.result.model.status(), Status::Succeeded);
    assert_eq!(web.requests(), 1);
}
