//! A handler's progress reports (`HandlerContext::report_progress`) reach an MCP client that
//! asked for them with a `progressToken`, as `notifications/progress` under its token, in
//! order. (rmcp's client names a token of its own in every request, so a client that asks
//! for none is not made here; `McpServer` sends nothing without one.)

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ProgressNotificationParam};
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient};
use tool_contract::dispatch::{Dispatcher, HandlerContext, Progress};
use tool_contract::mcp::McpServer;
use tool_contract::{Principal, ToolContract, ToolFailure, ToolOutput};
use tool_contract_tests::mcp::handshake;

/// Count to three, saying how far it got.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Counted, effect = read_only)]
struct CountToThree {}

#[derive(Debug, serde::Serialize, ToolOutput)]
struct Counted {
    counted: u32,
}

async fn count(_: CountToThree, cx: HandlerContext) -> Result<Counted, ToolFailure> {
    for step in 1..=3 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        cx.report_progress(Progress::of(f64::from(step), 3.0).with_message(format!("at {step}")));
    }
    Ok(Counted { counted: 3 })
}

fn server() -> McpServer {
    let dispatcher = Dispatcher::for_development(tool_contract::registry![CountToThree])
        .handler(count)
        .build()
        .unwrap();
    McpServer::new(Arc::new(dispatcher), Principal::new("acme", "ana"))
}

/// A client that keeps every progress notification it is sent.
#[derive(Clone, Default)]
struct Listener {
    heard: Arc<Mutex<Vec<ProgressNotificationParam>>>,
}

impl ClientHandler for Listener {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.heard.lock().unwrap().push(params);
    }
}

/// What `listener` heard once `count` reports arrived (or a second passed).
async fn heard(listener: &Listener, count: usize) -> Vec<ProgressNotificationParam> {
    for _ in 0..100 {
        if listener.heard.lock().unwrap().len() >= count {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    listener.heard.lock().unwrap().clone()
}

#[tokio::test]
async fn a_handlers_reports_reach_the_client_that_asked_in_order_under_its_token() {
    let listener = Listener::default();
    let client = handshake(server(), listener.clone()).await;
    let result = client
        .call_tool(CallToolRequestParams::new("count_to_three"))
        .await
        .unwrap();
    assert_eq!(result.structured_content.unwrap()["data"]["counted"], 3);
    let heard = heard(&listener, 3).await;
    let steps: Vec<(f64, Option<f64>, Option<&str>)> = heard
        .iter()
        .map(|param| (param.progress, param.total, param.message.as_deref()))
        .collect();
    assert_eq!(
        steps,
        [
            (1.0, Some(3.0), Some("at 1")),
            (2.0, Some(3.0), Some("at 2")),
            (3.0, Some(3.0), Some("at 3")),
        ]
    );
    // The token rmcp's client named for the call.
    assert!(
        heard
            .iter()
            .all(|param| param.progress_token == heard[0].progress_token)
    );
}
