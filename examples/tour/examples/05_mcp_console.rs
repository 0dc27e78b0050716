//! MCP over HTTP with the approvals console on the same port. A waiver now needs the
//! librarian's own passkey: the MCP client is sent to the console page of that approval,
//! where she signs in and signs it. `-- --serve` keeps serving (open the printed invitation
//! in a browser to enrol a passkey); without it, one MCP call shows the way and it stops.
//! Run it: `cargo run --example 05_mcp_console --features console -- --serve`.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tool_contract::console::{Console, ConsoleOptions};
use tool_contract::control::Approver;
use tool_contract::mcp::McpServer;
use tool_contract::prelude::*;
use tool_contract::results::RelyingParty;
use tool_contract_tour::library::{self, Library, WaiveFine};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let origin = format!("http://localhost:{port}"); // passkeys are made for this origin
    let library = Library::with_one_book();
    let party = RelyingParty::new("localhost", "Lending desk", [origin.as_str()])?;
    let builder = Dispatcher::for_development(library::registry())
        .signed_approvals_when(|_: &WaiveFine| true) // a passkey, never a name typed in
        .relying_party(party);
    let dispatcher = Arc::new(library::handlers(builder, &library).build()?);
    let ana = Approver::new("librarian-ana", "Ana Lima", ["city-library"], ["*"]);
    dispatcher.put_approver(ana).await?;
    let options = ConsoleOptions::new(origin.as_str(), "/console");
    let console = Console::new(Arc::clone(&dispatcher), SecretKey::development(), options)?;
    let invitation = console.invitation("librarian-ana", Duration::from_secs(3600));
    let invitation = invitation.await?;
    println!("console: {origin}/console\ninvitation for Ana: {origin}{invitation}");

    let member = Principal::new("city-library", "member:M-1024");
    let server = McpServer::new(dispatcher, member).with_console(&console);
    let serving = tokio::spawn(server.serve_http(listener));
    if std::env::args().any(|argument| argument == "--serve") {
        return Ok(serving.await??);
    }

    // An MCP client of 2026-07-28 that can send its person to a page asks for the waiver.
    let call = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "waive_fine", "arguments": {"member_id": "M-1024", "fine_id": "F-77"},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"url": {}}}}}});
    let answer = post(port, "/mcp", &call.to_string()).await?;
    let page = format!("{origin}/console/approvals/");
    assert!(
        answer.contains(r#""resultType":"input_required""#),
        "{answer}"
    );
    assert!(
        answer.contains(&page),
        "the client is sent to the approval's page: {answer}"
    );
    println!("the client is sent to the console: {page}…");
    assert!(library.done().is_empty(), "nothing runs before Ana signs");
    Ok(())
}

/// POSTs `body` to `path` over HTTP/1.1 and reads the whole answer.
async fn post(port: u16, path: &str, body: &str) -> std::io::Result<String> {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-protocol-version: 2026-07-28\r\n\
         mcp-method: tools/call\r\nmcp-name: waive_fine\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await?;
    Ok(answer)
}
