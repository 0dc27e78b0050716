//! Long calls as MCP tasks (the 2026-07-28 tasks extension, `io.modelcontextprotocol/tasks`):
//! which calls become tasks, the work each one runs against its row in the control store,
//! and `tasks/get`, `tasks/update` and `tasks/cancel`, which any replica sharing the store
//! answers.

use std::time::Duration;

use futures_util::future::Either;
use rmcp::ErrorData;
use rmcp::model::{
    CallToolResponse, CancelTaskParams, ClientCapabilities, CreateTaskResult, DetailedTask,
    ElicitRequest, GetTaskResult, InputRequest, InputRequests, InputResponses, JsonObject,
    TaskPayload, UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleServer};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::approval::{ApprovalState, Decision, Question, confirmation, console_link};
use super::caller::Verified;
use super::capture::TaskAsked;
use super::questions::{Asking, answers_in};
use super::server::{
    McpServer, Received, declares_form_elicitation, declares_url_elicitation, without_handshake,
};
use super::task_options::{TaskChoice, TaskOptions, TaskSupport};
use super::utility_transport::speaks_utility;
use crate::contract::ToolSpec;
use crate::control::{
    Changed, PendingApproval, StoreError, TaskChange, TaskMoveError, TaskRow, TaskStatus,
    WriteState, later_by, unix_ms,
};
use crate::dispatch::{Awaits, ClientSide, Dispatcher};
use crate::results::ErrorCode;
use crate::vocabulary::{CallContext, Principal};

/// What the client that asked for a task can be asked, as its request declared.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct Asks {
    url: bool,
    form: bool,
}

/// What a task's work needs besides its call, kept with it for whoever takes it over.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct TaskWork {
    asks: Asks,
    /// Whether the caller's token limited what it could ask (which a replica taking the
    /// work over does not have: it runs no approved edit).
    limited: bool,
}

/// A task's call as its row keeps it: the dispatcher's stored call, the work's needs, and
/// what the client gave besides its arguments.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskCall {
    call: String,
    work: TaskWork,
    #[serde(default)]
    client: FromClient,
}

/// What the client gave a task's call besides its arguments: its answers to what the tool
/// asked before the task was made, and the capabilities it declared (what the tool may ask
/// it inside the task).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FromClient {
    #[serde(default, skip_serializing_if = "JsonObject::is_empty")]
    pub(super) answers: JsonObject,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) capabilities: Option<ClientCapabilities>,
}

impl TaskCall {
    fn of(
        principal: &Principal,
        context: &CallContext,
        work: TaskWork,
        client: &FromClient,
    ) -> Option<String> {
        let call = Dispatcher::task_call(principal, context)?;
        let client = client.clone();
        serde_json::to_string(&TaskCall { call, work, client }).ok()
    }

    fn read(stored: &str) -> Option<(Principal, CallContext, TaskWork, FromClient)> {
        let stored: TaskCall = serde_json::from_str(stored).ok()?;
        let (principal, context) = Dispatcher::call_of_task(&stored.call)?;
        Some((principal, context, stored.work, stored.client))
    }
}

/// How far an approved edit may reach in a task's work.
enum Reach {
    /// The caller's token's scopes.
    Token(Verified),
    /// The principal's: the server acts for one principal, or authenticates by a proxy.
    Principal,
    /// No edit: a replica that took the work over does not have the caller's token.
    NoEdits,
}

/// How long to wait before asking again, when `dispatch` found its write running under
/// another lease.
fn in_progress_elsewhere(dispatch: &crate::dispatch::Dispatch) -> Option<Duration> {
    let error = dispatch.result.model.error()?;
    (error.code() == ErrorCode::OperationInProgress).then(|| {
        error
            .retry_after_ms()
            .map_or(Duration::from_secs(1), Duration::from_millis)
    })
}

/// How waiting for a person ended.
enum Waited {
    /// The approval left `pending` (decided, or expired): the call is dispatched again.
    Decided,
    /// Still pending when an approval's lifetime had passed: the call answers as it stands.
    TimedOut,
    /// The task was cancelled, ended or expired meanwhile: nothing more runs.
    Stopped,
}

/// What [`McpServer::resume_tasks`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Resumed {
    /// How many tasks it took over.
    pub taken_over: usize,
    /// The ids of stale tasks whose rows did not open, passed over (each reported as an
    /// error event): an operator looks at them; nobody else's takeover waits on them.
    pub unreadable: Vec<String>,
}

/// The loop that resumes tasks, stopped when dropped.
#[cfg(feature = "mcp-http")]
pub(super) struct Resuming(tokio::task::JoinHandle<()>);

#[cfg(feature = "mcp-http")]
impl Drop for Resuming {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Whether the request declared the tasks extension.
fn declares_tasks(request_context: &RequestContext<RoleServer>) -> bool {
    request_context
        .client_capabilities()
        .is_some_and(|capabilities| capabilities.supports_tasks())
}

pub(super) fn store_failed(error: &StoreError) -> ErrorData {
    ErrorData::internal_error(format!("the task store failed: {error}"), None)
}

pub(super) fn no_such_task() -> ErrorData {
    ErrorData::invalid_params("no such task", None)
}

/// A verified result, or, when the handler panicked, the server's failure (SEP-2663: a task
/// ends `failed` for an error of the server, `completed` with `isError` for a tool's), the
/// verified result kept in its data, so that nothing it says is lost.
fn crashed(
    dispatch: &crate::dispatch::Dispatch,
    result: rmcp::model::CallToolResult,
) -> Result<rmcp::model::CallToolResult, ErrorData> {
    if !dispatch.handler_panicked {
        return Ok(result);
    }
    Err(ErrorData::internal_error(
        "the tool's handler failed inside the server",
        Some(serde_json::json!({ "result": result.structured_content })),
    ))
}

/// How a task's `awaiting` marks the answers it gathered, rather than an approval's state.
const ANSWERS_AWAITED: &str = "answers:";

/// The answers a task's `awaiting` holds, if it holds answers.
fn answers_of(awaiting: &str) -> Option<JsonObject> {
    serde_json::from_str(awaiting.strip_prefix(ANSWERS_AWAITED)?).ok()
}

/// The key a task's question about `approval_id` is asked and answered under: unique over
/// the task's life, as the extension requires.
fn input_key(approval_id: &str) -> String {
    format!("approval:{approval_id}")
}

fn rfc3339(at_ms: u64) -> String {
    let nanos = i128::from(at_ms) * 1_000_000;
    OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .ok()
        .and_then(|at| at.format(&Rfc3339).ok())
        .unwrap_or_default()
}

/// A task row as the extension's `Task`.
pub(super) fn wire_task(row: &TaskRow) -> rmcp::model::Task {
    let status = match row.status {
        TaskStatus::Working => rmcp::model::TaskStatus::Working,
        TaskStatus::InputRequired => rmcp::model::TaskStatus::InputRequired,
        TaskStatus::Completed => rmcp::model::TaskStatus::Completed,
        TaskStatus::Failed => rmcp::model::TaskStatus::Failed,
        TaskStatus::Cancelled => rmcp::model::TaskStatus::Cancelled,
    };
    let mut task = rmcp::model::Task::new(
        row.task_id.clone(),
        status,
        rfc3339(row.created_at_ms),
        rfc3339(row.updated_at_ms),
    )
    .with_poll_interval_ms(row.poll_interval_ms);
    task.ttl_ms = row.ttl_ms;
    task.status_message.clone_from(&row.status_message);
    task
}

/// A task row with what its state carries, as `tasks/get` answers it: the stored text read
/// back, the same on every replica.
fn detailed(row: &TaskRow) -> Result<DetailedTask, ErrorData> {
    let stored = || {
        let text = row.outcome.as_deref().unwrap_or("{}");
        serde_json::from_str::<JsonObject>(text).map_err(|error| {
            ErrorData::internal_error(format!("a task's stored outcome: {error}"), None)
        })
    };
    let payload = match row.status {
        TaskStatus::Working => TaskPayload::Working,
        TaskStatus::Cancelled => TaskPayload::Cancelled,
        TaskStatus::Completed => TaskPayload::Completed { result: stored()? },
        TaskStatus::Failed => TaskPayload::Failed { error: stored()? },
        TaskStatus::InputRequired => {
            let requests: InputRequests =
                serde_json::from_value(serde_json::Value::Object(stored()?)).map_err(|error| {
                    ErrorData::internal_error(format!("a task's stored requests: {error}"), None)
                })?;
            TaskPayload::InputRequired {
                input_requests: requests,
            }
        }
    };
    Ok(DetailedTask::new(wire_task(row), payload))
}

impl McpServer {
    /// How `tool`'s calls are answered: as the server's task rule says, `Forbidden` for a
    /// server that keeps no tasks or a tool it does not serve.
    pub(super) fn task_support(&self, tool: &str) -> TaskSupport {
        let (Some(options), Some(spec)) = (&self.tasks, self.dispatcher.registry().get(tool))
        else {
            return TaskSupport::Forbidden;
        };
        (options.rule)(spec)
    }

    /// Whether some tool's calls may become tasks.
    pub(super) fn takes_tasks(&self) -> bool {
        self.tasks.as_ref().is_some_and(|tasks| {
            self.dispatcher
                .registry()
                .tools()
                .any(|spec| (tasks.rule)(spec) != TaskSupport::Forbidden)
        })
    }

    /// Whom a task belongs to: the principal's keyed reference, so that the store names no
    /// one in clear.
    fn task_owner(&self, principal: &Principal) -> String {
        self.dispatcher.binder().keys().principal_ref(principal)
    }

    /// Whom the tasks of the request's principal belong to.
    pub(super) fn task_owner_of(
        &self,
        request_context: &RequestContext<RoleServer>,
    ) -> Result<String, ErrorData> {
        let (principal, _) = self.callers.of(request_context)?;
        Ok(self.task_owner(&principal))
    }

    /// Whether a call is answered by a task: when its tool's rule allows it and, on
    /// 2026-07-28, the request declared the extension, or, in a 2025-11-25 session, the call
    /// asked for one (`asked`, its `params.task`). A tool that requires tasks, called by a
    /// request that cannot take one, is refused; so is, on 2025-11-25, a call that asks a
    /// task of a tool whose calls never are. Decided before anything waits, so that a call
    /// that makes no task never builds (nor boxes) the making of one.
    pub(super) fn task_choice(
        &self,
        tool: &str,
        request_context: &RequestContext<RoleServer>,
        asked: Option<TaskAsked>,
    ) -> TaskChoice<'_> {
        let support = self.task_support(tool);
        // 2026-07-28 ignores `params.task`; the utility knows nothing else. A 2025-11-25
        // session of a server that declared no tasks processes the call as any other, as the
        // utility asks of a receiver that did not declare it.
        let (utility, asked) = if speaks_utility(request_context) && self.takes_tasks() {
            (true, asked)
        } else {
            (false, None)
        };
        let takes_task = if utility {
            asked.is_some()
        } else {
            without_handshake(request_context) && declares_tasks(request_context)
        };
        let method_not_found = |message: &'static str| {
            TaskChoice::Refused(ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                message,
                None,
            ))
        };
        match support {
            TaskSupport::Forbidden if utility && takes_task => {
                return method_not_found(
                    "the tool's calls are never tasks: call it without params.task",
                );
            }
            TaskSupport::Forbidden => return TaskChoice::Inline,
            TaskSupport::Optional if !takes_task => return TaskChoice::Inline,
            TaskSupport::Required if !takes_task && utility => {
                return method_not_found(
                    "the tool's calls are tasks only: call it with params.task",
                );
            }
            TaskSupport::Required if !takes_task => {
                return TaskChoice::Refused(ErrorData::missing_required_client_capability(
                    ClientCapabilities::builder().enable_tasks().build(),
                ));
            }
            TaskSupport::Optional | TaskSupport::Required => {}
        }
        let Some(options) = self.tasks.as_ref() else {
            return TaskChoice::Inline;
        };
        // The client may ask to keep its task for less time than the server would.
        let ttl = match asked {
            Some(TaskAsked::Malformed) => {
                return TaskChoice::Refused(ErrorData::invalid_params(
                    "params.task is not { \"ttl\": milliseconds }: nothing ran",
                    None,
                ));
            }
            Some(TaskAsked::Ttl(Some(ttl_ms))) => {
                let asked = Duration::from_millis(ttl_ms);
                Some(options.ttl.map_or(asked, |kept| kept.min(asked)))
            }
            Some(TaskAsked::Ttl(None)) | None => options.ttl,
        };
        TaskChoice::Task { options, ttl }
    }

    /// A call [`task_choice`](Self::task_choice) made a task: the task made with `options`,
    /// kept for `ttl`, and its work started past this request.
    pub(super) async fn call_as_task(
        &self,
        received: &Received<'_>,
        caller: Option<&Verified>,
        (options, ttl): (&TaskOptions, Option<Duration>),
        answers: &JsonObject,
    ) -> Result<CallToolResponse, ErrorData> {
        let Received {
            principal,
            request,
            request_context,
            context,
        } = *received;
        let owner = self.task_owner(principal);
        let work = TaskWork {
            asks: Asks {
                url: declares_url_elicitation(request_context),
                form: declares_form_elicitation(request_context),
            },
            limited: caller.is_some(),
        };
        let client = FromClient {
            answers: answers.clone(),
            capabilities: request_context.client_capabilities(),
        };
        let Some(call) = TaskCall::of(principal, context, work, &client) else {
            return Err(ErrorData::invalid_params(
                "the call's arguments are not UTF-8: nothing ran",
                None,
            ));
        };
        let created = self
            .dispatcher
            .create_task_within(
                &owner,
                &request.name,
                Some(call),
                ttl,
                options.poll_interval,
                options.open_per_principal,
            )
            .await;
        let row = match created {
            Ok(Some(row)) => row,
            Ok(None) => return self.over_the_limit(principal, context).await,
            Err(error) => return Err(store_failed(&error)),
        };
        // The row is in the store: whichever replica is asked about it answers. The work runs
        // here, past this request, holding the task while it does.
        let reach = match caller {
            Some(verified) => Reach::Token(verified.clone()),
            None => Reach::Principal,
        };
        let held = self.clone().hold_while(
            row.task_id.clone(),
            principal.clone(),
            context.clone(),
            reach,
            work.asks,
            client,
        );
        tokio::spawn(held);
        Ok(CallToolResponse::Task(CreateTaskResult::new(wire_task(
            &row,
        ))))
    }

    /// The answer to a call that would make one task more than its principal may hold:
    /// `CALLER_LIMIT`, bound and audited, and nothing made or run.
    async fn over_the_limit(
        &self,
        principal: &Principal,
        context: &CallContext,
    ) -> Result<CallToolResponse, ErrorData> {
        let limit = self
            .tasks
            .as_ref()
            .map_or(0, |options| options.open_per_principal);
        let dispatch = self
            .dispatcher
            .refuse(
                principal,
                context,
                ErrorCode::CallerLimit,
                &format!("the principal holds {limit} open tasks"),
            )
            .await;
        self.answer(principal, context, &dispatch, None)
            .map(CallToolResponse::from)
    }

    /// Takes over every task whose work lost its worker (its replica died: the hold lapsed),
    /// and goes on with it here: a write that began there is dispatched again under its own
    /// operation, so the ledger answers (it ran once, or its outcome is settled by its status
    /// query), never a second execution. Run it on a schedule, on any replica. A stale row
    /// that does not open (its seal refused, its body unreadable) is reported and passed
    /// over: the others are taken over all the same. Returns what it did.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store cannot list them.
    pub async fn resume_tasks(&self) -> Result<Resumed, StoreError> {
        let stale = self.dispatcher.stale_tasks().await?;
        let mut resumed = Resumed::default();
        for (task_id, error) in stale.unreadable {
            tracing::error!(
                stage = "mcp",
                task_id = %task_id,
                %error,
                "a stale task's row does not open; passed over, the others are taken over"
            );
            resumed.unreadable.push(task_id);
        }
        for task in stale.tasks {
            let Some((principal, context, work, client)) =
                task.call.as_deref().and_then(TaskCall::read)
            else {
                tracing::warn!(
                    stage = "mcp",
                    "a stale task keeps no readable call; passed over"
                );
                continue;
            };
            if !matches!(self.dispatcher.hold_task(&task.task_id).await, Ok(Ok(_))) {
                // Another replica took it first.
                continue;
            }
            // The caller's token is not kept: an edit a person approved runs no further than
            // what the principal asked.
            let reach = if work.limited {
                Reach::NoEdits
            } else {
                Reach::Principal
            };
            let held =
                self.clone()
                    .hold_while(task.task_id, principal, context, reach, work.asks, client);
            tokio::spawn(held);
            resumed.taken_over += 1;
        }
        Ok(resumed)
    }

    /// While the answer is kept: the tasks whose replica died taken over here, every third of
    /// a [`TASK_LEASE`](crate::dispatch::TASK_LEASE) (`resume_tasks`), when some tool's calls
    /// may be tasks. What `serve_http` keeps while it serves.
    #[cfg(feature = "mcp-http")]
    pub(super) fn resuming_tasks(&self) -> Option<Resuming> {
        if !self.takes_tasks() {
            return None;
        }
        let server = self.clone();
        Some(Resuming(tokio::spawn(async move {
            loop {
                tokio::time::sleep(crate::dispatch::TASK_LEASE / 3).await;
                if let Err(error) = server.resume_tasks().await {
                    tracing::warn!(stage = "mcp", %error, "the tasks to resume could not be listed");
                }
            }
        })))
    }

    /// The task's work, held by this dispatcher's worker lease (renewed for every task it
    /// holds) until the work ends (or another replica took the task over).
    async fn hold_while(
        self,
        task_id: String,
        principal: Principal,
        context: CallContext,
        reach: Reach,
        asks: Asks,
        client: FromClient,
    ) {
        let held = self.dispatcher.holding(&task_id);
        let work = std::pin::pin!(self.work(&task_id, &principal, &context, &reach, asks, client));
        let unheld = {
            let lost = std::pin::pin!(held.lost());
            match futures_util::future::select(work, lost).await {
                Either::Left(((), _)) => None,
                Either::Right(((), work)) => Some(work),
            }
        };
        drop(held);
        if let Some(work) = unheld {
            // No longer held: the work goes on, and what it writes of the task is refused.
            work.await;
        }
    }

    /// A task's work: the call dispatched once the task may begin (a cancelled task never
    /// does), a person asked through the task when it waits for one, and the answer stored
    /// as the task's result.
    async fn work(
        &self,
        task_id: &str,
        principal: &Principal,
        context: &CallContext,
        reach: &Reach,
        asks: Asks,
        client: FromClient,
    ) {
        let FromClient {
            mut answers,
            capabilities,
        } = client;
        let registry = self.dispatcher.registry();
        let reach_of = reach;
        let reach = |spec: &ToolSpec, arguments: &[u8]| match reach_of {
            Reach::Principal => true,
            Reach::NoEdits => false,
            Reach::Token(verified) => verified
                .allows(spec, arguments, registry.forbidden_keys())
                .is_ok(),
        };
        if !self.await_earlier_question(task_id, &mut answers).await {
            return;
        }
        if let Some(spec) = registry.get(&context.call.name)
            && !self
                .ask_in_task_first(task_id, spec, capabilities.as_ref(), &mut answers)
                .await
        {
            return;
        }
        let client = ClientSide {
            progress: None,
            log: None,
            answers: std::sync::Arc::new(answers),
        };
        let credentials = crate::dispatch::Credentials {
            reach: &reach,
            scopes: match reach_of {
                Reach::Token(verified) => Some(verified.scopes()),
                Reach::Principal | Reach::NoEdits => None,
            },
        };
        loop {
            // A read acts on nothing: its task may be cancelled all the while it runs.
            let begin = if registry
                .get(&context.call.name)
                .is_some_and(|spec| spec.effect().is_write())
            {
                TaskChange::Begin
            } else {
                TaskChange::BeginReading
            };
            let began = self.dispatcher.work_on_task(task_id, begin).await;
            if !matches!(began, Ok(Ok(_))) {
                // Cancelled, ended, expired or taken over (or the store failed): nothing runs.
                return;
            }
            let mut dispatch = self
                .dispatcher
                .dispatch_within(principal, context, &self.task, &credentials, &client)
                .await;
            if let Some(wait) = in_progress_elsewhere(&dispatch) {
                // The write runs under another lease (a replica that held this task before):
                // asked again once that lease may have ended, the ledger answers.
                tokio::time::sleep(wait).await;
                continue;
            }
            let pending = dispatch.pending_approval.take();
            if let Some(asked) = pending.as_ref() {
                match self.ask_in_task(task_id, asked, asks).await {
                    Some(Waited::Decided) => continue,
                    Some(Waited::Stopped) => return,
                    // Nobody decided in time, or the client can be asked nothing: the call
                    // answers as it stands (APPROVAL_REQUIRED, with the pending approval).
                    Some(Waited::TimedOut) | None => {}
                }
            }
            let answered = self
                .answer(principal, context, &dispatch, pending.as_ref())
                .and_then(|result| crashed(&dispatch, result));
            let change = match answered {
                Ok(result) => {
                    serde_json::to_string(&result).map(|result| TaskChange::Complete { result })
                }
                Err(error) => serde_json::to_string(&error).map(|error| TaskChange::Fail { error }),
            };
            let Ok(change) = change else {
                return;
            };
            if let Err(error) = self.dispatcher.work_on_task(task_id, change).await {
                tracing::error!(stage = "mcp", %error, "a task's answer could not be stored");
            }
            return;
        }
    }

    /// The tool's questions asked inside the task, round by round, until the rule asks
    /// nothing more: the task waits in `input_required` with the open requests, and
    /// `tasks/update` answers them. `false` when the task stopped meanwhile.
    async fn ask_in_task_first(
        &self,
        task_id: &str,
        spec: &ToolSpec,
        declared: Option<&ClientCapabilities>,
        answers: &mut JsonObject,
    ) -> bool {
        let Some(rule) = &self.questions else {
            return true;
        };
        loop {
            // The rule sees what the client declared; what it asks regardless is asked, the
            // task having no request to refuse.
            let asked = rule(&Asking {
                spec,
                answers,
                client: declared,
                in_task: true,
            });
            if asked.is_empty() {
                return true;
            }
            let (Ok(requests), Ok(given)) = (
                serde_json::to_string(&asked),
                serde_json::to_string(&*answers),
            ) else {
                return false;
            };
            let waiting = self
                .dispatcher
                .work_on_task(
                    task_id,
                    TaskChange::AwaitInput {
                        requests,
                        message: Some(format!(
                            "waiting for the client's answers to {}",
                            spec.name()
                        )),
                        awaiting: Some(format!("{ANSWERS_AWAITED}{given}")),
                    },
                )
                .await;
            if !matches!(waiting, Ok(Ok(_))) {
                return false;
            }
            match self.await_answers(task_id).await {
                Some(given) => *answers = given,
                None => return false,
            }
        }
    }

    /// Waits until the client has answered every request the task waits on (the task is
    /// `working` again), and returns the answers; `None` when the task stopped meanwhile.
    async fn await_answers(&self, task_id: &str) -> Option<JsonObject> {
        // The beat of held tasks looks for what the store did not tell.
        let waiter = self
            .dispatcher
            .waiter(&[Changed::Task(task_id.to_owned())], None);
        let _awaits = self.dispatcher.task_awaits(task_id, Awaits::Answers);
        loop {
            let task = self.dispatcher.task(task_id, None).await.ok()??;
            match task.status {
                TaskStatus::InputRequired => {}
                TaskStatus::Working => return task.awaiting.as_deref().and_then(answers_of),
                _ => return None,
            }
            waiter.next().await;
        }
    }

    /// For a task taken over while it waited for a person: waits for the decision its
    /// earlier worker asked about, then lets the work go on. `false` when the task stopped
    /// meanwhile.
    async fn await_earlier_question(&self, task_id: &str, answers: &mut JsonObject) -> bool {
        let Ok(Some(task)) = self.dispatcher.task(task_id, None).await else {
            return false;
        };
        if task.status != TaskStatus::InputRequired {
            return true;
        }
        if task.awaiting.as_deref().and_then(answers_of).is_some() {
            // It waited for the client's answers: they come with tasks/update.
            return match self.await_answers(task_id).await {
                Some(given) => {
                    *answers = given;
                    true
                }
                None => false,
            };
        }
        let asked = task
            .awaiting
            .as_deref()
            .and_then(|sealed| self.request_state.open_json::<ApprovalState>(sealed).ok());
        if let Some(asked) = asked
            && matches!(
                self.await_decision(task_id, &asked.approval_id).await,
                Waited::Stopped
            )
        {
            return false;
        }
        let resumed = self
            .dispatcher
            .work_on_task(task_id, TaskChange::Resume)
            .await;
        matches!(resumed, Ok(Ok(_)))
    }

    /// Asks the task's client about `pending` (the console's page by URL, or the confirmation
    /// form), then waits until it is decided on any replica, the task stops, or an
    /// approval's lifetime passes. `None` when the client can be asked nothing.
    async fn ask_in_task(
        &self,
        task_id: &str,
        pending: &PendingApproval,
        asks: Asks,
    ) -> Option<Waited> {
        let (question, params) = match self.console_page(pending) {
            Some(page) if asks.url => (Question::Console, console_link(pending, page)),
            _ if asks.form => (
                Question::Form,
                confirmation(pending, self.approvals_console.as_deref())?,
            ),
            _ => return None,
        };
        let expires_at_ms = unix_ms(later_by(self.dispatcher.now(), self.approval_ttl));
        let sealed =
            ApprovalState::of(pending, question, expires_at_ms).seal(&self.request_state)?;
        let mut requests = InputRequests::new();
        requests.insert(
            input_key(&pending.approval_id),
            InputRequest::Elicitation(ElicitRequest::new(params)),
        );
        let requests = serde_json::to_string(&requests).ok()?;
        let message = format!(
            "waiting for {} approval(s) of {}",
            pending.approvals_still_needed(),
            pending.preview.tool
        );
        let asked = self
            .dispatcher
            .work_on_task(
                task_id,
                TaskChange::AwaitInput {
                    requests,
                    message: Some(message),
                    awaiting: Some(sealed),
                },
            )
            .await;
        if !matches!(asked, Ok(Ok(_))) {
            return Some(Waited::Stopped);
        }
        let waited = self.await_decision(task_id, &pending.approval_id).await;
        if matches!(waited, Waited::Decided | Waited::TimedOut) {
            let resumed = self
                .dispatcher
                .work_on_task(task_id, TaskChange::Resume)
                .await;
            if !matches!(resumed, Ok(Ok(_))) {
                return Some(Waited::Stopped);
            }
        }
        Some(waited)
    }

    /// Waits until the approval `approval_id` leaves `pending` (decided, or expired), the
    /// task stops waiting (cancelled, ended, expired), or an approval's lifetime passes.
    async fn await_decision(&self, task_id: &str, approval_id: &str) -> Waited {
        let deadline = tokio::time::Instant::now() + self.approval_ttl;
        let watched = [
            Changed::Task(task_id.to_owned()),
            Changed::Approval(approval_id.to_owned()),
        ];
        // The beat of held tasks looks for what the store did not tell.
        let waiter = self.dispatcher.waiter(&watched, None);
        let _awaits = self
            .dispatcher
            .task_awaits(task_id, Awaits::Decision(approval_id.to_owned()));
        loop {
            match self.dispatcher.task(task_id, None).await {
                Ok(Some(task)) if task.status == TaskStatus::InputRequired => {}
                _ => return Waited::Stopped,
            }
            match self.dispatcher.pending_approval(approval_id).await {
                // Decided, or gone: the dispatcher says which when the call runs again.
                Ok(None) | Err(_) => return Waited::Decided,
                Ok(Some(_)) if tokio::time::Instant::now() >= deadline => {
                    return Waited::TimedOut;
                }
                Ok(Some(_)) => {}
            }
            // At the deadline, looked at once more.
            let _ = tokio::time::timeout_at(deadline, waiter.next()).await;
        }
    }

    /// A completed task's row, answering what the ledger now says of its write, where the
    /// ledger learned more since the task ended: a write the task answered as unknown (its
    /// replica taken over, its status query unable to tell) that committed after all is
    /// settled in the ledger, and the task answers its result; one the task answered as never
    /// having happened (reconciled so while the stalled replica could still act) that acted
    /// after all is `disputed`, and the task answers that dispute (`STATUS_CONFLICT`, a
    /// person decides). The ledger is read, and its answer replayed from it: nothing runs.
    pub(super) async fn as_the_ledger_says(&self, mut row: TaskRow) -> TaskRow {
        if row.status != TaskStatus::Completed {
            return row;
        }
        let Some((principal, context, ..)) = row.call.as_deref().and_then(TaskCall::read) else {
            return row;
        };
        let is_write = self
            .dispatcher
            .registry()
            .get(&context.call.name)
            .is_some_and(|spec| spec.effect().is_write());
        if !is_write {
            return row;
        }
        let answered = row
            .outcome
            .as_deref()
            .and_then(|stored| serde_json::from_str::<serde_json::Value>(stored).ok())
            .unwrap_or_default();
        let answered_unknown = answered.pointer("/structuredContent/execution/outcome")
            == Some(&serde_json::json!("unknown"));
        let answered_the_dispute = answered.pointer("/structuredContent/error/code")
            == Some(&serde_json::json!(ErrorCode::StatusConflict.as_str()));
        let learned_more = match self.dispatcher.write_state(&principal, &context).await {
            Ok(Some(WriteState::Disputed)) => !answered_the_dispute,
            Ok(Some(state)) => answered_unknown && state.is_terminal(),
            _ => false,
        };
        if !learned_more {
            return row;
        }
        let dispatch = self
            .dispatcher
            .dispatch(&principal, &context, &self.task)
            .await;
        if let Ok(result) = self.answer(&principal, &context, &dispatch, None)
            && let Ok(stored) = serde_json::to_string(&result)
        {
            row.outcome = Some(stored);
        }
        row
    }

    /// `tasks/get`: the task, if it is the caller's.
    pub(super) async fn get_task_of(
        &self,
        task_id: &str,
        request_context: &RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let (principal, _) = self.callers.of(request_context)?;
        let owner = self.task_owner(&principal);
        let row = self
            .dispatcher
            .task(task_id, Some(&owner))
            .await
            .map_err(|error| store_failed(&error))?
            .ok_or_else(no_such_task)?;
        let row = self.as_the_ledger_says(row).await;
        Ok(GetTaskResult::new(detailed(&row)?))
    }

    /// `tasks/update`: the caller's answer to what their task asked, recorded as an answer
    /// to the same question asked in a request is; the work goes on once it sees it.
    pub(super) async fn update_task_of(
        &self,
        params: &UpdateTaskParams,
        request_context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (principal, _) = self.callers.of(request_context)?;
        let principal_ref = self.task_owner(&principal);
        let row = self
            .dispatcher
            .task(&params.task_id, Some(&principal_ref))
            .await
            .map_err(|error| store_failed(&error))?
            .ok_or_else(no_such_task)?;
        let (TaskStatus::InputRequired, Some(sealed)) = (row.status, row.awaiting.as_deref())
        else {
            return Err(ErrorData::invalid_params(
                "the task asks for no input now",
                None,
            ));
        };
        if let Some(answers) = answers_of(sealed) {
            return self
                .answer_in_task(&row, &principal_ref, answers, &params.input_responses)
                .await;
        }
        let now_ms = unix_ms(self.dispatcher.now());
        let state = ApprovalState::open_for_task(
            &self.request_state,
            sealed,
            &principal_ref,
            &row.tool,
            now_ms,
        )
        .map_err(super::server::refused)?;
        let decision = Decision::under(
            Some(&params.input_responses),
            &input_key(&state.approval_id),
        );
        self.record_decision(&principal, &state, decision).await
    }

    /// The client's responses to what its task asked, recorded with the answers so far: only
    /// responses to open requests count, and the task stays `input_required` until every
    /// one is answered.
    async fn answer_in_task(
        &self,
        row: &TaskRow,
        owner: &str,
        mut answers: JsonObject,
        responses: &InputResponses,
    ) -> Result<(), ErrorData> {
        let stored_requests = row.outcome.as_deref().unwrap_or("{}");
        let mut open: JsonObject = serde_json::from_str(stored_requests)
            .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
        let given = answers_in(Some(responses)).map_err(|key| {
            ErrorData::invalid_params(format!("the input response {key} is not an object"), None)
        })?;
        for (key, answer) in given {
            if open.remove(&key).is_some() {
                answers.insert(key, answer);
            }
        }
        let requests = if open.is_empty() {
            None
        } else {
            Some(
                serde_json::to_string(&open)
                    .map_err(|error| ErrorData::internal_error(error.to_string(), None))?,
            )
        };
        let answers = serde_json::to_string(&answers)
            .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
        let change = TaskChange::Answer {
            requests,
            answers: format!("{ANSWERS_AWAITED}{answers}"),
        };
        let moved = self
            .dispatcher
            .move_task(&row.task_id, owner, change)
            .await
            .map_err(|error| store_failed(&error))?;
        match moved {
            Ok(_) => Ok(()),
            Err(TaskMoveError::NotFound) => Err(no_such_task()),
            Err(refused) => Err(ErrorData::invalid_params(
                format!("the task takes no answer now: {refused}"),
                None,
            )),
        }
    }

    /// `tasks/cancel`: the caller's task cancelled if nothing of its work may have acted (a
    /// read, or a write waiting for its approval); once a write has begun, the task goes on
    /// and ends as the write does, never `cancelled` over something that may have acted.
    pub(super) async fn cancel_task_of(
        &self,
        params: &CancelTaskParams,
        request_context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (principal, _) = self.callers.of(request_context)?;
        let owner = self.task_owner(&principal);
        let moved = self
            .dispatcher
            .move_task(&params.task_id, &owner, TaskChange::Cancel)
            .await
            .map_err(|error| store_failed(&error))?;
        match moved {
            // An ended task's cancellation is acknowledged as any other is (SEP-2663 keeps
            // -32602 for unknown tasks): its status says how it ended.
            Ok(_) | Err(TaskMoveError::Began | TaskMoveError::Ended(_)) => Ok(()),
            Err(TaskMoveError::NotFound) => Err(no_such_task()),
            Err(TaskMoveError::NotAllowed(status)) => Err(ErrorData::invalid_params(
                format!("the task is {}", status.as_str()),
                None,
            )),
            // A client's cancellation names no worker: never refused as held.
            Err(TaskMoveError::Held) => Ok(()),
        }
    }
}
