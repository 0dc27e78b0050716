//! The audit log: every call's model result and audit, appended to a hash chain that shows
//! any later edit.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::json::encoding::infallible;
use crate::json::{canonical, depth};
use crate::results::ModelResult;
use crate::results::ProtectedAudit;

/// Where the dispatcher sends each call's result and audit, once per call, before it
/// answers. A sink that fails makes the dispatch report it (the call's result still stands:
/// what ran cannot be undone).
pub trait AuditSink: Send + Sync {
    /// Appends one call.
    ///
    /// # Errors
    ///
    /// [`AuditLogError`] when the record could not be kept.
    fn append(&self, model: &ModelResult, audit: &ProtectedAudit) -> Result<(), AuditLogError>;
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
}

/// How a record fails to follow its predecessor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BrokenLink {
    /// Not one JSON object of the record's members (or a duplicate member, or bad UTF-8).
    #[error("the record is malformed")]
    Malformed,
    /// `seq` is not one more than the previous record's.
    #[error("the sequence number does not follow")]
    Sequence,
    /// `prev_sha256` is not the previous record's `record_sha256`.
    #[error("prev_sha256 is not the previous record's digest")]
    PreviousDigest,
    /// `record_sha256` is not the digest of the record's content.
    #[error("record_sha256 does not match the record")]
    RecordDigest,
}

/// The `prev_sha256` of the first record.
pub const GENESIS_SHA256: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Where a chain stands: the last record's number and digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainHead {
    /// Records in the chain.
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

impl ChainHead {
    /// The next record's line (no newline), and the head after it.
    fn next_line(&self, model: &ModelResult, audit: &ProtectedAudit) -> (String, ChainHead) {
        let seq = self.records + 1;
        let audit = infallible(
            serde_json::to_value(audit),
            "an audit serializes to strings, booleans and nulls",
        );
        let audit = infallible(
            canonical::to_vec(&audit),
            "an audit holds no number beyond a double",
        );
        let model = model.to_canonical_json();
        let content = record_bytes(&audit, &model, &self.head_sha256, None, seq);
        let digest = hex::encode(Sha256::digest(&content));
        let line = record_bytes(&audit, &model, &self.head_sha256, Some(&digest), seq);
        (
            infallible(String::from_utf8(line), "canonical JSON is UTF-8"),
            ChainHead {
                records: seq,
                head_sha256: digest,
            },
        )
    }
}

/// A record's RFC 8785 form, from the canonical forms of its audit and model result: the
/// members in order `audit`, `model`, `prev_sha256`, `record_sha256` (once known), `seq`.
fn record_bytes(
    audit: &[u8],
    model: &[u8],
    prev_sha256: &str,
    record_sha256: Option<&str>,
    seq: u64,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(audit.len() + model.len() + 200);
    out.extend_from_slice(b"{\"audit\":");
    out.extend_from_slice(audit);
    out.extend_from_slice(b",\"model\":");
    out.extend_from_slice(model);
    out.extend_from_slice(b",\"prev_sha256\":");
    canonical::write::write_str(&mut out, prev_sha256);
    if let Some(digest) = record_sha256 {
        out.extend_from_slice(b",\"record_sha256\":");
        canonical::write::write_str(&mut out, digest);
    }
    out.extend_from_slice(b",\"seq\":");
    out.extend_from_slice(itoa::Buffer::new().format(seq).as_bytes());
    out.push(b'}');
    out
}

/// The digest of a record read back, without its `record_sha256`.
fn record_digest(content: &Value) -> String {
    let bytes = infallible(
        canonical::to_vec(content),
        "a record read from a line holds finite numbers only",
    );
    hex::encode(Sha256::digest(bytes))
}

/// Checks a chain, line by line, and returns its head.
///
/// # Errors
///
/// [`AuditLogError::Broken`] at the first record that does not follow, or
/// [`AuditLogError::Io`].
pub fn verify_chain(reader: impl BufRead) -> Result<ChainHead, AuditLogError> {
    let mut head = ChainHead::default();
    for (index, line) in reader.split(b'\n').enumerate() {
        let line = line?;
        let number = index as u64 + 1;
        let broken = |link| AuditLogError::Broken { line: number, link };
        let mut record = parse_record(&line).ok_or(broken(BrokenLink::Malformed))?;
        let claimed = match record.remove("record_sha256") {
            Some(Value::String(digest)) => digest,
            _ => return Err(broken(BrokenLink::Malformed)),
        };
        if record.get("seq").and_then(Value::as_u64) != Some(head.records + 1) {
            return Err(broken(BrokenLink::Sequence));
        }
        if record.get("prev_sha256").and_then(Value::as_str) != Some(head.head_sha256.as_str()) {
            return Err(broken(BrokenLink::PreviousDigest));
        }
        if record_digest(&Value::Object(record)) != claimed {
            return Err(broken(BrokenLink::RecordDigest));
        }
        head = ChainHead {
            records: number,
            head_sha256: claimed,
        };
    }
    Ok(head)
}

/// One record's members, if the line is a well-formed record: canonical-parsable (no
/// duplicate member), exactly the five members, with a model result and an audit that read
/// back as such.
fn parse_record(line: &[u8]) -> Option<serde_json::Map<String, Value>> {
    canonical::canonicalize(line).ok()?;
    let Value::Object(record) = depth::from_slice(line).ok()? else {
        return None;
    };
    let members = ["audit", "model", "prev_sha256", "record_sha256", "seq"];
    if record.len() != members.len() || !members.iter().all(|name| record.contains_key(*name)) {
        return None;
    }
    serde_json::from_value::<ModelResult>(record["model"].clone()).ok()?;
    serde_json::from_value::<ProtectedAudit>(record["audit"].clone()).ok()?;
    Some(record)
}

/// The embedded audit log: an append-only JSON-lines file, one hash-chained record per call.
///
/// Each line is the RFC 8785 form of `{seq, prev_sha256, model, audit, record_sha256}`, where
/// `record_sha256` is the SHA-256 of the line without it and `prev_sha256` the previous
/// line's. Every append is flushed and synced before the dispatcher answers. Opening an
/// existing file verifies it first and goes on from its head.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use tool_contract::dispatch::{JsonLinesAuditLog, verify_chain};
///
/// let path = std::env::temp_dir().join(format!("audit-doc-{}.jsonl", std::process::id()));
/// # let _ = std::fs::remove_file(&path);
/// let log = JsonLinesAuditLog::open(&path)?;
/// assert_eq!(log.head().records, 0);
/// let head = verify_chain(std::io::BufReader::new(std::fs::File::open(&path)?))?;
/// assert_eq!(head.records, 0);
/// # std::fs::remove_file(&path)?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct JsonLinesAuditLog {
    path: PathBuf,
    state: Mutex<(File, ChainHead)>,
}

impl JsonLinesAuditLog {
    /// Opens (or creates) the log at `path`, verifying what it already holds.
    ///
    /// # Errors
    ///
    /// [`AuditLogError::Broken`] if the existing chain does not verify; [`AuditLogError::Io`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self, AuditLogError> {
        let path = path.as_ref().to_owned();
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(&path)?;
        let head = verify_chain(BufReader::new(File::open(&path)?))?;
        Ok(JsonLinesAuditLog {
            path,
            state: Mutex::new((file, head)),
        })
    }

    /// The file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the chain stands.
    #[must_use]
    pub fn head(&self) -> ChainHead {
        self.state().1.clone()
    }

    fn state(&self) -> MutexGuard<'_, (File, ChainHead)> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl AuditSink for JsonLinesAuditLog {
    fn append(&self, model: &ModelResult, audit: &ProtectedAudit) -> Result<(), AuditLogError> {
        let mut state = self.state();
        let (line, next) = state.1.next_line(model, audit);
        let file = &mut state.0;
        file.write_all(line.as_bytes())?;
        file.write_all(b"\n")?;
        file.flush()?;
        file.sync_data()?;
        state.1 = next;
        Ok(())
    }
}

/// The same chain kept in memory: for tests, and for programs that ship records elsewhere.
#[derive(Debug, Default)]
pub struct MemoryAuditLog {
    state: Mutex<(Vec<String>, ChainHead)>,
}

impl MemoryAuditLog {
    /// An empty log.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Every line so far (no newlines).
    #[must_use]
    pub fn lines(&self) -> Vec<String> {
        self.state().0.clone()
    }

    /// Every record's model result and audit so far, in order.
    #[must_use]
    pub fn records(&self) -> Vec<(ModelResult, ProtectedAudit)> {
        self.lines()
            .iter()
            .filter_map(|line| {
                let mut record: serde_json::Map<String, Value> =
                    depth::from_slice(line.as_bytes()).ok()?;
                let model = serde_json::from_value(record.remove("model")?).ok()?;
                let audit = serde_json::from_value(record.remove("audit")?).ok()?;
                Some((model, audit))
            })
            .collect()
    }

    fn state(&self) -> MutexGuard<'_, (Vec<String>, ChainHead)> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl AuditSink for MemoryAuditLog {
    fn append(&self, model: &ModelResult, audit: &ProtectedAudit) -> Result<(), AuditLogError> {
        let mut state = self.state();
        let (line, next) = state.1.next_line(model, audit);
        state.0.push(line);
        state.1 = next;
        Ok(())
    }
}
