//! The fixture server MCP's conformance suite runs against: `mcp-conformance --http ADDR`
//! serves the suite's tools, resources and prompts over Streamable HTTP on ADDR (port 0
//! takes a free one), named on stderr as `listening on URL`.

use std::process::ExitCode;
use std::sync::Arc;

use tool_contract_examples::conformance;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let mut arguments = std::env::args().skip(1);
    let address = match (
        arguments.next().as_deref(),
        arguments.next(),
        arguments.next(),
    ) {
        (Some("--http"), Some(address), None) => address,
        _ => {
            eprintln!("usage: mcp-conformance --http ADDR");
            return ExitCode::from(2);
        }
    };
    match serve(&address).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("mcp-conformance: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(address: &str) -> Result<(), Box<dyn std::error::Error>> {
    let dispatcher = Arc::new(conformance::dispatcher()?);
    let listener = tokio::net::TcpListener::bind(address).await?;
    eprintln!("listening on http://{}", listener.local_addr()?);
    conformance::server(dispatcher).serve_http(listener).await?;
    Ok(())
}
