//! From the model's client to the approvals console: a write whose rule asks for approvals
//! signed by passkeys sends the person at the client to the console page of that approval by
//! URL-mode elicitation (2025-11-25, mid-call) or `input_required` (2026-07-28); the call
//! runs once the signatures are in, and a repeat replays. The console's part, two
//! supervisors signing with their passkeys, is played by the dispatcher's own ceremony calls
//! on software authenticators.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig,
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability,
    FormElicitationCapability, Implementation, InputRequest, InputResponses,
    UrlElicitationCapability,
};
use rmcp::service::RequestContext;
use rmcp::{ClientHandler, ErrorData, RoleClient};
use serde_json::{Value, json};
use tool_contract::control::{ControlStore, MemoryStore, PendingApproval};
use tool_contract::dispatch::Dispatcher;
use tool_contract::mcp::McpServer;
use tool_contract::results::{Decision, RelyingParty};
use tool_contract_tests::mcp::{discover, handshake};
use tool_contract_tests::passkey::{ORIGIN, RP_ID, SoftAuthenticator, enrol, signed};
use tool_contract_tests::tracker::{Remote, SendMessage, alice, builder};

const CONSOLE: &str = "https://desk.example/approvals/{approval_id}";

/// The enrolled supervisors, each with the authenticator holding their passkey.
type Supervisors = Arc<tokio::sync::Mutex<Vec<(&'static str, SoftAuthenticator)>>>;

/// A desk whose messages need two approvers, each signing with a passkey, with its two
/// supervisors enrolled.
struct Desk {
    remote: Arc<Remote>,
    dispatcher: Arc<Dispatcher>,
    supervisors: Supervisors,
}

async fn desk() -> Desk {
    let remote = Remote::new();
    let store: Arc<dyn ControlStore> = Arc::new(MemoryStore::new());
    let relying_party =
        RelyingParty::new(RP_ID, "Acme desk", [ORIGIN]).expect("the tests' relying party");
    let dispatcher = builder(&remote)
        .store(store)
        .relying_party(relying_party)
        .approvers_when(2, |_: &SendMessage| true)
        .signed_approvals_when(|_: &SendMessage| true)
        .build()
        .expect("the desk builds");
    let ana = enrol(&dispatcher, "sup-ana", &["acme"]).await;
    let ben = enrol(&dispatcher, "sup-ben", &["acme"]).await;
    Desk {
        remote,
        dispatcher: Arc::new(dispatcher),
        supervisors: Arc::new(tokio::sync::Mutex::new(vec![
            ("sup-ana", ana),
            ("sup-ben", ben),
        ])),
    }
}

impl Desk {
    fn server(&self) -> McpServer {
        McpServer::new(Arc::clone(&self.dispatcher), alice()).with_approvals_console(CONSOLE)
    }

    async fn pending(&self) -> Vec<PendingApproval> {
        self.dispatcher.pending_approvals().await.expect("store")
    }

    /// What the console does: every supervisor signs their approval of `approval_id`.
    async fn supervisors_sign(&self, approval_id: &str) {
        sign_all(&self.dispatcher, &self.supervisors, approval_id).await;
    }
}

async fn sign_all(dispatcher: &Dispatcher, supervisors: &Supervisors, approval_id: &str) {
    for (approver_id, authenticator) in supervisors.lock().await.iter_mut() {
        let pending = dispatcher
            .pending_approval(approval_id)
            .await
            .expect("store")
            .expect("still pending");
        let (statement, assertion) = signed(
            dispatcher,
            authenticator,
            &pending,
            approver_id,
            Decision::Approve,
            None,
        )
        .await;
        dispatcher
            .decide_signed(&statement, None, &assertion)
            .await
            .expect("a signed approval");
    }
}

/// The person at a client that declares form and URL elicitation: sent to a page, they go
/// (accept), and the console's signing follows a moment later, if `console` is given.
#[derive(Clone)]
struct Person {
    goes: bool,
    console: Option<(Arc<Dispatcher>, Supervisors)>,
    sent_to: Arc<Mutex<Vec<(String, String)>>>,
    forms: Arc<Mutex<u32>>,
}

impl Person {
    fn new(goes: bool, desk: Option<&Desk>) -> Self {
        Person {
            goes,
            console: desk.map(|desk| (Arc::clone(&desk.dispatcher), Arc::clone(&desk.supervisors))),
            sent_to: Arc::default(),
            forms: Arc::default(),
        }
    }

    fn sent_to(&self) -> Vec<(String, String)> {
        self.sent_to.lock().unwrap().clone()
    }
}

fn form_and_url() -> ClientCapabilities {
    let mut capabilities = ClientCapabilities::builder().enable_elicitation().build();
    capabilities.elicitation = Some(
        ElicitationCapability::new()
            .with_form(FormElicitationCapability::new())
            .with_url(UrlElicitationCapability::new()),
    );
    capabilities
}

impl ClientHandler for Person {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(form_and_url(), Implementation::new("person", "1.0.0"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let ElicitRequestParams::UrlElicitationParams {
            url,
            message,
            elicitation_id,
            ..
        } = request
        else {
            *self.forms.lock().unwrap() += 1;
            return Ok(ElicitResult::new(ElicitationAction::Cancel));
        };
        self.sent_to.lock().unwrap().push((url, message));
        if !self.goes {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        }
        if let Some((dispatcher, supervisors)) = self.console.clone() {
            // The person signs in the browser after the client opened the page.
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(400)).await;
                sign_all(&dispatcher, &supervisors, &elicitation_id).await;
            });
        }
        Ok(ElicitResult::new(ElicitationAction::Accept))
    }
}

fn send_message() -> CallToolRequestParams {
    let Value::Object(arguments) = json!({ "to": "bob@globex.example", "text": "hello" }) else {
        unreachable!("an object");
    };
    CallToolRequestParams::new("send_message").with_arguments(arguments)
}

fn model(result: &CallToolResult) -> &Value {
    result
        .structured_content
        .as_ref()
        .expect("structuredContent")
}

fn page_of(approval_id: &str) -> String {
    CONSOLE.replace("{approval_id}", approval_id)
}

#[tokio::test]
async fn a_handshake_client_is_sent_to_the_console_and_the_call_runs_once_the_signatures_are_in() {
    let desk = desk().await;
    let person = Person::new(true, Some(&desk));
    let client = handshake(desk.server(), person.clone()).await;
    let result = client.call_tool(send_message()).await.expect("tools/call");
    assert_eq!(model(&result)["status"], "succeeded", "{result:?}");
    assert_eq!(desk.remote.all_requests(), 1, "the write ran once");
    let sent_to = person.sent_to();
    assert_eq!(sent_to.len(), 1, "{sent_to:?}");
    let (url, message) = &sent_to[0];
    assert!(url.starts_with("https://desk.example/approvals/"), "{url}");
    assert!(
        message.starts_with(
            "Approve this send_message call in the approvals console, where it shows exactly \
             what would run."
        ),
        "{message}"
    );
    assert!(
        message.contains("2 more approvals signed with an approver's own passkey"),
        "{message}"
    );
    assert!(desk.pending().await.is_empty());
    assert_eq!(*person.forms.lock().unwrap(), 0, "no form was asked");

    let again = client.call_tool(send_message()).await.expect("tools/call");
    assert_eq!(model(&again)["execution"]["delivery"], "local_replay");
    assert_eq!(desk.remote.all_requests(), 1, "the repeat did not run");
    assert_eq!(person.sent_to().len(), 1, "nobody was sent anywhere again");
}

#[tokio::test]
async fn a_person_who_does_not_go_to_the_console_leaves_the_approval_pending_and_nothing_runs() {
    let desk = desk().await;
    let person = Person::new(false, None);
    let client = handshake(desk.server(), person.clone()).await;
    let result = client.call_tool(send_message()).await.expect("tools/call");
    assert_eq!(model(&result)["error"]["code"], "APPROVAL_REQUIRED");
    assert_eq!(desk.remote.all_requests(), 0);
    let pending = desk.pending().await;
    assert_eq!(pending.len(), 1);
    assert!(pending[0].approvals.is_empty());
    assert_eq!(person.sent_to()[0].0, page_of(&pending[0].approval_id));
    let meta = result.meta.as_ref().expect("the pending approval in _meta");
    assert_eq!(
        meta.0["tool-contract/pending_approval"]["approval_id"],
        pending[0].approval_id.as_str()
    );
}

#[tokio::test]
async fn a_2026_client_gets_input_required_naming_the_page_and_its_retry_runs_once_signed() {
    let desk = desk().await;
    let person = Person::new(true, None);
    let client = discover(desk.server(), person).await;
    let call = send_message();
    let asked = match client
        .call_tool_once(call.clone())
        .await
        .expect("tools/call")
    {
        CallToolResponse::InputRequired(asked) => asked,
        other => panic!("expected input_required, got {other:?}"),
    };
    let pending = desk.pending().await;
    assert_eq!(pending.len(), 1);
    let requests = asked.input_requests.as_ref().expect("input requests");
    let Some(InputRequest::Elicitation(request)) = requests.get("approval") else {
        panic!("one elicitation: {requests:?}");
    };
    let ElicitRequestParams::UrlElicitationParams { url, .. } = &request.params else {
        panic!("a URL request: {request:?}");
    };
    assert_eq!(*url, page_of(&pending[0].approval_id));
    let state = asked.request_state.clone().expect("a state");

    // Sent back before anyone signed: nothing is recorded from the client, nothing runs.
    let mut retry = call.clone();
    let mut went = InputResponses::new();
    went.insert(
        "approval".to_owned(),
        serde_json::to_value(ElicitResult::new(ElicitationAction::Accept)).unwrap(),
    );
    retry.input_responses = Some(went);
    retry.request_state = Some(state);
    let early = match client
        .call_tool_once(retry.clone())
        .await
        .expect("tools/call")
    {
        CallToolResponse::Complete(result) => result,
        other => panic!("expected a result, got {other:?}"),
    };
    assert_eq!(model(&early)["error"]["code"], "APPROVAL_REQUIRED");
    assert_eq!(desk.remote.all_requests(), 0);
    assert!(
        desk.pending().await[0].approvals.is_empty(),
        "the client's word counts nothing"
    );

    desk.supervisors_sign(&pending[0].approval_id).await;
    let signed = match client.call_tool_once(retry).await.expect("tools/call") {
        CallToolResponse::Complete(result) => result,
        other => panic!("expected a result, got {other:?}"),
    };
    assert_eq!(model(&signed)["status"], "succeeded", "{signed:?}");
    assert_eq!(desk.remote.all_requests(), 1);

    let repeat = match client.call_tool_once(call).await.expect("tools/call") {
        CallToolResponse::Complete(result) => result,
        other => panic!("expected a result, got {other:?}"),
    };
    assert_eq!(model(&repeat)["execution"]["delivery"], "local_replay");
    assert_eq!(desk.remote.all_requests(), 1, "the repeat did not run");
}
