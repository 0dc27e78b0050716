//! The in-process ledger: a map under one lock.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use super::{
    Advance, AdvanceDecision, Advanced, Claim, ClaimDecision, Claimed, Ledger, LedgerFuture,
    Record, decide_advance, decide_claim,
};

/// A ledger in this process's memory. Clones share one map, so a dispatcher built again over
/// a clone sees what the first one left (which is how tests stand for a restart); a real
/// restart loses it all: use `SqliteLedger` (feature `sqlite`) where that matters.
#[derive(Debug, Clone, Default)]
pub struct MemoryLedger {
    records: Arc<Mutex<HashMap<String, Record>>>,
}

impl MemoryLedger {
    /// An empty ledger.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    fn records(&self) -> MutexGuard<'_, HashMap<String, Record>> {
        // A panic while holding the lock cannot leave a half-written record: every write is
        // one `insert` or `remove`.
        self.records
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Ledger for MemoryLedger {
    fn claim<'a>(&'a self, claim: &'a Claim) -> LedgerFuture<'a, Claimed> {
        Box::pin(async move {
            let mut records = self.records();
            Ok(match decide_claim(records.get(&claim.key), claim) {
                ClaimDecision::Write(record) => {
                    records.insert(claim.key.clone(), record);
                    Claimed::Fresh
                }
                ClaimDecision::WriteAndAnswer(record, answer) => {
                    records.insert(claim.key.clone(), record);
                    answer
                }
                ClaimDecision::Answer(answer) => answer,
            })
        })
    }

    fn advance<'a>(&'a self, step: &'a Advance) -> LedgerFuture<'a, Advanced> {
        Box::pin(async move {
            let mut records = self.records();
            Ok(match decide_advance(records.get(&step.key), step)? {
                AdvanceDecision::Write(record) => {
                    records.insert(step.key.clone(), record.clone());
                    Advanced::Applied(record)
                }
                AdvanceDecision::Stale(record) => Advanced::Stale(record),
            })
        })
    }

    fn release<'a>(&'a self, key: &'a str, owner: &'a str) -> LedgerFuture<'a, bool> {
        Box::pin(async move {
            let mut records = self.records();
            let owned = records.get(key).is_some_and(|record| {
                record.state == crate::dispatch::WriteState::Executing && record.owner == owner
            });
            if owned {
                records.remove(key);
            }
            Ok(owned)
        })
    }

    fn get<'a>(&'a self, key: &'a str) -> LedgerFuture<'a, Option<Record>> {
        Box::pin(async move { Ok(self.records().get(key).cloned()) })
    }

    fn purge_expired(&self, now_ms: u64) -> LedgerFuture<'_, u64> {
        Box::pin(async move {
            let mut records = self.records();
            let before = records.len();
            records.retain(|_, record| {
                !(record.state.is_terminal() && record.expires_at_ms <= now_ms)
            });
            Ok((before - records.len()) as u64)
        })
    }
}
