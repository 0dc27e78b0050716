//! What a tool asks the client before it runs (`McpServer::with_questions`, SEP-2322): on
//! 2026-07-28 the call answers `input_required` with the open requests and a sealed state of
//! the answers so far, and runs once everything is answered, its handler reading each answer;
//! a state edited or sent back for other arguments is refused and nothing runs; a request the
//! client cannot answer refuses the call with the capability it needs; a session client is
//! asked mid-call; inside a task, the task waits until every request is answered.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig,
    ElicitRequestParams, ElicitResult, ElicitationAction, GetTaskParams, Implementation,
    InputRequest, InputRequests, InputRequiredResult, InputResponses, TaskPayload, TaskStatus,
    UpdateTaskParams,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceError};
use serde_json::{Value, json};
use tool_contract::dispatch::{Dispatcher, HandlerContext};
use tool_contract::mcp::{Asking, McpServer, TaskSupport};
use tool_contract::{Principal, ToolContract, ToolFailure, ToolOutput};
use tool_contract_tests::mcp::{discover, handshake};
use tool_contract_tests::task_client::until;

/// Greet someone by the name the client gives.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Said, effect = read_only)]
struct Greet {
    #[tool_contract(max_len = 20)]
    salutation: String,
}

/// Paint something in the colour the client picks, once it said its name.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Said, effect = read_only)]
struct Paint {}

/// Ask the client's model for a summary.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Said, effect = read_only)]
struct Summarise {}

/// Export, once the client answered two things inside the task.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Said, effect = read_only)]
struct Export {}

/// Send a note to whom the client names; a person approves it first.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Said, effect = idempotent_write, approval = by_caller,
                operation = [text])]
struct SendNote {
    #[tool_contract(max_len = 100)]
    text: String,
}

#[derive(Debug, serde::Serialize, ToolOutput)]
struct Said {
    #[tool_output(max_len = 500)]
    said: String,
}

fn form(message: &str, field: &str) -> InputRequest {
    serde_json::from_value(json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": { field: { "type": "string" } },
                "required": [field],
            },
        },
    }))
    .unwrap()
}

fn questions(asking: &Asking<'_>) -> InputRequests {
    let mut asked = InputRequests::new();
    let mut ask = |key: &str, request: InputRequest| {
        if !asking.answered(key) {
            asked.insert(key.to_owned(), request);
        }
    };
    match (asking.tool().name(), asking.in_task()) {
        ("greet", false) => ask("name", form("Your name?", "name")),
        ("send_note", false) => ask("to", form("To whom?", "to")),
        ("paint", false) => {
            ask("name", form("Your name?", "name"));
            if asking.answered("name") {
                ask("colour", form("Which colour?", "colour"));
            }
        }
        ("summarise", false) => ask(
            "summary",
            serde_json::from_value(json!({
                "method": "sampling/createMessage",
                "params": {
                    "messages": [{ "role": "user", "content": { "type": "text", "text": "Sum up" } }],
                    "maxTokens": 50,
                },
            }))
            .unwrap(),
        ),
        // Inside the task too, the rule asks only what the client declared it can answer.
        ("export", true) => {
            for (key, question) in [("format", "Which format?"), ("folder", "Which folder?")] {
                let request = form(question, key);
                if asking.client_can_answer(&request) {
                    ask(key, request);
                }
            }
        }
        _ => {}
    }
    asked
}

/// A form answer's `content.<field>`.
fn field(cx: &HandlerContext, key: &str, field: &str) -> String {
    let value = cx
        .client_answer(key)
        .and_then(|answer| answer["content"][field].as_str());
    value.unwrap_or("?").to_owned()
}

/// The server, and how many times a handler ran.
fn server() -> (McpServer, Arc<AtomicU32>) {
    let runs = Arc::new(AtomicU32::new(0));
    let (greets, paints, exports, notes) = (runs.clone(), runs.clone(), runs.clone(), runs.clone());
    let dispatcher = Dispatcher::for_development(tool_contract::registry![
        Greet, Paint, Summarise, Export, SendNote
    ])
    .handler(move |input: SendNote, cx: HandlerContext| {
        notes.fetch_add(1, Ordering::Relaxed);
        let said = format!("sent {:?} to {}", input.text, field(&cx, "to", "to"));
        async move { Ok::<_, ToolFailure>(Said { said }) }
    })
    .handler(move |input: Greet, cx: HandlerContext| {
        greets.fetch_add(1, Ordering::Relaxed);
        let mut said = format!("{}, {}!", input.salutation, field(&cx, "name", "name"));
        if cx.client_answer("extra").is_some() {
            said.push_str(" (and an answer to nothing asked)");
        }
        async move { Ok::<_, ToolFailure>(Said { said }) }
    })
    .handler(move |_: Paint, cx: HandlerContext| {
        paints.fetch_add(1, Ordering::Relaxed);
        let said = format!(
            "{} paints it {}",
            field(&cx, "name", "name"),
            field(&cx, "colour", "colour")
        );
        async move { Ok::<_, ToolFailure>(Said { said }) }
    })
    .handler(|_: Summarise| async {
        Ok::<_, ToolFailure>(Said {
            said: "summed up".to_owned(),
        })
    })
    .handler(move |_: Export, cx: HandlerContext| {
        exports.fetch_add(1, Ordering::Relaxed);
        let said = format!(
            "{} into {}",
            field(&cx, "format", "format"),
            field(&cx, "folder", "folder")
        );
        async move { Ok::<_, ToolFailure>(Said { said }) }
    })
    .build()
    .unwrap();
    let server = McpServer::new(Arc::new(dispatcher), Principal::new("acme", "ana"))
        .with_questions(questions)
        .with_tasks(|spec| match spec.name() {
            "export" => TaskSupport::Optional,
            _ => TaskSupport::Forbidden,
        });
    (server, runs)
}

/// A client that declares form elicitation (and the tasks extension), answering every form
/// asked mid-call with `Ana` in each field.
#[derive(Clone)]
struct Client;

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let capabilities = ClientCapabilities::builder()
            .enable_elicitation()
            .enable_tasks()
            .build();
        ClientConfig::new(capabilities, Implementation::new("questions", "1.0.0"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let ElicitRequestParams::FormElicitationParams {
            requested_schema, ..
        } = request
        else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        let schema = serde_json::to_value(requested_schema).unwrap();
        let fields = schema["properties"].as_object().unwrap();
        let content: serde_json::Map<String, Value> = fields
            .keys()
            .map(|field| (field.clone(), json!("Ana")))
            .collect();
        let mut answer = ElicitResult::new(ElicitationAction::Accept);
        answer.content = Some(Value::Object(content));
        Ok(answer)
    }
}

type Session = RunningService<RoleClient, Client>;

fn call(tool: &str, arguments: Value) -> CallToolRequestParams {
    let Value::Object(arguments) = arguments else {
        panic!("an object");
    };
    CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments)
}

fn greet(salutation: &str) -> CallToolRequestParams {
    call("greet", json!({ "salutation": salutation }))
}

async fn asked(client: &Session, call: &CallToolRequestParams) -> InputRequiredResult {
    match client
        .call_tool_once(call.clone())
        .await
        .expect("tools/call")
    {
        CallToolResponse::InputRequired(asked) => asked,
        other => panic!("expected input_required, got {other:?}"),
    }
}

/// A form's answer: `field` is `value`.
fn accepted(field: &str, value: &str) -> Value {
    let mut answer = ElicitResult::new(ElicitationAction::Accept);
    answer.content = Some(json!({ field: value }));
    serde_json::to_value(answer).unwrap()
}

/// `call` sent again with `state` and `responses`.
fn again(
    call: &CallToolRequestParams,
    state: &str,
    responses: &[(&str, Value)],
) -> CallToolRequestParams {
    let mut retry = call.clone();
    retry.request_state = Some(state.to_owned());
    retry.input_responses = Some(
        responses
            .iter()
            .map(|(key, answer)| ((*key).to_owned(), answer.clone()))
            .collect::<InputResponses>(),
    );
    retry
}

fn completed(answer: Result<CallToolResponse, ServiceError>) -> CallToolResult {
    match answer.expect("an answer") {
        CallToolResponse::Complete(result) => result,
        other => panic!("expected a result, got {other:?}"),
    }
}

fn said(result: &CallToolResult) -> &str {
    result.structured_content.as_ref().unwrap()["data"]["said"]
        .as_str()
        .unwrap()
}

fn error(answer: Result<CallToolResponse, ServiceError>) -> ErrorData {
    match answer {
        Err(ServiceError::McpError(error)) => error,
        other => panic!("expected an error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_call_is_answered_with_the_tools_questions_and_runs_once_they_are_answered() {
    let (server, runs) = server();
    let client = discover(server, Client).await;
    let first = asked(&client, &greet("Hello")).await;
    let requests = first.input_requests.expect("requests");
    assert_eq!(requests.keys().collect::<Vec<_>>(), ["name"]);
    assert_eq!(runs.load(Ordering::Relaxed), 0, "nothing ran yet");
    let state = first.request_state.expect("a sealed state");

    let answer = client
        .call_tool_once(again(
            &greet("Hello"),
            &state,
            &[("name", accepted("name", "Ana"))],
        ))
        .await;
    assert_eq!(said(&completed(answer)), "Hello, Ana!");
    assert_eq!(runs.load(Ordering::Relaxed), 1);
}

#[tokio::test]
async fn the_answers_so_far_travel_in_the_sealed_state_round_after_round() {
    let (server, _) = server();
    let client = discover(server, Client).await;
    let paint = call("paint", json!({}));
    let first = asked(&client, &paint).await;
    let state = first.request_state.unwrap();
    let second = match client
        .call_tool_once(again(&paint, &state, &[("name", accepted("name", "Ana"))]))
        .await
        .unwrap()
    {
        CallToolResponse::InputRequired(second) => second,
        other => panic!("expected a second round, got {other:?}"),
    };
    assert_eq!(
        second.input_requests.unwrap().keys().collect::<Vec<_>>(),
        ["colour"]
    );
    // The second round sends only its own answer: the name comes back in the state.
    let last = again(
        &paint,
        &second.request_state.unwrap(),
        &[("colour", accepted("colour", "teal"))],
    );
    assert_eq!(
        said(&completed(client.call_tool_once(last).await)),
        "Ana paints it teal"
    );
}

#[tokio::test]
async fn an_edited_state_or_one_sent_back_with_other_arguments_is_refused_and_nothing_runs() {
    let (server, runs) = server();
    let client = discover(server, Client).await;
    let state = asked(&client, &greet("Hello")).await.request_state.unwrap();
    let name = [("name", accepted("name", "Ana"))];

    let mut edited = state.clone();
    let last = edited.pop().unwrap();
    edited.push(if last == 'A' { 'B' } else { 'A' });
    let forged = error(
        client
            .call_tool_once(again(&greet("Hello"), &edited, &name))
            .await,
    );
    assert_eq!(forged.code.0, -32602);
    assert_eq!(forged.data.unwrap()["reason"], "forged");

    let moved = error(
        client
            .call_tool_once(again(&greet("Goodbye"), &state, &name))
            .await,
    );
    assert_eq!(moved.data.unwrap()["reason"], "changed_arguments");
    assert_eq!(runs.load(Ordering::Relaxed), 0);
}

#[tokio::test]
async fn a_request_the_client_cannot_answer_refuses_the_call_with_the_capability_it_needs() {
    let (server, _) = server();
    // The client declares elicitation, not sampling.
    let client = discover(server, Client).await;
    let refused = error(client.call_tool_once(call("summarise", json!({}))).await);
    assert_eq!(refused.code.0, -32021);
    let needed = &refused.data.unwrap()["requiredCapabilities"];
    assert!(needed["sampling"].is_object(), "{needed}");
    assert!(needed.get("elicitation").is_none(), "{needed}");
}

#[tokio::test]
async fn a_response_to_nothing_asked_is_left_out_with_a_state_and_without_one() {
    let (server, _) = server();
    let client = discover(server, Client).await;
    let state = asked(&client, &greet("Hello")).await.request_state.unwrap();
    let responses = [
        ("name", accepted("name", "Ana")),
        ("extra", accepted("anything", "else")),
    ];
    let answer = client
        .call_tool_once(again(&greet("Hello"), &state, &responses))
        .await;
    assert_eq!(said(&completed(answer)), "Hello, Ana!");

    // Sent without a state, the responses count only for what a first round asks.
    let mut unasked = again(&greet("Hi"), "", &responses);
    unasked.request_state = None;
    assert_eq!(
        said(&completed(client.call_tool_once(unasked).await)),
        "Hi, Ana!"
    );
}

#[tokio::test]
async fn a_response_that_is_not_an_object_is_refused_and_nothing_runs() {
    let (server, runs) = server();
    let client = discover(server, Client).await;
    let state = asked(&client, &greet("Hello")).await.request_state.unwrap();
    let refused = error(
        client
            .call_tool_once(again(&greet("Hello"), &state, &[("name", json!(12345))]))
            .await,
    );
    assert_eq!(refused.code.0, -32602);
    assert_eq!(runs.load(Ordering::Relaxed), 0);
}

#[tokio::test]
async fn answers_given_before_an_approval_was_asked_reach_the_handler_after_it() {
    let (server, runs) = server();
    let client = discover(server, Client).await;
    let note = call("send_note", json!({ "text": "lunch at one" }));
    let state = asked(&client, &note).await.request_state.unwrap();
    // Answered: the write waits for a person, who is asked next.
    let confirmation = match client
        .call_tool_once(again(&note, &state, &[("to", accepted("to", "Ben"))]))
        .await
        .unwrap()
    {
        CallToolResponse::InputRequired(confirmation) => confirmation,
        other => panic!("expected the approval's confirmation, got {other:?}"),
    };
    let key = confirmation
        .input_requests
        .unwrap()
        .into_keys()
        .next()
        .unwrap();
    assert_eq!(runs.load(Ordering::Relaxed), 0);
    // The approval's state carries the answer given before it.
    let mut approve = ElicitResult::new(ElicitationAction::Accept);
    approve.content = Some(json!({ "approve": true }));
    let approved = again(
        &note,
        &confirmation.request_state.unwrap(),
        &[(&key, serde_json::to_value(approve).unwrap())],
    );
    let result = completed(client.call_tool_once(approved).await);
    assert_eq!(said(&result), "sent \"lunch at one\" to Ben");
    assert_eq!(runs.load(Ordering::Relaxed), 1);
}

#[tokio::test]
async fn a_session_client_is_asked_mid_call_and_its_answer_reaches_the_handler() {
    let (server, runs) = server();
    let client = handshake(server, Client).await;
    let result = client.call_tool(greet("Hi")).await.unwrap();
    assert_eq!(said(&result), "Hi, Ana!");
    assert_eq!(runs.load(Ordering::Relaxed), 1);
}

#[tokio::test]
async fn a_task_waits_in_input_required_until_every_request_is_answered() {
    let (server, runs) = server();
    let client = discover(server, Client).await;
    let task_id = match client
        .call_tool_once(call("export", json!({})))
        .await
        .unwrap()
    {
        CallToolResponse::Task(created) => created.task.task_id,
        other => panic!("expected a task, got {other:?}"),
    };
    let open = |task: &rmcp::model::GetTaskResult| match &task.task.payload {
        TaskPayload::InputRequired { input_requests } => {
            input_requests.keys().cloned().collect::<Vec<_>>()
        }
        other => panic!("expected input_required, got {other:?}"),
    };
    let waiting = until(client.peer(), &task_id, TaskStatus::InputRequired).await;
    assert_eq!(open(&waiting), ["folder", "format"]);

    // One answer: the task keeps waiting, for the other only.
    let one: InputResponses = [("format".to_owned(), accepted("format", "csv"))].into();
    client
        .update_task(UpdateTaskParams::new(&task_id, one))
        .await
        .unwrap();
    let still = client.get_task(GetTaskParams::new(&task_id)).await.unwrap();
    assert_eq!(open(&still), ["folder"]);
    assert_eq!(runs.load(Ordering::Relaxed), 0);

    let other: InputResponses = [("folder".to_owned(), accepted("folder", "/exports"))].into();
    client
        .update_task(UpdateTaskParams::new(&task_id, other))
        .await
        .unwrap();
    let done = until(client.peer(), &task_id, TaskStatus::Completed).await;
    let TaskPayload::Completed { result } = &done.task.payload else {
        panic!("completed: {done:?}");
    };
    assert_eq!(
        result["structuredContent"]["data"]["said"],
        "csv into /exports"
    );
    assert_eq!(runs.load(Ordering::Relaxed), 1);
}
