#[derive(serde::Serialize)]
struct Book {
    title: String,
}

#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Shelf {
    #[tool_output(max_items = 50)]
    books: Option<Vec<Book>>,
}

fn main() {}
