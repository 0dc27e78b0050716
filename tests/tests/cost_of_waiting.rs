//! What ten thousand waiting tasks cost PostgreSQL while nothing happens: the tasks one
//! replica holds are held by its worker's lease, one row renewed per beat, and the approvals
//! they wait on checked together, so a few statements a second, and nothing per task. (A test program of its own, run alone: it
//! takes both cores for one and a half to four minutes, most of it starting the tasks.)

use std::sync::Arc;
use std::time::{Duration, Instant};

use tool_contract::Principal;
use tool_contract_tests::postgres::{Database, Relay, Schema};
use tool_contract_tests::task_client::{message, server, session, started};
use tool_contract_tests::tracker::{Remote, dispatcher};

/// Ten thousand tasks waiting for approval on one replica over PostgreSQL (a hundred callers
/// holding a hundred each), then twenty-one seconds in which nothing happens: the statements
/// its store sends (counted at the wire) and the transactions PostgreSQL's own statistics
/// count in its database stay under ten a second (two beats of held tasks, each a renewal and
/// a look at the awaited approvals, and nothing per task), and no task's row is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_waiting_tasks_cost_postgresql_fewer_than_10_statements_a_second() {
    const TASKS: usize = 10_000;
    const WINDOW: Duration = Duration::from_secs(21);
    let Some(database) = Database::new("ten_thousand_waiting_tasks") else {
        return;
    };
    let schema = Schema {
        url: database.url.clone(),
        name: "waiting".to_owned(),
    };
    let relay = Relay::start(&database.url);
    // Ten thousand works starting at once queue for a connection: none gives up.
    let options = schema
        .options()
        .with_pool_size(8)
        .with_connect_timeout(Duration::from_secs(120));
    let store = relay.store(&schema, options).await;
    let remote = Remote::new();
    let dispatcher = Arc::new(dispatcher(&remote, Arc::new(store)));

    // A hundred callers, each holding a hundred waiting tasks (the default bound).
    let began = Instant::now();
    let mut started_tasks = tokio::task::JoinSet::new();
    let mut clients = Vec::new();
    for caller in 0..TASKS / 100 {
        let principal = Principal::new("acme", format!("caller-{caller}"));
        let client = session(server(Arc::clone(&dispatcher), principal)).await;
        let peer = client.peer().clone();
        clients.push(client);
        started_tasks.spawn(async move {
            for index in 0..100 {
                started(&peer, message(index)).await;
            }
        });
        if started_tasks.len() >= 4 {
            started_tasks
                .join_next()
                .await
                .expect("a caller")
                .expect("it ran");
        }
    }
    while let Some(batch) = started_tasks.join_next().await {
        batch.expect("it ran");
    }
    let count_waiting = format!(
        "SELECT count(*) FROM {}.tool_contract_tasks WHERE status = 'input_required'",
        schema.name
    );
    eprintln!("{TASKS} tasks started in {:?}", began.elapsed());
    // Only a run that hangs ends here: how long ten thousand tasks take to start is the
    // machine's (50 s to over 200 s seen on the same kind of VM, the code unchanged); what
    // is measured is the idle window after.
    while schema.query_i64(&count_waiting) < i64::try_from(TASKS).unwrap() {
        assert!(
            began.elapsed() < Duration::from_secs(360),
            "the tasks never all waited"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    eprintln!("{TASKS} tasks waiting after {:?}", began.elapsed());
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
    let statements = relay.take_traffic().statements;
    let transactions = database.transactions() - transactions_before;
    let task_rows_written = schema.query_i64(&rows_written) - rows_before;

    let seconds = WINDOW.as_secs_f64();
    #[allow(clippy::cast_precision_loss)]
    let (statements_a_second, transactions_a_second) =
        (statements as f64 / seconds, transactions as f64 / seconds);
    eprintln!(
        "{TASKS} waiting tasks over {seconds} s: {statements} statements \
         ({statements_a_second:.2}/s), {transactions} transactions ({transactions_a_second:.2}/s), \
         {task_rows_written} task rows written"
    );
    assert!(
        statements_a_second < 10.0,
        "{statements} statements in {seconds} s"
    );
    assert!(
        transactions_a_second < 10.0,
        "{transactions} transactions in {seconds} s"
    );
    assert_eq!(
        task_rows_written, 0,
        "no task's row is written while it waits"
    );
    assert_eq!(remote.all_requests(), 0, "nothing ran while they wait");
    drop(clients);
    drop(schema);
}
