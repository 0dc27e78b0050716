//! A read tool, from its contract to the model's next turn: the model asked for a book by its
//! ISBN in one OpenAI Responses turn (recorded below); the dispatcher validates the arguments,
//! runs the handler, checks its output against the contract and hands back the next turn's
//! input. Run it: `cargo run --example 01_read_tool`.

use std::sync::Arc;

use tool_contract::prelude::*;

/// Find a book in the catalogue by its ISBN.
#[derive(serde::Deserialize, ToolContract)]
#[tool_contract(output = Book, effect = read_only)]
struct FindBook {
    /// The book's ISBN-13, digits only.
    #[tool_contract(pattern = "^[0-9]{13}$")]
    isbn: String,
}

#[derive(serde::Serialize, ToolOutput)]
struct Book {
    #[tool_output(bound = isbn)] // must be the ISBN asked for
    isbn: String,
    #[tool_output(max_len = 200)]
    title: String,
    on_loan: bool,
}

struct Catalogue {
    books: Vec<(&'static str, &'static str)>,
}

async fn find_book(catalogue: Arc<Catalogue>, input: FindBook) -> Result<Book, ToolFailure> {
    let (_, title) = catalogue
        .books
        .iter()
        .find(|(isbn, _)| *isbn == input.isbn)
        .ok_or_else(|| ToolFailure::new(FailureKind::NotFound, "no such book"))?;
    Ok(Book {
        isbn: input.isbn,
        title: (*title).to_owned(),
        on_loan: false,
    })
}

/// What the model answered: two calls, the second with an ISBN the contract refuses.
const TURN: &str = r#"{"id":"resp_1","status":"completed","output":[
  {"type":"function_call","call_id":"call_1","name":"find_book","arguments":"{\"isbn\":\"9780141439518\"}"},
  {"type":"function_call","call_id":"call_2","name":"find_book","arguments":"{\"isbn\":\"978-0141\"}"}]}"#;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let catalogue = Arc::new(Catalogue {
        books: vec![("9780141439518", "Pride and Prejudice")],
    });
    let dispatcher = Dispatcher::for_development(registry![FindBook])
        .handler(typed(&catalogue, find_book))
        .build()?;
    // What the request to the model declares: the tools' names, descriptions and input schemas.
    let tools = tool_declarations(dispatcher.registry(), Api::OpenAiResponses)?;
    println!("tools: {tools}");

    let turn = OpenAiResponses.parse(TURN.as_bytes())?;
    let reader = Principal::new("city-library", "reader:42"); // who the agent acts for
    let dispatched = dispatcher
        .dispatch_turn(&reader, &turn, &Task::unlimited())
        .await;
    for (answer, _) in &dispatched {
        println!("{}: {}", answer.context.call.call_id, answer.result.model);
    }
    let next = OpenAiResponses.write_results(
        &dispatcher.binder(),
        &reader,
        &turn,
        dispatched.answers(),
    )?;
    println!("next turn's input: {next}");
    Ok(())
}
