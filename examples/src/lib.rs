//! What the examples share: the issue tracker two of them serve, and a model made of
//! recorded turns for the rig agent.

pub mod issue_tracker;
pub mod recorded;
