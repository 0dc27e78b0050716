//! What makes two calls one operation: every write's contract says it
//! (`#[tool_contract(operation = ...)]`), and `Dispatcher::context` names each call by that
//! rule and nothing else. A repeated real action runs again; a retry of one action runs once.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use tool_contract::dispatch::{BuildError, Dispatcher, Task, typed};
use tool_contract::providers::{Correlation, ToolCall};
use tool_contract::results::Delivery;
use tool_contract::vocabulary::Operation;
use tool_contract::{ErrorCode, Status, ToolContract, ToolFailure, ToolOutput};
use tool_contract_tests::tracker::{alice, audit_key, keys};

/// Lend a book to a member.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Loan, effect = non_idempotent_write, approval = not_required,
                reconcile = manual, operation = per_call)]
struct BorrowBook {
    #[tool_contract(pattern = "^M-[0-9]{1,6}$")]
    member_id: String,
    #[tool_contract(pattern = "^[0-9]{13}$")]
    isbn: String,
}

/// Take a book back from a member.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Loan, effect = non_idempotent_write, approval = not_required,
                reconcile = manual, operation = per_call)]
struct ReturnBook {
    #[tool_contract(pattern = "^M-[0-9]{1,6}$")]
    member_id: String,
    #[tool_contract(pattern = "^[0-9]{13}$")]
    isbn: String,
}

#[derive(Debug, serde::Serialize, ToolOutput)]
struct Loan {
    #[tool_output(bound = isbn)]
    isbn: String,
    on_loan: bool,
}

/// Refund an order, once per order whatever the amount asked.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Refund, effect = non_idempotent_write, approval = not_required,
                reconcile = manual, operation = [order_ref])]
struct RefundOrder {
    #[tool_contract(max_len = 20)]
    order_ref: String,
    #[tool_contract(maximum = 100000)]
    amount_cents: u32,
}

#[derive(Debug, serde::Serialize, ToolOutput)]
struct Refund {
    #[tool_output(bound = order_ref)]
    order_ref: String,
}

/// Close an issue at the revision the user saw.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Closed, effect = idempotent_write, approval = not_required,
                operation = key_rule)]
struct CloseIssue {
    #[tool_contract(maximum = 100000)]
    number: u32,
    #[tool_contract(maximum = 1000000)]
    revision: u32,
    /// Why, in the user's words: not part of the intent's key.
    #[tool_contract(max_len = 200)]
    note: String,
}

#[derive(Debug, serde::Serialize, ToolOutput)]
struct Closed {
    #[tool_output(bound = number)]
    number: u32,
}

/// Append a line to the log (the same line twice is one append).
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Appended, effect = idempotent_write, approval = not_required,
                operation = same_arguments)]
struct AppendLine {
    #[tool_contract(max_len = 200)]
    line: String,
}

#[derive(Debug, serde::Serialize, ToolOutput)]
struct Appended {
    #[tool_output(max_len = 200)]
    line: String,
}

/// What the handlers did, in order.
#[derive(Default)]
struct Library {
    ran: Mutex<Vec<String>>,
    refunds: AtomicU32,
}

impl Library {
    fn ran(&self) -> Vec<String> {
        self.ran.lock().unwrap().clone()
    }
}

async fn borrow(library: Arc<Library>, input: BorrowBook) -> Result<Loan, ToolFailure> {
    library
        .ran
        .lock()
        .unwrap()
        .push(format!("borrow {}", input.isbn));
    Ok(Loan {
        isbn: input.isbn,
        on_loan: true,
    })
}

async fn give_back(library: Arc<Library>, input: ReturnBook) -> Result<Loan, ToolFailure> {
    library
        .ran
        .lock()
        .unwrap()
        .push(format!("return {}", input.isbn));
    Ok(Loan {
        isbn: input.isbn,
        on_loan: false,
    })
}

async fn refund(library: Arc<Library>, input: RefundOrder) -> Result<Refund, ToolFailure> {
    library.refunds.fetch_add(1, Ordering::Relaxed);
    Ok(Refund {
        order_ref: input.order_ref,
    })
}

async fn close(input: CloseIssue) -> Result<Closed, ToolFailure> {
    Ok(Closed {
        number: input.number,
    })
}

async fn append(library: Arc<Library>, input: AppendLine) -> Result<Appended, ToolFailure> {
    library
        .ran
        .lock()
        .unwrap()
        .push(format!("append {}", input.line));
    Ok(Appended { line: input.line })
}

fn dispatcher(library: &Arc<Library>) -> Dispatcher {
    let registry =
        tool_contract::registry![BorrowBook, ReturnBook, RefundOrder, CloseIssue, AppendLine];
    Dispatcher::builder(registry, keys())
        .handler(typed(library, borrow))
        .handler(typed(library, give_back))
        .handler(typed(library, refund))
        .handler(close)
        .handler(typed(library, append))
        .operation_key(|close: &CloseIssue| format!("{}:rev-{}", close.number, close.revision))
        .audit_sink(Arc::new(tool_contract::control::MemoryAuditLog::new(
            audit_key(),
        )))
        .build()
        .unwrap()
}

fn call(call_id: &str, name: &str, arguments: &str) -> ToolCall {
    tool_contract_tests::kb::call(call_id, name, arguments)
}

const BOOK: &str = r#"{"member_id":"M-7","isbn":"9780141439518"}"#;

#[test]
fn every_write_declares_its_operation_rule_and_reads_none() {
    assert_eq!(BorrowBook::spec().operation(), Some(Operation::PerCall));
    assert_eq!(
        RefundOrder::spec().operation(),
        Some(Operation::Fields(&["order_ref"]))
    );
    assert_eq!(CloseIssue::spec().operation(), Some(Operation::KeyRule));
    assert_eq!(
        AppendLine::spec().operation(),
        Some(Operation::SameArguments)
    );
    assert_eq!(
        tool_contract_tests::tracker::FindIssue::spec().operation(),
        None
    );
}

#[tokio::test]
async fn borrow_return_borrow_runs_the_second_borrow() {
    let library = Arc::new(Library::default());
    let dispatcher = dispatcher(&library);
    let task = Task::unlimited();
    let steps = [
        ("call_1", "borrow_book"),
        ("call_2", "return_book"),
        ("call_3", "borrow_book"),
    ];
    for (call_id, tool) in steps {
        let context = dispatcher.context(call(call_id, tool, BOOK));
        let dispatch = dispatcher.dispatch(&alice(), &context, &task).await;
        assert_eq!(dispatch.result.model.status(), Status::Succeeded);
        assert_eq!(
            dispatch.result.model.execution().delivery,
            Delivery::Fresh,
            "{tool} as {call_id} ran"
        );
    }
    assert_eq!(
        library.ran(),
        [
            "borrow 9780141439518",
            "return 9780141439518",
            "borrow 9780141439518"
        ]
    );
}

#[tokio::test]
async fn the_same_model_call_retried_runs_once() {
    let library = Arc::new(Library::default());
    let dispatcher = dispatcher(&library);
    let task = Task::unlimited();
    // The provider's turn read again (a restart), or the context dispatched again: the same
    // call id is the same operation.
    let first = dispatcher.context(call("call_1", "borrow_book", BOOK));
    let again = dispatcher.context(call("call_1", "borrow_book", BOOK));
    assert_eq!(first.operation_id, again.operation_id);
    dispatcher.dispatch(&alice(), &first, &task).await;
    let retried = dispatcher.dispatch(&alice(), &again, &task).await;
    let replayed = dispatcher.dispatch(&alice(), &first, &task).await;
    for dispatch in [retried, replayed] {
        assert_eq!(
            dispatch.result.model.execution().delivery,
            Delivery::LocalReplay
        );
    }
    assert_eq!(library.ran(), ["borrow 9780141439518"]);
}

/// A Gemini `generateContent` turn without `responseId` is named by its calls: the same turn
/// dispatched twice, or read again from its bytes, runs its `per_call` write once.
#[tokio::test]
async fn a_gemini_turn_without_a_response_id_dispatched_twice_runs_its_write_once() {
    use tool_contract::providers::{GeminiGenerateContent, ProviderApi};
    let library = Arc::new(Library::default());
    let dispatcher = dispatcher(&library);
    let body = br#"{"candidates":[{"finishReason":"STOP","content":{"role":"model","parts":[
      {"functionCall":{"name":"borrow_book","args":{"member_id":"M-7","isbn":"9780141439518"}}}]}}]}"#;
    let turn = GeminiGenerateContent.parse(body).unwrap();
    assert!(
        turn.response_id
            .as_deref()
            .is_some_and(|id| id.starts_with("sha256:"))
    );
    let read_again = GeminiGenerateContent.parse(body).unwrap();
    let task = Task::unlimited();
    let mut deliveries = Vec::new();
    for turn in [&turn, &turn, &read_again] {
        let dispatched = dispatcher.dispatch_turn(&alice(), turn, &task).await;
        deliveries.push(dispatched.answers()[0].result.model.execution().delivery);
    }
    assert_eq!(
        deliveries,
        [
            Delivery::Fresh,
            Delivery::LocalReplay,
            Delivery::LocalReplay
        ]
    );
    assert_eq!(library.ran(), ["borrow 9780141439518"]);
}

#[tokio::test]
async fn calls_matched_by_name_are_named_by_their_response_or_afresh() {
    let library = Arc::new(Library::default());
    let dispatcher = dispatcher(&library);
    // A Gemini call without an id: its "call id" is the tool's name in every turn.
    let by_name = |response_id: Option<&str>| ToolCall {
        response_id: response_id.map(str::to_owned),
        call_id: "borrow_book".into(),
        correlation: Correlation::Name,
        ..call("unused", "borrow_book", BOOK)
    };
    let turn_1 = dispatcher.context(by_name(Some("resp_1")));
    let turn_1_again = dispatcher.context(by_name(Some("resp_1")));
    let turn_2 = dispatcher.context(by_name(Some("resp_2")));
    assert_eq!(turn_1.operation_id, turn_1_again.operation_id);
    assert_ne!(turn_1.operation_id, turn_2.operation_id);
    // No response id either: nothing names the call past its context, so each is its own.
    let once = dispatcher.context(by_name(None));
    let other = dispatcher.context(by_name(None));
    assert_ne!(once.operation_id, other.operation_id);
}

#[tokio::test]
async fn named_fields_make_one_operation_whatever_else_the_call_says() {
    let library = Arc::new(Library::default());
    let dispatcher = dispatcher(&library);
    let task = Task::unlimited();
    let asked = r#"{"order_ref":"ORDER-7","amount_cents":4990}"#;
    let spelled_otherwise = r#"{ "amount_cents": 4990, "order_ref": "ORDER-7" }"#;
    let more = r#"{"order_ref":"ORDER-7","amount_cents":9990}"#;
    let first = dispatcher.context(call("c1", "refund_order", asked));
    let retry = dispatcher.context(call("c2", "refund_order", spelled_otherwise));
    let changed = dispatcher.context(call("c3", "refund_order", more));
    let other_order = dispatcher.context(call(
        "c4",
        "refund_order",
        r#"{"order_ref":"ORDER-8","amount_cents":4990}"#,
    ));
    assert_eq!(first.operation_id, retry.operation_id);
    assert_eq!(first.operation_id, changed.operation_id);
    assert_ne!(first.operation_id, other_order.operation_id);

    let ran = dispatcher.dispatch(&alice(), &first, &task).await;
    assert_eq!(ran.result.model.execution().delivery, Delivery::Fresh);
    let replayed = dispatcher.dispatch(&alice(), &retry, &task).await;
    assert_eq!(
        replayed.result.model.execution().delivery,
        Delivery::LocalReplay
    );
    // Another amount for the same order is the same operation asked otherwise: a conflict.
    let conflict = dispatcher.dispatch(&alice(), &changed, &task).await;
    assert_eq!(
        conflict.result.model.error().map(|error| error.code()),
        Some(ErrorCode::IdempotencyConflict)
    );
    let ran = dispatcher.dispatch(&alice(), &other_order, &task).await;
    assert_eq!(ran.result.model.execution().delivery, Delivery::Fresh);
    assert_eq!(library.refunds.load(Ordering::Relaxed), 2);
}

#[tokio::test]
async fn the_key_rule_names_the_operation_so_a_retry_replays_and_a_later_action_runs() {
    let library = Arc::new(Library::default());
    let dispatcher = dispatcher(&library);
    let task = Task::unlimited();
    let first = dispatcher.context(call(
        "c1",
        "close_issue",
        r#"{"number":42,"revision":7,"note":"fixed"}"#,
    ));
    assert_eq!(first.operation_id, "close_issue:42:rev-7");
    assert_eq!(
        first.idempotency_key.as_deref(),
        Some("close_issue:42:rev-7")
    );
    dispatcher.dispatch(&alice(), &first, &task).await;
    let retry = dispatcher.context(call(
        "c2",
        "close_issue",
        r#"{"number":42,"revision":7,"note":"fixed"}"#,
    ));
    let replayed = dispatcher.dispatch(&alice(), &retry, &task).await;
    assert_eq!(
        replayed.result.model.execution().delivery,
        Delivery::LocalReplay
    );
    // Reopened (revision 8) and closed again: a new action, which runs.
    let again = dispatcher.context(call(
        "c3",
        "close_issue",
        r#"{"number":42,"revision":8,"note":"again"}"#,
    ));
    let ran = dispatcher.dispatch(&alice(), &again, &task).await;
    assert_eq!(ran.result.model.execution().delivery, Delivery::Fresh);
}

/// A key rule that gives an empty (or blank) key would make every call of the tool one
/// operation, each later one a conflict: such a call runs nothing, and says why.
#[tokio::test]
async fn an_empty_key_from_the_key_rule_runs_nothing_and_says_so() {
    let closed = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&closed);
    let dispatcher = Dispatcher::builder(tool_contract::registry![CloseIssue], keys())
        .handler(move |input: CloseIssue| {
            counted.fetch_add(1, Ordering::Relaxed);
            async move {
                Ok::<_, ToolFailure>(Closed {
                    number: input.number,
                })
            }
        })
        .operation_key(|close: &CloseIssue| {
            if close.note.is_empty() {
                String::new()
            } else {
                " ".repeat(2)
            }
        })
        .audit_sink(Arc::new(tool_contract::control::MemoryAuditLog::new(
            audit_key(),
        )))
        .build()
        .unwrap();
    let task = Task::unlimited();
    for (call_id, note) in [("c1", ""), ("c2", "blank")] {
        let arguments = format!(r#"{{"number":42,"revision":7,"note":"{note}"}}"#);
        let context = dispatcher.context(call(call_id, "close_issue", &arguments));
        let refused = dispatcher.dispatch(&alice(), &context, &task).await;
        assert_eq!(
            refused.result.model.error().map(|error| error.code()),
            Some(ErrorCode::ToolError),
            "{note:?}"
        );
        let detail = refused.result.audit.detail.as_deref().unwrap_or_default();
        assert!(detail.contains("empty key"), "{detail}");
    }
    assert_eq!(closed.load(Ordering::Relaxed), 0, "nothing ran");
}

#[tokio::test]
async fn same_arguments_is_one_operation_for_identical_arguments_only_when_asked_by_name() {
    let library = Arc::new(Library::default());
    let dispatcher = dispatcher(&library);
    let task = Task::unlimited();
    let one = dispatcher.context(call("c1", "append_line", r#"{"line":"a"}"#));
    let same = dispatcher.context(call("c2", "append_line", r#"{ "line" : "a" }"#));
    let other = dispatcher.context(call("c3", "append_line", r#"{"line":"b"}"#));
    assert_eq!(one.operation_id, same.operation_id);
    assert_ne!(one.operation_id, other.operation_id);
    for context in [&one, &same, &other] {
        dispatcher.dispatch(&alice(), context, &task).await;
    }
    assert_eq!(library.ran(), ["append a", "append b"]);
}

#[test]
fn a_key_rule_contract_without_a_key_does_not_build() {
    let Err(errors) = Dispatcher::for_development(tool_contract::registry![CloseIssue])
        .handler(close)
        .build()
    else {
        panic!("built");
    };
    assert_eq!(
        errors.to_vec(),
        [BuildError::MissingOperationKey("close_issue")]
    );
    assert!(
        errors.to_string().contains(".operation_key::<Contract>"),
        "{errors}"
    );
}

#[test]
fn a_key_for_a_contract_that_names_operations_otherwise_does_not_build() {
    let library = Arc::new(Library::default());
    let Err(errors) = Dispatcher::for_development(tool_contract::registry![BorrowBook])
        .handler(typed(&library, borrow))
        .operation_key(|borrow: &BorrowBook| borrow.isbn.clone())
        .build()
    else {
        panic!("built");
    };
    assert_eq!(
        errors.to_vec(),
        [BuildError::KeyWithoutKeyRule("borrow_book")]
    );
}

#[test]
fn a_key_for_a_tool_the_registry_lacks_does_not_build() {
    let Err(errors) = Dispatcher::for_development(tool_contract::registry![CloseIssue])
        .handler(close)
        .operation_key(|close: &CloseIssue| close.number.to_string())
        .operation_key(|borrow: &BorrowBook| borrow.isbn.clone())
        .build()
    else {
        panic!("built");
    };
    assert_eq!(
        errors.to_vec(),
        [BuildError::UnregisteredKey("borrow_book")]
    );
}

#[test]
fn a_rule_other_than_same_arguments_is_part_of_the_effect_revision() {
    // The same effect and approval, another operation rule: another revision, so that an
    // audit says which rule the ledger deduplicated by.
    assert_ne!(
        BorrowBook::spec().revisions().effect,
        RefundOrder::spec().revisions().effect
    );
}
