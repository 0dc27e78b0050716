//! The lending desk the numbered examples serve from `02` on: a read, a write the model may
//! repeat for real (borrowing), and a write a librarian approves (waiving a fine), their
//! handlers over one shared state, and the dispatcher's builder with all three.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tool_contract::prelude::*;

/// Find a book by its ISBN: its title and whether it is on loan.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Book, effect = read_only)]
pub struct FindBook {
    /// The book's ISBN-13, digits only.
    #[tool_contract(pattern = "^[0-9]{13}$")]
    pub isbn: String,
}

/// Lend a book to a member. Borrowing, returning and borrowing again is two loans, so each
/// model call is its own operation; the model's retry of one call lends once.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Book, effect = non_idempotent_write, approval = not_required,
                reconcile = manual, operation = per_call)]
pub struct BorrowBook {
    /// The member's card, e.g. M-1024.
    #[tool_contract(pattern = "^M-[0-9]{1,6}$")]
    pub member_id: String,
    /// The book's ISBN-13, digits only.
    #[tool_contract(pattern = "^[0-9]{13}$")]
    pub isbn: String,
}

/// Waive a member's late fine; a librarian approves it first. One fine is waived once, however
/// often it is asked: the operation is the member and the fine.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Fine, effect = idempotent_write, approval = by_another,
                operation = [member_id, fine_id])]
pub struct WaiveFine {
    /// The member's card, e.g. M-1024.
    #[tool_contract(pattern = "^M-[0-9]{1,6}$")]
    pub member_id: String,
    /// The fine, e.g. F-77.
    #[tool_contract(pattern = "^F-[0-9]{1,6}$")]
    pub fine_id: String,
}

/// A book as the model reads it.
#[derive(Debug, Clone, serde::Serialize, ToolOutput)]
pub struct Book {
    #[tool_output(bound = isbn)]
    pub isbn: String,
    #[tool_output(max_len = 200)]
    pub title: String,
    pub on_loan: bool,
}

/// A fine as the model reads it.
#[derive(Debug, serde::Serialize, ToolOutput)]
pub struct Fine {
    #[tool_output(bound = fine_id)]
    pub fine_id: String,
    pub waived: bool,
}

/// The desk's books, and what its handlers did, in order.
#[derive(Default)]
pub struct Library {
    books: Mutex<BTreeMap<String, Book>>,
    done: Mutex<Vec<String>>,
}

impl Library {
    /// A library holding one copy of *Pride and Prejudice*.
    pub fn with_one_book() -> Arc<Self> {
        let book = Book {
            isbn: "9780141439518".into(),
            title: "Pride and Prejudice".into(),
            on_loan: false,
        };
        let library = Library::default();
        library
            .books
            .lock()
            .unwrap()
            .insert(book.isbn.clone(), book);
        Arc::new(library)
    }

    /// What the write handlers did, in order (`lent 9780141439518`, `waived F-77`).
    pub fn done(&self) -> Vec<String> {
        self.done.lock().unwrap().clone()
    }

    /// Puts `isbn` back on the shelf.
    pub fn give_back(&self, isbn: &str) {
        if let Some(book) = self.books.lock().unwrap().get_mut(isbn) {
            book.on_loan = false;
        }
    }
}

async fn find_book(library: Arc<Library>, input: FindBook) -> Result<Book, ToolFailure> {
    let books = library.books.lock().unwrap();
    let book = books.get(&input.isbn).cloned();
    book.ok_or_else(|| ToolFailure::new(FailureKind::NotFound, "no such book"))
}

async fn borrow_book(library: Arc<Library>, input: BorrowBook) -> Result<Book, ToolFailure> {
    let mut books = library.books.lock().unwrap();
    let book = books
        .get_mut(&input.isbn)
        .filter(|book| !book.on_loan)
        .ok_or_else(|| ToolFailure::new(FailureKind::NotFound, "no copy on the shelf"))?;
    book.on_loan = true;
    library
        .done
        .lock()
        .unwrap()
        .push(format!("lent {}", input.isbn));
    Ok(book.clone())
}

async fn waive_fine(library: Arc<Library>, input: WaiveFine) -> Result<Fine, ToolFailure> {
    library
        .done
        .lock()
        .unwrap()
        .push(format!("waived {}", input.fine_id));
    Ok(Fine {
        fine_id: input.fine_id,
        waived: true,
    })
}

/// `builder` with the desk's three handlers over `library`.
pub fn handlers(builder: DispatcherBuilder, library: &Arc<Library>) -> DispatcherBuilder {
    builder
        .handler(typed(library, find_book))
        .handler(typed(library, borrow_book))
        .handler(typed(library, waive_fine))
}

/// The registry of the desk's three contracts.
pub fn registry() -> Registry {
    registry![FindBook, BorrowBook, WaiveFine]
}
