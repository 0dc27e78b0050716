#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Book {
    title: String,
}

/// List the books on a shelf.
#[derive(serde::Deserialize, tool_contract::ToolContract)]
#[tool_contract(output = Vec<Book>, effect = read_only)]
struct ListBooks {
    shelf: String,
}

fn main() {}
