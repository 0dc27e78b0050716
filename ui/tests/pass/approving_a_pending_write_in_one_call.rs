//! Approving a pending write is one call, its answer may go unread: the approval is recorded
//! either way, and nothing must be silenced with `let _ =`.
#![deny(unused_must_use)]

use std::time::Duration;
use tool_contract::prelude::*;

#[allow(dead_code)]
async fn approve_all(dispatcher: &Dispatcher, turn: &DispatchedTurn) -> Result<(), ApprovalError> {
    for pending in turn.pending_approvals() {
        dispatcher
            .approve_pending(pending, "maintainer", Duration::from_secs(600))
            .await?;
    }
    Ok(())
}
