//! What the programs share: the refund desk, and the fixtures MCP's conformance suite calls.

pub mod conformance;
pub mod refund_desk;
