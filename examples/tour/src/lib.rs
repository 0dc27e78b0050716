//! What the numbered examples share: the lending desk `02` to `05` serve, the issue tracker
//! the rig agent (`06`) and the issue desk serve, and a model made of recorded turns for rig.

pub mod issue_tracker;
pub mod library;
#[cfg(feature = "rig")]
pub mod recorded;
