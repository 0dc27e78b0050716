//! What a first program leans on: a contract that names only its output and effect, handlers
//! of every shape (with or without the context, typed or raw, with or without state), and the
//! development keys that let it run before there is a secret store.

use std::sync::Arc;

use tool_contract::dispatch::{Dispatcher, HandlerContext, Task, typed};
use tool_contract::{
    AuditKeys, RawProvenance, RawResult, SecretKey, Status, ToolContract, ToolFailure, ToolOutput,
};
use tool_contract_tests::tracker::alice;

/// Say hello.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Greeting, effect = pure)]
struct Hello {
    #[tool_contract(max_len = 40)]
    name: String,
}

/// Say goodbye.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Greeting, effect = pure)]
struct Goodbye {
    #[tool_contract(max_len = 40)]
    name: String,
}

/// Wave.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Greeting, effect = pure)]
struct Wave {
    #[tool_contract(max_len = 40)]
    name: String,
}

/// Nod.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Greeting, effect = pure)]
struct Nod {
    #[tool_contract(max_len = 40)]
    name: String,
}

/// Bow.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Greeting, effect = pure)]
struct Bow {
    #[tool_contract(max_len = 40)]
    name: String,
}

#[derive(Debug, serde::Serialize, ToolOutput)]
struct Greeting {
    #[tool_output(max_len = 60)]
    text: String,
}

struct Manners {
    title: &'static str,
}

async fn hello(input: Hello) -> Result<Greeting, ToolFailure> {
    Ok(Greeting {
        text: format!("Hello, {}!", input.name),
    })
}

async fn goodbye(input: Goodbye, cx: HandlerContext) -> Result<Greeting, ToolFailure> {
    Ok(Greeting {
        text: format!("Goodbye, {} (attempt {})", input.name, cx.attempt()),
    })
}

async fn wave(manners: Arc<Manners>, input: Wave) -> Result<Greeting, ToolFailure> {
    Ok(Greeting {
        text: format!("*waves at {} {}*", manners.title, input.name),
    })
}

async fn nod(input: Nod) -> Result<RawResult, ToolFailure> {
    let text = format!("*nods at {}*", input.name);
    let body = serde_json::json!({ "text": text }).to_string();
    Ok(RawResult::new(
        body,
        RawProvenance::new(Nod::spec().producer_revision(), "2026-12-04T10:00:00Z"),
    ))
}

fn dispatcher() -> Dispatcher {
    let manners = Arc::new(Manners { title: "dear" });
    Dispatcher::for_development(tool_contract::registry![Hello, Goodbye, Wave, Nod, Bow])
        .handler(hello)
        .handler(goodbye)
        .handler(typed(&manners, wave))
        .handler(nod)
        .handler(|input: Bow, _: HandlerContext| async move {
            Ok::<_, ToolFailure>(Greeting {
                text: format!("*bows to {}*", input.name),
            })
        })
        .build()
        .expect("every shape is a handler")
}

async fn text_of(dispatcher: &Dispatcher, tool: &str) -> String {
    let call = tool_contract_tests::kb::call("call_1", tool, r#"{"name":"Ada"}"#);
    let context = dispatcher.context(call);
    let dispatch = dispatcher
        .dispatch(&alice(), &context, &Task::unlimited())
        .await;
    assert_eq!(dispatch.result.model.status(), Status::Succeeded, "{tool}");
    let data = dispatch.result.model.data().expect("data");
    data["text"].as_str().expect("a text").to_owned()
}

#[tokio::test]
async fn a_handler_may_take_the_input_alone_the_context_too_or_state_first() {
    let dispatcher = dispatcher();
    assert_eq!(text_of(&dispatcher, "hello").await, "Hello, Ada!");
    assert_eq!(
        text_of(&dispatcher, "goodbye").await,
        "Goodbye, Ada (attempt 1)"
    );
    assert_eq!(text_of(&dispatcher, "wave").await, "*waves at dear Ada*");
    assert_eq!(text_of(&dispatcher, "nod").await, "*nods at Ada*");
    assert_eq!(text_of(&dispatcher, "bow").await, "*bows to Ada*");
}

#[test]
fn a_contract_without_source_label_or_producer_revision_has_their_defaults() {
    let spec = Hello::spec();
    assert_eq!(spec.source_label(), "hello", "the tool's name");
    assert_eq!(
        spec.producer_revision(),
        concat!("tool-contract-tests@", env!("CARGO_PKG_VERSION")),
        "the declaring crate's name and version"
    );
}

#[tokio::test]
async fn a_typed_handlers_result_carries_the_default_provenance() {
    let dispatcher = dispatcher();
    let call = tool_contract_tests::kb::call("call_1", "hello", r#"{"name":"Ada"}"#);
    let context = dispatcher.context(call);
    let dispatch = dispatcher
        .dispatch(&alice(), &context, &Task::unlimited())
        .await;
    let provenance = dispatch.result.model.provenance();
    assert_eq!(provenance.source_label, "hello");
    assert_eq!(
        provenance.producer_revision,
        concat!("tool-contract-tests@", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn the_development_keys_say_what_they_are() {
    assert!(SecretKey::development().is_development());
    assert!(AuditKeys::development().is_development());
    assert!(!AuditKeys::new(SecretKey::from([7; 32])).is_development());
    assert!(
        AuditKeys::new(SecretKey::from([7; 32]))
            .with_digest_key(SecretKey::development())
            .is_development(),
        "a digest key anyone can compute is as public"
    );
    assert_eq!(
        format!("{:?}", SecretKey::development()),
        "SecretKey(development key, not secret)"
    );
    assert_eq!(format!("{:?}", SecretKey::from([7; 32])), "SecretKey(..)");
}

#[test]
fn a_dispatcher_for_development_holds_the_development_keys_and_an_audit_log() {
    let dispatcher = dispatcher();
    assert!(dispatcher.binder().keys().is_development());
    // Its principal references are the development key's: the same in every process.
    let again = AuditKeys::development();
    assert_eq!(
        dispatcher.binder().keys().principal_ref(&alice()),
        again.principal_ref(&alice())
    );
}
