//! An audit log read back for the people who check it: its records and the tree heads it
//! published, as one log holds them at one moment, whatever the log is kept in.

use std::future::Future;
use std::pin::Pin;

use super::file::JsonLinesAuditLog;
use super::memory::MemoryAuditLog;
use super::record::{ReadEntry, Verifier};
use super::tree::{SignedTreeHead, TreeHeadsHeld, verify_tree_heads};
use super::{AuditLogError, ChainHead, TreeHeadError};
use crate::results::{KeySet, ModelResult, ProtectedAudit, SecretKey};

/// What [`AuditHistory::read_back`] returns: boxed, so the trait stays object safe.
pub type HistoryFuture<'a> =
    Pin<Box<dyn Future<Output = Result<History, AuditLogError>> + Send + 'a>>;

/// What [`AuditHistory::read_back_all`] returns: boxed, so the trait stays object safe.
pub type HistoriesFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Vec<History>, AuditLogError>> + Send + 'a>>;

/// An audit log that can be read back: the approvals console shows its receipts, its
/// chain's state and an overview of its calls from it.
///
/// Implemented by [`JsonLinesAuditLog`], [`MemoryAuditLog`] and `PostgresAuditLog` (its own
/// stream, and with [`read_back_all`](Self::read_back_all) every replica's).
pub trait AuditHistory: Send + Sync {
    /// Every record the log holds now, and the tree heads it published.
    fn read_back(&self) -> HistoryFuture<'_>;

    /// Every chain kept where this log is kept, each read back as one history: the log
    /// alone, unless its store holds the chains of other writers too (every replica's
    /// stream of a PostgreSQL audit table), so that a console in front of several replicas
    /// shows them all.
    fn read_back_all(&self) -> HistoriesFuture<'_> {
        Box::pin(async move { Ok(vec![self.read_back().await?]) })
    }
}

/// An audit log as read back at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct History {
    /// The log's name, as its tree heads name it: a file's name, or a PostgreSQL stream.
    pub log: String,
    /// Every record, in order, each its line without the newline.
    pub lines: Vec<Vec<u8>>,
    /// The signed tree heads the log published, in the order published.
    pub tree_heads: Vec<SignedTreeHead>,
}

/// The calls a history holds, as far as its chain holds under the audit key.
#[derive(Debug)]
pub struct HistoryCalls {
    /// Each call's model result and audit, in order, up to the first record that does not
    /// follow from the one before.
    pub calls: Vec<(ModelResult, ProtectedAudit)>,
    /// Where the chain stands after its last record, or the first break in it.
    pub chain: Result<ChainHead, AuditLogError>,
    /// How many records of the chain came before the first one the history holds: 0 when it
    /// holds the chain from its genesis record; more when its oldest segments were removed,
    /// so that the chain can be shown to hold only from there on.
    pub begins_after: u64,
}

impl HistoryCalls {
    /// The approvals more than one call redeemed, each with the number of redemptions: a
    /// grant is spent by one execution, so a second means its rows were put back (a spent
    /// approval restored, a write's ledger record removed) by someone who writes to the store.
    /// The store's seals cannot see that, since each restored row is one it wrote; the log,
    /// whose chain and tree heads the store's writer does not hold, does. Only redemptions
    /// with a signed receipt
    /// ([`approval_receipts`](crate::dispatch::DispatcherBuilder::approval_receipts)) are
    /// counted: they are the ones the log marks.
    #[must_use]
    pub fn redeemed_more_than_once(&self) -> Vec<(String, usize)> {
        let mut redemptions: Vec<(String, usize)> = Vec::new();
        let redeemed = self.calls.iter().filter_map(|(_, audit)| {
            let approval = audit.approval.as_ref()?;
            approval
                .receipt
                .as_ref()
                .map(|_| approval.approval_id.as_str())
        });
        for approval_id in redeemed {
            match redemptions.iter_mut().find(|(seen, _)| seen == approval_id) {
                Some((_, count)) => *count += 1,
                None => redemptions.push((approval_id.to_owned(), 1)),
            }
        }
        redemptions.retain(|(_, count)| *count > 1);
        redemptions
    }
}

impl History {
    /// The calls its records hold, each record checked against the one before with `key`
    /// (the audit key the log was written with), up to the first break.
    #[must_use]
    pub fn calls(&self, key: &SecretKey) -> HistoryCalls {
        let mut verifier = Verifier::new(key, None);
        let mut calls = Vec::new();
        for line in &self.lines {
            match verifier.next(line) {
                Ok(ReadEntry::Call(call)) => calls.push(*call),
                Ok(ReadEntry::Event(_)) => {}
                Err(error) => {
                    return HistoryCalls {
                        calls,
                        chain: Err(error),
                        begins_after: verifier.start().records,
                    };
                }
            }
        }
        HistoryCalls {
            calls,
            chain: Ok(verifier.head().clone()),
            begins_after: verifier.start().records,
        }
    }

    /// The log held up to its own tree heads with `keys` (the published keys of whoever
    /// signed them), with public keys alone: see [`verify_tree_heads`].
    ///
    /// # Errors
    ///
    /// The first [`TreeHeadError`] found.
    pub fn held(&self, keys: &KeySet) -> Result<TreeHeadsHeld, TreeHeadError> {
        verify_tree_heads(
            &self.log,
            self.lines.iter().map(Vec::as_slice),
            &self.tree_heads,
            keys,
        )
    }
}

impl AuditHistory for JsonLinesAuditLog {
    /// Reads the files (every segment, then the active one) before it returns the future, as
    /// the log appends: a local read.
    fn read_back(&self) -> HistoryFuture<'_> {
        let path = self.path();
        let read = JsonLinesAuditLog::records(path).and_then(|lines| {
            Ok(History {
                log: super::file::file_name(path).unwrap_or_default(),
                lines,
                tree_heads: JsonLinesAuditLog::tree_heads(path)?,
            })
        });
        Box::pin(std::future::ready(read))
    }
}

impl AuditHistory for MemoryAuditLog {
    /// Its lines; a memory log publishes no tree heads.
    fn read_back(&self) -> HistoryFuture<'_> {
        let history = History {
            log: "memory".to_owned(),
            lines: self.lines().into_iter().map(String::into_bytes).collect(),
            tree_heads: Vec::new(),
        };
        Box::pin(std::future::ready(Ok(history)))
    }
}
