//! A client of MCP tasks for the tests that start many: speaks 2026-07-28, declares the tasks
//! extension and form elicitation, and starts `send_message` writes, each its own operation.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, Implementation,
};
use rmcp::service::RunningService;
use rmcp::{ClientHandler, Peer, RoleClient};
use tool_contract::control::ControlStore;
use tool_contract::dispatch::Dispatcher;
use tool_contract::mcp::{McpServer, TaskSupport};
use tool_contract::{Principal, ToolSpec};

use crate::tracker::{Remote, dispatcher};

/// The client: tasks and form elicitation declared.
#[derive(Debug, Clone, Copy)]
pub struct TaskClient;

impl ClientHandler for TaskClient {
    fn get_info(&self) -> ClientConfig {
        let capabilities = ClientCapabilities::builder()
            .enable_elicitation()
            .enable_tasks()
            .build();
        ClientConfig::new(capabilities, Implementation::new("task-client", "1.0.0"))
    }
}

/// A session of [`TaskClient`].
pub type TaskSession = RunningService<RoleClient, TaskClient>;

fn every_call(_: &ToolSpec) -> TaskSupport {
    TaskSupport::Optional
}

/// A server over `dispatcher` acting for `principal`, every call of its tools a task.
pub fn server(dispatcher: Arc<Dispatcher>, principal: Principal) -> McpServer {
    McpServer::new(dispatcher, principal).with_tasks(every_call)
}

/// A session with a replica of the tracker over `store`, acting for alice.
pub async fn replica(remote: &Arc<Remote>, store: Arc<dyn ControlStore>) -> TaskSession {
    let dispatcher = Arc::new(dispatcher(remote, store));
    session(server(dispatcher, crate::tracker::alice())).await
}

/// A session with `server`.
pub async fn session(server: McpServer) -> TaskSession {
    crate::mcp::discover(server, TaskClient).await
}

/// A message needing approval, its own operation (`index` makes its text).
///
/// # Panics
///
/// Never: its arguments are an object.
pub fn message(index: usize) -> CallToolRequestParams {
    let arguments =
        serde_json::json!({ "to": "bob@globex.example", "text": format!("hello {index}") });
    let serde_json::Value::Object(arguments) = arguments else {
        unreachable!("an object")
    };
    CallToolRequestParams::new("send_message").with_arguments(arguments)
}

/// What a call was answered: a task's id, or the call's own result.
#[derive(Debug)]
pub enum Started {
    /// A task was made.
    Task(String),
    /// The call was answered at once: its `structuredContent`.
    Answered(serde_json::Value),
}

/// Sends `call` once and says how it was answered.
///
/// # Panics
///
/// When the call fails or asks the client for input.
pub async fn start(client: &Peer<RoleClient>, call: CallToolRequestParams) -> Started {
    match client.call_tool_once(call).await.expect("tools/call") {
        CallToolResponse::Task(created) => Started::Task(created.task.task_id),
        CallToolResponse::Complete(result) => {
            Started::Answered(result.structured_content.unwrap_or_default())
        }
        other => panic!("expected a task or a result, got {other:?}"),
    }
}

/// The task a call was answered with.
///
/// # Panics
///
/// When it was answered otherwise.
pub async fn started(client: &Peer<RoleClient>, call: CallToolRequestParams) -> String {
    match start(client, call).await {
        Started::Task(task_id) => task_id,
        Started::Answered(result) => panic!("expected a task, got {result}"),
    }
}

/// A task's `inputResponses` saying yes to the confirmation form asked under `key`.
///
/// # Panics
///
/// Never: an answer always encodes.
pub fn yes_to(key: &str) -> rmcp::model::InputResponses {
    let mut answer = rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Accept);
    answer.content = Some(serde_json::json!({ "approve": true }));
    let mut responses = rmcp::model::InputResponses::new();
    responses.insert(key.to_owned(), serde_json::to_value(answer).unwrap());
    responses
}

/// The task `task_id` once it is in `status` (within ten seconds).
///
/// # Panics
///
/// When `tasks/get` fails, or the task is not in `status` within ten seconds.
pub async fn until(
    client: &Peer<RoleClient>,
    task_id: &str,
    status: rmcp::model::TaskStatus,
) -> rmcp::model::GetTaskResult {
    for _ in 0..400 {
        let task = client
            .get_task(rmcp::model::GetTaskParams::new(task_id))
            .await
            .expect("tasks/get");
        if task.task.status() == status {
            return task;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    panic!("task {task_id} never reached {status:?}");
}
