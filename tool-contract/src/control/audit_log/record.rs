//! One record of the chain: its line, written from canonical parts, and read back and checked
//! against the record before it; a whole segment checked record by record.

use std::io::BufRead;

use hmac::Mac;
use serde_json::{Map, Value};

use super::{AuditLogError, BrokenLink, ChainHead, LogEvent};
use crate::json::encoding::infallible;
use crate::json::{canonical, depth};
use crate::results::digest::{digests_equal, lower_hex};
use crate::results::{ModelResult, ProtectedAudit, SecretKey};

/// What the keyed digest of a record covers before the record: the key may be one the
/// application uses elsewhere, and no other digest starts so.
const RECORD_DOMAIN: &[u8] = b"tool-contract/audit-record-v1\n";

const CALL_MEMBERS: [&str; 5] = ["audit", "model", "prev_sha256", "record_sha256", "seq"];
const EVENT_MEMBERS: [&str; 4] = ["event", "prev_sha256", "record_sha256", "seq"];

/// What one record holds.
#[derive(Debug, Clone, Copy)]
pub(super) enum Entry<'a> {
    /// A call's two halves.
    Call(&'a ModelResult, &'a ProtectedAudit),
    /// The log's own record.
    Event(&'a LogEvent),
}

/// A record read back.
#[derive(Debug)]
pub(crate) enum ReadEntry {
    /// A call's two halves.
    Call(Box<(ModelResult, ProtectedAudit)>),
    /// The log's own record.
    Event(LogEvent),
}

/// An entry's members in their canonical forms, named: what a record holds before the
/// chain's own members. Made by whoever appends, so a log's writer only chains them.
#[derive(Debug)]
pub(super) struct Members(Vec<(&'static str, Vec<u8>)>);

impl Members {
    /// The canonical members of `entry`.
    pub(super) fn of(entry: Entry<'_>) -> Self {
        Members(match entry {
            Entry::Call(model, audit) => vec![
                ("audit", audit.to_canonical_json()),
                ("model", model.to_canonical_json()),
            ],
            Entry::Event(event) => {
                let event = infallible(serde_json::to_value(event), "an event serializes");
                let event = infallible(canonical::to_vec(&event), "an event holds integers only");
                vec![("event", event)]
            }
        })
    }
}

/// The line (no newline) of the record after `head` holding `entry`, and the head after it.
pub(super) fn next_line(
    key: &SecretKey,
    head: &ChainHead,
    entry: Entry<'_>,
) -> (Vec<u8>, ChainHead) {
    line_after(key, head, &Members::of(entry))
}

/// The line (no newline) of the record after `head` holding `members`, and the head after it.
pub(super) fn line_after(
    key: &SecretKey,
    head: &ChainHead,
    members: &Members,
) -> (Vec<u8>, ChainHead) {
    let seq = head.records + 1;
    let content = record_bytes(&members.0, &head.head_sha256, None, seq);
    let digest = keyed_digest(key, &content);
    let line = record_bytes(&members.0, &head.head_sha256, Some(&digest), seq);
    let next = ChainHead {
        records: seq,
        head_sha256: digest,
    };
    (line, next)
}

/// A record's RFC 8785 form from the canonical forms of its entry's members (named before
/// `prev_sha256` in code-unit order, as `audit`, `event` and `model` are): then
/// `prev_sha256`, `record_sha256` (once known) and `seq`.
fn record_bytes(
    entry: &[(&str, Vec<u8>)],
    prev_sha256: &str,
    record_sha256: Option<&str>,
    seq: u64,
) -> Vec<u8> {
    let size: usize = entry.iter().map(|(_, bytes)| bytes.len() + 12).sum();
    let mut out = Vec::with_capacity(size + 200);
    out.push(b'{');
    for (name, bytes) in entry {
        canonical::write::write_str(&mut out, name);
        out.push(b':');
        out.extend_from_slice(bytes);
        out.push(b',');
    }
    out.extend_from_slice(b"\"prev_sha256\":");
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

fn keyed_digest(key: &SecretKey, content: &[u8]) -> String {
    let mut mac = key.mac();
    mac.update(RECORD_DOMAIN);
    mac.update(content);
    lower_hex(&mac.finalize().into_bytes())
}

/// Checks records one after the other, each against the one before.
#[derive(Debug)]
pub(crate) struct Verifier<'k> {
    key: &'k SecretKey,
    /// The head the next record must follow (`None`: the first record may start anywhere
    /// with a segment start, or at the genesis).
    expected: Option<ChainHead>,
    head: ChainHead,
    start: ChainHead,
    line: u64,
    /// Whether the first record may be any record, taken at its word: a page of a chain
    /// read without the records before it.
    anywhere: bool,
}

impl<'k> Verifier<'k> {
    /// A verifier whose first record follows `start`, or (for `None`) is the genesis record
    /// or a segment start.
    pub(crate) fn new(key: &'k SecretKey, start: Option<ChainHead>) -> Self {
        let head = start.clone().unwrap_or_default();
        Verifier {
            key,
            start: head.clone(),
            head,
            expected: start,
            line: 0,
            anywhere: false,
        }
    }

    /// A verifier whose first record may be any record of a chain (its own keyed digest
    /// still has to hold), each one after it following from the one before: for a page of
    /// a chain, read without the records before it.
    pub(crate) fn anywhere(key: &'k SecretKey) -> Self {
        Verifier {
            anywhere: true,
            ..Verifier::new(key, None)
        }
    }

    /// The last record's head (or where the segment started, before any record).
    pub(crate) fn head(&self) -> &ChainHead {
        &self.head
    }

    /// The head the segment went on from: the genesis, or what its first record names.
    pub(crate) fn start(&self) -> &ChainHead {
        &self.start
    }

    /// Checks the next line (no newline) and returns what it holds.
    pub(crate) fn next(&mut self, line: &[u8]) -> Result<ReadEntry, AuditLogError> {
        self.line += 1;
        let number = self.line;
        let broken = |link| AuditLogError::Broken { line: number, link };
        let (mut record, entry) = read_record(line).ok_or(broken(BrokenLink::Malformed))?;
        let Some(Value::String(claimed)) = record.remove("record_sha256") else {
            return Err(broken(BrokenLink::Malformed));
        };
        let seq = record.get("seq").and_then(Value::as_u64);
        let prev = record.get("prev_sha256").and_then(Value::as_str);
        let (Some(seq), Some(prev)) = (seq, prev) else {
            return Err(broken(BrokenLink::Malformed));
        };
        let segment_start = matches!(entry, ReadEntry::Event(LogEvent::SegmentStarted { .. }));
        match &self.expected {
            // The first record of a segment (or a page) read on its own: the genesis, or a
            // segment start taken at its word (its keyed digest still has to hold).
            None if self.line == 1 && (segment_start || self.anywhere) && seq > 1 => {
                self.start = ChainHead {
                    records: seq - 1,
                    head_sha256: prev.to_owned(),
                };
            }
            _ => {
                if seq != self.head.records + 1 {
                    return Err(broken(BrokenLink::Sequence));
                }
                if prev != self.head.head_sha256 {
                    return Err(broken(BrokenLink::PreviousDigest));
                }
            }
        }
        let content = infallible(
            canonical::to_vec(&Value::Object(record)),
            "a record read from a line holds finite numbers only",
        );
        if !digests_equal(&keyed_digest(self.key, &content), &claimed) {
            return Err(broken(BrokenLink::RecordDigest));
        }
        self.head = ChainHead {
            records: seq,
            head_sha256: claimed,
        };
        Ok(entry)
    }
}

/// The number (`seq`) a record's line gives itself, read from its end without parsing the
/// rest: RFC 8785 orders `seq` last, so a line ends `,"seq":N}`. `None` for a line that
/// does not end so; the record itself is checked when it is read.
pub(crate) fn line_seq(line: &[u8]) -> Option<u64> {
    let digits = line.strip_suffix(b"}")?;
    let start = digits.iter().rposition(|byte| !byte.is_ascii_digit())? + 1;
    if !digits[..start].ends_with(b",\"seq\":") || start == digits.len() {
        return None;
    }
    std::str::from_utf8(&digits[start..]).ok()?.parse().ok()
}

/// A record's members and entry, if the line is a well-formed record: canonical-parsable (no
/// duplicate member), exactly a call's or an event's members, with parts that read back.
fn read_record(line: &[u8]) -> Option<(Map<String, Value>, ReadEntry)> {
    canonical::canonicalize(line).ok()?;
    let Value::Object(record) = depth::from_slice(line).ok()? else {
        return None;
    };
    let has_all = |members: &[&str]| {
        record.len() == members.len() && members.iter().all(|name| record.contains_key(*name))
    };
    let entry = if has_all(&CALL_MEMBERS) {
        let model = serde_json::from_value::<ModelResult>(record["model"].clone()).ok()?;
        let audit = serde_json::from_value::<ProtectedAudit>(record["audit"].clone()).ok()?;
        ReadEntry::Call(Box::new((model, audit)))
    } else if has_all(&EVENT_MEMBERS) {
        ReadEntry::Event(serde_json::from_value(record["event"].clone()).ok()?)
    } else {
        return None;
    };
    Some((record, entry))
}

/// Checks one segment of a chain, line by line, and returns its head.
///
/// The first record is the genesis record (`seq` 1), or a
/// [`SegmentStarted`](LogEvent::SegmentStarted) event going on from a previous segment.
///
/// # Errors
///
/// [`AuditLogError::Broken`] at the first record that does not follow, or
/// [`AuditLogError::Io`].
pub fn verify_chain(reader: impl BufRead, key: &SecretKey) -> Result<ChainHead, AuditLogError> {
    let mut verifier = Verifier::new(key, None);
    for line in reader.split(b'\n') {
        verifier.next(&line?)?;
    }
    Ok(verifier.head().clone())
}
