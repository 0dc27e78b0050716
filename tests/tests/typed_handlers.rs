//! Typed handlers with state (`dispatch::typed`): an async function of the shared state, the
//! typed input and the context returns the typed output; the dispatcher stamps provenance from
//! the contract and validates the output like any other.

use std::sync::{Arc, Mutex};

use serde_json::json;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tool_contract::control::MemoryAuditLog;
use tool_contract::dispatch::{Dispatcher, HandlerContext, Task, typed};
use tool_contract::providers::{OpenAiResponses, ProviderApi};
use tool_contract::{ErrorCode, Status, ToolContract, ToolFailure, ToolOutput};
use tool_contract_tests::tracker::{alice, audit_key, clock, code, context, keys};

/// Read one note.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Note, effect = read_only, source_label = "notes",
                producer_revision = "notes-7")]
struct ReadNote {
    #[tool_contract(maximum = 1000)]
    number: u32,
}

/// Add a note.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Note, effect = idempotent_write, operation = same_arguments, approval = not_required,
                source_label = "notes", producer_revision = "notes-7")]
struct AddNote {
    #[tool_contract(max_len = 40)]
    text: String,
}

#[derive(Debug, serde::Serialize, ToolOutput)]
struct Note {
    #[tool_output(maximum = 1000)]
    number: u32,
    #[tool_output(max_len = 40)]
    text: String,
}

/// The handlers' shared state: one notebook for both tools.
#[derive(Default)]
struct Notebook {
    notes: Mutex<Vec<String>>,
}

async fn read_note(
    book: Arc<Notebook>,
    input: ReadNote,
    _: HandlerContext,
) -> Result<Note, ToolFailure> {
    let notes = book.notes.lock().unwrap();
    let text = notes
        .get(input.number as usize)
        .cloned()
        .unwrap_or_default();
    Ok(Note {
        number: input.number,
        text,
    })
}

async fn add_note(
    book: Arc<Notebook>,
    input: AddNote,
    _: HandlerContext,
) -> Result<Note, ToolFailure> {
    let mut notes = book.notes.lock().unwrap();
    notes.push(input.text.clone());
    // A note too long for the output contract is returned as is: the dispatcher refuses it.
    let text = if input.text == "overflow" {
        "x".repeat(41)
    } else {
        input.text
    };
    Ok(Note {
        number: u32::try_from(notes.len() - 1).unwrap(),
        text,
    })
}

fn notes_dispatcher(book: &Arc<Notebook>) -> Dispatcher {
    Dispatcher::builder(tool_contract::registry![ReadNote, AddNote], keys())
        .clock(clock)
        .handler(typed(book, read_note))
        .handler(typed(book, add_note))
        .audit_sink(Arc::new(MemoryAuditLog::new(audit_key())))
        .build()
        .unwrap()
}

fn call(id: &str, tool: &str, arguments: serde_json::Value) -> tool_contract::CallContext {
    context(id, tool, arguments, id, id)
}

#[tokio::test]
async fn a_typed_handler_runs_on_shared_state_with_provenance_from_the_contract() {
    let book = Arc::new(Notebook::default());
    let dispatcher = notes_dispatcher(&book);
    let task = Task::unlimited();
    let added = dispatcher
        .dispatch(
            &alice(),
            &call("c1", "add_note", json!({ "text": "buy milk" })),
            &task,
        )
        .await;
    assert_eq!(added.result.model.status(), Status::Succeeded, "{added:?}");
    let read = dispatcher
        .dispatch(
            &alice(),
            &call("c2", "read_note", json!({ "number": 0 })),
            &task,
        )
        .await;
    assert_eq!(read.result.model.status(), Status::Succeeded, "{read:?}");
    assert_eq!(
        read.result.model.data_json(),
        Some(r#"{"number":0,"text":"buy milk"}"#)
    );
    let provenance = read.result.model.provenance();
    assert_eq!(provenance.producer_revision, "notes-7");
    let stamped = OffsetDateTime::parse(&provenance.observed_at, &Rfc3339).unwrap();
    assert_eq!(stamped, clock(), "stamped by the dispatcher's clock");
    assert_eq!(
        Arc::strong_count(&book),
        3,
        "one Arc per tool, none per call"
    );
}

#[tokio::test]
async fn a_typed_output_outside_its_contract_is_refused_like_raw_bytes() {
    let book = Arc::new(Notebook::default());
    let dispatcher = notes_dispatcher(&book);
    let refused = dispatcher
        .dispatch(
            &alice(),
            &call("c1", "add_note", json!({ "text": "overflow" })),
            &Task::unlimited(),
        )
        .await;
    assert_eq!(
        code(&refused),
        Some(ErrorCode::OutputContractViolation),
        "{refused:?}"
    );
}

/// A recorded OpenAI Responses turn calling `add_note` and then `read_note` with a field the
/// contract does not have.
const TWO_CALLS: &str = r#"{"id":"resp_1","object":"response","status":"completed","output":[
    {"id":"fc_1","type":"function_call","status":"completed","call_id":"call_add","name":"add_note","arguments":"{\"text\":\"buy milk\"}"},
    {"id":"fc_2","type":"function_call","status":"completed","call_id":"call_read","name":"read_note","arguments":"{\"number\":0,\"page\":2}"}
]}"#;

#[tokio::test]
async fn a_dispatched_turns_answers_are_what_write_results_takes() {
    let book = Arc::new(Notebook::default());
    let dispatcher = notes_dispatcher(&book);
    let turn = OpenAiResponses.parse(TWO_CALLS.as_bytes()).unwrap();
    let dispatched = dispatcher
        .dispatch_turn(&alice(), &turn, &Task::unlimited())
        .await;
    assert_eq!(dispatched.len(), 2);
    let ids: Vec<&str> = dispatched
        .iter()
        .map(|(answer, _)| answer.context.call.call_id.as_str())
        .collect();
    assert_eq!(ids, ["call_add", "call_read"], "in call order");
    for (answer, dispatch) in &dispatched {
        assert_eq!(
            answer.result, dispatch.result,
            "each answer beside its dispatch"
        );
    }
    assert_eq!(dispatched.pending_approvals().count(), 0);
    let next = OpenAiResponses
        .write_results(&dispatcher.binder(), &alice(), &turn, dispatched.answers())
        .unwrap();
    let items = OpenAiResponses.result_items(&next);
    assert_eq!(items.len(), 2);
    assert_eq!(items[0]["call_id"], "call_add");
    assert_eq!(items[1]["call_id"], "call_read");
}

#[tokio::test]
async fn a_model_result_reads_as_one_line_of_status_code_paths_recovery_and_delivery() {
    let book = Arc::new(Notebook::default());
    let dispatcher = notes_dispatcher(&book);
    let task = Task::unlimited();
    let added = dispatcher
        .dispatch(
            &alice(),
            &call("c1", "add_note", json!({ "text": "tea" })),
            &task,
        )
        .await;
    assert_eq!(added.result.model.to_string(), "succeeded, delivery fresh");
    let replayed = dispatcher
        .dispatch(
            &alice(),
            &call("c1", "add_note", json!({ "text": "tea" })),
            &task,
        )
        .await;
    assert_eq!(
        replayed.result.model.to_string(),
        "succeeded, delivery local_replay"
    );
    let refused = dispatcher
        .dispatch(
            &alice(),
            &call("c2", "read_note", json!({ "number": 5000, "page": 2 })),
            &task,
        )
        .await;
    assert_eq!(
        refused.result.model.to_string(),
        "failed, INVALID_ARGUMENTS at /number, /page, recovery correct_input, delivery fresh"
    );
}
