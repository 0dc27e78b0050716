//! Resources and prompts served beside the contracts' tools on one `McpServer`, by the
//! application's own rmcp `ServerHandler`: declared with its capabilities, answered by it on
//! 2026-07-28 and on the handshake revisions; its own tools never listed nor called; and a
//! server without one answers those methods as not found.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, ListPromptsResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, Prompt, PromptMessage, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, Resource, ResourceContents, Role, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceError};
use tool_contract::control::MemoryStore;
use tool_contract::mcp::McpServer;
use tool_contract_tests::mcp::{discover, handshake};
use tool_contract_tests::tracker::{Remote, alice, dispatcher};

/// The desk's policies as resources, a prompt to explain one, and a tool of its own that the
/// server must never let through (`called` says whether it was).
#[derive(Clone, Default)]
struct Policies {
    called: Arc<AtomicBool>,
}

const REFUNDS: &str = "policy://refunds";

impl ServerHandler for Policies {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_resources()
                .enable_prompts()
                .enable_tools()
                .build(),
        )
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let refunds = Resource::new(REFUNDS, "refunds");
        Ok(ListResourcesResult::with_all_items(vec![refunds]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if request.uri != REFUNDS {
            return Err(ErrorData::resource_not_found("no such policy", None));
        }
        let text = ResourceContents::text("Refunds above 1,000 need two supervisors.", REFUNDS);
        Ok(ReadResourceResult::new(vec![text]).into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let explain = Prompt::new("explain_policy", Some("Explain a policy"), None);
        Ok(ListPromptsResult::with_all_items(vec![explain]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let message = PromptMessage::new_text(Role::User, format!("Explain {}.", request.name));
        Ok(GetPromptResult::new(vec![message]).into())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = Arc::new(serde_json::Map::new());
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "wire_money",
            "Outside every contract",
            schema,
        )]))
    }

    async fn call_tool(
        &self,
        _request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.called.store(true, Ordering::Relaxed);
        Ok(CallToolResult::success(vec![]).into())
    }
}

fn server(policies: Option<&Policies>) -> McpServer {
    let dispatcher = dispatcher(&Remote::new(), Arc::new(MemoryStore::new()));
    let server = McpServer::new(Arc::new(dispatcher), alice());
    match policies {
        Some(policies) => server.with_handler(policies.clone()),
        None => server,
    }
}

/// The JSON-RPC error code a request was refused with.
fn error_code<T: std::fmt::Debug>(answer: Result<T, ServiceError>) -> i32 {
    match answer {
        Err(ServiceError::McpError(error)) => error.code.0,
        other => panic!("expected an error, got {other:?}"),
    }
}

#[tokio::test]
async fn resources_and_prompts_are_the_applications_beside_the_contracts_tools() {
    for stateless in [true, false] {
        let policies = Policies::default();
        let client = if stateless {
            discover(server(Some(&policies)), ()).await
        } else {
            handshake(server(Some(&policies)), ()).await
        };
        let capabilities = client
            .peer_info()
            .expect("server info")
            .capabilities
            .clone();
        assert!(capabilities.resources.is_some() && capabilities.prompts.is_some());

        let resources = client.list_resources(None).await.expect("resources/list");
        assert_eq!(resources.resources[0].uri, REFUNDS);
        let read = client
            .read_resource(ReadResourceRequestParams::new(REFUNDS))
            .await
            .expect("resources/read");
        let ResourceContents::TextResourceContents { text, .. } = &read.contents[0] else {
            panic!("text: {read:?}");
        };
        assert!(text.starts_with("Refunds above 1,000"), "{text}");
        // The handler's refusal reaches the client (as rmcp writes it for the revision).
        match client
            .read_resource(ReadResourceRequestParams::new("policy://none"))
            .await
        {
            Err(ServiceError::McpError(error)) => assert_eq!(error.message, "no such policy"),
            other => panic!("expected the handler's refusal, got {other:?}"),
        }
        let prompts = client.list_prompts(None).await.expect("prompts/list");
        assert_eq!(prompts.prompts[0].name, "explain_policy");
        let prompt = client
            .get_prompt(GetPromptRequestParams::new("explain_policy"))
            .await
            .expect("prompts/get");
        assert_eq!(prompt.messages.len(), 1);

        // The tools are the contracts', and only theirs.
        let tools = client.list_all_tools().await.expect("tools/list");
        assert!(tools.iter().any(|tool| tool.name == "read_doc"));
        assert!(
            tools.iter().all(|tool| tool.name != "wire_money"),
            "{tools:?}"
        );
        let refused: Result<CallToolResult, _> = client
            .call_tool(CallToolRequestParams::new("wire_money"))
            .await;
        assert!(refused.is_err() || refused.unwrap().is_error == Some(true));
        assert!(
            !policies.called.load(Ordering::Relaxed),
            "never the handler's tool"
        );
    }
}

#[tokio::test]
async fn a_server_without_a_handler_has_no_resources_or_prompts() {
    let client = discover(server(None), ()).await;
    let capabilities = client
        .peer_info()
        .expect("server info")
        .capabilities
        .clone();
    assert!(capabilities.resources.is_none() && capabilities.prompts.is_none());
    assert_eq!(error_code(client.list_resources(None).await), -32601);
    assert_eq!(error_code(client.list_prompts(None).await), -32601);
}
