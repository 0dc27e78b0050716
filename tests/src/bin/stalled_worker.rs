//! One replica of the stalled-process test (`tests/tests/late_writes.rs`): pays out ORDER-9
//! on the shared store, telling the driver `ready` just before it pays (the driver stops the
//! process there with SIGSTOP and continues it once the write was settled elsewhere), then
//! prints what it answers (`CODE STATE`) and exits.
//!
//! `stalled_worker STORE PAYOUTS`, where `STORE` is `sqlite:PATH` or `postgres:SCHEMA:URL`
//! and `PAYOUTS` the SQLite file of payouts made.

use std::io::Write;

use tool_contract::dispatch::Task;
use tool_contract_tests::stalled::{Payouts, open_store, payout_call, principal, replica};

fn ready() {
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready").expect("stdout");
    out.flush().expect("stdout");
}

fn main() {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let [store, payouts] = arguments.as_slice() else {
        eprintln!("usage: stalled_worker STORE PAYOUTS");
        std::process::exit(2);
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let answer = runtime.block_on(async {
        let store = open_store(store).await.expect("the store opens");
        let dispatcher = replica(store, Payouts::open(payouts.as_ref()), ready);
        dispatcher
            .dispatch(&principal(), &payout_call(), &Task::unlimited())
            .await
    });
    let code = answer
        .result
        .model
        .error()
        .map_or("NONE", |error| error.code().as_str());
    let state = answer.write_state.map_or("none", |state| state.as_str());
    println!("{code} {state}");
}
