//! What ten thousand waiting tasks cost PostgreSQL while nothing happens (a plain `main`):
//! a hundred callers each start a hundred tasks that wait for approval on one replica, then
//! nobody decides for 21 s. It prints the statements counted at the wire, the transactions
//! and task rows written PostgreSQL counted, and fails when waiting cost anything (ten
//! statements or transactions a second, a task row written, a call made).
//!
//! ```sh
//! TOOL_CONTRACT_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test \
//!     cargo bench -p tool-contract-tests --bench cost_of_waiting [-- TASKS]
//! ```

use tool_contract_tests::waiting_cost::{WINDOW, waiting_cost};

/// Tasks unless the command line says otherwise (a multiple of a hundred).
const TASKS: usize = 10_000;

fn main() {
    let tasks: usize = std::env::args()
        .skip(1)
        .find_map(|argument| argument.parse().ok())
        .unwrap_or(TASKS);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let cost = runtime.block_on(waiting_cost("cost_of_waiting_bench", tasks));
    println!(
        "{} waiting tasks (started in {:.1} s), over {} s: {} statements ({:.2} a second), \
         {} transactions ({:.2} a second), {} task rows written",
        cost.tasks,
        cost.started_in.as_secs_f64(),
        WINDOW.as_secs(),
        cost.statements,
        cost.statements_a_second(),
        cost.transactions,
        cost.transactions_a_second(),
        cost.task_rows_written,
    );
    if let Some(cost) = cost.what_it_cost() {
        eprintln!("waiting cost something: {cost}");
        std::process::exit(1);
    }
}
