//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, under Node 22)
//! against `refund-desk mcp --http`: every scenario passes but those
//! `conformance/expected-failures.yml` lists, each for a tool or capability the desk does not
//! have; the suite itself fails the run on an unexpected failure and on a listed scenario
//! that passes.

use std::path::Path;

use tokio::process::Command;
use tool_contract_tests::issuer::{node, node_folder};
use tool_contract_tests::listening::listening;

#[tokio::test]
async fn the_desk_passes_mcps_conformance_suite_but_for_what_it_does_not_have() {
    let Some(node) = node("the conformance suite") else {
        return;
    };
    let scratch =
        std::env::temp_dir().join(format!("refund-desk-conformance-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_refund-desk"));
    command
        .args(["mcp", "--http", "127.0.0.1:0", "--store"])
        .arg(scratch.join("desk.sqlite"));
    let (_desk, address) = listening(command).await;

    let suite = node_folder().join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    let expected =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/expected-failures.yml");
    let run = Command::new(node)
        .arg(suite)
        .args(["server", "--url", &format!("http://{address}/mcp")])
        .arg("--expected-failures")
        .arg(expected)
        .arg("--output-dir")
        .arg(scratch.join("results"))
        .output()
        .await
        .expect("the suite runs");
    let report = String::from_utf8_lossy(&run.stdout);
    let summary = report.split("=== SUMMARY ===").nth(1).unwrap_or(&report);
    let _ = std::fs::remove_dir_all(&scratch);
    assert!(
        run.status.success(),
        "{summary}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(
        summary.contains("server-initialize"),
        "the suite ran its scenarios: {summary}"
    );
}
