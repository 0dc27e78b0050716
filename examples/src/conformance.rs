//! The fixtures MCP's conformance suite (`@modelcontextprotocol/conformance`) calls, served
//! by the library: its tools declared as contracts, run through the whole pipeline, some of
//! them as tasks; its resources, prompts and completions served beside them by an rmcp
//! handler of their own (`McpServer::with_handler`).
//!
//! Each fixture's name and behaviour is the suite's (its scenarios' descriptions say what
//! they call and expect); what the fixtures answer is whatever passes their contracts.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{
    CacheScope, CompleteRequestParams, CompleteResult, CompletionInfo, ContentBlock,
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, InputRequest, InputRequests,
    InputRequiredResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    PaginatedRequestParams, Prompt, PromptArgument, PromptMessage, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
    Role as PromptMessageRole, ServerCapabilities, ServerConfig, SubscribeRequestParams,
    UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use tool_contract::dispatch::{LogLevel, Progress};
use tool_contract::mcp::{Asking, McpServer, TaskSupport};
use tool_contract::prelude::*;

/// The principal every fixture call acts for: the suite's one client on loopback.
pub fn principal() -> Principal {
    Principal::new("conformance", "suite")
}

/// Say hello to someone.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Text, effect = read_only)]
pub struct Greet {
    /// Whom to greet.
    #[tool_contract(max_len = 200)]
    pub name: String,
}

/// Wait a number of seconds, then say so: the suite's long work, run as a task.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Text, effect = read_only)]
pub struct SlowCompute {
    /// How long to work, in seconds (0 answers at once).
    #[tool_contract(maximum = 600)]
    pub seconds: u32,
    /// A label the answer repeats.
    #[tool_contract(max_len = 200)]
    pub label: Option<String>,
}

/// Work a second, then fail as a tool does.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Text, effect = read_only)]
pub struct FailingJob {}

/// Fail inside the server rather than as a tool.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Text, effect = read_only)]
pub struct ProtocolErrorJob {}

/// Answer with a line of text.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Text, effect = read_only)]
pub struct TestSimpleText {}

/// Always fail, as a tool does.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Text, effect = read_only)]
pub struct TestErrorHandling {}

/// Work a tenth of a second, saying how far it got.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Text, effect = read_only)]
pub struct TestToolWithProgress {}

/// Ask the client's name, then greet it (SEP-2322 input requests, one round).
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Text, effect = read_only)]
pub struct TestInputRequiredResultElicitation {}

/// Ask the client's model a question, then repeat its answer.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Text, effect = read_only)]
pub struct TestInputRequiredResultSampling {}

/// Ask the client's roots, then name them.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Text, effect = read_only)]
pub struct TestInputRequiredResultListRoots {}

/// Ask for a confirmation under a sealed request state.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Text, effect = read_only)]
pub struct TestInputRequiredResultRequestState {}

/// Ask three things at once: a name, a model's greeting, the roots.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Text, effect = read_only)]
pub struct TestInputRequiredResultMultipleInputs {}

/// Ask a name, then a colour, in two rounds.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Text, effect = read_only)]
pub struct TestInputRequiredResultMultiRound {}

/// Ask for a confirmation whose sealed state the client may tamper with.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Text, effect = read_only)]
pub struct TestInputRequiredResultTamperedState {}

/// Ask only what the client declared it can answer.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Text, effect = read_only)]
pub struct TestInputRequiredResultCapabilities {}

/// Ask the client's model something: refused to a client that cannot be asked that.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Text, effect = read_only)]
pub struct TestMissingCapability {}

/// Ask, inside its task, whether to delete; deletes nothing, says what it was told.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Text, effect = read_only)]
pub struct ConfirmDelete {}

/// Ask two things at once inside its task.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Text, effect = read_only)]
pub struct MultiInput {}

/// Ask the client's name, then greet it from a task.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Text, effect = read_only)]
pub struct TestToolWithTask {}

/// Work longer than the server holds a call's event stream, then answer: the client comes
/// back for the answer (SEP-1699's polling).
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Text, effect = read_only)]
pub struct TestReconnection {}

/// Log three messages as it works (the handshake revisions' logging utility).
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Text, effect = read_only)]
pub struct TestToolWithLogging {}

/// Ask the client's model a question (the handshake revisions' mid-call sampling).
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Text, effect = read_only)]
pub struct TestSampling {
    /// What to ask the model.
    #[tool_contract(max_len = 2000)]
    pub prompt: String,
}

/// Ask the person at the client for a name and an email (mid-call elicitation).
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Text, effect = read_only)]
pub struct TestElicitation {
    /// What to tell the person.
    #[tool_contract(max_len = 2000)]
    pub message: String,
}

/// Ask for a form whose fields all have defaults (SEP-1034).
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Text, effect = read_only)]
pub struct TestElicitationSep1034Defaults {}

/// Ask for a form with every kind of enumeration (SEP-1330).
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Text, effect = read_only)]
pub struct TestElicitationSep1330Enums {}

/// Answer with an image.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Media, effect = read_only)]
pub struct TestImageContent {}

/// Answer with a sound.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Media, effect = read_only)]
pub struct TestAudioContent {}

/// Answer with an embedded resource.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Embedded, effect = read_only)]
pub struct TestEmbeddedResource {}

/// Answer with text, an image and an embedded resource.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Mixed, effect = read_only)]
pub struct TestMultipleContentTypes {}

/// Base64 data of a media type.
#[derive(Debug, serde::Serialize, ToolOutput)]
pub struct Media {
    #[tool_output(max_len = 100)]
    pub mime_type: String,
    #[tool_output(max_len = 10000)]
    pub base64: String,
}

/// A resource's text, as the model reads it.
#[derive(Debug, serde::Serialize, ToolOutput)]
pub struct Embedded {
    #[tool_output(max_len = 200)]
    pub uri: String,
    #[tool_output(max_len = 100)]
    pub mime_type: String,
    #[tool_output(max_len = 1000)]
    pub text: String,
}

/// A sentence, an image and a resource.
#[derive(Debug, serde::Serialize, ToolOutput)]
pub struct Mixed {
    #[tool_output(max_len = 1000)]
    pub text: String,
    pub image: Media,
    pub resource: Embedded,
}

/// A line of text, as the model reads it.
#[derive(Debug, serde::Serialize, ToolOutput)]
pub struct Text {
    #[tool_output(max_len = 1000)]
    pub text: String,
}

fn text(text: impl Into<String>) -> Result<Text, ToolFailure> {
    Ok(Text { text: text.into() })
}

async fn greet(input: Greet) -> Result<Text, ToolFailure> {
    text(format!("Hello, {}!", input.name))
}

async fn slow_compute(input: SlowCompute, mut cx: HandlerContext) -> Result<Text, ToolFailure> {
    tokio::select! {
        () = tokio::time::sleep(Duration::from_secs(input.seconds.into())) => {}
        () = cx.cancel_requested() => {
            return Err(ToolFailure::new(FailureKind::Failed, "cancelled"));
        }
    }
    let label = input.label.unwrap_or_default();
    text(format!("computed {label} in {}s", input.seconds))
}

async fn failing_job(_: FailingJob) -> Result<Text, ToolFailure> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    Err(ToolFailure::new(FailureKind::Failed, "the job failed"))
}

async fn protocol_error_job(_: ProtocolErrorJob) -> Result<Text, ToolFailure> {
    panic!("the job crashed the worker");
}

async fn test_simple_text(_: TestSimpleText) -> Result<Text, ToolFailure> {
    text("This is a simple text response for testing.")
}

async fn test_error_handling(_: TestErrorHandling) -> Result<Text, ToolFailure> {
    Err(ToolFailure::new(
        FailureKind::Failed,
        "This tool intentionally returns an error for testing",
    ))
}

async fn test_tool_with_progress(
    _: TestToolWithProgress,
    cx: HandlerContext,
) -> Result<Text, ToolFailure> {
    for done in [0.0, 50.0, 100.0] {
        if done > 0.0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        cx.report_progress(Progress::of(done, 100.0));
    }
    text("Progress reported: 0, 50 and 100 of 100.")
}

/// The client's answer under `key` as compact JSON, or `missing`.
fn answered(cx: &HandlerContext, key: &str) -> String {
    cx.client_answer(key)
        .map_or_else(|| "missing".to_owned(), serde_json::Value::to_string)
}

/// A string field of a form's answer (`content.<field>` of an `ElicitResult`).
fn form_field(cx: &HandlerContext, key: &str, field: &str) -> Result<String, ToolFailure> {
    let value = cx
        .client_answer(key)
        .and_then(|answer| answer.get("content")?.get(field));
    value
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| ToolFailure::new(FailureKind::Failed, format!("no {field} in {key}")))
}

async fn greet_the_client(
    _: TestInputRequiredResultElicitation,
    cx: HandlerContext,
) -> Result<Text, ToolFailure> {
    text(format!("Hello, {}!", form_field(&cx, "user_name", "name")?))
}

async fn repeat_the_model(
    _: TestInputRequiredResultSampling,
    cx: HandlerContext,
) -> Result<Text, ToolFailure> {
    let said = cx
        .client_answer("capital_question")
        .and_then(|answer| answer.get("content")?.get("text")?.as_str());
    text(format!("The model said: {}", said.unwrap_or("nothing")))
}

async fn name_the_roots(
    _: TestInputRequiredResultListRoots,
    cx: HandlerContext,
) -> Result<Text, ToolFailure> {
    text(format!(
        "The client's roots: {}",
        answered(&cx, "client_roots")
    ))
}

async fn confirmed_under_state(
    _: TestInputRequiredResultRequestState,
    cx: HandlerContext,
) -> Result<Text, ToolFailure> {
    // The library opened the sealed state and checked it against this call before this ran.
    text(format!("state-ok: confirmed {}", answered(&cx, "confirm")))
}

async fn all_three(
    _: TestInputRequiredResultMultipleInputs,
    cx: HandlerContext,
) -> Result<Text, ToolFailure> {
    text(format!(
        "Hello, {}; the model said {}; the roots are {}",
        form_field(&cx, "user_name", "name")?,
        answered(&cx, "greeting"),
        answered(&cx, "client_roots")
    ))
}

async fn two_rounds(
    _: TestInputRequiredResultMultiRound,
    cx: HandlerContext,
) -> Result<Text, ToolFailure> {
    text(format!(
        "{} likes {}",
        form_field(&cx, "step1", "name")?,
        form_field(&cx, "step2", "color")?
    ))
}

async fn confirmed_untampered(
    _: TestInputRequiredResultTamperedState,
    cx: HandlerContext,
) -> Result<Text, ToolFailure> {
    text(format!("state-ok: confirmed {}", answered(&cx, "confirm")))
}

async fn what_the_client_could_answer(
    _: TestInputRequiredResultCapabilities,
    cx: HandlerContext,
) -> Result<Text, ToolFailure> {
    let given = ["user_name", "greeting", "client_roots"]
        .into_iter()
        .filter(|key| cx.client_answer(key).is_some())
        .collect::<Vec<_>>();
    text(format!("answered: {}", given.join(", ")))
}

async fn sampled(_: TestMissingCapability, cx: HandlerContext) -> Result<Text, ToolFailure> {
    text(format!("The model said {}", answered(&cx, "completion")))
}

async fn confirm_delete(_: ConfirmDelete, cx: HandlerContext) -> Result<Text, ToolFailure> {
    text(format!(
        "Told {}; nothing was deleted",
        answered(&cx, "confirm")
    ))
}

async fn multi_input(_: MultiInput, cx: HandlerContext) -> Result<Text, ToolFailure> {
    text(format!(
        "first {}, second {}",
        answered(&cx, "first"),
        answered(&cx, "second")
    ))
}

async fn greet_from_a_task(_: TestToolWithTask, cx: HandlerContext) -> Result<Text, ToolFailure> {
    text(format!(
        "Hello from a task, {}!",
        form_field(&cx, "user_name", "name")?
    ))
}

/// How long the fixture server keeps a 2025-11-25 call's event stream open.
const EVENT_STREAM_HOLD: Duration = Duration::from_millis(500);

async fn test_reconnection(_: TestReconnection) -> Result<Text, ToolFailure> {
    tokio::time::sleep(EVENT_STREAM_HOLD * 3).await;
    text("Reconnection test completed successfully")
}

async fn test_tool_with_logging(
    _: TestToolWithLogging,
    cx: HandlerContext,
) -> Result<Text, ToolFailure> {
    cx.log(LogLevel::Info, "Tool execution started");
    tokio::time::sleep(Duration::from_millis(50)).await;
    cx.log(LogLevel::Info, "Tool processing data");
    tokio::time::sleep(Duration::from_millis(50)).await;
    cx.log(LogLevel::Info, "Tool execution completed");
    text("Logged three messages while it ran.")
}

async fn ask_the_model(input: TestSampling, cx: HandlerContext) -> Result<Text, ToolFailure> {
    let said = cx
        .client_answer("sampling")
        .and_then(|answer| answer.get("content")?.get("text")?.as_str());
    text(format!(
        "LLM response to {:?}: {}",
        input.prompt,
        said.unwrap_or("nothing")
    ))
}

async fn ask_the_person(input: TestElicitation, cx: HandlerContext) -> Result<Text, ToolFailure> {
    text(format!(
        "User response to {:?}: {}",
        input.message,
        answered(&cx, "user_information")
    ))
}

async fn defaults_answered(
    _: TestElicitationSep1034Defaults,
    cx: HandlerContext,
) -> Result<Text, ToolFailure> {
    text(format!(
        "Elicitation completed: {}",
        answered(&cx, "defaults")
    ))
}

async fn enums_answered(
    _: TestElicitationSep1330Enums,
    cx: HandlerContext,
) -> Result<Text, ToolFailure> {
    text(format!("Elicitation completed: {}", answered(&cx, "enums")))
}

/// A form of `properties`, none required.
fn form_of(message: &str, properties: serde_json::Value, required: &[&str]) -> serde_json::Value {
    serde_json::json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": { "type": "object", "properties": properties, "required": required },
        },
    })
}

/// The suite's form of a default for each primitive type (SEP-1034).
fn defaults_form() -> serde_json::Value {
    let properties = serde_json::json!({
        "name": { "type": "string", "description": "User name", "default": "John Doe" },
        "age": { "type": "integer", "description": "User age", "default": 30 },
        "score": { "type": "number", "description": "User score", "default": 95.5 },
        "status": {
            "type": "string", "description": "User status",
            "enum": ["active", "inactive", "pending"], "default": "active"
        },
        "verified": { "type": "boolean", "description": "Verification status", "default": true },
    });
    form_of(
        "Please review your details; each has a default",
        properties,
        &[],
    )
}

/// The suite's form of the five kinds of enumeration (SEP-1330).
fn enums_form() -> serde_json::Value {
    let properties = serde_json::json!({
        "untitledSingle": { "type": "string", "enum": ["option1", "option2", "option3"] },
        "titledSingle": {
            "type": "string",
            "oneOf": [
                { "const": "value1", "title": "First Option" },
                { "const": "value2", "title": "Second Option" },
                { "const": "value3", "title": "Third Option" }
            ]
        },
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"]
        },
        "untitledMulti": {
            "type": "array",
            "items": { "type": "string", "enum": ["option1", "option2", "option3"] }
        },
        "titledMulti": {
            "type": "array",
            "items": {
                "anyOf": [
                    { "const": "value1", "title": "First Choice" },
                    { "const": "value2", "title": "Second Choice" },
                    { "const": "value3", "title": "Third Choice" }
                ]
            }
        },
    });
    form_of("Choose from each list", properties, &[])
}

/// A form asking for one field of `kind` (`string`, `boolean`).
fn form(message: &str, field: &str, kind: &str) -> serde_json::Value {
    serde_json::json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": { field: { "type": kind } },
                "required": [field],
            },
        },
    })
}

/// A question for the client's model.
fn sampling(question: &str, max_tokens: u32) -> serde_json::Value {
    serde_json::json!({
        "method": "sampling/createMessage",
        "params": {
            "messages": [{ "role": "user", "content": { "type": "text", "text": question } }],
            "maxTokens": max_tokens,
        },
    })
}

fn roots() -> serde_json::Value {
    serde_json::json!({ "method": "roots/list", "params": {} })
}

/// What each fixture asks the client, given what it answered so far (the suite's scenarios
/// name the keys and the requests).
fn questions(asking: &Asking<'_>) -> InputRequests {
    let mut asked = InputRequests::new();
    let mut ask = |key: &str, request: serde_json::Value| {
        if asking.answered(key) {
            return;
        }
        if let Ok(request) = serde_json::from_value::<InputRequest>(request) {
            asked.insert(key.to_owned(), request);
        }
    };
    let name = || form("What is your name?", "name", "string");
    match (asking.tool().name(), asking.in_task()) {
        ("test_input_required_result_elicitation" | "test_tool_with_task", false) => {
            ask("user_name", name());
        }
        ("test_input_required_result_sampling", false) => {
            ask(
                "capital_question",
                sampling("What is the capital of France?", 100),
            );
        }
        ("test_input_required_result_list_roots", false) => ask("client_roots", roots()),
        (
            "test_input_required_result_request_state"
            | "test_input_required_result_tampered_state",
            false,
        ) => {
            ask("confirm", form("Please confirm", "ok", "boolean"));
        }
        ("test_input_required_result_multiple_inputs", false) => {
            ask("user_name", name());
            ask("greeting", sampling("Generate a greeting", 50));
            ask("client_roots", roots());
        }
        ("test_input_required_result_multi_round", false) => {
            ask(
                "step1",
                form("Step 1: What is your name?", "name", "string"),
            );
            if asking.answered("step1") {
                ask(
                    "step2",
                    form("Step 2: What is your favorite color?", "color", "string"),
                );
            }
        }
        ("test_input_required_result_capabilities", false) => {
            let open = [
                ("user_name", name()),
                ("greeting", sampling("Generate a greeting", 50)),
                ("client_roots", roots()),
            ];
            for (key, request) in open {
                let can = serde_json::from_value::<InputRequest>(request.clone())
                    .is_ok_and(|request| asking.client_can_answer(&request));
                if can {
                    ask(key, request);
                }
            }
        }
        // The handshake revisions' fixtures, asked mid-call. A rule sees no arguments, so the
        // question and the message are the fixtures' own; their handlers repeat the
        // arguments beside the answer.
        ("test_sampling", false) => ask("sampling", sampling("Answer the user's prompt", 100)),
        ("test_elicitation", false) => {
            let properties = serde_json::json!({
                "username": { "type": "string", "description": "User's response" },
                "email": { "type": "string", "description": "User's email address" },
            });
            let form = form_of(
                "Please provide your information",
                properties,
                &["username", "email"],
            );
            ask("user_information", form);
        }
        ("test_elicitation_sep1034_defaults", false) => ask("defaults", defaults_form()),
        ("test_elicitation_sep1330_enums", false) => ask("enums", enums_form()),
        ("test_missing_capability", false) => {
            ask("completion", sampling("Say something", 20));
        }
        ("confirm_delete", true) => ask("confirm", form("Delete the file?", "confirm", "boolean")),
        ("multi_input", true) => {
            ask("first", form("The first answer?", "value", "string"));
            ask("second", form("The second answer?", "value", "string"));
        }
        _ => {}
    }
    asked
}

fn red_pixel() -> Media {
    Media {
        mime_type: "image/png".to_owned(),
        base64: RED_PIXEL_PNG.to_owned(),
    }
}

async fn test_image_content(_: TestImageContent) -> Result<Media, ToolFailure> {
    Ok(red_pixel())
}

async fn test_audio_content(_: TestAudioContent) -> Result<Media, ToolFailure> {
    Ok(Media {
        mime_type: "audio/wav".to_owned(),
        base64: SILENT_WAV.to_owned(),
    })
}

async fn test_embedded_resource(_: TestEmbeddedResource) -> Result<Embedded, ToolFailure> {
    Ok(Embedded {
        uri: "test://embedded-resource".to_owned(),
        mime_type: "text/plain".to_owned(),
        text: "This is an embedded resource content.".to_owned(),
    })
}

async fn test_multiple_content_types(_: TestMultipleContentTypes) -> Result<Mixed, ToolFailure> {
    Ok(Mixed {
        text: "Multiple content types test:".to_owned(),
        image: red_pixel(),
        resource: Embedded {
            uri: "test://mixed-content-resource".to_owned(),
            mime_type: "application/json".to_owned(),
            text: r#"{"test":"data","value":123}"#.to_owned(),
        },
    })
}

/// The registry of the fixture tools.
pub fn registry() -> Registry {
    registry![
        Greet,
        SlowCompute,
        FailingJob,
        ProtocolErrorJob,
        TestSimpleText,
        TestErrorHandling,
        TestImageContent,
        TestAudioContent,
        TestEmbeddedResource,
        TestMultipleContentTypes,
        TestToolWithProgress,
        TestInputRequiredResultElicitation,
        TestInputRequiredResultSampling,
        TestInputRequiredResultListRoots,
        TestInputRequiredResultRequestState,
        TestInputRequiredResultMultipleInputs,
        TestInputRequiredResultMultiRound,
        TestInputRequiredResultTamperedState,
        TestInputRequiredResultCapabilities,
        TestMissingCapability,
        ConfirmDelete,
        MultiInput,
        TestToolWithTask,
        TestToolWithLogging,
        TestReconnection,
        TestSampling,
        TestElicitation,
        TestElicitationSep1034Defaults,
        TestElicitationSep1330Enums
    ]
}

/// The fixture tools' dispatcher, for development keys and an in-memory store.
///
/// # Errors
///
/// The builder's, if a handler is missing.
pub fn dispatcher() -> Result<Dispatcher, tool_contract::dispatch::BuildErrors> {
    Dispatcher::for_development(registry())
        .handler(greet)
        .handler(slow_compute)
        .handler(failing_job)
        .handler(protocol_error_job)
        .handler(test_simple_text)
        .handler(test_error_handling)
        .handler(test_image_content)
        .handler(test_audio_content)
        .handler(test_embedded_resource)
        .handler(test_multiple_content_types)
        .handler(test_tool_with_progress)
        .handler(greet_the_client)
        .handler(repeat_the_model)
        .handler(name_the_roots)
        .handler(confirmed_under_state)
        .handler(all_three)
        .handler(two_rounds)
        .handler(confirmed_untampered)
        .handler(what_the_client_could_answer)
        .handler(sampled)
        .handler(confirm_delete)
        .handler(multi_input)
        .handler(greet_from_a_task)
        .handler(test_tool_with_logging)
        .handler(test_reconnection)
        .handler(ask_the_model)
        .handler(ask_the_person)
        .handler(defaults_answered)
        .handler(enums_answered)
        .build()
}

/// Which fixture tools are tasks, as the suite's scenarios register them.
fn task_support(name: &str) -> TaskSupport {
    match name {
        "failing_job" | "test_tool_with_task" => TaskSupport::Required,
        "slow_compute" | "protocol_error_job" | "confirm_delete" | "multi_input" => {
            TaskSupport::Optional
        }
        _ => TaskSupport::Forbidden,
    }
}

/// The fixture server: the tools through `dispatcher`, the resources and prompts beside them.
pub fn server(dispatcher: Arc<Dispatcher>) -> McpServer {
    McpServer::new(dispatcher, principal())
        .with_server_info("tool-contract-conformance", env!("CARGO_PKG_VERSION"))
        .with_tasks(|spec| task_support(spec.name()))
        .with_content(|spec, data| shown(spec.name(), data))
        .with_questions(questions)
        .with_handler(Beside::default())
        .with_event_stream_hold(EVENT_STREAM_HOLD)
}

/// How the client is shown a fixture's verified data: text as text, media and resources
/// as their own blocks (as the suite expects them).
fn shown(tool: &str, data: &serde_json::Value) -> Option<Vec<ContentBlock>> {
    let field =
        |value: &serde_json::Value, name: &str| value.get(name)?.as_str().map(str::to_owned);
    let media =
        |value: &serde_json::Value| Some((field(value, "base64")?, field(value, "mime_type")?));
    let embedded = |value: &serde_json::Value| {
        let contents = ResourceContents::text(field(value, "text")?, field(value, "uri")?)
            .with_mime_type(field(value, "mime_type")?);
        Some(ContentBlock::resource(contents))
    };
    match tool {
        "test_image_content" => {
            let (base64, mime_type) = media(data)?;
            Some(vec![ContentBlock::image(base64, mime_type)])
        }
        "test_audio_content" => {
            let (base64, mime_type) = media(data)?;
            Some(vec![ContentBlock::audio(base64, mime_type)])
        }
        "test_embedded_resource" => Some(vec![embedded(data)?]),
        "test_multiple_content_types" => {
            let (base64, mime_type) = media(data.get("image")?)?;
            Some(vec![
                ContentBlock::text(field(data, "text")?),
                ContentBlock::image(base64, mime_type),
                embedded(data.get("resource")?)?,
            ])
        }
        _ => Some(vec![ContentBlock::text(field(data, "text")?)]),
    }
}

/// A WAV file of one silent 8 kHz 8-bit mono sample, base64 (the suite asks for "a minimal
/// test audio file").
pub const SILENT_WAV: &str = "UklGRiUAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQEAAACA";

/// A 1×1 red PNG, base64 (the suite asks for "a minimal test image").
pub const RED_PIXEL_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/// How long a list or a resource may be cached, and by whom: the fixtures never change.
const CACHED_MS: u64 = 60_000;

/// The suite's resources, prompts and completions, and the resources a client subscribed to
/// (on the handshake revisions: 2026-07-28 has `subscriptions/listen` instead).
#[derive(Debug, Clone, Default)]
pub struct Beside {
    subscribed: Arc<Mutex<BTreeSet<String>>>,
}

impl Beside {
    fn subscriptions(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.subscribed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn resources() -> Vec<Resource> {
        let described = |uri: &str, name: &str, mime: &str, description: &str| {
            Resource::new(uri, name)
                .with_description(description)
                .with_mime_type(mime)
        };
        vec![
            described(
                "test://static-text",
                "static-text",
                "text/plain",
                "A static text resource",
            ),
            described(
                "test://static-binary",
                "static-binary",
                "image/png",
                "A static binary resource: a 1x1 PNG",
            ),
            described(
                "test://watched-resource",
                "watched-resource",
                "text/plain",
                "A resource a client may subscribe to",
            ),
        ]
    }

    fn prompts() -> Vec<Prompt> {
        let required = |name: &str, description: &str| {
            let mut argument = PromptArgument::new(name);
            argument.description = Some(description.to_owned());
            argument.required = Some(true);
            argument
        };
        vec![
            Prompt::new(
                "test_simple_prompt",
                Some("A prompt without arguments"),
                None,
            ),
            Prompt::new(
                "test_prompt_with_arguments",
                Some("A prompt with two arguments"),
                Some(vec![
                    required("arg1", "First test argument"),
                    required("arg2", "Second test argument"),
                ]),
            ),
            Prompt::new(
                "test_prompt_with_embedded_resource",
                Some("A prompt embedding a resource"),
                Some(vec![required(
                    "resourceUri",
                    "URI of the resource to embed",
                )]),
            ),
            Prompt::new(
                "test_prompt_with_image",
                Some("A prompt with an image"),
                None,
            ),
            Prompt::new(
                "test_input_required_result_prompt",
                Some("A prompt that asks the client for context first"),
                None,
            ),
        ]
    }
}

fn argument(request: &GetPromptRequestParams, name: &str) -> Result<String, ErrorData> {
    let value = request
        .arguments
        .as_ref()
        .and_then(|arguments| arguments.get(name));
    value
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| ErrorData::invalid_params(format!("the argument {name} is required"), None))
}

impl ServerHandler for Beside {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_prompts()
                .enable_completions()
                .build(),
        )
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(Self::resources())
            .with_ttl_ms(CACHED_MS)
            .with_cache_scope(CacheScope::Public))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let template = ResourceTemplate::new("test://template/{id}/data", "template-data")
            .with_description("Data for an id")
            .with_mime_type("application/json");
        Ok(ListResourceTemplatesResult::with_all_items(vec![template])
            .with_ttl_ms(CACHED_MS)
            .with_cache_scope(CacheScope::Public))
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions().insert(request.uri);
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions().remove(&request.uri);
        Ok(())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri.as_str();
        let contents = match uri {
            "test://static-text" => {
                ResourceContents::text("This is the content of the static text resource.", uri)
                    .with_mime_type("text/plain")
            }
            "test://static-binary" => {
                ResourceContents::blob(RED_PIXEL_PNG, uri).with_mime_type("image/png")
            }
            "test://watched-resource" => {
                ResourceContents::text("Watched.", uri).with_mime_type("text/plain")
            }
            _ => match uri
                .strip_prefix("test://template/")
                .and_then(|rest| rest.strip_suffix("/data"))
            {
                Some(id) if !id.is_empty() && !id.contains('/') => {
                    let data = serde_json::json!({
                        "id": id, "templateTest": true, "data": format!("Data for ID: {id}")
                    });
                    ResourceContents::text(data.to_string(), uri).with_mime_type("application/json")
                }
                _ => {
                    return Err(ErrorData::resource_not_found(
                        "Resource not found",
                        Some(serde_json::json!({ "uri": uri })),
                    ));
                }
            },
        };
        Ok(ReadResourceResult::new(vec![contents])
            .with_ttl_ms(CACHED_MS)
            .with_cache_scope(CacheScope::Public)
            .into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(Self::prompts())
            .with_ttl_ms(CACHED_MS)
            .with_cache_scope(CacheScope::Public))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let user = || PromptMessageRole::User;
        let messages = match request.name.as_str() {
            "test_simple_prompt" => vec![PromptMessage::new_text(
                user(),
                "This is a simple prompt for testing.",
            )],
            "test_prompt_with_arguments" => {
                let (first, second) = (argument(&request, "arg1")?, argument(&request, "arg2")?);
                vec![PromptMessage::new_text(
                    user(),
                    format!("Prompt with arguments: arg1='{first}', arg2='{second}'"),
                )]
            }
            "test_prompt_with_embedded_resource" => {
                let uri = argument(&request, "resourceUri")?;
                let embedded =
                    ResourceContents::text("Embedded resource content for testing.", uri)
                        .with_mime_type("text/plain");
                vec![
                    PromptMessage::new(user(), ContentBlock::resource(embedded)),
                    PromptMessage::new_text(user(), "Please process the embedded resource above."),
                ]
            }
            "test_prompt_with_image" => vec![
                PromptMessage::new(user(), ContentBlock::image(RED_PIXEL_PNG, "image/png")),
                PromptMessage::new_text(user(), "Please analyze the image above."),
            ],
            "test_input_required_result_prompt" => {
                let answered = request
                    .input_responses
                    .as_ref()
                    .and_then(|responses| responses.get("context"));
                let Some(answered) = answered else {
                    let asked = serde_json::json!({
                        "method": "elicitation/create",
                        "params": {
                            "mode": "form",
                            "message": "What context should the prompt use?",
                            "requestedSchema": {
                                "type": "object",
                                "properties": { "context": { "type": "string" } },
                                "required": ["context"],
                            },
                        },
                    });
                    let asked: InputRequest = serde_json::from_value(asked)
                        .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
                    let mut requests = InputRequests::new();
                    requests.insert("context".to_owned(), asked);
                    return Ok(InputRequiredResult::new(Some(requests), None).into());
                };
                let context = serde_json::to_string(answered)
                    .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
                vec![PromptMessage::new_text(
                    user(),
                    format!("A prompt written with the client's context: {context}"),
                )]
            }
            other => {
                return Err(ErrorData::invalid_params(
                    format!("no prompt named {other}"),
                    None,
                ));
            }
        };
        Ok(GetPromptResult::new(messages).into())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        const CANDIDATES: [&str; 4] = ["paris", "park", "party", "hello"];
        let typed = request.argument.value.as_str();
        let values = CANDIDATES
            .iter()
            .filter(|candidate| candidate.starts_with(typed))
            .map(|candidate| (*candidate).to_owned())
            .collect();
        let completion =
            CompletionInfo::new(values).map_err(|error| ErrorData::internal_error(error, None))?;
        Ok(CompleteResult::new(completion))
    }
}
