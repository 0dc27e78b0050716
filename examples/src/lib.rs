//! What the examples share: the lending desk the numbered examples serve, the refund desk,
//! the issue tracker the issue desk and the rig agent serve, a model made of recorded turns
//! for the rig agent, and the fixtures MCP's conformance suite calls.

pub mod conformance;
pub mod issue_tracker;
pub mod library;
pub mod recorded;
pub mod refund_desk;
