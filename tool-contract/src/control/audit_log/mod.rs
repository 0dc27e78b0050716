//! The audit log: every call's model result and audit, appended to a chain keyed with an
//! audit key, so that an edit, a dropped record or a forged one shows.
//!
//! Each line is one record, in RFC 8785 form: `seq` (1, 2, …), `prev_sha256` (the record
//! before it, [`GENESIS_SHA256`] for the first), the entry (a call's `audit` and `model`, or
//! a log [`event`](LogEvent)), and `record_sha256`, the HMAC-SHA256 under the audit key of
//! the record without it. Without the key nobody can write a record that verifies, so a
//! rewritten record breaks the chain even when its digest was recomputed.

mod file;
mod file_checkpoint;
mod file_page;
mod file_writer;
mod history;
mod memory;
#[cfg(feature = "postgres")]
mod postgres;
mod record;
mod tally;
mod tree;

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;

use serde::{Deserialize, Serialize};

pub use file::JsonLinesAuditLog;
pub use history::{
    AuditHistory, HistoriesFuture, History, HistoryCalls, HistoryFuture, HistoryPage,
    PageAgainstHead, PageEnds, PagesFuture, TallyFuture,
};
pub use memory::{MEMORY_LOG_RECORDS, MemoryAuditLog};
#[cfg(feature = "postgres")]
pub use postgres::{PostgresAuditLog, StreamHead};
pub use record::verify_chain;
#[cfg(feature = "console")]
pub(crate) use tally::observed_at;
pub use tally::{Tallies, ToolTally, last_day_minutes, minute_of, tally_calls};
pub use tree::{
    MerkleTree, SignedTreeHead, TREE_HEAD_DOMAIN, TreeHead, TreeHeadsHeld, verify_tree_heads,
};

use crate::results::{ModelResult, ProtectedAudit};

/// What [`AuditSink::append`] returns: boxed, so the trait stays object safe.
pub type AuditFuture<'a> = Pin<Box<dyn Future<Output = Result<(), AuditLogError>> + Send + 'a>>;

/// Where the dispatcher sends each call's result and audit, once per call, before it
/// answers. A sink that fails makes the dispatch report it (the call's result still stands:
/// what ran cannot be undone).
///
/// The embedded sinks ([`JsonLinesAuditLog`], [`MemoryAuditLog`]) do their work before they
/// return the future (a local append); a database's sink awaits its round trip.
pub trait AuditSink: Send + Sync {
    /// Appends one call.
    ///
    /// # Errors
    ///
    /// [`AuditLogError`] when the record could not be kept.
    fn append<'a>(&'a self, model: &'a ModelResult, audit: &'a ProtectedAudit) -> AuditFuture<'a>;
}

/// An audit log failed, or a chain does not verify.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuditLogError {
    /// Reading or writing the file failed.
    #[error("audit log I/O failed: {0}")]
    Io(#[from] std::io::Error),
    /// The chain is broken at `line` (1-based): the first record that does not follow from
    /// the one before it.
    #[error("the audit chain breaks at line {line}: {link}")]
    Broken {
        /// The 1-based line of the first bad record.
        line: u64,
        /// What is wrong with it.
        link: BrokenLink,
    },
    /// Another log (in this process or another) writes to this file: one writer per file,
    /// or the chain forks.
    #[error("another writer holds the audit log {path}")]
    Locked {
        /// The log's file.
        path: PathBuf,
    },
    /// The chain does not reach, or does not pass through, the head last checkpointed:
    /// records were dropped off its end, or the file was replaced.
    #[error(
        "the audit log ends at record {} before its checkpoint at record {}, or passes by it",
        found.records,
        checkpoint.records
    )]
    BehindCheckpoint {
        /// The head the checkpoint holds.
        checkpoint: ChainHead,
        /// Where the chain on disk ends.
        found: ChainHead,
    },
    /// The checkpoint beside a log that holds records is missing, unreadable, or not
    /// sealed with the audit key.
    #[error("the audit log's checkpoint is missing, unreadable or not sealed with its key")]
    Checkpoint,
    /// The log's writer has stopped (the log is being dropped, or its thread panicked):
    /// nothing more is appended.
    #[error("the audit log's writer has stopped")]
    WriterStopped,
    /// A [`MemoryAuditLog`] holds all the records it may: nothing more is appended.
    #[error(
        "the memory audit log holds its {capacity} records: keep a long run's audit in a durable log"
    )]
    Full {
        /// The most records it holds.
        capacity: usize,
    },
    /// The sink panicked; the dispatcher caught it.
    #[error("the audit sink panicked")]
    Panicked,
    /// One stream of a shared log does not verify: `error` says why.
    #[error("audit stream {stream}: {error}")]
    Stream {
        /// The stream.
        stream: String,
        /// What is wrong with it.
        #[source]
        error: Box<AuditLogError>,
    },
    /// The database holding the log failed.
    #[error("the audit log's database failed")]
    Database(#[source] crate::control::StoreError),
    /// The file changed under the open log (written or cut by something else), in a way
    /// that cannot be carried on as a new segment.
    #[error("the audit log {path} was changed by another program")]
    ChangedOutside {
        /// The log's file.
        path: PathBuf,
    },
    /// A signed tree head could not be made (the signer does not sign now) or read back.
    #[error("a signed tree head could not be made or read: {0}")]
    TreeHeadFailed(#[source] crate::results::ReceiptError),
    /// The log does not hold up to a signed tree head an auditor kept.
    #[error("the log does not hold up to its signed tree heads: {0}")]
    TreeHeads(#[source] TreeHeadError),
}

impl AuditLogError {
    /// The same failure, for another caller of a batch it failed.
    pub(super) fn again(&self) -> Self {
        match self {
            AuditLogError::Io(error) => {
                AuditLogError::Io(std::io::Error::new(error.kind(), error.to_string()))
            }
            AuditLogError::ChangedOutside { path } => {
                AuditLogError::ChangedOutside { path: path.clone() }
            }
            AuditLogError::TreeHeadFailed(error) => AuditLogError::TreeHeadFailed(error.clone()),
            AuditLogError::Database(error) => AuditLogError::Database(error.clone()),
            AuditLogError::Stream { stream, error } => AuditLogError::Stream {
                stream: stream.clone(),
                error: Box::new(error.again()),
            },
            AuditLogError::Broken { line, link } => AuditLogError::Broken {
                line: *line,
                link: *link,
            },
            AuditLogError::Checkpoint => AuditLogError::Checkpoint,
            AuditLogError::WriterStopped => AuditLogError::WriterStopped,
            other => AuditLogError::Io(std::io::Error::other(other.to_string())),
        }
    }
}

/// Why a log does not hold up to a signed tree head.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TreeHeadError {
    /// A tree head's signature does not verify with the published keys.
    #[error("a tree head of size {tree_size} is not signed by a published key: {error}")]
    Signature {
        /// Its size.
        tree_size: u64,
        /// Why.
        error: crate::results::ReceiptError,
    },
    /// A tree head is of another log.
    #[error("a tree head names the log {found:?}, not {expected:?}")]
    OtherLog {
        /// The log held.
        expected: String,
        /// The log it names.
        found: String,
    },
    /// The log holds fewer records than a signed head vouched for: records were cut off its
    /// end.
    #[error("the log holds {records} records; a signed tree head vouched for {tree_size}")]
    Truncated {
        /// What the log holds.
        records: u64,
        /// What the head vouched for.
        tree_size: u64,
    },
    /// The log's first records are not those a signed head vouched for: a record was edited,
    /// inserted, removed or reordered, or the log was rolled back and written again.
    #[error("the log's first {tree_size} records are not those its signed tree head vouched for")]
    Altered {
        /// The head's size.
        tree_size: u64,
    },
    /// A record is not a record of the chain: not JSON, or its `seq` or `prev_sha256` does not
    /// follow the record before (checked without the key).
    #[error("record {line} does not follow the one before")]
    Unlinked {
        /// Its line, from 1.
        line: u64,
    },
    /// The log's oldest record is not its first: records a signed head vouched for were cut
    /// off its beginning.
    #[error(
        "the log's oldest record is {oldest}; a signed tree head vouched for records 1 to \
         {tree_size}"
    )]
    CutFromTheBeginning {
        /// The number of the oldest record the log holds.
        oldest: u64,
        /// What the head vouched for.
        tree_size: u64,
    },
}

/// How a record fails to follow its predecessor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BrokenLink {
    /// Not one JSON object of a record's members (or a duplicate member, or bad UTF-8).
    #[error("the record is malformed")]
    Malformed,
    /// `seq` is not one more than the previous record's.
    #[error("the sequence number does not follow")]
    Sequence,
    /// `prev_sha256` is not the previous record's `record_sha256`.
    #[error("prev_sha256 is not the previous record's digest")]
    PreviousDigest,
    /// `record_sha256` is not the keyed digest of the record's content.
    #[error("record_sha256 does not match the record under the audit key")]
    RecordDigest,
    /// A segment does not start where the one before it ended.
    #[error("the segment does not start where the previous one ends")]
    Segment,
}

/// The `prev_sha256` of the first record.
pub const GENESIS_SHA256: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Where a chain stands: the last record's number and digest.
///
/// Kept somewhere the log's writer cannot rewrite (another system, a signed report), a head
/// shows any truncation of the log up to it: [`JsonLinesAuditLog::verify`] takes one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChainHead {
    /// The last record's `seq` (0 for an empty chain).
    pub records: u64,
    /// The last record's `record_sha256` ([`GENESIS_SHA256`] for an empty chain).
    pub head_sha256: String,
}

impl Default for ChainHead {
    fn default() -> Self {
        ChainHead {
            records: 0,
            head_sha256: GENESIS_SHA256.to_owned(),
        }
    }
}

/// A record the log writes about itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum LogEvent {
    /// The first record of a segment after the first: the chain goes on from the previous
    /// segment's last record (this record's `seq` and `prev_sha256`).
    SegmentStarted {
        /// The previous segment's file name, when the log moved it there itself.
        previous_segment: Option<String>,
        /// Why the segment began.
        reason: SegmentReason,
    },
    /// Bytes after the last whole record (a write a crash cut short) were moved to a file of
    /// their own when the log was opened.
    TailMovedAside {
        /// How many.
        bytes: u64,
        /// Their SHA-256.
        sha256: String,
        /// The file name they were moved to, beside the log.
        moved_to: String,
    },
}

/// Why a segment began.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SegmentReason {
    /// The log rotated: the segment before it is the file `previous_segment` names.
    Rotated,
    /// The file was emptied by something else (`copytruncate` rotation, an operator): the
    /// records before this one are wherever that put them.
    EmptiedOutside,
}
