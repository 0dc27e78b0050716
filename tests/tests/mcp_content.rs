//! A succeeded call's verified data shown as the content blocks the application's view makes
//! of it (`McpServer::with_content`): `structuredContent` stays the whole verified result, a
//! failure stays its catalog answer, and a tool the view passes over keeps its canonical JSON.

use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock};
use serde_json::{Value, json};
use std::sync::Arc;
use tool_contract::control::MemoryStore;
use tool_contract::mcp::McpServer;
use tool_contract_tests::mcp::handshake;
use tool_contract_tests::tracker::{Fault, Remote, alice, dispatcher};

/// The tracker's tools, `read_doc`'s document shown as a sentence and an embedded resource.
fn server(remote: &Arc<Remote>) -> McpServer {
    let dispatcher = Arc::new(dispatcher(remote, Arc::new(MemoryStore::new())));
    McpServer::new(dispatcher, alice()).with_content(|spec, data| {
        let text = data.get("text")?.as_str()?;
        (spec.name() == "read_doc").then(|| {
            vec![
                ContentBlock::text(format!("The document reads: {text}")),
                ContentBlock::embedded_text("doc://d1", text),
            ]
        })
    })
}

fn call(tool: &str, arguments: Value) -> CallToolRequestParams {
    let Value::Object(arguments) = arguments else {
        panic!("an object");
    };
    CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments)
}

fn text_of(result: &CallToolResult, block: usize) -> &str {
    match &result.content[block] {
        ContentBlock::Text(text) => &text.text,
        other => panic!("expected text, got {other:?}"),
    }
}

#[tokio::test]
async fn a_succeeded_result_is_shown_as_the_views_blocks_beside_the_whole_verified_result() {
    let remote = Remote::new();
    let client = handshake(server(&remote), ()).await;
    let result = client
        .call_tool(call("read_doc", json!({ "doc_id": "d1" })))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(false));
    assert_eq!(result.content.len(), 2);
    assert_eq!(text_of(&result, 0), "The document reads: document d1");
    match &result.content[1] {
        ContentBlock::Resource(embedded) => {
            assert_eq!(
                serde_json::to_value(&embedded.resource).unwrap()["uri"],
                "doc://d1"
            );
        }
        other => panic!("expected an embedded resource, got {other:?}"),
    }
    let structured = result.structured_content.expect("the verified result");
    assert_eq!(structured["status"], "succeeded");
    assert_eq!(structured["data"], json!({ "text": "document d1" }));
    assert_eq!(structured["provenance"]["trust"], "untrusted_data");
}

#[tokio::test]
async fn a_failure_keeps_its_catalog_answer_whatever_the_view() {
    let remote = Remote::new();
    remote.script(&[Fault::NotSent, Fault::NotSent, Fault::NotSent]);
    let client = handshake(server(&remote), ()).await;
    let result = client
        .call_tool(call("read_doc", json!({ "doc_id": "d1" })))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    assert_eq!(result.content.len(), 1);
    let shown: Value = serde_json::from_str(text_of(&result, 0)).unwrap();
    assert_eq!(Some(&shown), result.structured_content.as_ref());
    assert_eq!(shown["error"]["recovery"], "retry_after", "{shown}");
}

#[tokio::test]
async fn a_tool_the_view_passes_over_keeps_its_canonical_json() {
    let remote = Remote::new();
    let client = handshake(server(&remote), ()).await;
    let result = client
        .call_tool(call("find_issue", json!({ "title": "Printer on fire" })))
        .await
        .unwrap();
    assert_eq!(result.content.len(), 1);
    let shown: Value = serde_json::from_str(text_of(&result, 0)).unwrap();
    assert_eq!(Some(&shown), result.structured_content.as_ref());
}
