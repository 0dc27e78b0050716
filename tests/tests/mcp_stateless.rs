//! MCP 2026-07-28 in process: no handshake, and approvals by `input_required` with a sealed
//! `requestState` that any replica sharing the store can redeem, once.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig,
    ElicitRequestParams, ElicitResult, ElicitationAction, Implementation, InputRequest,
    InputRequiredResult, InputResponses, ProtocolVersion,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::{
    ClientHandler, ClientLifecycleMode, ClientServiceExt, ErrorData, RoleClient, ServiceError,
    ServiceExt,
};
use serde_json::{Value, json};
use tool_contract::Principal;
use tool_contract::control::{ControlStore, MemoryStore};
use tool_contract::mcp::McpServer;
use tool_contract_tests::tracker::{
    Remote, SendMessage, advance_clock, alice, builder, dispatcher,
};

/// The person at the client: answers every confirmation the same way, and counts them.
#[derive(Clone)]
struct Person {
    name: &'static str,
    answer: ElicitationAction,
    approve: bool,
    asked: Arc<AtomicU32>,
    forms: Arc<Mutex<Vec<String>>>,
}

impl Person {
    fn answering(answer: ElicitationAction, approve: bool) -> Self {
        Person {
            name: "person",
            answer,
            approve,
            asked: Arc::default(),
            forms: Arc::default(),
        }
    }

    fn approving() -> Self {
        Person::answering(ElicitationAction::Accept, true)
    }

    fn asked(&self) -> u32 {
        self.asked.load(Ordering::Relaxed)
    }
}

impl ClientHandler for Person {
    fn get_info(&self) -> ClientConfig {
        let capabilities = ClientCapabilities::builder().enable_elicitation().build();
        ClientConfig::new(capabilities, Implementation::new(self.name, "1.0.0"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams { message, .. } = request {
            self.forms.lock().unwrap().push(message);
        }
        self.asked.fetch_add(1, Ordering::Relaxed);
        let mut result = ElicitResult::new(self.answer.clone());
        if self.answer == ElicitationAction::Accept {
            result.content = Some(json!({ "approve": self.approve }));
        }
        Ok(result)
    }
}

/// Serves `server` over an in-memory pipe to `person`'s client speaking 2026-07-28.
async fn connect(server: McpServer, person: Person) -> RunningService<RoleClient, Person> {
    tool_contract_tests::mcp::discover(server, person).await
}

/// A replica: a server of its own dispatcher over the shared `store`, acting for `principal`.
fn replica(remote: &Arc<Remote>, store: &Arc<dyn ControlStore>, principal: Principal) -> McpServer {
    McpServer::new(Arc::new(dispatcher(remote, store.clone())), principal)
}

fn params(tool: &str, arguments: Value) -> CallToolRequestParams {
    let Value::Object(arguments) = arguments else {
        panic!("arguments are an object");
    };
    CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments)
}

fn message() -> Value {
    json!({ "to": "bob@globex.example", "text": "hello" })
}

fn status(result: &CallToolResult) -> &Value {
    &result
        .structured_content
        .as_ref()
        .expect("structuredContent")["status"]
}

/// The first round of a write that needs approval: the confirmation and its state.
async fn ask(
    client: &RunningService<RoleClient, Person>,
    call: &CallToolRequestParams,
) -> InputRequiredResult {
    match client
        .call_tool_once(call.clone())
        .await
        .expect("tools/call")
    {
        CallToolResponse::InputRequired(asked) => asked,
        other => panic!("expected input_required, got {other:?}"),
    }
}

/// `call` sent again with `state` and the person's `answer` to the confirmation.
fn answered(
    call: &CallToolRequestParams,
    state: &str,
    answer: ElicitResult,
) -> CallToolRequestParams {
    let mut responses = InputResponses::new();
    responses.insert("approval".to_owned(), serde_json::to_value(answer).unwrap());
    let mut retry = call.clone();
    retry.input_responses = Some(responses);
    retry.request_state = Some(state.to_owned());
    retry
}

fn yes() -> ElicitResult {
    let mut answer = ElicitResult::new(ElicitationAction::Accept);
    answer.content = Some(json!({ "approve": true }));
    answer
}

/// The refusal code of a JSON-RPC error answering a retry.
fn refusal(answer: Result<CallToolResponse, ServiceError>) -> String {
    match answer {
        Err(ServiceError::McpError(error)) => error.data.expect("data")["reason"]
            .as_str()
            .expect("a reason")
            .to_owned(),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// The refusal code of `call` sent to `client` with `state` and a yes.
async fn refused(
    client: &RunningService<RoleClient, Person>,
    call: &CallToolRequestParams,
    state: &str,
) -> String {
    refusal(client.call_tool_once(answered(call, state, yes())).await)
}

fn completed(answer: Result<CallToolResponse, ServiceError>) -> CallToolResult {
    match answer.expect("an answer") {
        CallToolResponse::Complete(result) => result,
        other => panic!("expected a result, got {other:?}"),
    }
}

fn memory() -> Arc<dyn ControlStore> {
    Arc::new(MemoryStore::new())
}

#[tokio::test]
async fn a_write_needing_approval_answers_input_required_with_one_confirmation_and_a_state() {
    let remote = Remote::new();
    let store = memory();
    let client = connect(replica(&remote, &store, alice()), Person::approving()).await;
    let asked = ask(&client, &params("send_message", message())).await;

    let requests = asked.input_requests.expect("inputRequests");
    assert_eq!(requests.len(), 1, "one confirmation");
    let Some(InputRequest::Elicitation(form)) = requests.get("approval") else {
        panic!("the confirmation is an elicitation: {requests:?}");
    };
    let ElicitRequestParams::FormElicitationParams { message, .. } = &form.params else {
        panic!("a form");
    };
    assert!(
        message.contains("send_message") && message.contains("bob@globex.example"),
        "{message}"
    );
    assert!(asked.request_state.is_some_and(|state| !state.is_empty()));
    assert!(
        asked
            .meta
            .is_some_and(|meta| meta.0.contains_key("tool-contract/pending_approval"))
    );
    assert_eq!(remote.all_requests(), 0, "nothing ran before the answer");
}

#[tokio::test]
async fn rmcps_client_answers_the_confirmation_and_the_write_runs_once() {
    let remote = Remote::new();
    let person = Person::approving();
    let client = connect(replica(&remote, &memory(), alice()), person.clone()).await;
    let result = client
        .call_tool(params("send_message", message()))
        .await
        .expect("tools/call");
    assert_eq!(status(&result), "succeeded", "{result:?}");
    assert_eq!(person.asked(), 1);
    assert_eq!(remote.all_requests(), 1);
}

#[tokio::test]
async fn a_retry_of_the_same_call_after_it_ran_replays_and_never_runs_again() {
    let remote = Remote::new();
    let person = Person::approving();
    let client = connect(replica(&remote, &memory(), alice()), person.clone()).await;
    let first = client
        .call_tool(params("send_message", message()))
        .await
        .unwrap();
    let again = client
        .call_tool(params("send_message", message()))
        .await
        .unwrap();
    assert_eq!(status(&first), "succeeded");
    assert_eq!(status(&again), "succeeded");
    let (first, again) = (
        first.structured_content.unwrap(),
        again.structured_content.unwrap(),
    );
    assert_eq!(first["data"], again["data"], "the same result");
    assert_eq!(again["execution"]["delivery"], "local_replay");
    assert_eq!(person.asked(), 1, "not asked again");
    assert_eq!(remote.all_requests(), 1, "ran once");
}

#[tokio::test]
async fn a_decline_is_a_rejection_and_the_model_reads_blocked() {
    let remote = Remote::new();
    let person = Person::answering(ElicitationAction::Decline, false);
    let client = connect(replica(&remote, &memory(), alice()), person).await;
    let result = client
        .call_tool(params("send_message", message()))
        .await
        .unwrap();
    let structured = result.structured_content.expect("structuredContent");
    assert_eq!(structured["error"]["code"], "BLOCKED", "{structured}");
    assert_eq!(result.is_error, Some(true));
    assert_eq!(remote.all_requests(), 0);
}

#[tokio::test]
async fn a_no_with_a_reason_from_the_list_reaches_the_model_as_that_reasons_entry() {
    let remote = Remote::new();
    let client = connect(replica(&remote, &memory(), alice()), Person::approving()).await;
    let call = params("send_message", message());
    let state = ask(&client, &call).await.request_state.unwrap();
    let mut no = ElicitResult::new(ElicitationAction::Accept);
    no.content = Some(json!({ "approve": false, "reason": "wrong_details" }));
    let result = completed(client.call_tool_once(answered(&call, &state, no)).await);
    let structured = result.structured_content.expect("structuredContent");
    assert_eq!(
        structured["error"]["code"], "REJECTED_WRONG_DETAILS",
        "{structured}"
    );
    assert_eq!(structured["error"]["recovery"], "correct_input");
    assert_eq!(structured["provenance"]["trust"], "trusted_control");
    assert_eq!(remote.all_requests(), 0);
}

#[tokio::test]
async fn a_dismissed_confirmation_is_not_asked_again_and_the_approval_stays_pending() {
    let remote = Remote::new();
    let store = memory();
    let person = Person::answering(ElicitationAction::Cancel, false);
    let client = connect(replica(&remote, &store, alice()), person.clone()).await;
    let result = client
        .call_tool(params("send_message", message()))
        .await
        .unwrap();
    let structured = result.structured_content.expect("structuredContent");
    assert_eq!(
        structured["error"]["code"], "APPROVAL_REQUIRED",
        "{structured}"
    );
    assert_eq!(person.asked(), 1, "one form, not a loop of them");
    let pending = dispatcher(&remote, store)
        .pending_approvals()
        .await
        .unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(remote.all_requests(), 0);
}

#[tokio::test]
async fn an_answer_asked_through_one_replica_is_redeemed_through_another_once() {
    let remote = Remote::new();
    let store = memory();
    let one = connect(replica(&remote, &store, alice()), Person::approving()).await;
    let other = connect(replica(&remote, &store, alice()), Person::approving()).await;
    let call = params("send_message", message());
    let asked = ask(&one, &call).await;
    let state = asked.request_state.expect("a state");

    let result = completed(other.call_tool_once(answered(&call, &state, yes())).await);
    assert_eq!(status(&result), "succeeded", "{result:?}");
    assert_eq!(remote.all_requests(), 1);
}

#[tokio::test]
async fn a_state_used_once_is_refused_as_replayed() {
    let remote = Remote::new();
    let store = memory();
    let client = connect(replica(&remote, &store, alice()), Person::approving()).await;
    let call = params("send_message", message());
    let state = ask(&client, &call).await.request_state.unwrap();
    let retry = answered(&call, &state, yes());
    assert_eq!(
        status(&completed(client.call_tool_once(retry.clone()).await)),
        "succeeded"
    );

    assert_eq!(refusal(client.call_tool_once(retry).await), "replayed");
    assert_eq!(remote.all_requests(), 1, "ran once");
}

#[tokio::test]
async fn a_forged_state_is_refused_and_nothing_is_recorded() {
    let remote = Remote::new();
    let store = memory();
    let client = connect(replica(&remote, &store, alice()), Person::approving()).await;
    let call = params("send_message", message());
    let state = ask(&client, &call).await.request_state.unwrap();
    // The payload is readable; a client that edits it cannot seal it again.
    let mut forged = state.clone().into_bytes();
    let middle = forged.len() / 2;
    forged[middle] = if forged[middle] == b'A' { b'B' } else { b'A' };
    let forged = String::from_utf8(forged).unwrap();

    assert_eq!(refused(&client, &call, &forged).await, "forged");
    let made_up = answered(&call, "rs1.e30.AAAA", yes());
    assert_eq!(refusal(client.call_tool_once(made_up).await), "forged");
    assert_eq!(remote.all_requests(), 0);
    let pending = dispatcher(&remote, store)
        .pending_approvals()
        .await
        .unwrap();
    assert_eq!(pending.len(), 1, "still pending: nothing was recorded");
}

#[tokio::test]
async fn a_state_sealed_with_other_keys_is_forged() {
    use tool_contract::{AuditKeys, SecretKey};
    let remote = Remote::new();
    let store = memory();
    let client = connect(replica(&remote, &store, alice()), Person::approving()).await;
    let call = params("send_message", message());
    let state = ask(&client, &call).await.request_state.unwrap();
    let other_keys = AuditKeys::new(SecretKey::new([0x43; 32]).unwrap());
    let stranger = tool_contract_tests::tracker::builder_with_keys(&remote, other_keys)
        .store(store.clone())
        .build()
        .unwrap();
    let stranger = connect(
        McpServer::new(Arc::new(stranger), alice()),
        Person::approving(),
    )
    .await;
    assert_eq!(refused(&stranger, &call, &state).await, "forged");
    assert_eq!(remote.all_requests(), 0);
}

#[tokio::test]
async fn an_expired_state_is_refused() {
    let remote = Remote::new();
    let server = replica(&remote, &memory(), alice()).with_approval_ttl(Duration::from_secs(60));
    let client = connect(server, Person::approving()).await;
    let call = params("send_message", message());
    let state = ask(&client, &call).await.request_state.unwrap();
    advance_clock(Duration::from_secs(61));
    assert_eq!(refused(&client, &call, &state).await, "expired");
    assert_eq!(remote.all_requests(), 0);
}

#[tokio::test]
async fn a_state_moved_to_another_principal_is_refused() {
    let remote = Remote::new();
    let store = memory();
    let alices = connect(replica(&remote, &store, alice()), Person::approving()).await;
    let mallory = Principal::new("acme", "mallory");
    let mallorys = connect(replica(&remote, &store, mallory), Person::approving()).await;
    let call = params("send_message", message());
    let state = ask(&alices, &call).await.request_state.unwrap();
    assert_eq!(refused(&mallorys, &call, &state).await, "other_principal");
    assert_eq!(remote.all_requests(), 0);
}

#[tokio::test]
async fn a_state_moved_to_another_tool_is_refused() {
    let remote = Remote::new();
    let client = connect(replica(&remote, &memory(), alice()), Person::approving()).await;
    let call = params("send_message", message());
    let state = ask(&client, &call).await.request_state.unwrap();
    let elsewhere = params(
        "file_issue",
        json!({ "title": "hello", "body": "bob@globex.example" }),
    );
    assert_eq!(refused(&client, &elsewhere, &state).await, "other_tool");
    assert_eq!(remote.all_requests(), 0);
}

#[tokio::test]
async fn a_state_sent_back_with_changed_arguments_is_refused() {
    let remote = Remote::new();
    let client = connect(replica(&remote, &memory(), alice()), Person::approving()).await;
    let call = params("send_message", message());
    let state = ask(&client, &call).await.request_state.unwrap();
    let changed = params(
        "send_message",
        json!({ "to": "eve@evil.example", "text": "hello" }),
    );
    assert_eq!(
        refused(&client, &changed, &state).await,
        "changed_arguments"
    );
    assert_eq!(remote.all_requests(), 0);
}

#[tokio::test]
async fn a_client_without_elicitation_reads_approval_required_with_the_preview() {
    struct NoForms;
    impl ClientHandler for NoForms {
        fn get_info(&self) -> ClientConfig {
            ClientConfig::new(
                ClientCapabilities::default(),
                Implementation::new("bare", "1"),
            )
        }
    }
    let remote = Remote::new();
    let server = replica(&remote, &memory(), alice());
    let (client_side, server_side) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let (read, write) = tokio::io::split(server_side);
        if let Ok(running) = server.serve_io(read, write).await {
            let _ = running.waiting().await;
        }
    });
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let client = NoForms
        .serve_with_lifecycle(client_side, lifecycle)
        .await
        .unwrap();
    let result = completed(
        client
            .call_tool_once(params("send_message", message()))
            .await,
    );
    let structured = result.structured_content.expect("structuredContent");
    assert_eq!(structured["error"]["code"], "APPROVAL_REQUIRED");
    assert!(
        result
            .meta
            .is_some_and(|meta| meta.0.contains_key("tool-contract/pending_approval"))
    );
    assert_eq!(remote.all_requests(), 0);
}

#[tokio::test]
async fn a_client_on_2025_11_25_is_still_asked_by_elicitation() {
    let remote = Remote::new();
    let person = Person::approving();
    let (client_side, server_side) = tokio::io::duplex(1 << 16);
    let server = replica(&remote, &memory(), alice());
    tokio::spawn(async move {
        let (read, write) = tokio::io::split(server_side);
        if let Ok(running) = server.serve_io(read, write).await {
            let _ = running.waiting().await;
        }
    });
    let client = person
        .clone()
        .serve(client_side)
        .await
        .expect("the handshake");
    let version = client.peer_info().map(|info| info.protocol_version.clone());
    assert_eq!(version, Some(ProtocolVersion::V_2025_11_25));
    let result = client
        .call_tool(params("send_message", message()))
        .await
        .unwrap();
    assert_eq!(status(&result), "succeeded");
    assert_eq!(person.asked(), 1);
    assert_eq!(remote.all_requests(), 1);
}

#[tokio::test]
async fn server_discover_lists_2026_07_28_beside_the_handshake_revisions() {
    let remote = Remote::new();
    let client = connect(replica(&remote, &memory(), alice()), Person::approving()).await;
    let discovered = client
        .discover(Default::default())
        .await
        .expect("server/discover");
    let versions = serde_json::to_value(&discovered).unwrap();
    let versions = versions["supportedVersions"].to_string();
    assert!(
        versions.contains("2026-07-28") && versions.contains("2025-11-25"),
        "{versions}"
    );
}

/// The confirmation's message in `asked`, and what its `_meta` says is still needed.
fn confirmation(asked: &InputRequiredResult) -> (String, Value) {
    let requests = asked.input_requests.as_ref().expect("inputRequests");
    let Some(InputRequest::Elicitation(form)) = requests.get("approval") else {
        panic!("the confirmation is an elicitation: {requests:?}");
    };
    let ElicitRequestParams::FormElicitationParams { message, .. } = &form.params else {
        panic!("a form");
    };
    let meta = asked.meta.as_ref().expect("_meta").0["tool-contract/pending_approval"].clone();
    (message.clone(), meta["approvals_still_needed"].clone())
}

/// Asks `call` of `client`, checks that its confirmation `says` so and that its `_meta`
/// counts `still_needed`, and answers yes: the result.
async fn confirm(
    client: &RunningService<RoleClient, Person>,
    call: &CallToolRequestParams,
    says: &str,
    still_needed: u64,
) -> CallToolResult {
    let asked = ask(client, call).await;
    let (message, needed) = confirmation(&asked);
    assert!(message.contains(says), "{message}");
    assert_eq!(needed, still_needed);
    let state = asked.request_state.clone().expect("a state");
    completed(client.call_tool_once(answered(call, &state, yes())).await)
}

#[tokio::test]
async fn a_four_eyes_confirmation_says_how_many_approvals_are_still_needed() {
    let remote = Remote::new();
    let store = memory();
    let dispatcher = Arc::new(
        builder(&remote)
            .approvers::<SendMessage>(2)
            .store(store.clone())
            .build()
            .unwrap(),
    );
    let carol = connect(
        McpServer::new(dispatcher.clone(), alice()),
        Person::approving(),
    )
    .await;
    let call = params("send_message", message());

    let after_one = confirm(&carol, &call, "2 more people must approve", 2).await;
    assert_eq!(status(&after_one), "failed", "{after_one:?}");
    assert_eq!(remote.all_requests(), 0, "one approval ran nothing");
    // The second person approves in the application (the session's principal has had its
    // say); the model's next call runs the write.
    let pending = dispatcher.pending_approvals().await.unwrap();
    assert_eq!(pending[0].approvals_still_needed(), 1);
    dispatcher
        .approve_pending(
            &pending[0],
            "dave@acme.example",
            std::time::Duration::from_secs(600),
        )
        .await
        .unwrap();
    let ran = completed(carol.call_tool_once(call.clone()).await);
    assert_eq!(status(&ran), "succeeded", "{ran:?}");
    assert_eq!(remote.all_requests(), 1);
}

#[tokio::test]
async fn one_principal_answering_twice_under_two_client_names_is_one_approval() {
    let remote = Remote::new();
    let store = memory();
    let server = || {
        let dispatcher = builder(&remote)
            .approvers::<SendMessage>(2)
            .store(store.clone())
            .build()
            .unwrap();
        McpServer::new(Arc::new(dispatcher), alice())
    };
    let approving = |name| Person {
        name,
        ..Person::approving()
    };
    let carol = connect(server(), approving("carol")).await;
    let dave = connect(server(), approving("dave")).await;
    let call = params("send_message", message());
    let state = ask(&carol, &call).await.request_state.expect("a state");

    let first = completed(carol.call_tool_once(answered(&call, &state, yes())).await);
    assert_eq!(status(&first), "failed", "{first:?}");
    // The same state, answered again by a client calling itself someone else.
    assert_eq!(
        refusal(dave.call_tool_once(answered(&call, &state, yes())).await),
        "replayed"
    );
    assert_eq!(
        remote.all_requests(),
        0,
        "one principal never meets a two-person rule"
    );
    let pending = dispatcher(&remote, store)
        .pending_approvals()
        .await
        .unwrap();
    let approvers: Vec<&str> = pending[0]
        .approvals
        .iter()
        .map(|given| given.approver.as_str())
        .collect();
    assert_eq!(
        approvers,
        ["mcp:acme/alice"],
        "recorded as the session's principal"
    );
}

#[tokio::test]
async fn an_mcp_answer_is_recorded_as_the_clients_word_and_its_receipt_says_so() {
    let remote = Remote::new();
    let store = memory();
    let signer = tool_contract::results::ReceiptSigner::new(
        "desk-1",
        [0x5e; 32],
        tool_contract_tests::tracker::clock() - std::time::Duration::from_secs(60),
    );
    let keys = tool_contract::results::KeySet::new([signer.published_key()]).unwrap();
    let log = Arc::new(tool_contract::control::MemoryAuditLog::new(
        tool_contract_tests::tracker::audit_key(),
    ));
    let dispatcher = builder(&remote)
        .store(store.clone())
        .audit_sink(log.clone())
        .approval_receipts(signer)
        .build()
        .unwrap();
    let client = connect(
        McpServer::new(Arc::new(dispatcher), alice()),
        Person::approving(),
    )
    .await;
    let call = params("send_message", message());
    let asked = ask(&client, &call).await;
    let state = asked.request_state.clone().expect("a state");
    let ran = completed(client.call_tool_once(answered(&call, &state, yes())).await);
    assert_eq!(status(&ran), "succeeded", "{ran:?}");
    let receipt = log
        .records()
        .into_iter()
        .find_map(|(_, audit)| audit.approval.and_then(|approval| approval.receipt))
        .expect("the redeeming call's audit holds a receipt");
    let receipt = keys
        .verify(receipt.to_json().as_bytes())
        .expect("it verifies");
    assert_eq!(receipt.approvals[0].approver, "mcp:acme/alice");
    assert_eq!(
        receipt.approvals[0].basis,
        Some(tool_contract::results::BasisKind::Client)
    );
}

#[tokio::test]
async fn a_rule_of_signed_approvals_counts_no_mcp_answer_and_its_confirmation_says_so() {
    let remote = Remote::new();
    let store = memory();
    let signed_only = builder(&remote)
        .store(store.clone())
        .signed_approvals_when(|_: &SendMessage| true)
        .build()
        .unwrap();
    let server = McpServer::new(Arc::new(signed_only), alice())
        .with_approvals_console("https://desk.example/approvals/{approval_id}");
    let client = connect(server, Person::approving()).await;
    let call = params("send_message", message());
    let asked = ask(&client, &call).await;
    let (says, _) = confirmation(&asked);
    let pending = dispatcher(&remote, store.clone())
        .pending_approvals()
        .await
        .unwrap();
    let page = format!("https://desk.example/approvals/{}", pending[0].approval_id);
    assert!(
        says.contains("1 more approval signed with an approver's own passkey")
            && says.contains(&page),
        "{says}"
    );
    let state = asked.request_state.clone().expect("a state");
    let answered_yes = completed(client.call_tool_once(answered(&call, &state, yes())).await);
    assert_eq!(status(&answered_yes), "failed", "{answered_yes:?}");
    assert_eq!(remote.all_requests(), 0, "the client's word ran nothing");
    let pending = dispatcher(&remote, store)
        .pending_approvals()
        .await
        .unwrap();
    assert!(pending[0].approvals.is_empty(), "nothing was counted");
}

/// Lend a book; a librarian approves each loan (each call its own operation).
#[derive(Debug, serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Lent, effect = non_idempotent_write, approval = by_caller,
                reconcile = manual, operation = per_call)]
struct LendBook {
    #[tool_contract(max_len = 13)]
    isbn: String,
}

#[derive(Debug, serde::Serialize, tool_contract::ToolOutput)]
struct Lent {
    #[tool_output(bound = isbn)]
    isbn: String,
}

#[tokio::test]
async fn a_per_call_write_sent_back_with_its_answer_is_the_call_that_was_asked_about() {
    let lent = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&lent);
    let dispatcher =
        tool_contract::dispatch::Dispatcher::for_development(tool_contract::registry![LendBook])
            .handler(move |input: LendBook| {
                counter.fetch_add(1, Ordering::Relaxed);
                async move { Ok::<_, tool_contract::ToolFailure>(Lent { isbn: input.isbn }) }
            })
            .build()
            .unwrap();
    let person = Person::approving();
    let server = McpServer::new(Arc::new(dispatcher), alice());
    let client = connect(server, person.clone()).await;
    let lend = params("lend_book", json!({ "isbn": "9780141439518" }));

    // Asked, answered, and sent back with the state: no id of the model's call crosses MCP,
    // so the state carries the operation, and the answered call is the one asked about.
    let asked = ask(&client, &lend).await;
    let state = asked.request_state.expect("a state");
    let ran = completed(client.call_tool_once(answered(&lend, &state, yes())).await);
    assert_eq!(status(&ran), "succeeded", "{ran:?}");
    assert_eq!(lent.load(Ordering::Relaxed), 1);

    // The same loan asked for again is another loan: asked again, run again.
    let again = client.call_tool(lend.clone()).await.expect("tools/call");
    assert_eq!(status(&again), "succeeded", "{again:?}");
    assert_eq!(lent.load(Ordering::Relaxed), 2);
    assert_eq!(
        person.asked(),
        1,
        "the second was answered by rmcp's client, asking the person"
    );
}

/// A four-eyes rule both kinds count toward: the caller's MCP answer, and a directory
/// approver's passkey; `subject` is what the directory says of that approver.
async fn caller_then_directory_approver(subject: Option<&str>) -> Result<(), String> {
    use tool_contract::control::ApprovalError;
    use tool_contract::results::{Decision, RelyingParty};
    use tool_contract_tests::passkey::{ORIGIN, RP_ID, enrol, signed};

    let remote = Remote::new();
    let party = RelyingParty::new(RP_ID, "desk", [ORIGIN]).unwrap();
    let dispatcher = Arc::new(
        builder(&remote)
            .store(memory())
            .relying_party(party)
            .approvers::<SendMessage>(2)
            .build()
            .unwrap(),
    );
    // Alice answers her own call's confirmation: one approval, the caller's.
    let client = connect(
        McpServer::new(dispatcher.clone(), alice()),
        Person::approving(),
    )
    .await;
    let result = client
        .call_tool(params("send_message", message()))
        .await
        .expect("tools/call");
    assert_ne!(status(&result), "succeeded");
    let pending = dispatcher.pending_approvals().await.unwrap().remove(0);
    assert_eq!(pending.approvals[0].approver, "mcp:acme/alice");
    // Then the directory's `sup-ana` signs with her passkey.
    let mut key = enrol(&dispatcher, "sup-ana", &["acme"]).await;
    let mut ana = dispatcher.approver("sup-ana").await.unwrap().unwrap();
    ana.subject = subject.map(str::to_owned);
    dispatcher.put_approver(ana).await.unwrap();
    let (statement, assertion) = signed(
        &dispatcher,
        &mut key,
        &pending,
        "sup-ana",
        Decision::Approve,
        None,
    )
    .await;
    let decided = dispatcher.decide_signed(&statement, None, &assertion).await;
    match decided {
        Ok(_) => Ok(()),
        Err(ApprovalError::Refused(refusal)) => Err(format!("{refusal:?}")),
        Err(other) => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_directory_approver_the_directory_does_not_tie_to_a_subject_cannot_join_the_callers_answer()
 {
    assert_eq!(
        caller_then_directory_approver(None).await,
        Err("UntiedApprover".to_owned())
    );
}

#[tokio::test]
async fn a_directory_approver_whose_subject_is_the_caller_cannot_join_the_callers_answer() {
    assert_eq!(
        caller_then_directory_approver(Some("alice")).await,
        Err("OwnCall".to_owned())
    );
}

#[tokio::test]
async fn a_directory_approver_tied_to_another_subject_joins_the_callers_answer() {
    assert_eq!(caller_then_directory_approver(Some("ana")).await, Ok(()));
}
