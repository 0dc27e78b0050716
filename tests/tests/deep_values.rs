//! Issue 14, finding 5: the DSL allows depths up to 256, and nothing on the way from the
//! provider to the model and the audit turns a value that deep into `null` or an error.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tool_contract::control::{JsonLinesAuditLog, MemoryStore};
use tool_contract::dispatch::{
    Dispatcher, GateCall, GateDecision, HandlerContext, RetryPolicy, Task, ToolOptions,
};
use tool_contract::json::canonical::canonicalize;
use tool_contract::providers::{Answer, gemini};
use tool_contract::{CallContext, RawProvenance, RawResult, Status, ToolContract, ToolOutput};
use tool_contract_tests::tracker::{alice, audit_key, clock, keys};

/// Store a tree as it is.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Tree, effect = idempotent_write, operation = same_arguments, approval = by_caller,
                source_label = "trees", producer_revision = "trees-1", max_depth = 256)]
struct StoreTree {
    /// The tree.
    #[tool_contract(free_form(max_depth = 255, max_bytes = 65536))]
    tree: Value,
}

/// The tree stored.
#[derive(Debug, serde::Serialize, ToolOutput)]
#[tool_output(max_depth = 256)]
struct Tree {
    /// The tree.
    #[tool_output(free_form(max_depth = 255, max_bytes = 65536))]
    tree: Value,
}

const OPTIONS: ToolOptions = ToolOptions::DEFAULT
    .with_timeout(Duration::from_secs(5))
    .with_retry(
        RetryPolicy::NEVER
            .with_base(Duration::from_millis(100))
            .with_cap(Duration::from_secs(1))
            .with_max_total_wait(Duration::from_secs(1)),
    );

/// `[[[…[1]…]]]`, `levels` arrays deep.
fn nested(levels: usize) -> Value {
    (0..levels).fold(json!(1), |inner, _| Value::Array(vec![inner]))
}

fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(members) => 1 + members.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

#[tokio::test(start_paused = true)]
async fn a_value_as_deep_as_the_dsl_allows_is_never_turned_into_null() {
    // The arguments object, then 250 levels of tree: deeper than serde_json's own 128.
    let tree = nested(250);
    let arguments = json!({ "tree": tree });
    assert_eq!(depth(&arguments), 251);
    let body = format!(
        r#"{{"candidates":[{{"content":{{"role":"model","parts":[{{"functionCall":{{"id":"call-1","name":"store_tree","args":{arguments}}}}}]}},"finishReason":"STOP"}}]}}"#
    );
    let turn = gemini::parse_response(body.as_bytes()).expect("a deep call is read");
    assert_eq!(turn.calls[0].arguments, arguments.to_string().into_bytes());

    // A directory of its own, emptied: the log keeps a lock and a checkpoint beside it.
    let directory = std::env::temp_dir().join(format!("tc-deep-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&directory);
    std::fs::create_dir_all(&directory).unwrap();
    let path = directory.join("audit.jsonl");
    let seen = Arc::new(Mutex::new(Vec::<Value>::new()));
    let gate_seen = seen.clone();
    let registry = tool_contract::registry![StoreTree]
        .into_builder()
        .all_adapters()
        .build();
    let dispatcher = Dispatcher::builder(registry, keys())
        .clock(clock)
        .store(Arc::new(MemoryStore::new()))
        .audit_sink(Arc::new(
            JsonLinesAuditLog::open(&path, audit_key()).unwrap(),
        ))
        .gate(move |call: &GateCall<'_>| {
            gate_seen.lock().unwrap().push(call.arguments.clone());
            GateDecision::Proceed
        })
        .handler_with(
            |input: StoreTree, _cx: HandlerContext| async move {
                let output = json!({ "tree": input.tree }).to_string();
                Ok(RawResult::new(
                    output,
                    RawProvenance::new("trees-1", "2026-08-22T10:00:00Z"),
                ))
            },
            OPTIONS,
        )
        .build()
        .unwrap();
    let context = CallContext::new(turn.calls[0].clone(), "op-1").with_idempotency_key("k-1");
    let task = Task::unlimited();

    // The gate and the person asked to approve see the arguments, not `null`.
    let waiting = dispatcher.dispatch(&alice(), &context, &task).await;
    let pending = waiting
        .pending_approval
        .expect("the write waits for approval");
    assert_eq!(pending.preview.arguments, arguments);
    assert_eq!(seen.lock().unwrap().first(), Some(&arguments));
    dispatcher
        .approve(
            &pending.approval_id,
            &pending.preview_sha256,
            "bob",
            clock() + Duration::from_secs(3600),
        )
        .await
        .unwrap()
        .grant()
        .expect("one approver grants it");

    // The model reads the tree, and Gemini gets it as the object that was hashed.
    let ran = dispatcher.dispatch(&alice(), &context, &task).await;
    assert_eq!(ran.result.model.status(), Status::Succeeded, "{ran:?}");
    assert_eq!(ran.result.model.data(), Some(arguments.clone()));
    let answers = [Answer {
        context: context.clone(),
        result: ran.result.clone(),
    }];
    let content = gemini::function_responses(&dispatcher.binder(), &alice(), &turn, &answers)
        .expect("the deep result is written");
    let output = &content["parts"][0]["functionResponse"]["response"]["output"];
    assert_eq!(output["data"], arguments);
    let sent = serde_json::to_vec(output).unwrap();
    assert_eq!(
        canonicalize(&sent).unwrap(),
        ran.result.model.to_canonical_json(),
        "what goes out is what was hashed"
    );

    // The ledger replays it whole.
    let replayed = dispatcher.dispatch(&alice(), &context, &task).await;
    assert_eq!(replayed.result.model.data(), Some(arguments.clone()));

    // The audit log holds every record and opens again.
    drop(dispatcher);
    let reopened = JsonLinesAuditLog::open(&path, audit_key()).expect("the deep log opens again");
    assert_eq!(reopened.head().records, 3);
    let _ = std::fs::remove_dir_all(&directory);
}
