//! Issue 14, finding 7: arguments over their contract's size are refused before anything
//! parses them. A counting allocator (this binary's own, so no other test's allocations are
//! counted) shows what refusing them costs.

use peak_alloc::PeakAlloc;
use serde_json::json;
use tool_contract::dispatch::Task;
use tool_contract::providers::{Answer, anthropic};
use tool_contract::{CallContext, ErrorCode};
use tool_contract_tests::tracker::{Remote, alice, builder};

#[global_allocator]
static ALLOCATOR: PeakAlloc = PeakAlloc;

/// What `work` returns, and the most it held at once beyond what was allocated before it.
fn peak_during<T>(work: impl FnOnce() -> T) -> (T, usize) {
    let before = ALLOCATOR.current_usage();
    ALLOCATOR.reset_peak_usage();
    let value = work();
    (value, ALLOCATOR.peak_usage() - before)
}

const MIB: usize = 1 << 20;

/// One test in this binary: allocations of tests running beside it would be counted too.
#[test]
fn refusing_arguments_over_their_limit_costs_at_most_twice_their_size() {
    // `read_doc` takes 1 MiB of arguments (the default); these are 16 MiB.
    let arguments = json!({ "doc_id": "x".repeat(16 * MIB) }).to_string();
    let body = json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{ "type": "tool_use", "id": "toolu_1", "name": "read_doc",
                      "input": serde_json::value::RawValue::from_string(arguments).unwrap() }],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": { "input_tokens": 1, "output_tokens": 1 }
    })
    .to_string()
    .into_bytes();
    let remote = Remote::new();
    let dispatcher = builder(&remote).build().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let task = Task::unlimited();

    // The provider's body read into a call: its arguments copied once, nothing parsed.
    let (turn, reading) = peak_during(|| anthropic::parse_message(&body).unwrap());
    let context = CallContext::new(turn.calls[0].clone(), "op-1");
    let input = context.call.arguments.len();
    assert!(input > 16 * MIB);

    // Dispatch (refused), verification, and the provider message: none parses or copies them.
    let (message, answering) = peak_during(|| {
        let dispatch = runtime.block_on(dispatcher.dispatch(&alice(), &context, &task));
        let error = dispatch.result.model.error().map(|error| error.code());
        assert_eq!(error, Some(ErrorCode::InvalidArguments));
        let binder = dispatcher.binder();
        binder.verify(&alice(), &context, &dispatch.result).unwrap();
        let answers = [Answer {
            context,
            result: dispatch.result,
        }];
        anthropic::tool_results_message(&binder, &alice(), &turn, &answers).unwrap()
    });
    assert!(message.to_string().contains("INVALID_ARGUMENTS"));
    eprintln!(
        "input {input} bytes; reading the body held {reading} more, dispatch to message {answering} more"
    );
    // Reading copies the arguments out of the body once.
    assert!(reading <= input + MIB, "reading held {reading} for {input}");
    // The pipeline adds nothing that grows with the arguments: no parse, no canonical form,
    // no copy. With the body and the call, a refused input is held twice, at most.
    assert!(answering <= MIB, "answering held {answering} for {input}");
}
