//! What waiting tasks cost PostgreSQL while nothing happens: the tasks one replica holds are
//! held by its worker's lease, one row renewed per beat, and the approvals they wait on
//! checked together, so a few statements a second, and nothing per task. (A test program of
//! its own, run alone: it takes both cores while the tasks start. The figure for ten thousand
//! tasks comes from `cargo bench -p tool-contract-tests --bench cost_of_waiting`.)

use tool_contract_tests::waiting_cost::waiting_cost;

/// A thousand tasks waiting for approval on one replica over PostgreSQL (ten callers holding
/// a hundred each), then twenty-one seconds in which nothing happens: the statements its
/// store sends (counted at the wire) and the transactions PostgreSQL's own statistics count
/// in its database stay under ten a second (two beats of held tasks, each a renewal and a
/// look at the awaited approvals, and nothing per task: a poll every 250 ms would be 8,000
/// reads a second), and no task's row is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_waiting_tasks_cost_postgresql_fewer_than_10_statements_a_second() {
    let cost = waiting_cost("a_thousand_waiting_tasks", 1_000).await;
    eprintln!("{cost:?}");
    assert_eq!(cost.what_it_cost(), None, "{cost:?}");
}
