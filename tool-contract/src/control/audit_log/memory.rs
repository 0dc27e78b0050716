//! The chain kept in memory.

use std::sync::{Mutex, MutexGuard, PoisonError};

use super::record::{Entry, ReadEntry, Verifier, next_line};
use super::{AuditFuture, AuditLogError, AuditSink, ChainHead};
use crate::json::encoding::infallible;
use crate::results::{ModelResult, ProtectedAudit, SecretKey};

/// The most records a [`MemoryAuditLog::new`] holds: about 100 MB of typical calls.
pub const MEMORY_LOG_RECORDS: usize = 50_000;

/// The same chain kept in memory: for tests and development. It holds at most
/// [`MEMORY_LOG_RECORDS`] records (or what [`with_capacity`](Self::with_capacity) says), and
/// refuses the next append with [`AuditLogError::Full`]: a program that runs for long keeps
/// its audit in a durable log ([`JsonLinesAuditLog`](super::JsonLinesAuditLog),
/// `PostgresAuditLog`), which does not grow in memory.
///
/// ```
/// use tool_contract::SecretKey;
/// use tool_contract::control::{MemoryAuditLog, verify_chain};
///
/// let key = SecretKey::new([3; 32])?;
/// let log = MemoryAuditLog::new(key.clone());
/// assert_eq!(log.head().records, 0);
/// let head = verify_chain(log.lines().join("\n").as_bytes(), &key)?;
/// assert_eq!(head, log.head());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct MemoryAuditLog {
    key: SecretKey,
    capacity: usize,
    state: Mutex<(Vec<String>, ChainHead)>,
}

impl MemoryAuditLog {
    /// An empty log whose chain is keyed with `key`.
    #[must_use]
    pub fn new(key: SecretKey) -> Self {
        MemoryAuditLog {
            key,
            capacity: MEMORY_LOG_RECORDS,
            state: Mutex::new((Vec::new(), ChainHead::default())),
        }
    }

    /// The same log, holding at most `records` records.
    ///
    /// ```
    /// use tool_contract::SecretKey;
    /// use tool_contract::control::{MEMORY_LOG_RECORDS, MemoryAuditLog};
    ///
    /// let key = SecretKey::new([3; 32])?;
    /// let for_a_test = MemoryAuditLog::new(key.clone()).with_capacity(1_000);
    /// let more = MemoryAuditLog::new(key).with_capacity(2 * MEMORY_LOG_RECORDS);
    /// # let _ = (for_a_test, more);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_capacity(mut self, records: usize) -> Self {
        self.capacity = records;
        self
    }

    /// Every line so far (no newlines).
    #[must_use]
    pub fn lines(&self) -> Vec<String> {
        self.state().0.clone()
    }

    /// Where the chain stands.
    #[must_use]
    pub fn head(&self) -> ChainHead {
        self.state().1.clone()
    }

    /// Every call's model result and audit so far, in order.
    #[must_use]
    pub fn records(&self) -> Vec<(ModelResult, ProtectedAudit)> {
        let mut verifier = Verifier::new(&self.key, None);
        self.lines()
            .iter()
            .filter_map(|line| {
                let entry = infallible(
                    verifier.next(line.as_bytes()),
                    "the memory log holds the lines it wrote",
                );
                match entry {
                    ReadEntry::Call(call) => Some(*call),
                    ReadEntry::Event(_) => None,
                }
            })
            .collect()
    }

    /// At most `records` lines before the record `end` (the log's end for `None`), and the
    /// number of records the log holds.
    pub(super) fn page(&self, end: Option<u64>, records: usize) -> (Vec<Vec<u8>>, u64) {
        let state = self.state();
        // The memory log starts at the genesis record: record n is line n - 1.
        let end = end.map_or(state.0.len(), |end| {
            usize::try_from(end.saturating_sub(1))
                .map_or(state.0.len(), |end| end.min(state.0.len()))
        });
        let start = end.saturating_sub(records);
        let lines = state.0[start..end]
            .iter()
            .map(|line| line.as_bytes().to_vec())
            .collect();
        (lines, state.1.records)
    }

    fn state(&self) -> MutexGuard<'_, (Vec<String>, ChainHead)> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl AuditSink for MemoryAuditLog {
    fn append<'a>(&'a self, model: &'a ModelResult, audit: &'a ProtectedAudit) -> AuditFuture<'a> {
        let mut state = self.state();
        if state.0.len() >= self.capacity {
            let capacity = self.capacity;
            return Box::pin(std::future::ready(Err(AuditLogError::Full { capacity })));
        }
        let (line, next) = next_line(&self.key, &state.1, Entry::Call(model, audit));
        state.0.push(infallible(
            String::from_utf8(line),
            "canonical JSON is UTF-8",
        ));
        state.1 = next;
        Box::pin(std::future::ready(Ok(())))
    }
}
