//! `refund-desk mcp` end to end: the real binary over a stdio pipe, driven by rmcp's client.

use std::process::Stdio;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, Implementation, JsonObject, ProtocolVersion,
    RequestMetaObject, Tool,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, ErrorData, RoleClient};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{ChildStderr, Command};

/// The person at the client: how they answer an approval form, if the client can show one.
#[derive(Clone)]
struct Person {
    /// `None`: the client declares no elicitation.
    answer: Option<(ElicitationAction, bool)>,
    /// Every form message shown.
    asked: Arc<Mutex<Vec<String>>>,
}

impl Person {
    fn answering(action: ElicitationAction, approve: bool) -> Self {
        Person {
            answer: Some((action, approve)),
            asked: Arc::default(),
        }
    }

    fn without_elicitation() -> Self {
        Person {
            answer: None,
            asked: Arc::default(),
        }
    }

    fn forms_shown(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }
}

impl ClientHandler for Person {
    fn get_info(&self) -> ClientConfig {
        let capabilities = match self.answer {
            Some(_) => ClientCapabilities::builder().enable_elicitation().build(),
            None => ClientCapabilities::default(),
        };
        ClientConfig::new(capabilities, Implementation::new("desk-test", "1.0.0"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let ElicitRequestParams::FormElicitationParams { message, .. } = request else {
            return Err(ErrorData::invalid_params("expected a form", None));
        };
        self.asked.lock().unwrap().push(message);
        let (action, approve) = self.answer.clone().expect("asked without the capability");
        let accepted = action == ElicitationAction::Accept;
        let mut result = ElicitResult::new(action);
        if accepted {
            result.content = Some(json!({ "approve": approve }));
        }
        Ok(result)
    }
}

struct Session {
    client: RunningService<RoleClient, Person>,
    stderr: BufReader<ChildStderr>,
}

/// A store file no other test uses.
fn store_file() -> std::path::PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    std::env::temp_dir().join(format!(
        "refund-desk-test-{}-{}.sqlite",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Starts `refund-desk mcp` on a store of its own and connects `person`'s client to it.
async fn connect(person: Person) -> Session {
    connect_on(person, &store_file()).await
}

/// Starts `refund-desk mcp --store STORE` and connects `person`'s client to it, by the
/// `initialize` handshake.
async fn connect_on(person: Person, store: &std::path::Path) -> Session {
    connect_with(person, store, ClientLifecycleMode::Initialize).await
}

/// Starts `refund-desk mcp` on a store of its own and connects `person`'s client speaking
/// 2026-07-28: `server/discover`, then every request with its own `_meta`.
async fn connect_stateless(person: Person) -> Session {
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    connect_with(person, &store_file(), lifecycle).await
}

async fn connect_with(
    person: Person,
    store: &std::path::Path,
    lifecycle: ClientLifecycleMode,
) -> Session {
    let command = Command::new(env!("CARGO_BIN_EXE_refund-desk")).configure(|command| {
        command.arg("mcp").arg("--store").arg(store);
    });
    let (transport, stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::piped())
        .spawn()
        .expect("the desk starts");
    let client = person
        .serve_with_lifecycle(transport, lifecycle)
        .await
        .expect("the session starts");
    Session {
        client,
        stderr: BufReader::new(stderr.expect("stderr is piped")),
    }
}

impl Session {
    async fn call(&self, tool: &str, arguments: Value) -> CallToolResult {
        let Value::Object(arguments) = arguments else {
            panic!("arguments are an object");
        };
        let request = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        self.client.call_tool(request).await.expect("tools/call")
    }

    async fn call_as(&self, tool: &str, arguments: Value, operation_id: &str) -> CallToolResult {
        let Value::Object(arguments) = arguments else {
            panic!("arguments are an object");
        };
        let mut meta = RequestMetaObject::default();
        meta.insert("tool-contract/operation_id".to_owned(), json!(operation_id));
        let mut request = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        request.meta = Some(meta);
        self.client.call_tool(request).await.expect("tools/call")
    }

    /// Closes the session and returns the audit log the desk wrote.
    async fn close(mut self) -> Vec<u8> {
        let mut line = String::new();
        self.stderr.read_line(&mut line).await.expect("stderr");
        let path = line
            .trim()
            .strip_prefix("audit log: ")
            .expect("the desk names its audit log first")
            .to_owned();
        self.client.cancel().await.expect("the session closes");
        std::fs::read(path).expect("the audit log")
    }
}

/// The refund desk's audit key (`desk::AUDIT_KEY` in the example).
fn audit_key() -> tool_contract::SecretKey {
    tool_contract::SecretKey::new(*b"refund desk audit key not secret").unwrap()
}

/// A refund one supervisor approves (40.00 and under).
fn refund(reason: &str) -> Value {
    json!({ "order_ref": "ORDER-1001", "amount_cents": 3990, "reason": reason })
}

fn code(result: &CallToolResult) -> Option<&str> {
    result.structured_content.as_ref()?["error"]["code"].as_str()
}

fn delivery(result: &CallToolResult) -> Option<&str> {
    result.structured_content.as_ref()?["execution"]["delivery"].as_str()
}

fn text(result: &CallToolResult) -> &str {
    &result.content[0].as_text().expect("a text block").text
}

fn tool<'a>(tools: &'a [Tool], name: &str) -> &'a Tool {
    tools
        .iter()
        .find(|tool| tool.name == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

fn schema(object: &JsonObject) -> Value {
    Value::Object(object.clone())
}

#[tokio::test]
async fn tools_list_gives_each_contract_s_schemas_and_effect() {
    let session = connect(Person::without_elicitation()).await;
    // The client asks for the newest revision; the server answers with the newest it speaks.
    let server = session.client.peer_info().expect("the handshake's answer");
    assert_eq!(server.protocol_version.as_str(), "2025-11-25");
    let tools = session.client.list_all_tools().await.expect("tools/list");
    let mut names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "create_refund_draft",
            "get_order",
            "get_refund_draft",
            "search_kb"
        ]
    );

    let get_order = tool(&tools, "get_order");
    let input = schema(&get_order.input_schema);
    assert_eq!(input["additionalProperties"], false);
    assert_eq!(input["required"], json!(["order_ref"]));
    assert_eq!(
        input["properties"]["order_ref"]["pattern"],
        "^ORDER-[0-9]{4,12}$"
    );
    let output = schema(
        get_order
            .output_schema
            .as_deref()
            .expect("an output schema"),
    );
    assert_eq!(output["type"], "object");
    let data = &output["oneOf"][0]["properties"]["data"];
    assert_eq!(data["properties"]["order_ref"]["type"], "string");
    assert_eq!(data["additionalProperties"], false);
    let annotations = get_order.annotations.as_ref().expect("annotations");
    assert_eq!(annotations.read_only_hint, Some(true));
    // Meaningful only when `readOnlyHint` is false: a read lists neither.
    assert_eq!(annotations.destructive_hint, None);
    assert_eq!(annotations.idempotent_hint, None);
    assert_eq!(annotations.open_world_hint, Some(false));

    let draft = tool(&tools, "create_refund_draft");
    let annotations = draft.annotations.as_ref().expect("annotations");
    assert_eq!(annotations.read_only_hint, Some(false));
    // The draft's contract says `additive`.
    assert_eq!(annotations.destructive_hint, Some(false));
    assert_eq!(annotations.idempotent_hint, Some(false));
    session.close().await;
}

#[tokio::test]
async fn a_read_answers_the_verified_model_result_and_nothing_of_the_audit() {
    let session = connect(Person::without_elicitation()).await;
    let tools = session.client.list_all_tools().await.expect("tools/list");
    let result = session
        .call("get_order", json!({ "order_ref": "ORDER-1001" }))
        .await;
    assert_ne!(result.is_error, Some(true));
    let structured = result
        .structured_content
        .clone()
        .expect("structuredContent");
    assert_eq!(structured["status"], "succeeded");
    assert_eq!(structured["data"]["order_ref"], "ORDER-1001");
    assert_eq!(structured["provenance"]["trust"], "untrusted_data");

    // The text block is the same result, in its canonical bytes.
    let canonical = tool_contract::json::canonical::to_vec(&structured).expect("canonical");
    assert_eq!(text(&result).as_bytes(), canonical.as_slice());

    // Exactly the model half: no audit field, digest or principal on the wire.
    let mut keys: Vec<&str> = structured
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "data",
            "error",
            "execution",
            "provenance",
            "schema_version",
            "status"
        ]
    );
    let wire = serde_json::to_string(&result).expect("serializes");
    for audit_only in [
        "principal_ref",
        "request_sha256",
        "binding",
        "acme-shop",
        "redactions",
    ] {
        assert!(!wire.contains(audit_only), "{audit_only} crossed the wire");
    }

    // The result conforms to the output schema tools/list gave.
    let output_schema = schema(
        tool(&tools, "get_order")
            .output_schema
            .as_deref()
            .expect("an output schema"),
    );
    let validator = jsonschema::draft202012::new(&output_schema).expect("the schema compiles");
    assert!(validator.is_valid(&structured));

    // The audit half went to the desk's log, whose chain verifies.
    let log = session.close().await;
    let head = tool_contract::control::verify_chain(log.as_slice(), &audit_key())
        .expect("the chain verifies");
    assert_eq!(head.records, 1);
}

#[tokio::test]
async fn failures_are_errors_with_their_catalog_code() {
    let session = connect(Person::without_elicitation()).await;
    let unknown = session.call("issue_gift_card", json!({})).await;
    assert_eq!(unknown.is_error, Some(true));
    assert_eq!(code(&unknown), Some("UNKNOWN_TOOL"));

    let bad = session
        .call("get_order", json!({ "order_ref": 1001 }))
        .await;
    assert_eq!(bad.is_error, Some(true));
    assert_eq!(code(&bad), Some("INVALID_ARGUMENTS"));
    assert_eq!(
        bad.structured_content.as_ref().unwrap()["error"]["paths"],
        json!(["/order_ref"])
    );

    let missing = session
        .call("get_order", json!({ "order_ref": "ORDER-9999" }))
        .await;
    assert_eq!(code(&missing), Some("NOT_FOUND"));
    assert_eq!(
        missing.structured_content.as_ref().unwrap()["error"]["alternate_source"],
        false
    );
    session.close().await;
}

#[tokio::test]
async fn a_write_is_approved_by_the_person_at_the_client() {
    let person = Person::answering(ElicitationAction::Accept, true);
    let session = connect(person.clone()).await;
    let made = session
        .call("create_refund_draft", refund("Mug arrived broken"))
        .await;
    assert_ne!(made.is_error, Some(true), "{}", text(&made));
    assert_eq!(delivery(&made), Some("fresh"));
    assert_eq!(
        made.structured_content.as_ref().unwrap()["data"]["draft_ref"],
        "DRAFT-1"
    );
    let forms = person.forms_shown();
    assert_eq!(forms.len(), 1);
    assert!(forms[0].contains("create_refund_draft"));
    assert!(forms[0].contains("Mug arrived broken"));

    // The same call again is the same operation: replayed, not asked for, not run again.
    let again = session
        .call("create_refund_draft", refund("Mug arrived broken"))
        .await;
    assert_eq!(delivery(&again), Some("local_replay"));
    assert_eq!(person.forms_shown().len(), 1);
    let read = session
        .call("get_refund_draft", json!({ "order_ref": "ORDER-1001" }))
        .await;
    assert_eq!(
        read.structured_content.as_ref().unwrap()["data"]["draft_ref"],
        "DRAFT-1"
    );
    session.close().await;
}

#[tokio::test]
async fn on_2026_07_28_a_write_is_approved_through_input_required_and_runs_once() {
    let person = Person::answering(ElicitationAction::Accept, true);
    let session = connect_stateless(person.clone()).await;
    let server = session.client.peer_info().expect("the discovery's answer");
    assert_eq!(server.protocol_version, ProtocolVersion::V_2026_07_28);
    let made = session
        .call("create_refund_draft", refund("Mug arrived broken"))
        .await;
    assert_ne!(made.is_error, Some(true), "{}", text(&made));
    assert_eq!(delivery(&made), Some("fresh"));
    let forms = person.forms_shown();
    assert_eq!(forms.len(), 1, "one confirmation");
    assert!(forms[0].contains("Mug arrived broken"), "{}", forms[0]);

    // The client's retry of the same call replays; nobody is asked, nothing runs again.
    let again = session
        .call("create_refund_draft", refund("Mug arrived broken"))
        .await;
    assert_eq!(delivery(&again), Some("local_replay"));
    assert_eq!(person.forms_shown().len(), 1);
    let read = session
        .call("get_refund_draft", json!({ "order_ref": "ORDER-1001" }))
        .await;
    assert_eq!(
        read.structured_content.as_ref().unwrap()["data"]["draft_ref"],
        "DRAFT-1",
        "one draft"
    );
    session.close().await;
}

#[tokio::test]
async fn a_declined_approval_blocks_the_write() {
    let person = Person::answering(ElicitationAction::Decline, false);
    let session = connect(person.clone()).await;
    let refused = session
        .call("create_refund_draft", refund("Mug arrived broken"))
        .await;
    assert_eq!(refused.is_error, Some(true));
    assert_eq!(code(&refused), Some("BLOCKED"));
    assert_eq!(person.forms_shown().len(), 1);
    let read = session
        .call("get_refund_draft", json!({ "order_ref": "ORDER-1001" }))
        .await;
    assert_eq!(code(&read), Some("NOT_FOUND"), "no draft was made");
    session.close().await;
}

#[tokio::test]
async fn a_dismissed_form_leaves_the_approval_pending() {
    let person = Person::answering(ElicitationAction::Cancel, false);
    let session = connect(person.clone()).await;
    let waiting = session
        .call("create_refund_draft", refund("Mug arrived broken"))
        .await;
    assert_eq!(code(&waiting), Some("APPROVAL_REQUIRED"));
    let meta = waiting.meta.as_ref().expect("_meta");
    assert!(meta.get("tool-contract/pending_approval").is_some());
    session.close().await;
}

#[tokio::test]
async fn without_elicitation_the_model_reads_approval_required_and_the_host_the_preview() {
    let session = connect(Person::without_elicitation()).await;
    let waiting = session
        .call("create_refund_draft", refund("Mug arrived broken"))
        .await;
    assert_eq!(waiting.is_error, Some(true));
    assert_eq!(code(&waiting), Some("APPROVAL_REQUIRED"));
    let pending = &waiting.meta.as_ref().expect("_meta")["tool-contract/pending_approval"];
    assert!(pending["approval_id"].as_str().unwrap().starts_with("apr_"));
    assert_eq!(pending["preview"]["tool"], "create_refund_draft");
    assert_eq!(
        pending["preview"]["arguments"],
        refund("Mug arrived broken")
    );
    assert_eq!(pending["preview_sha256"].as_str().unwrap().len(), 64);
    // The model's half carries no preview and no approval id.
    assert!(!text(&waiting).contains("apr_"));
    session.close().await;
}

/// One draft per order, whatever the client names: `_meta["tool-contract/operation_id"]`
/// identifies a `per_call` write's retries only, and never splits an `[order_ref]` operation.
#[tokio::test]
async fn a_client_named_operation_cannot_make_two_drafts_of_one_order() {
    let person = Person::answering(ElicitationAction::Accept, true);
    let session = connect(person.clone()).await;
    let first = session
        .call_as("create_refund_draft", refund("Mug arrived broken"), "op-1")
        .await;
    let second = session
        .call_as("create_refund_draft", refund("Mug arrived broken"), "op-2")
        .await;
    let third = session
        .call("create_refund_draft", refund("Mug arrived broken"))
        .await;
    let draft = |result: &CallToolResult| {
        result.structured_content.as_ref().unwrap()["data"]["draft_ref"].clone()
    };
    assert_eq!(draft(&first), "DRAFT-1", "{}", text(&first));
    assert_eq!(delivery(&first), Some("fresh"));
    for again in [&second, &third] {
        assert_eq!(draft(again), "DRAFT-1", "{}", text(again));
        assert_eq!(delivery(again), Some("local_replay"));
    }
    assert_eq!(person.forms_shown().len(), 1, "one person asked, once");
    session.close().await;
}

#[tokio::test]
async fn a_finished_write_is_replayed_after_the_desk_restarts_on_its_store() {
    let store = store_file();
    let first = connect_on(Person::answering(ElicitationAction::Accept, true), &store).await;
    let made = first
        .call_as("create_refund_draft", refund("damaged"), "refund-once")
        .await;
    assert_eq!(code(&made), None, "{}", text(&made));
    assert_eq!(delivery(&made), Some("fresh"));
    first.close().await;
    // A new process, a freshly seeded desk: only the store remembers the write.
    let person = Person::answering(ElicitationAction::Accept, true);
    let second = connect_on(person.clone(), &store).await;
    let again = second
        .call_as("create_refund_draft", refund("damaged"), "refund-once")
        .await;
    assert_eq!(code(&again), None, "{}", text(&again));
    assert_eq!(delivery(&again), Some("local_replay"));
    assert!(person.forms_shown().is_empty(), "nobody is asked again");
    second.close().await;
    for suffix in ["", "-wal", "-shm"] {
        let mut path = store.clone().into_os_string();
        path.push(suffix);
        let _ = std::fs::remove_file(path);
    }
}

#[tokio::test]
async fn a_refund_above_forty_needs_two_approvals_over_mcp_as_in_the_replay() {
    let person = Person::answering(ElicitationAction::Accept, true);
    let session = connect(person.clone()).await;
    let large = json!({ "order_ref": "ORDER-1001", "amount_cents": 4990, "reason": "broken" });
    let asked = session.call("create_refund_draft", large.clone()).await;
    assert_eq!(code(&asked), Some("APPROVAL_REQUIRED"), "{}", text(&asked));
    let forms = person.forms_shown();
    assert!(forms[0].contains("2 different approvers"), "{}", forms[0]);
    // The person at the client approved once; the session's principal cannot approve twice.
    let again = session.call("create_refund_draft", large).await;
    assert_eq!(code(&again), Some("APPROVAL_REQUIRED"), "{}", text(&again));
    let read = session
        .call("get_refund_draft", json!({ "order_ref": "ORDER-1001" }))
        .await;
    assert_eq!(code(&read), Some("NOT_FOUND"), "nothing was drafted");
    session.close().await;
}

#[test]
fn a_session_that_only_discovers_and_closes_ends_the_desk_cleanly() {
    use std::io::Write;
    let store = store_file();
    let mut desk = std::process::Command::new(env!("CARGO_BIN_EXE_refund-desk"))
        .arg("mcp")
        .arg("--store")
        .arg(&store)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the desk starts");
    let discover = json!({
        "jsonrpc": "2.0", "id": 1, "method": "server/discover",
        "params": { "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": { "name": "probe", "version": "1" }
        } }
    });
    let mut stdin = desk.stdin.take().expect("stdin is piped");
    writeln!(stdin, "{discover}").unwrap();
    drop(stdin);
    let output = desk.wait_with_output().expect("the desk ends");
    let answer = String::from_utf8_lossy(&output.stdout);
    assert!(answer.contains("supportedVersions"), "{answer}");
    assert!(output.status.success(), "{:?}", output.status);
}
