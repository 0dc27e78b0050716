//! A ledger whose panics are errors: the store is the application's code (or a database
//! driver's), and a panic in it must end as a structured answer, never unwind through
//! `dispatch`.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use futures_util::FutureExt;

use super::{Advance, Advanced, Claim, Claimed, Ledger, LedgerError, LedgerFuture, Record};

/// The ledger the dispatcher holds: `inner`, its panics turned into
/// [`LedgerError::Panicked`].
pub(crate) struct Guarded(pub(crate) Arc<dyn Ledger>);

/// Runs one step of the inner ledger: a panic building the future or polling it is an error.
fn guarded<'a, T: Send + 'a>(step: impl FnOnce() -> LedgerFuture<'a, T>) -> LedgerFuture<'a, T> {
    match catch_unwind(AssertUnwindSafe(step)) {
        Ok(future) => Box::pin(
            AssertUnwindSafe(future)
                .catch_unwind()
                .map(|answer| answer.unwrap_or(Err(LedgerError::Panicked))),
        ),
        Err(_) => Box::pin(std::future::ready(Err(LedgerError::Panicked))),
    }
}

impl Ledger for Guarded {
    fn claim<'a>(&'a self, claim: &'a Claim) -> LedgerFuture<'a, Claimed> {
        guarded(|| self.0.claim(claim))
    }

    fn advance<'a>(&'a self, step: &'a Advance) -> LedgerFuture<'a, Advanced> {
        guarded(|| self.0.advance(step))
    }

    fn release<'a>(&'a self, key: &'a str, owner: &'a str) -> LedgerFuture<'a, bool> {
        guarded(|| self.0.release(key, owner))
    }

    fn get<'a>(&'a self, key: &'a str) -> LedgerFuture<'a, Option<Record>> {
        guarded(|| self.0.get(key))
    }

    fn purge_expired(&self, now_ms: u64) -> LedgerFuture<'_, u64> {
        guarded(|| self.0.purge_expired(now_ms))
    }
}
