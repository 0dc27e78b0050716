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
use tool_contract::dispatch::MemoryLedger;
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

#[tokio::test]
async fn an_unanswered_approval_form_closes_after_the_approval_lifetime() {
    let remote = Arc::new(Remote::default());
    let server = McpServer::new(
        Arc::new(dispatcher(&remote, Arc::new(MemoryLedger::new()))),
        alice(),
    )
    .with_approval_ttl(Duration::from_millis(200));
    let (client_side, server_side) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_side).await {
            let _ = running.waiting().await;
        }
    });
    let client = AbsentPerson
        .serve(client_side)
        .await
        .expect("the handshake");

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
    use tool_contract::dispatch::{Dispatcher, HandlerContext, MemoryAuditLog};
    use tool_contract::{RawResult, ToolFailure};
    use tool_contract_tests::kb::{SearchKb, hits, kb_provenance, keys};

    let registry = tool_contract::registry![SearchKb]; // no adapter accepted
    let audit = Arc::new(MemoryAuditLog::new(
        tool_contract_tests::tracker::audit_key(),
    ));
    let dispatcher = Dispatcher::builder(registry, keys())
        .handler::<SearchKb>(|input: SearchKb, _: HandlerContext| async move {
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
        if let Ok(running) = server.serve(server_side).await {
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
