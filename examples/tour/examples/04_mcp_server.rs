//! The lending desk as an MCP server. `-- --stdio` serves it to an MCP host over stdio (its
//! command: `target/debug/examples/04_mcp_server --stdio`); without it, an MCP client in
//! this process lists the tools and lends the book, each call through the whole pipeline.
//! Run it: `cargo run --example 04_mcp_server --features mcp`.

use std::sync::Arc;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use tool_contract::mcp::McpServer;
use tool_contract::prelude::*;
use tool_contract_tour::library::{self, Library};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let library = Library::with_one_book();
    let builder = Dispatcher::for_development(library::registry());
    let dispatcher = Arc::new(library::handlers(builder, &library).build()?);
    // Over stdio the server acts for one principal, the person at the host; over HTTP each
    // request proves its own with an OAuth access token (`McpServer::authenticated`).
    let member = Principal::new("city-library", "member:M-1024");
    let server = McpServer::new(dispatcher, member).with_server_info("lending-desk", "1.0.0");
    if std::env::args().any(|argument| argument == "--stdio") {
        server.serve_stdio().await?;
        return Ok(());
    }

    // A client at the other end of an in-memory pipe, as a host would be at the other end
    // of stdio.
    let (client_end, server_end) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let (read, write) = tokio::io::split(server_end);
        if let Ok(running) = server.serve_io(read, write).await {
            let _ = running.waiting().await;
        }
    });
    let client = ().serve(client_end).await?;
    for tool in client.list_all_tools().await? {
        let output = tool.output_schema.as_ref().map_or(0, |schema| schema.len());
        println!(
            "tool {}: {} (its result's schema: {output} members)",
            tool.name,
            tool.description.unwrap_or_default()
        );
    }
    let serde_json::Value::Object(arguments) =
        serde_json::json!({ "member_id": "M-1024", "isbn": "9780141439518" })
    else {
        unreachable!("an object");
    };
    let call = CallToolRequestParams::new("borrow_book").with_arguments(arguments);
    let result = client.call_tool(call).await?;
    let content = result.structured_content.ok_or("no structured content")?;
    println!("borrow_book: {content}");
    client.cancel().await?;

    assert_eq!(content["status"], "succeeded");
    assert_eq!(library.done(), ["lent 9780141439518"]);
    Ok(())
}
