//! `McpServer` in process, over an in-memory pipe: what the stdio end-to-end test of the
//! refund desk cannot set up (a short approval lifetime, a person who never answers).

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    Implementation,
};
use rmcp::service::RequestContext;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tool_contract::control::MemoryStore;
use tool_contract::mcp::McpServer;
use tool_contract_tests::tracker::{Remote, alice, dispatcher};

/// A client that shows approval forms to a person who never answers.
struct AbsentPerson;

impl ClientHandler for AbsentPerson {
    fn get_info(&self) -> ClientConfig {
        let capabilities = ClientCapabilities::builder().enable_elicitation().build();
        ClientConfig::new(capabilities, Implementation::new("absent", "1.0.0"))
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        tokio::time::sleep(Duration::from_secs(60)).await;
        Err(ErrorData::internal_error("nobody answered", None))
    }
}

/// `server` served over an in-memory pipe, and the session of an [`AbsentPerson`] with it.
async fn absent_persons_session(
    server: McpServer,
) -> rmcp::service::RunningService<RoleClient, AbsentPerson> {
    let (client_side, server_side) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let (read, write) = tokio::io::split(server_side);
        if let Ok(running) = server.serve_io(read, write).await {
            let _ = running.waiting().await;
        }
    });
    AbsentPerson
        .serve(client_side)
        .await
        .expect("the handshake")
}

#[tokio::test]
async fn an_unanswered_approval_form_closes_after_the_approval_lifetime() {
    let remote = Arc::new(Remote::default());
    let server = McpServer::new(
        Arc::new(dispatcher(&remote, Arc::new(MemoryStore::new()))),
        alice(),
    )
    .with_approval_ttl(Duration::from_millis(200));
    let client = absent_persons_session(server).await;

    let Value::Object(arguments) = json!({ "title": "Printer on fire", "body": "Floor 3." }) else {
        unreachable!("an object literal")
    };
    let started = Instant::now();
    let result = client
        .call_tool(CallToolRequestParams::new("file_issue").with_arguments(arguments))
        .await
        .expect("tools/call is answered");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the form was left open"
    );
    let structured = result.structured_content.expect("structuredContent");
    assert_eq!(structured["error"]["code"], "APPROVAL_REQUIRED");
    let meta = result.meta.expect("_meta");
    assert!(meta.get("tool-contract/pending_approval").is_some());
    assert_eq!(remote.all_requests(), 0, "nothing ran");
}

#[tokio::test]
async fn a_registry_that_does_not_accept_mcp_calls_answers_none() {
    use tool_contract::control::MemoryAuditLog;
    use tool_contract::dispatch::{Dispatcher, HandlerContext};
    use tool_contract::{RawResult, ToolFailure};
    use tool_contract_tests::kb::{SearchKb, hits, kb_provenance, keys};

    // A registry that names its adapters, and not MCP's.
    let registry = tool_contract::registry![SearchKb]
        .into_builder()
        .adapter(tool_contract::providers::openai::ADAPTER)
        .build();
    let audit = Arc::new(MemoryAuditLog::new(
        tool_contract_tests::tracker::audit_key(),
    ));
    let dispatcher = Dispatcher::builder(registry, keys())
        .handler(|input: SearchKb, _: HandlerContext| async move {
            Ok::<_, ToolFailure>(RawResult::new(
                hits(&input.query).to_string(),
                kb_provenance(),
            ))
        })
        .audit_sink(audit.clone())
        .build()
        .expect("built");
    let server = McpServer::new(Arc::new(dispatcher), alice());
    let (client_side, server_side) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let (read, write) = tokio::io::split(server_side);
        if let Ok(running) = server.serve_io(read, write).await {
            let _ = running.waiting().await;
        }
    });
    let client = ().serve(client_side).await.expect("the handshake");
    let Value::Object(arguments) = json!({ "query": "refund" }) else {
        unreachable!("an object literal")
    };
    let answer = client
        .call_tool(CallToolRequestParams::new("search_kb").with_arguments(arguments))
        .await;
    let error = answer.expect_err("no result for a caller the registry does not accept");
    assert!(error.to_string().contains("mcp::ADAPTER"), "{error}");
    assert!(audit.lines().is_empty(), "the call never ran");
}

/// A session driven by hand, line by line: what no rmcp client can send (a repeated member).
struct RawSession {
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
    write: tokio::io::WriteHalf<tokio::io::DuplexStream>,
}

impl RawSession {
    async fn start(server: McpServer) -> Self {
        use tokio::io::AsyncBufReadExt;
        let (client_side, server_side) = tokio::io::duplex(1 << 16);
        tokio::spawn(async move {
            let (read, write) = tokio::io::split(server_side);
            if let Ok(running) = server.serve_io(read, write).await {
                let _ = running.waiting().await;
            }
        });
        let (read, write) = tokio::io::split(client_side);
        let mut session = RawSession {
            lines: tokio::io::BufReader::new(read).lines(),
            write,
        };
        session
            .send(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#)
            .await;
        session.answer_to(0).await;
        session
            .send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .await;
        session
    }

    async fn send(&mut self, line: &str) {
        use tokio::io::AsyncWriteExt;
        self.write.write_all(line.as_bytes()).await.unwrap();
        self.write.write_all(b"\n").await.unwrap();
    }

    /// The response to request `id`, skipping everything else the server sends.
    async fn answer_to(&mut self, id: u64) -> Value {
        loop {
            let line = self
                .lines
                .next_line()
                .await
                .unwrap()
                .expect("the session is open");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }

    async fn call(&mut self, id: u64, name: &str, arguments: &str) -> Value {
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{name}","arguments":{arguments},"_meta":{{"tool-contract/operation_id":"op-{id}"}}}}}}"#
        );
        self.send(&line).await;
        self.answer_to(id).await
    }
}

fn error_code(response: &Value) -> Option<&str> {
    response["result"]["structuredContent"]["error"]["code"].as_str()
}

/// Issue 14, finding 9: rmcp parses arguments into a map, which collapses a repeated member;
/// the server validates the client's own bytes instead.
#[tokio::test]
async fn mcp_arguments_are_validated_from_the_clients_own_bytes() {
    let remote = Arc::new(Remote::default());
    let dispatcher = Arc::new(dispatcher(&remote, Arc::new(MemoryStore::new())));
    let mut session = RawSession::start(McpServer::new(dispatcher, alice())).await;

    let repeated = session
        .call(1, "label_issue", r#"{"number":7,"number":8,"label":"bug"}"#)
        .await;
    assert_eq!(
        error_code(&repeated),
        Some("INVALID_ARGUMENTS"),
        "{repeated}"
    );
    let written = session
        .call(2, "label_issue", r#"{ "label" : "bug", "number" : 7 }"#)
        .await;
    assert_eq!(
        written["result"]["structuredContent"]["status"], "succeeded",
        "{written}"
    );
    // One request reached the tracker: the second.
    assert_eq!(remote.all_requests(), 1);
}

/// `_meta["tool-contract/operation_id"]` names the retries of a `per_call` write only: three
/// calls of a `same_arguments` write named op-1, op-2 and op-3 are one operation, run once.
#[tokio::test]
async fn a_client_named_operation_id_cannot_split_a_contracts_operation() {
    let remote = Arc::new(Remote::default());
    let dispatcher = Arc::new(dispatcher(&remote, Arc::new(MemoryStore::new())));
    let mut session = RawSession::start(McpServer::new(dispatcher, alice())).await;
    let mut deliveries = Vec::new();
    for id in 1..=3 {
        let answer = session
            .call(id, "label_issue", r#"{"number":7,"label":"bug"}"#)
            .await;
        let result = &answer["result"]["structuredContent"];
        assert_eq!(result["status"], "succeeded", "{answer}");
        deliveries.push(result["execution"]["delivery"].clone());
    }
    assert_eq!(deliveries, ["fresh", "local_replay", "local_replay"]);
    assert_eq!(remote.all_requests(), 1);
}

#[tokio::test]
async fn a_message_past_the_largest_argument_limit_is_never_read_and_the_session_goes_on() {
    let remote = Arc::new(Remote::default());
    let dispatcher = Arc::new(dispatcher(&remote, Arc::new(MemoryStore::new())));
    let mut session = RawSession::start(McpServer::new(dispatcher, alice())).await;
    let huge = format!(r#"{{"number":7,"label":"{}"}}"#, "x".repeat(2 << 20));
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"label_issue","arguments":{huge}}}}}"#
    );
    session.send(&line).await;
    let after = session.call(2, "read_doc", r#"{"doc_id":"d-1"}"#).await;
    assert_eq!(
        after["result"]["structuredContent"]["status"], "succeeded",
        "{after}"
    );
    assert_eq!(remote.reads(), 1, "only the read after it ran");
}

#[tokio::test]
async fn a_server_that_does_not_read_its_own_session_refuses_calls() {
    let remote = Arc::new(Remote::default());
    let server = McpServer::new(
        Arc::new(dispatcher(&remote, Arc::new(MemoryStore::new()))),
        alice(),
    );
    let (client_side, server_side) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_side).await {
            let _ = running.waiting().await;
        }
    });
    let client = ().serve(client_side).await.expect("the handshake");
    let Value::Object(arguments) = json!({ "doc_id": "d-1" }) else {
        unreachable!("an object literal")
    };
    let error = client
        .call_tool(CallToolRequestParams::new("read_doc").with_arguments(arguments))
        .await
        .expect_err("refused");
    assert!(error.to_string().contains("client's bytes"), "{error}");
    assert_eq!(remote.reads(), 0);
}

/// A client whose person approves every form.
struct ApprovingPerson;

impl ClientHandler for ApprovingPerson {
    fn get_info(&self) -> ClientConfig {
        let capabilities = ClientCapabilities::builder().enable_elicitation().build();
        ClientConfig::new(capabilities, Implementation::new("approving", "1.0.0"))
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let mut result = ElicitResult::new(rmcp::model::ElicitationAction::Accept);
        result.content = Some(json!({ "approve": true }));
        Ok(result)
    }
}

/// Issue 14, finding 11: an approval lifetime too long for the calendar panicked the server.
#[tokio::test]
async fn an_approval_lifetime_past_the_calendar_lasts_as_long_as_one_can() {
    let remote = Arc::new(Remote::default());
    let server = McpServer::new(
        Arc::new(dispatcher(&remote, Arc::new(MemoryStore::new()))),
        alice(),
    )
    .with_approval_ttl(Duration::MAX);
    let (client_side, server_side) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let (read, write) = tokio::io::split(server_side);
        if let Ok(running) = server.serve_io(read, write).await {
            let _ = running.waiting().await;
        }
    });
    let client = ApprovingPerson
        .serve(client_side)
        .await
        .expect("the handshake");
    let Value::Object(arguments) = json!({ "to": "bob@globex.example", "text": "hello" }) else {
        unreachable!("an object literal")
    };
    let call =
        client.call_tool(CallToolRequestParams::new("send_message").with_arguments(arguments));
    let result = tokio::time::timeout(Duration::from_secs(30), call)
        .await
        .expect("the server answers (it did not panic)")
        .expect("an answer");
    let status = &result.structured_content.as_ref().unwrap()["status"];
    assert_eq!(status, "succeeded", "{result:?}");
}

/// Lend a book (each call its own operation).
#[derive(Debug, serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Lent, effect = non_idempotent_write, approval = not_required,
                reconcile = manual, operation = per_call)]
struct LendBook {
    #[tool_contract(max_len = 13)]
    isbn: String,
}

/// Mark a book lost (once per book).
#[derive(Debug, serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Lent, effect = idempotent_write, approval = not_required,
                operation = [isbn])]
struct MarkLost {
    #[tool_contract(max_len = 13)]
    isbn: String,
}

#[derive(Debug, serde::Serialize, tool_contract::ToolOutput)]
struct Lent {
    #[tool_output(bound = isbn)]
    isbn: String,
}

#[tokio::test]
async fn an_mcp_call_is_named_by_its_contracts_operation_rule() {
    use std::sync::atomic::{AtomicU32, Ordering};
    let lent = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&lent);
    let dispatcher =
        tool_contract::dispatch::Dispatcher::for_development(tool_contract::registry![
            LendBook, MarkLost
        ])
        .handler(move |input: LendBook| {
            counter.fetch_add(1, Ordering::Relaxed);
            async move { Ok::<_, tool_contract::ToolFailure>(Lent { isbn: input.isbn }) }
        })
        .handler(|input: MarkLost| async move {
            Ok::<_, tool_contract::ToolFailure>(Lent { isbn: input.isbn })
        })
        .build()
        .unwrap();
    let mut session = RawSession::start(McpServer::new(Arc::new(dispatcher), alice())).await;
    let unnamed = |id: u64, name: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{name}","arguments":{{"isbn":"9780141439518"}}}}}}"#
        )
    };
    let delivery =
        |answer: &Value| answer["result"]["structuredContent"]["execution"]["delivery"].clone();
    // No id of the model's call crosses MCP: each lending is a lending.
    for id in [1, 2] {
        session.send(&unnamed(id, "lend_book")).await;
        let answer = session.answer_to(id).await;
        assert_eq!(delivery(&answer), "fresh", "{answer}");
    }
    assert_eq!(lent.load(Ordering::Relaxed), 2);
    // Named by its field: the second is the first, replayed.
    session.send(&unnamed(3, "mark_lost")).await;
    assert_eq!(delivery(&session.answer_to(3).await), "fresh");
    session.send(&unnamed(4, "mark_lost")).await;
    assert_eq!(delivery(&session.answer_to(4).await), "local_replay");
}

/// A write is destructive unless its contract says it only adds: MCP's `destructiveHint` is
/// `true` for a write that keeps one label per key (`idempotent_write`) as for one that may
/// repeat, whatever its idempotency says.
#[tokio::test]
async fn every_write_is_listed_destructive_unless_its_contract_says_additive() {
    let server = McpServer::new(
        Arc::new(dispatcher(&Remote::new(), Arc::new(MemoryStore::new()))),
        alice(),
    );
    let client = absent_persons_session(server).await;
    let tools = client.list_all_tools().await.expect("tools/list");
    let hints = |name: &str| {
        let tool = tools.iter().find(|tool| tool.name == name).expect(name);
        let annotations = tool.annotations.as_ref().expect("annotations");
        (annotations.destructive_hint, annotations.idempotent_hint)
    };
    assert_eq!(hints("label_issue"), (Some(true), Some(true)));
    assert_eq!(hints("file_issue"), (Some(true), Some(false)));
}
