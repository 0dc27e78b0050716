//! MCP 2025-11-25's tasks utility, served on the same task rows as the 2026-07-28 extension:
//! `params.task` on `tools/call`, a tool's `execution.taskSupport`, and `tasks/get`,
//! `tasks/result`, `tasks/list` and `tasks/cancel` in the utility's shapes
//! (modelcontextprotocol.io/specification/2025-11-25/basic/utilities/tasks).
//!
//! rmcp 3.11 reads the 2026-07-28 shapes only, so the session's transport hands the server
//! the utility's requests as requests of its own (see [`super::utility_transport`]), which
//! [`McpServer::answer_utility`] answers here.

use rmcp::ErrorData;
use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CustomRequest, CustomResult, ErrorCode, GetMeta,
    InputRequests, InputResponses, JsonObject, PaginatedRequestParams, UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleServer};
use serde::Deserialize;
use serde_json::{Value, json};

use super::jsonrpc::misread;
use super::server::{McpServer, server_request, without_handshake};
use super::task_options::TaskSupport;
use super::tasks::{no_such_task, store_failed, wire_task};
use super::utility_transport::speaks_utility;
use crate::control::{Changed, TaskChange, TaskMoveError, TaskRow, TaskStatus, is_task_id};
use crate::dispatch::SAFETY_POLL;

/// The `_meta` key that ties a message to its task.
const RELATED_TASK_META: &str = "io.modelcontextprotocol/related-task";

/// The most tasks one `tasks/list` page holds.
const TASKS_PAGE: usize = 50;

/// A task row in the utility's shape: a tool call that ended with `isError` reads `failed`,
/// as the utility has it, unless what it answers is that the action happened or may have
/// (`execution.outcome` `committed` or `unknown`: a write approved with changes, an outcome
/// unknown, unconfirmed or disputed): never `failed` over an effect that may exist.
fn utility_task(row: &TaskRow) -> Value {
    let tool_failed = row.status == TaskStatus::Completed
        && row
            .outcome
            .as_deref()
            .and_then(|stored| serde_json::from_str::<JsonObject>(stored).ok())
            .is_some_and(|result| {
                result.get("isError") == Some(&Value::Bool(true))
                    && result
                        .get("structuredContent")
                        .and_then(|content| content.pointer("/execution/outcome"))
                        == Some(&json!("not_started"))
            });
    utility_shape(&wire_task(row), tool_failed)
}

/// The extension's task as the utility writes it: `ttl` and `pollInterval` in milliseconds,
/// `failed` for a tool call that ended with `isError`.
fn utility_shape(task: &rmcp::model::Task, tool_failed: bool) -> Value {
    // The two revisions name the statuses alike.
    let status = if tool_failed {
        json!(TaskStatus::Failed.as_str())
    } else {
        json!(task.status)
    };
    let mut shaped = json!({
        "taskId": task.task_id,
        "status": status,
        "createdAt": task.created_at,
        "lastUpdatedAt": task.last_updated_at,
        "ttl": task.ttl_ms,
    });
    if let Some(interval) = task.poll_interval_ms {
        shaped["pollInterval"] = json!(interval);
    }
    if let Some(message) = &task.status_message {
        shaped["statusMessage"] = Value::String(message.clone());
    }
    shaped
}

/// The `taskId` of a request's params.
fn task_id_of(params: Option<&Value>) -> Result<String, ErrorData> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Params {
        task_id: String,
    }
    let params = params.cloned().unwrap_or(Value::Null);
    serde_json::from_value::<Params>(params)
        .map(|params| params.task_id)
        .map_err(|_| ErrorData::invalid_params("the request names no taskId", None))
}

/// The answer to a request the server has no method for: `-32602` naming what is wrong when
/// it is a method MCP defines whose params rmcp could not read (so a client is not told the
/// server lacks `tools/call`), `-32601` otherwise.
fn no_method(
    method: &str,
    params: Option<&Value>,
    request_context: &RequestContext<RoleServer>,
) -> ErrorData {
    match misread(method, params, !without_handshake(request_context)) {
        Some(reason) => ErrorData::invalid_params(reason, None),
        None => ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("no method {method}"),
            None,
        ),
    }
}

fn internal(error: impl std::fmt::Display) -> ErrorData {
    ErrorData::internal_error(error.to_string(), None)
}

fn answer(value: impl serde::Serialize) -> Result<CustomResult, ErrorData> {
    serde_json::to_value(value)
        .map(CustomResult)
        .map_err(internal)
}

impl McpServer {
    /// A request of the tasks utility (as
    /// [`utility_request`](super::utility_transport::utility_request) hands it over),
    /// answered in the utility's shape; outside a 2025-11-25 session, or on a server that
    /// takes no tasks, no such method.
    pub(super) async fn answer_utility(
        &self,
        request: CustomRequest,
        request_context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let method = request.method.as_str();
        let params = request.params.as_ref();
        if !speaks_utility(&request_context) || !self.takes_tasks() {
            return Err(no_method(method, params, &request_context));
        }
        match method {
            "tools/list" => self.utility_tools(params, request_context).await,
            "tools/call" => self.utility_call(params, request_context).await,
            "tasks/get" => self.utility_get(params, &request_context).await,
            "tasks/result" => self.utility_result(params, &request_context).await,
            "tasks/list" => self.utility_list(params, &request_context).await,
            "tasks/cancel" => self.utility_cancel(params, &request_context).await,
            _ => Err(no_method(method, params, &request_context)),
        }
    }

    /// `tools/list`, each tool whose calls may be tasks with its `execution.taskSupport`.
    async fn utility_tools(
        &self,
        params: Option<&Value>,
        request_context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let params = params
            .map(|params| serde_json::from_value::<PaginatedRequestParams>(params.clone()))
            .transpose()
            .map_err(|error| ErrorData::invalid_params(error.to_string(), None))?;
        let listed = self.list_tools(params, request_context).await?;
        let mut listed = serde_json::to_value(listed).map_err(internal)?;
        if let Some(tools) = listed.get_mut("tools").and_then(Value::as_array_mut) {
            for tool in tools {
                let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
                let support = match self.task_support(name) {
                    TaskSupport::Forbidden => continue,
                    TaskSupport::Optional => "optional",
                    TaskSupport::Required => "required",
                };
                tool["execution"] = json!({ "taskSupport": support });
            }
        }
        Ok(CustomResult(listed))
    }

    /// A `tools/call` that asked for a task: answered with the task as the utility's
    /// `CreateTaskResult` (a tool whose calls are never tasks refuses it).
    async fn utility_call(
        &self,
        params: Option<&Value>,
        request_context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let params = params.cloned().unwrap_or(Value::Null);
        let request: CallToolRequestParams = serde_json::from_value(params)
            .map_err(|error| ErrorData::invalid_params(error.to_string(), None))?;
        match self.call_tool(request, request_context).await? {
            // A task just made, working.
            CallToolResponse::Task(created) => {
                answer(json!({ "task": utility_shape(&created.task, false) }))
            }
            CallToolResponse::Complete(result) => answer(result),
            // A session's call asks mid-call, never by a result.
            _ => Err(ErrorData::internal_error(
                "a session's call answered with a result only 2026-07-28 has",
                None,
            )),
        }
    }

    /// The caller's task `task_id`, if it is theirs and has not expired.
    async fn callers_task(
        &self,
        task_id: &str,
        request_context: &RequestContext<RoleServer>,
    ) -> Result<TaskRow, ErrorData> {
        let owner = self.task_owner_of(request_context)?;
        let row = self
            .dispatcher
            .task(task_id, Some(&owner))
            .await
            .map_err(|error| store_failed(&error))?
            .ok_or_else(no_such_task)?;
        Ok(self.as_the_ledger_says(row).await)
    }

    /// `tasks/get`: the caller's task.
    async fn utility_get(
        &self,
        params: Option<&Value>,
        request_context: &RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let row = self
            .callers_task(&task_id_of(params)?, request_context)
            .await?;
        answer(utility_task(&row))
    }

    /// `tasks/result`: once the caller's task has ended, what its call answers, tied to the
    /// task by `_meta`; until then the answer waits, and what the task asks the client
    /// (a person's approval, the tool's questions) is asked on the way, each request tied to
    /// the task.
    async fn utility_result(
        &self,
        params: Option<&Value>,
        request_context: &RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let task_id = task_id_of(params)?;
        // What this request asked last: not asked again while the task still waits on it
        // (the work sees the answer at its next look).
        let mut asked: Option<String> = None;
        let waiter = self
            .dispatcher
            .waiter(&[Changed::Task(task_id.clone())], Some(SAFETY_POLL));
        loop {
            let row = self.callers_task(&task_id, request_context).await?;
            match row.status {
                TaskStatus::Completed => {
                    let stored = row.outcome.as_deref().unwrap_or("{}");
                    let mut result: JsonObject = serde_json::from_str(stored).map_err(internal)?;
                    let meta = result
                        .entry("_meta")
                        .or_insert_with(|| Value::Object(JsonObject::new()));
                    if let Some(meta) = meta.as_object_mut() {
                        meta.insert(
                            RELATED_TASK_META.to_owned(),
                            json!({ "taskId": row.task_id }),
                        );
                    }
                    return Ok(CustomResult(Value::Object(result)));
                }
                TaskStatus::Failed => {
                    let stored = row.outcome.as_deref().unwrap_or("{}");
                    return Err(serde_json::from_str::<ErrorData>(stored).map_err(internal)?);
                }
                TaskStatus::Cancelled => {
                    return Err(ErrorData::invalid_params(
                        "the task was cancelled before anything of it acted",
                        Some(json!({ "taskId": row.task_id })),
                    ));
                }
                TaskStatus::InputRequired if asked != row.outcome => {
                    self.ask_for_task(&row, request_context).await?;
                    asked.clone_from(&row.outcome);
                }
                TaskStatus::Working | TaskStatus::InputRequired => {
                    tokio::select! {
                        () = waiter.next() => {}
                        () = request_context.ct.cancelled() => {
                            return Err(ErrorData::invalid_request("the request was cancelled", None));
                        }
                    }
                }
            }
        }
    }

    /// What the task `row` waits for, asked of the client, each request tied to the task;
    /// the responses recorded as `tasks/update` records them.
    async fn ask_for_task(
        &self,
        row: &TaskRow,
        request_context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let stored = row.outcome.as_deref().unwrap_or("{}");
        let asked: InputRequests = serde_json::from_str(stored).map_err(internal)?;
        let mut responses = JsonObject::new();
        for (key, asked) in asked {
            let mut request = server_request(&key, asked)?;
            request.get_meta_mut().insert(
                RELATED_TASK_META.to_owned(),
                json!({ "taskId": row.task_id }),
            );
            let response = request_context
                .peer
                .send_request(request)
                .await
                .map_err(|error| {
                    ErrorData::internal_error(
                        format!("the client did not answer {key}: {error}"),
                        None,
                    )
                })?;
            responses.insert(key, serde_json::to_value(response).map_err(internal)?);
        }
        let responses: InputResponses =
            serde_json::from_value(Value::Object(responses)).map_err(internal)?;
        self.update_task_of(
            &UpdateTaskParams::new(row.task_id.clone(), responses),
            request_context,
        )
        .await
    }

    /// `tasks/list`: a page of the caller's tasks, the next page's cursor with it while more
    /// are left.
    async fn utility_list(
        &self,
        params: Option<&Value>,
        request_context: &RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let params = params.cloned().unwrap_or(Value::Null);
        let cursor = serde_json::from_value::<Option<PaginatedRequestParams>>(params)
            .map_err(|error| ErrorData::invalid_params(error.to_string(), None))?
            .and_then(|params| params.cursor);
        // A cursor is the last id of the page before, as this server wrote it.
        if let Some(cursor) = &cursor
            && !is_task_id(cursor)
        {
            return Err(ErrorData::invalid_params("no such cursor", None));
        }
        let owner = self.task_owner_of(request_context)?;
        let mut page = self
            .dispatcher
            .tasks_of(&owner, cursor.as_deref(), TASKS_PAGE + 1)
            .await
            .map_err(|error| store_failed(&error))?;
        let more = page.len() > TASKS_PAGE;
        page.truncate(TASKS_PAGE);
        let tasks: Vec<Value> = page.iter().map(utility_task).collect();
        let mut listed = json!({ "tasks": tasks });
        if more && let Some(last) = page.last() {
            listed["nextCursor"] = Value::String(last.task_id.clone());
        }
        Ok(CustomResult(listed))
    }

    /// `tasks/cancel`: the caller's task cancelled while nothing of it has acted, and
    /// answered as it now stands. An ended task is refused, as the utility requires, and so
    /// is one whose write has begun: it ends as the write does, never `cancelled` over
    /// something that may have acted.
    async fn utility_cancel(
        &self,
        params: Option<&Value>,
        request_context: &RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let task_id = task_id_of(params)?;
        let owner = self.task_owner_of(request_context)?;
        let moved = self
            .dispatcher
            .move_task(&task_id, &owner, TaskChange::Cancel)
            .await
            .map_err(|error| store_failed(&error))?;
        match moved {
            Ok(row) => answer(utility_task(&row)),
            Err(TaskMoveError::NotFound) => Err(no_such_task()),
            Err(TaskMoveError::Ended(status) | TaskMoveError::NotAllowed(status)) => Err(
                ErrorData::invalid_params(format!("the task is {}", status.as_str()), None),
            ),
            Err(TaskMoveError::Began) => Err(ErrorData::invalid_params(
                "the task's write has begun: it ends as the write does",
                None,
            )),
            // A client's cancellation names no worker: never refused as held.
            Err(TaskMoveError::Held) => Err(ErrorData::internal_error(
                "the task's cancellation was refused as held",
                None,
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn completed_with(outcome: &str, is_error: bool) -> TaskRow {
        let result = json!({
            "isError": is_error,
            "content": [],
            "structuredContent": { "execution": { "outcome": outcome } },
        });
        TaskRow {
            task_id: "task_00000000000000000000000000000000".to_owned(),
            owner: "acme/ana".to_owned(),
            tool: "create_issue".to_owned(),
            status: TaskStatus::Completed,
            status_message: None,
            created_at_ms: 1_000,
            updated_at_ms: 2_000,
            ttl_ms: None,
            poll_interval_ms: 500,
            began: true,
            call: None,
            worker: None,
            lease_until_ms: 0,
            awaiting: None,
            outcome: Some(result.to_string()),
        }
    }

    #[test]
    fn a_tool_error_reads_failed_and_an_effect_that_may_exist_never_does() {
        let status =
            |outcome, is_error| utility_task(&completed_with(outcome, is_error))["status"].clone();
        assert_eq!(status("not_started", true), "failed");
        for may_exist in ["unknown", "committed"] {
            assert_eq!(status(may_exist, true), "completed", "{may_exist}");
        }
        assert_eq!(status("committed", false), "completed");
    }
}
