//! What the examples share: the lending desk the numbered examples serve, the refund desk,
//! the issue tracker the issue desk and the rig agent serve, and a model made of recorded
//! turns for the rig agent.

pub mod issue_tracker;
pub mod library;
pub mod recorded;
pub mod refund_desk;
