//! Many callers at once, over loopback, bounded in count and time: `cargo bench -p
//! tool-contract-examples --bench load`.
//!
//! - **Reads**: `get_order` over Streamable HTTP, on 2026-07-28 (no session) and on 2025-11-25
//!   (a session per connection), at 1, 8, 50 and 200 kept-alive connections, against the
//!   refund desk as deployed (`refund-desk mcp --http`: its own process, a worker thread per
//!   core, its durable audit log signing a tree head per sync) and, in the same run, against
//!   the anchor: a plain rmcp server answering the same tool with the same bytes. For each:
//!   the most calls a second it answers (closed-loop, each connection calling back to back),
//!   then p50 / p99 / p99.9 at one offered rate for both, half the anchor's most (open-loop:
//!   each call sent at its planned time and timed from it, so a server that falls behind
//!   shows its queue), the server's CPU per call and its resident memory.
//! - **Writes** through the ledger on PostgreSQL at 50 clients (see `writes`), beside pgbench
//!   running the store's own statements; approved writes across two replicas.
//!
//! The last line sums it up at 50 connections on 2026-07-28. Needs
//! `TOOL_CONTRACT_POSTGRES_URL` and `pgbench` for the writes; without them it says so and
//! stops there.

mod drive;
mod servers;
mod writes;

use std::process::ExitCode;
use std::time::Duration;

use drive::{Connection, Revision, Run};
use servers::Server;

/// The desk's own allocator, so that the anchor (this program, run again) and the in-process
/// writes run on what the desk runs on.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const CONNECTIONS: [usize; 4] = [1, 8, 50, 200];
const CLOSED: Duration = Duration::from_secs(2);
const OPEN: Duration = Duration::from_secs(2);

fn main() -> ExitCode {
    let arguments: Vec<String> = std::env::args().collect();
    if let Some(at) = arguments.iter().position(|argument| argument == "--anchor") {
        let Some(answer) = arguments.get(at + 1) else {
            return ExitCode::FAILURE;
        };
        return match servers::serve_anchor(answer) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("load anchor: {error}");
                ExitCode::FAILURE
            }
        };
    }
    // `cargo test --benches` runs each bench once as a test: nothing to measure then.
    if !arguments.iter().any(|argument| argument == "--bench") {
        return ExitCode::SUCCESS;
    }
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("load: {error}");
            ExitCode::FAILURE
        }
    }
}

/// One server's figures at one revision and connection count.
struct Figures {
    most_per_second: f64,
    cpu_us_per_call: f64,
    resident_mib: f64,
    at_rate: Run,
    errors: u64,
    first_error: Option<String>,
}

fn run() -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|error| error.to_string())?;
    let store = std::env::temp_dir().join(format!("load-desk-{}.sqlite", std::process::id()));
    let desk = Server::desk(&store.to_string_lossy())?;
    let answer = runtime.block_on(desk_answer(&desk.address))?;
    let anchor = Server::anchor(&answer)?;
    println!(
        "load: reads of get_order, {} bytes answered; the desk's audit log durable, a tree head per sync",
        answer.to_string().len()
    );
    let mut summary = None;
    for revision in [Revision::Stateless, Revision::Session] {
        for connections in CONNECTIONS {
            let (anchor_figures, desk_figures) =
                runtime.block_on(compare(&anchor, &desk, revision, connections))?;
            report(revision, connections, &desk_figures, &anchor_figures);
            if revision == Revision::Stateless && connections == 50 {
                summary = Some((desk_figures, anchor_figures));
            }
        }
    }
    drop((desk, anchor));
    let writes = writes::run()?;
    let (mut ours, mut theirs) = summary.ok_or("no figures at 50 connections")?;
    println!(
        "load: reads {:.0} req/s (rmcp {:.0} req/s, ratio {:.2}), p99 {:.1} ms (rmcp {:.1} ms); \
         writes {:.0} tx/s (pgbench {:.0} tx/s, ratio {:.2})",
        ours.most_per_second,
        theirs.most_per_second,
        ours.most_per_second / theirs.most_per_second,
        ours.at_rate.quantile_ms(0.99),
        theirs.at_rate.quantile_ms(0.99),
        writes.per_second,
        writes.pgbench_per_second,
        writes.per_second / writes.pgbench_per_second,
    );
    Ok(())
}

/// The desk's answer to one `get_order`: its `result`, for the anchor to give as well.
async fn desk_answer(address: &str) -> Result<serde_json::Value, String> {
    let mut connection = Connection::open(address, Revision::Stateless).await?;
    let body = connection.call().await?;
    let message: serde_json::Value =
        serde_json::from_slice(&body).map_err(|error| error.to_string())?;
    Ok(message["result"].clone())
}

/// The anchor's figures and the desk's at `revision` and `connections`: each one's most
/// calls a second, then both at half the anchor's most.
async fn compare(
    anchor: &Server,
    desk: &Server,
    revision: Revision,
    connections: usize,
) -> Result<(Figures, Figures), String> {
    let mut anchor_connections = drive::connect_all(&anchor.address, revision, connections).await?;
    let mut desk_connections = drive::connect_all(&desk.address, revision, connections).await?;
    let (anchor_most, anchor_cpu);
    (anchor_most, anchor_cpu, anchor_connections) = most(anchor, anchor_connections).await;
    let (desk_most, desk_cpu);
    (desk_most, desk_cpu, desk_connections) = most(desk, desk_connections).await;
    let rate = (anchor_most.per_second() / 2.0).max(1.0);
    let (anchor_at_rate, _) = drive::open_loop(anchor_connections, rate, OPEN).await;
    let (desk_at_rate, _) = drive::open_loop(desk_connections, rate, OPEN).await;
    Ok((
        figures(anchor, &anchor_most, anchor_cpu, anchor_at_rate),
        figures(desk, &desk_most, desk_cpu, desk_at_rate),
    ))
}

/// The most calls a second `server` answers on `connections`, and the CPU seconds it spent.
async fn most(server: &Server, connections: Vec<Connection>) -> (Run, f64, Vec<Connection>) {
    let before = server.cpu_seconds();
    let (run, connections) = drive::closed_loop(connections, CLOSED).await;
    (run, server.cpu_seconds() - before, connections)
}

fn figures(server: &Server, most: &Run, cpu_seconds: f64, at_rate: Run) -> Figures {
    Figures {
        most_per_second: most.per_second(),
        cpu_us_per_call: cpu_seconds * 1e6 / most.completed.max(1) as f64,
        resident_mib: server.resident_mib(),
        errors: most.errors + at_rate.errors,
        first_error: most.first_error.clone().or(at_rate.first_error.clone()),
        at_rate,
    }
}

fn report(revision: Revision, connections: usize, desk: &Figures, anchor: &Figures) {
    let rate = anchor.most_per_second / 2.0;
    for (name, figures) in [("tool-contract", desk), ("rmcp", anchor)] {
        let mut at_rate = Run {
            latencies: figures.at_rate.latencies.clone(),
            ..Run::default()
        };
        println!(
            "load: reads {} {connections:>3} connections {name:>13}: {:>7.0} req/s most, \
             {:>5.0} µs CPU/call, {:>5.1} MiB; at {rate:.0} req/s offered: {:>6.0} answered/s, \
             p50 {:.2} ms, p99 {:.2} ms, p99.9 {:.2} ms{}",
            revision.name(),
            figures.most_per_second,
            figures.cpu_us_per_call,
            figures.resident_mib,
            figures.at_rate.per_second(),
            at_rate.quantile_ms(0.5),
            at_rate.quantile_ms(0.99),
            at_rate.quantile_ms(0.999),
            match (&figures.first_error, figures.errors) {
                (Some(error), errors) => format!("; {errors} errors, the first: {error}"),
                (None, _) => String::new(),
            }
        );
    }
    println!(
        "load: reads {} {connections:>3} connections: ratio {:.2}",
        revision.name(),
        desk.most_per_second / anchor.most_per_second
    );
}
