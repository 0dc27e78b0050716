//! The grants a store wrote itself, kept in memory as hints: a write approved through the
//! same store answers its approval stage from the hint instead of reading it, and its claim
//! that redeems the grant checks the grant's row (column for column, seal for seal), so a
//! hint that is out of date (the grant rejected, redeemed or replaced on another replica)
//! costs the general path and nothing else.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use time::OffsetDateTime;

use super::rows::approval_look;
use crate::control::{ApprovalAsk, ApprovalCheck, ApprovalEntry, ApprovalGrant};

/// Hints held at most. Past it the expired ones go, then all: a hint is never needed.
const HELD: usize = 1024;

/// The grants a store wrote, by ledger key, until a claim redeems them.
#[derive(Debug, Default)]
pub(crate) struct GrantHints(Mutex<HashMap<String, ApprovalGrant>>);

impl GrantHints {
    /// Keeps `grant`, just written, as its key's hint.
    pub(crate) fn keep(&self, grant: &ApprovalGrant, now: OffsetDateTime) {
        let mut hints = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if hints.len() >= HELD {
            hints.retain(|_, hint| hint.expires_at > now);
            if hints.len() >= HELD {
                hints.clear();
            }
        }
        hints.insert(grant.ledger_key.clone(), grant.clone());
    }

    /// Forgets the hint at `ledger_key`: a claim redeeming there is under way.
    pub(crate) fn forget(&self, ledger_key: &str) {
        let mut hints = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        hints.remove(ledger_key);
    }

    /// The hint at `ask`'s key if the approval stage, finding that grant unredeemed and no
    /// record, would answer [`ApprovalCheck::Proceed`] with it.
    pub(crate) fn proceed(&self, ask: &ApprovalAsk) -> Option<ApprovalGrant> {
        let grant = {
            let hints = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            hints.get(&ask.ledger_key)?.clone()
        };
        let granted = ApprovalEntry::Granted {
            grant,
            redeemed_by: None,
        };
        match approval_look(None, Some(&granted), ask).check {
            Some(ApprovalCheck::Proceed(grant)) => Some(grant),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use time::Duration;

    use super::*;

    fn now() -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(1_796_385_600).expect("a time in range")
    }

    fn grant(ledger_key: &str, expires_at: OffsetDateTime) -> ApprovalGrant {
        ApprovalGrant {
            approval_id: format!("apr_{ledger_key}"),
            request_sha256: "r".repeat(64),
            preview_sha256: "p".repeat(64),
            tool: "send_message".to_owned(),
            principal_ref: "principal".to_owned(),
            operation_id: "operation".to_owned(),
            approvals: Vec::new(),
            approvals_required: 1,
            signatures_required: false,
            expires_at,
            ledger_key: ledger_key.to_owned(),
            edited_arguments: None,
            earlier_run: None,
            required_by: Vec::new(),
        }
    }

    fn held(hints: &GrantHints) -> usize {
        hints.0.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    #[test]
    fn a_full_table_drops_its_expired_hints_first() {
        let hints = GrantHints::default();
        for n in 0..HELD - 1 {
            hints.keep(
                &grant(&format!("old{n}"), now() - Duration::minutes(1)),
                now(),
            );
        }
        hints.keep(&grant("live", now() + Duration::hours(1)), now());
        assert_eq!(held(&hints), HELD);

        hints.keep(&grant("next", now() + Duration::hours(1)), now());
        assert_eq!(held(&hints), 2, "the live hint and the new one");
    }

    #[test]
    fn a_table_full_of_live_hints_starts_again() {
        let hints = GrantHints::default();
        for n in 0..HELD {
            hints.keep(
                &grant(&format!("live{n}"), now() + Duration::hours(1)),
                now(),
            );
        }
        hints.keep(&grant("next", now() + Duration::hours(1)), now());
        assert_eq!(held(&hints), 1, "only the new hint");
    }

    #[test]
    fn a_forgotten_hint_is_gone_and_the_others_stay() {
        let hints = GrantHints::default();
        hints.keep(&grant("a", now() + Duration::hours(1)), now());
        hints.keep(&grant("b", now() + Duration::hours(1)), now());
        hints.forget("a");
        assert_eq!(held(&hints), 1);
        hints.forget("a");
        assert_eq!(held(&hints), 1);
    }
}
