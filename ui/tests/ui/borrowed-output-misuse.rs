use std::borrow::Cow;

// A borrowed output has one lifetime and nothing else generic.
#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct TwoLifetimes<'a, 'b> {
    first: &'a str,
    second: &'b str,
}

#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct LifetimeAndType<'a, T> {
    name: &'a str,
    value: T,
}

#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct BoundedLifetime<'a: 'static> {
    name: &'a str,
}

// Only strings are borrowed.
#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct BorrowsBytes<'a> {
    name: Cow<'a, str>,
    bytes: &'a [u8],
}

// An owned output cannot borrow.
#[derive(serde::Serialize, tool_contract::ToolOutput)]
struct Owned {
    name: &'static str,
}

fn main() {}
