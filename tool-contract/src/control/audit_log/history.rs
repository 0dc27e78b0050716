//! An audit log read back for the people who check it: its records and the tree heads it
//! published, as one log holds them at one moment, whatever the log is kept in.

use std::collections::BTreeMap;
use std::future::Future;
use std::ops::RangeInclusive;
use std::pin::Pin;

use super::file::JsonLinesAuditLog;
use super::memory::MemoryAuditLog;
use super::record::{ReadEntry, Verifier, line_seq};
use super::tally::Tallies;
use super::tree::{SignedTreeHead, TreeHeadsHeld, verify_tree_heads};
use super::{AuditLogError, ChainHead, TreeHeadError};
use crate::results::{KeySet, ModelResult, ProtectedAudit, SecretKey};

/// What [`AuditHistory::read_back`] returns: boxed, so the trait stays object safe.
pub type HistoryFuture<'a> =
    Pin<Box<dyn Future<Output = Result<History, AuditLogError>> + Send + 'a>>;

/// What [`AuditHistory::read_back_all`] returns: boxed, so the trait stays object safe.
pub type HistoriesFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Vec<History>, AuditLogError>> + Send + 'a>>;

/// What [`AuditHistory::tally`] returns: boxed, so the trait stays object safe.
pub type TallyFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Option<Tallies>, AuditLogError>> + Send + 'a>>;

/// What [`AuditHistory::read_page`] returns: boxed, so the trait stays object safe.
pub type PagesFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Vec<HistoryPage>, AuditLogError>> + Send + 'a>>;

/// Where a page of an audit log ends in each chain, by the chain's name: the number
/// (`seq`) of the record the chain's page stops before. A chain not named is read from its
/// end; a chain named with `1` gives nothing more.
pub type PageEnds = BTreeMap<String, u64>;

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

    /// A page of every chain [`read_back_all`](Self::read_back_all) reads: at most
    /// `records` consecutive records of each, the newest before where `ends` says the
    /// chain's page ends, without reading the records before them, so that what a page costs
    /// is what it shows.
    ///
    /// The default reads every chain whole and cuts the page out of it; the logs of this
    /// crate read the page alone (a file from its end, seeking; PostgreSQL in one query).
    fn read_page<'a>(&'a self, ends: &'a PageEnds, records: usize) -> PagesFuture<'a> {
        Box::pin(async move {
            let histories = self.read_back_all().await?;
            Ok(histories
                .into_iter()
                .map(|history| {
                    let total = history.lines.last().and_then(|line| line_seq(line));
                    let oldest = history.lines.first().and_then(|line| line_seq(line));
                    let tree_head = history
                        .tree_heads
                        .iter()
                        .max_by_key(|head| head.tree_head.tree_size)
                        .cloned();
                    let end = ends.get(&history.log).copied();
                    let mut lines = history.lines;
                    if let Some(end) = end {
                        // Records number consecutively: drop those from the end on.
                        let kept = lines
                            .iter()
                            .position(|line| line_seq(line).is_none_or(|seq| seq >= end));
                        lines.truncate(kept.unwrap_or(lines.len()));
                    }
                    lines.drain(..lines.len().saturating_sub(records));
                    HistoryPage {
                        log: history.log,
                        lines,
                        records: total.unwrap_or_default(),
                        oldest,
                        tree_head,
                    }
                })
                .collect())
        })
    }

    /// Per tool, the calls of every chain [`read_back_all`](Self::read_back_all) reads whose
    /// results were observed in `minutes` (whole minutes since the Unix epoch,
    /// [`minute_of`](super::minute_of)), counted as [`tally_calls`](super::tally_calls) counts them, when
    /// the log keeps those counts as it appends and holds them for all of `minutes`; `None`
    /// when it does not, and whoever asked counts the records it reads.
    ///
    /// The default answers `None`. `PostgresAuditLog` keeps the counts in the transaction
    /// that appends the records, so the console's overview of a day of a busy log costs a
    /// read of its counts rather than of the day's records.
    fn tally<'a>(&'a self, minutes: &'a RangeInclusive<i64>) -> TallyFuture<'a> {
        let _ = minutes;
        Box::pin(async { Ok(None) })
    }
}

/// A run of one chain's consecutive records, read without the records before it: what
/// [`AuditHistory::read_page`] reads of each chain.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HistoryPage {
    /// The chain's name, as [`History::log`] gives it.
    pub log: String,
    /// The page's records, oldest first, each its line without the newline.
    pub lines: Vec<Vec<u8>>,
    /// How many records the chain held when the page was read: the number of its last.
    pub records: u64,
    /// The number of the oldest record the chain still holds (`1` unless records were cut
    /// from its beginning), where the log can say it without reading the chain.
    pub oldest: Option<u64>,
    /// The newest signed tree head the log published for the chain, if it publishes them:
    /// what a page is checked against without reading the chain whole
    /// ([`HistoryPage::against_tree_head`]).
    pub tree_head: Option<SignedTreeHead>,
}

impl HistoryPage {
    /// The calls the page's records hold, its first record checked by its own keyed digest
    /// under `key` and each one after against the one before, up to the first break.
    /// [`begins_after`](HistoryCalls::begins_after) is the number of the record before the
    /// page's first: the page says nothing of the records up to it.
    #[must_use]
    pub fn calls(&self, key: &SecretKey) -> HistoryCalls {
        let (numbered, chain, begins_after) = self.numbered_calls(key);
        HistoryCalls {
            calls: numbered.into_iter().map(|(_, call)| call).collect(),
            chain,
            begins_after,
        }
    }

    /// [`calls`](Self::calls), each with the number of its record.
    pub(crate) fn numbered_calls(&self, key: &SecretKey) -> NumberedCalls {
        numbered_calls(Verifier::anywhere(key), &self.lines)
    }

    /// The number of the page's first record, as it gives it, unless the page is empty.
    #[must_use]
    pub fn first(&self) -> Option<u64> {
        line_seq(self.lines.first()?)
    }

    /// The number of the page's last record, unless it is empty.
    #[must_use]
    pub fn through(&self) -> Option<u64> {
        line_seq(self.lines.last()?)
    }

    /// Where the page before this one ends: the number of this page's first record, unless
    /// it is the chain's first (or the page is empty).
    #[must_use]
    pub fn older(&self) -> Option<u64> {
        self.first().filter(|&first| first > 1)
    }

    /// The page held against the chain's newest signed tree head, with `keys` (the signer's
    /// published keys) and the audit `key`, reading nothing more of the chain: the head's
    /// signature; the chain still holds every record the head vouches for, from the first
    /// (none cut from the beginning) to its tree size (none cut from the end); and, where the
    /// page reaches the head's last record, the keyed chain through the page arrives at the
    /// chain head the head signed there, so the page's records are the ones it vouched for.
    /// `Ok(None)` when the log publishes no tree heads.
    ///
    /// # Errors
    ///
    /// The [`TreeHeadError`] that says where the chain and its newest signed head part.
    pub fn against_tree_head(
        &self,
        keys: &KeySet,
        key: &SecretKey,
    ) -> Result<Option<PageAgainstHead>, TreeHeadError> {
        let Some(signed) = &self.tree_head else {
            return Ok(None);
        };
        let head = &signed.tree_head;
        let tree_size = head.tree_size;
        signed
            .verify_signature(keys)
            .map_err(|error| TreeHeadError::Signature { tree_size, error })?;
        if head.log != self.log {
            return Err(TreeHeadError::OtherLog {
                expected: self.log.clone(),
                found: head.log.clone(),
            });
        }
        if self.records < tree_size {
            return Err(TreeHeadError::Truncated {
                records: self.records,
                tree_size,
            });
        }
        if let Some(oldest) = self.oldest.filter(|&oldest| oldest > 1 && tree_size > 0) {
            return Err(TreeHeadError::CutFromTheBeginning { oldest, tree_size });
        }
        let (Some(first), Some(through)) = (self.first(), self.through()) else {
            return Ok(Some(PageAgainstHead::Before { tree_size }));
        };
        if tree_size < first || tree_size > through {
            return Ok(Some(PageAgainstHead::Before { tree_size }));
        }
        let mut verifier = Verifier::anywhere(key);
        for line in &self.lines {
            if verifier.next(line).is_err() {
                // The keyed chain breaks in the page: the page's own check says where.
                return Ok(Some(PageAgainstHead::Before { tree_size }));
            }
            let at = verifier.head();
            if at.records == tree_size {
                return if *at == head.chain_head {
                    Ok(Some(PageAgainstHead::Held { tree_size }))
                } else {
                    Err(TreeHeadError::Altered { tree_size })
                };
            }
        }
        Ok(Some(PageAgainstHead::Before { tree_size }))
    }
}

/// How a page stands against its chain's newest signed tree head
/// ([`HistoryPage::against_tree_head`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PageAgainstHead {
    /// The page reaches the head's last record, and its records are the ones it vouched
    /// for there; every record the head vouches for is still in the chain.
    Held {
        /// The head's tree size.
        tree_size: u64,
    },
    /// Every record the head vouches for is still in the chain, and the head is signed; its
    /// last record is not on the page (or the page's chain breaks before it), so the page's
    /// records are not compared with it.
    Before {
        /// The head's tree size.
        tree_size: u64,
    },
}

/// Calls, each with the number of its record; where the chain stands after them, or the
/// first break; the number of the record before the first one read.
pub(crate) type NumberedCalls = (
    Vec<(u64, (ModelResult, ProtectedAudit))>,
    Result<ChainHead, AuditLogError>,
    u64,
);

/// The calls `lines` hold, checked one after the other by `verifier`, up to the first break.
fn numbered_calls(mut verifier: Verifier<'_>, lines: &[Vec<u8>]) -> NumberedCalls {
    let mut calls = Vec::new();
    for line in lines {
        match verifier.next(line) {
            Ok(ReadEntry::Call(call)) => calls.push((verifier.head().records, *call)),
            Ok(ReadEntry::Event(_)) => {}
            Err(error) => {
                let begins_after = verifier.start().records;
                return (calls, Err(error), begins_after);
            }
        }
    }
    let begins_after = verifier.start().records;
    (calls, Ok(verifier.head().clone()), begins_after)
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
    /// whose chain and tree heads the store's writer does not hold, does. Every audit marks
    /// the execution that spent a grant
    /// ([`ApprovalRecord::redeemed`](crate::results::ApprovalRecord::redeemed)), whether or
    /// not the dispatcher signs receipts; in an audit written before that mark, a redemption
    /// is one with a signed receipt.
    #[must_use]
    pub fn redeemed_more_than_once(&self) -> Vec<(String, usize)> {
        let mut redemptions: Vec<(String, usize)> = Vec::new();
        let redeemed = self.calls.iter().filter_map(|(_, audit)| {
            let approval = audit.approval.as_ref()?;
            approval
                .redeemed
                .unwrap_or(approval.receipt.is_some())
                .then_some(approval.approval_id.as_str())
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
        let (numbered, chain, begins_after) = numbered_calls(Verifier::new(key, None), &self.lines);
        HistoryCalls {
            calls: numbered.into_iter().map(|(_, call)| call).collect(),
            chain,
            begins_after,
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

    /// Reads the page from the files' ends before it returns the future: a local read.
    fn read_page<'a>(&'a self, ends: &'a PageEnds, records: usize) -> PagesFuture<'a> {
        let log = super::file::file_name(self.path()).unwrap_or_default();
        let read = self
            .page(ends.get(&log).copied(), records)
            .and_then(|(lines, total)| {
                Ok(vec![HistoryPage {
                    log,
                    lines,
                    records: total,
                    oldest: self.oldest_record()?,
                    tree_head: JsonLinesAuditLog::newest_tree_head(self.path())?,
                }])
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

    /// The page's lines alone, copied out of the log under its lock.
    fn read_page<'a>(&'a self, ends: &'a PageEnds, records: usize) -> PagesFuture<'a> {
        let (lines, total) = self.page(ends.get("memory").copied(), records);
        let page = HistoryPage {
            log: "memory".to_owned(),
            lines,
            records: total,
            // The memory log starts at the genesis record and keeps every one.
            oldest: (total > 0).then_some(1),
            tree_head: None,
        };
        Box::pin(std::future::ready(Ok(vec![page])))
    }
}
