//! Which calls a server answers as tasks, and how it keeps them: what the server and the
//! tasks' work both read.

use std::sync::Arc;
use std::time::Duration;

use rmcp::ErrorData;

use crate::contract::ToolSpec;

/// Whether a tool's calls become tasks: the three answers of 2025-11-25's
/// `execution.taskSupport`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskSupport {
    /// Never: each call is answered in its own request (on 2025-11-25, a call that asks for
    /// a task is refused with `-32601`).
    #[default]
    Forbidden,
    /// A task when the client declares the tasks extension (on 2025-11-25: when the call
    /// asks for one with `params.task`); answered in its request when it does not.
    Optional,
    /// Always a task: a client that does not declare the tasks extension is refused with
    /// `-32021` (a missing client capability; on 2025-11-25, a call without `params.task`
    /// with `-32601`), and nothing runs.
    Required,
}

/// How a server keeps its tasks.
#[derive(Clone)]
pub(super) struct TaskOptions {
    /// Which tools' calls become tasks.
    pub(super) rule: Arc<dyn Fn(&ToolSpec) -> TaskSupport + Send + Sync>,
    /// How long after its creation a task is kept (`None`: until purged by hand).
    pub(super) ttl: Option<Duration>,
    /// How often a client should poll.
    pub(super) poll_interval: Duration,
    /// How many open tasks one principal may hold.
    pub(super) open_per_principal: usize,
}

/// How many open tasks (neither ended nor expired) one principal may hold on a server, unless
/// [`McpServer::with_open_tasks_per_principal`](crate::mcp::McpServer::with_open_tasks_per_principal)
/// says otherwise: a call past it is answered `CALLER_LIMIT`, and no task is made.
pub const OPEN_TASKS_PER_PRINCIPAL: usize = 100;

/// A day: long enough for the signatures a write waits for to be given.
const DEFAULT_TASK_TTL: Duration = Duration::from_secs(24 * 3600);

/// How often a client is asked to poll.
const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(1);

impl TaskOptions {
    /// No call a task, kept a day and polled every second once some are.
    pub(super) fn none() -> Self {
        TaskOptions {
            rule: Arc::new(|_: &ToolSpec| TaskSupport::Forbidden),
            ttl: Some(DEFAULT_TASK_TTL),
            poll_interval: DEFAULT_POLL_INTERVAL,
            open_per_principal: OPEN_TASKS_PER_PRINCIPAL,
        }
    }
}

/// What a call's request and its tool's rule make of it: see `McpServer::task_choice`.
pub(super) enum TaskChoice<'s> {
    /// Answered in its request.
    Inline,
    /// Refused: nothing runs.
    Refused(ErrorData),
    /// Answered by a task, made with the server's `options` and kept for `ttl`.
    Task {
        options: &'s TaskOptions,
        ttl: Option<Duration>,
    },
}
