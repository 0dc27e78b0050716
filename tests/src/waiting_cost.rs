//! What waiting tasks cost PostgreSQL while nothing happens: a number of tasks waiting for
//! approval on one replica, then a window in which nobody decides, counted at the wire and by
//! PostgreSQL's own statistics. The test `cost_of_waiting` runs it with a thousand tasks; the
//! bench of the same name with ten thousand.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tool_contract::Principal;

use crate::postgres::{Database, Relay, Schema};
use crate::task_client::{message, server, session, started};
use crate::tracker::{Remote, dispatcher};

/// How long nothing happens while it is measured: two beats of held tasks (one every 10 s).
pub const WINDOW: Duration = Duration::from_secs(21);

/// Tasks each caller starts (the default bound of open tasks per principal).
const TASKS_PER_CALLER: usize = 100;

/// What the tasks cost while they waited.
#[derive(Debug, Clone, PartialEq)]
pub struct WaitingCost {
    /// The tasks waiting.
    pub tasks: usize,
    /// How long starting them all took (the machine's, not what is measured).
    pub started_in: Duration,
    /// Statements the store sent in the window, counted at the wire by a relay.
    pub statements: u64,
    /// Transactions PostgreSQL counted in its database in the window (`pg_stat_database`).
    pub transactions: i64,
    /// Task rows inserted or updated in the window (`pg_stat_user_tables`).
    pub task_rows_written: i64,
    /// Calls the tracker received: none, since nothing was approved.
    pub remote_requests: u32,
}

impl WaitingCost {
    /// Statements a second in the window.
    #[must_use]
    #[allow(clippy::cast_precision_loss)]
    pub fn statements_a_second(&self) -> f64 {
        self.statements as f64 / WINDOW.as_secs_f64()
    }

    /// Transactions a second in the window.
    #[must_use]
    #[allow(clippy::cast_precision_loss)]
    pub fn transactions_a_second(&self) -> f64 {
        self.transactions as f64 / WINDOW.as_secs_f64()
    }

    /// Why waiting cost something, if it did: ten statements or transactions a second or
    /// more (any per-task poll makes it hundreds), a task row written, or a call made.
    #[must_use]
    pub fn what_it_cost(&self) -> Option<String> {
        if self.statements_a_second() >= 10.0 {
            return Some(format!("{} statements in {WINDOW:?}", self.statements));
        }
        if self.transactions_a_second() >= 10.0 {
            return Some(format!("{} transactions in {WINDOW:?}", self.transactions));
        }
        if self.task_rows_written != 0 {
            return Some(format!("{} task rows written", self.task_rows_written));
        }
        if self.remote_requests != 0 {
            return Some(format!("{} calls ran", self.remote_requests));
        }
        None
    }
}

/// `tasks` (a multiple of a hundred) waiting for approval on one replica over PostgreSQL, a
/// hundred per caller, in a database of their own named after `name`; then [`WINDOW`] in
/// which nothing happens. Needs a multi-threaded runtime.
///
/// # Panics
///
/// When PostgreSQL is not configured, or the tasks never all wait.
pub async fn waiting_cost(name: &str, tasks: usize) -> WaitingCost {
    let database = Database::new(name).expect("TOOL_CONTRACT_POSTGRES_URL names PostgreSQL");
    let schema = Schema {
        url: database.url.clone(),
        name: "waiting".to_owned(),
    };
    let relay = Relay::start(&database.url);
    // Many works starting at once queue for a connection: none gives up.
    let options = schema
        .options()
        .with_pool_size(8)
        .with_connect_timeout(Duration::from_secs(120));
    let store = relay.store(&schema, options).await;
    let remote = Remote::new();
    let dispatcher = Arc::new(dispatcher(&remote, Arc::new(store)));

    let began = Instant::now();
    let mut starting = tokio::task::JoinSet::new();
    let mut clients = Vec::new();
    for caller in 0..tasks / TASKS_PER_CALLER {
        let principal = Principal::new("acme", format!("caller-{caller}"));
        let client = session(server(Arc::clone(&dispatcher), principal)).await;
        let peer = client.peer().clone();
        clients.push(client);
        starting.spawn(async move {
            for index in 0..TASKS_PER_CALLER {
                started(&peer, message(index)).await;
            }
        });
        // Four callers at once keep both cores busy; more only queue.
        if starting.len() >= 4 {
            starting
                .join_next()
                .await
                .expect("a caller")
                .expect("it ran");
        }
    }
    while let Some(caller) = starting.join_next().await {
        caller.expect("it ran");
    }
    let count_waiting = format!(
        "SELECT count(*) FROM {}.tool_contract_tasks WHERE status = 'input_required'",
        schema.name
    );
    // Only a run that hangs ends here: how long the tasks take to start is the machine's.
    while schema.query_i64(&count_waiting) < i64::try_from(tasks).unwrap_or(i64::MAX) {
        assert!(
            began.elapsed() < Duration::from_secs(360),
            "the tasks never all waited"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let started_in = began.elapsed();
    // Every backend flushes its counts within ten seconds of going idle.
    tokio::time::sleep(Duration::from_secs(11)).await;
    let rows_written = format!(
        "SELECT n_tup_upd + n_tup_ins FROM pg_stat_user_tables \
         WHERE schemaname = '{}' AND relname = 'tool_contract_tasks'",
        schema.name
    );
    relay.take_traffic();
    let transactions_before = database.transactions();
    let rows_before = schema.query_i64(&rows_written);
    tokio::time::sleep(WINDOW).await;
    let cost = WaitingCost {
        tasks,
        started_in,
        statements: relay.take_traffic().statements,
        transactions: database.transactions() - transactions_before,
        task_rows_written: schema.query_i64(&rows_written) - rows_before,
        remote_requests: remote.all_requests(),
    };
    drop(clients);
    drop(schema);
    cost
}
