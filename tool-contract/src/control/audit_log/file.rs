//! The embedded audit log: a JSON-lines file with one writer, a keyed checkpoint of its head
//! beside it, a torn tail moved aside on opening, and rotation into linked segments.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use hmac::Mac;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::record::{Entry, ReadEntry, Verifier, next_line};
use super::tree::{MerkleTree, SignedTreeHead, TreeHeadsHeld, verify_tree_heads};
use super::{
    AuditFuture, AuditLogError, AuditSink, BrokenLink, ChainHead, LogEvent, SegmentReason,
};
use crate::json::encoding::infallible;
use crate::json::{canonical, depth};
use crate::results::digest::digests_equal;
use crate::results::{KeySet, ModelResult, ProtectedAudit, ReceiptSigner, SecretKey};

const CHECKPOINT_DOMAIN: &[u8] = b"tool-contract/audit-checkpoint-v1\n";

/// The suffix of the file of a log's signed tree heads.
const TREE_HEADS: &str = ".tree-heads";

/// The embedded audit log: an append-only JSON-lines file, one keyed, chained record per call.
///
/// Beside the file `audit.jsonl` it keeps:
/// - `audit.jsonl.lock`, locked while the log is open: a second writer, in this process or
///   another, gets [`AuditLogError::Locked`] instead of forking the chain;
/// - `audit.jsonl.head`, the head after every append, sealed with the key: a log that no
///   longer reaches it (records dropped off its end) does not open
///   ([`AuditLogError::BehindCheckpoint`]);
/// - `audit.jsonl.000001`, … the segments [`rotate`](Self::rotate) moved aside, each linked
///   to the next by the chain itself;
/// - `audit.jsonl.torn-N`, bytes a crash left after the last whole record, moved there on
///   opening and recorded in the chain ([`LogEvent::TailMovedAside`]);
/// - `audit.jsonl.tree-heads`, with [`sign_tree_heads`](Self::sign_tree_heads): the log's
///   signed tree heads, one JSON line each, for auditors to copy away and hold the log to
///   with public keys alone ([`verify_published`](Self::verify_published)).
///
/// Every append is written in one call, flushed and synced before the dispatcher answers.
/// Opening verifies the file against its checkpoint and goes on from its head. Rotate with
/// [`rotate`](Self::rotate) or [`rotate_at`](Self::rotate_at), never by copying and
/// truncating the file: a file emptied under the log goes on as a segment that says so
/// ([`SegmentReason::EmptiedOutside`]), and one changed otherwise is refused.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use tool_contract::SecretKey;
/// use tool_contract::control::{AuditLogError, JsonLinesAuditLog};
///
/// let dir = std::env::temp_dir().join(format!("audit-doc-{}", std::process::id()));
/// # let _ = std::fs::remove_dir_all(&dir);
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("audit.jsonl");
/// let key = SecretKey::new(*b"an audit key of thirty-two bytes")?;
/// let log = JsonLinesAuditLog::open(&path, key.clone())?;
/// assert_eq!(log.head().records, 0);
/// // One writer per file.
/// assert!(matches!(
///     JsonLinesAuditLog::open(&path, key.clone()),
///     Err(AuditLogError::Locked { .. })
/// ));
/// drop(log);
/// assert_eq!(JsonLinesAuditLog::verify(&path, &key, None)?.records, 0);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct JsonLinesAuditLog {
    path: PathBuf,
    key: SecretKey,
    /// Holds the lock for as long as the log is open.
    _lock: File,
    active: Mutex<Active>,
}

/// The segment being written.
#[derive(Debug)]
struct Active {
    file: File,
    head: ChainHead,
    /// The file's length as this log wrote it.
    bytes: u64,
    rotate_at: Option<u64>,
    /// The signed tree heads published, if the log signs them.
    tree_heads: Option<TreeHeads>,
}

/// What a log that publishes signed tree heads keeps: the tree over every record so far.
#[derive(Debug)]
struct TreeHeads {
    signer: ReceiptSigner,
    every: u64,
    tree: MerkleTree,
    /// The size of the last head published.
    published: u64,
}

impl JsonLinesAuditLog {
    /// Opens (or creates) the log at `path`, whose chain is keyed with `key`: locks it,
    /// verifies what it holds against its checkpoint, moves a torn tail aside, and goes on
    /// from its head.
    ///
    /// # Errors
    ///
    /// [`AuditLogError::Locked`] while another log has it open; [`AuditLogError::Broken`]
    /// if its chain does not verify; [`AuditLogError::BehindCheckpoint`] or
    /// [`AuditLogError::Checkpoint`] if it does not reach its checkpoint;
    /// [`AuditLogError::Io`].
    pub fn open(path: impl AsRef<Path>, key: SecretKey) -> Result<Self, AuditLogError> {
        let path = path.as_ref().to_owned();
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(beside(&path, ".lock"))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => return Err(AuditLogError::Locked { path }),
            Err(TryLockError::Error(error)) => return Err(error.into()),
        }
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(&path)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        let whole = bytes
            .iter()
            .rposition(|&byte| byte == b'\n')
            .map_or(0, |at| at + 1);
        let checkpoint = read_checkpoint(&path, &key)?;
        let head = verify_segment(&bytes[..whole], &key, checkpoint.as_ref())?;
        let log = JsonLinesAuditLog {
            key,
            _lock: lock,
            active: Mutex::new(Active {
                file,
                head: head.clone(),
                bytes: whole as u64,
                rotate_at: None,
                tree_heads: None,
            }),
            path,
        };
        {
            let mut active = log.active();
            let moved_aside = match whole < bytes.len() {
                true => Some(log.cut_tail(&mut active, &bytes[whole..])?),
                false => None,
            };
            if whole == 0 && head.records > 0 {
                // Empty, yet the checkpoint has records: the chain goes on in a new segment.
                log.start_segment_after_empty(&mut active)?;
            }
            if let Some(event) = moved_aside {
                log.write_entry(&mut active, Entry::Event(&event))?;
            }
            write_checkpoint(&log.path, &log.key, &active.head)?;
        }
        Ok(log)
    }

    /// The same log, rotating into a new segment before an append would take the active
    /// file past `max_segment_bytes`.
    #[must_use]
    pub fn rotate_at(self, max_segment_bytes: u64) -> Self {
        self.active().rotate_at = Some(max_segment_bytes);
        self
    }

    /// The same log, publishing its signed tree head (RFC 9162 Merkle root over every record
    /// of every segment, and the chain head there, signed by `signer`) to
    /// `audit.jsonl.tree-heads`: now, after every `every` records, and before each rotation.
    /// An auditor holding those heads and the signer's published key checks the log with
    /// [`verify_published`](Self::verify_published), without the audit key.
    ///
    /// # Errors
    ///
    /// [`AuditLogError::TreeHeadFailed`] when the signer does not sign now; [`AuditLogError::Io`].
    pub fn sign_tree_heads(self, signer: ReceiptSigner, every: u64) -> Result<Self, AuditLogError> {
        let lines = Self::records(&self.path)?;
        let tree = MerkleTree::of_lines(lines.iter().map(Vec::as_slice));
        {
            let mut active = self.active();
            active.tree_heads = Some(TreeHeads {
                signer,
                every: every.max(1),
                tree,
                published: 0,
            });
            self.publish_tree_head(&mut active)?;
        }
        Ok(self)
    }

    /// Every record of the log at `path`, in order: each segment's lines, then the active
    /// file's (no newlines; a torn tail left out).
    ///
    /// # Errors
    ///
    /// [`AuditLogError::Io`].
    pub fn records(path: impl AsRef<Path>) -> Result<Vec<Vec<u8>>, AuditLogError> {
        let path = path.as_ref();
        let mut files: Vec<PathBuf> = segments(path)?.into_iter().map(|(_, file)| file).collect();
        files.push(path.to_owned());
        let mut records = Vec::new();
        for file in files {
            let bytes = match fs::read(&file) {
                Ok(bytes) => bytes,
                Err(error) if error.kind() == io::ErrorKind::NotFound => Vec::new(),
                Err(error) => return Err(error.into()),
            };
            let whole = bytes
                .iter()
                .rposition(|&byte| byte == b'\n')
                .map_or(0, |at| at + 1);
            records.extend(lines(&bytes[..whole]).map(<[u8]>::to_vec));
        }
        Ok(records)
    }

    /// The signed tree heads the log at `path` published, in the order published.
    ///
    /// # Errors
    ///
    /// [`AuditLogError::TreeHeadFailed`] for a line that is not one; [`AuditLogError::Io`].
    pub fn tree_heads(path: impl AsRef<Path>) -> Result<Vec<SignedTreeHead>, AuditLogError> {
        let bytes = match fs::read(beside(path.as_ref(), TREE_HEADS)) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(error) => return Err(error.into()),
        };
        lines(&bytes)
            .filter(|line| !line.is_empty())
            .map(|line| SignedTreeHead::from_json(line).map_err(AuditLogError::TreeHeadFailed))
            .collect()
    }

    /// Holds the log at `path` (every segment) up to `heads` (tree heads it published, kept
    /// by the auditor) with `keys` (the signer's published keys) alone: see
    /// [`verify_tree_heads`].
    ///
    /// # Errors
    ///
    /// [`AuditLogError::TreeHeads`] naming the first head the log does not hold up to;
    /// [`AuditLogError::Io`].
    pub fn verify_published(
        path: impl AsRef<Path>,
        heads: &[SignedTreeHead],
        keys: &KeySet,
    ) -> Result<TreeHeadsHeld, AuditLogError> {
        let path = path.as_ref();
        let records = Self::records(path)?;
        let log = file_name(path).unwrap_or_default();
        verify_tree_heads(&log, records.iter().map(Vec::as_slice), heads, keys)
            .map_err(AuditLogError::TreeHeads)
    }

    /// Signs and appends the tree head of where the log stands, unless it was published at
    /// this size already.
    fn publish_tree_head(&self, active: &mut Active) -> Result<(), AuditLogError> {
        let Some(heads) = active.tree_heads.as_mut() else {
            return Ok(());
        };
        if heads.published == heads.tree.size() && heads.published > 0 {
            return Ok(());
        }
        let log = file_name(&self.path).unwrap_or_default();
        let now = time::OffsetDateTime::now_utc();
        let signed = SignedTreeHead::sign(&heads.signer, &log, &heads.tree, &active.head, now)
            .map_err(AuditLogError::TreeHeadFailed)?;
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(beside(&self.path, TREE_HEADS))?;
        let mut line = signed.to_json().into_bytes();
        line.push(b'\n');
        file.write_all(&line)?;
        file.sync_data()?;
        heads.published = heads.tree.size();
        Ok(())
    }

    /// At most `records` of the newest records before `end` (every record for `None`), in
    /// order, and the number of records the chain holds: read under the log's lock, so that
    /// no append comes between the two, from the files' ends (see
    /// [`AuditHistory::read_page`](super::AuditHistory::read_page)).
    pub(super) fn page(
        &self,
        end: Option<u64>,
        records: usize,
    ) -> Result<(Vec<Vec<u8>>, u64), AuditLogError> {
        let active = self.active();
        let mut files = vec![self.path.clone()];
        files.extend(
            segments(&self.path)?
                .into_iter()
                .rev()
                .map(|(_, file)| file),
        );
        let lines = super::file_page::newest_before(&files, end, records)?;
        Ok((lines, active.head.records))
    }

    /// The number of the oldest record the log holds that can be read: the first line's of
    /// its oldest file that opens (the oldest segment rotation kept, or the active file),
    /// reading that one line only; a file gone or unreadable holds nothing one can read.
    /// `None` for a log with no record.
    pub(super) fn oldest_record(&self) -> Result<Option<u64>, AuditLogError> {
        let _active = self.active();
        let mut files: Vec<PathBuf> = segments(&self.path)?
            .into_iter()
            .map(|(_, file)| file)
            .collect();
        files.push(self.path.clone());
        for path in files {
            let Ok(file) = File::open(&path) else {
                continue;
            };
            let mut first = Vec::new();
            let read = io::BufRead::read_until(&mut io::BufReader::new(file), b'\n', &mut first);
            if read.is_ok() && first.last() == Some(&b'\n') {
                first.pop();
                return Ok(super::record::line_seq(&first));
            }
        }
        Ok(None)
    }

    /// The newest tree head the log at `path` published (the last line of its tree heads),
    /// reading the file from its end.
    pub(super) fn newest_tree_head(
        path: impl AsRef<Path>,
    ) -> Result<Option<SignedTreeHead>, AuditLogError> {
        let heads = beside(path.as_ref(), TREE_HEADS);
        let last = super::file_page::newest_before(&[heads], None, 1)?;
        last.first()
            .map(|line| SignedTreeHead::from_json(line).map_err(AuditLogError::TreeHeadFailed))
            .transpose()
    }

    /// The file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the chain stands: keep it elsewhere to show a truncation up to it later.
    #[must_use]
    pub fn head(&self) -> ChainHead {
        self.active().head.clone()
    }

    /// Moves the active file aside as the next numbered segment and goes on in a new file
    /// whose first record links to it.
    ///
    /// # Errors
    ///
    /// [`AuditLogError::Io`].
    pub fn rotate(&self) -> Result<(), AuditLogError> {
        let mut active = self.active();
        self.rotate_locked(&mut active)
    }

    /// Verifies the whole log at `path`: every segment from the genesis record on, each
    /// linked to the one before, then the active file, then its checkpoint, and `expected`
    /// (a head kept elsewhere) if given. Returns the head.
    ///
    /// # Errors
    ///
    /// [`AuditLogError::Broken`] at the first bad record (its line in its own file,
    /// [`BrokenLink::Segment`] for a segment that does not go on from the one before);
    /// [`AuditLogError::BehindCheckpoint`] if the chain does not pass through the checkpoint
    /// or `expected`; [`AuditLogError::Checkpoint`]; [`AuditLogError::Io`].
    pub fn verify(
        path: impl AsRef<Path>,
        key: &SecretKey,
        expected: Option<&ChainHead>,
    ) -> Result<ChainHead, AuditLogError> {
        let path = path.as_ref();
        let checkpoint = read_checkpoint(path, key)?;
        let mut through = Through::new([checkpoint.as_ref(), expected]);
        let mut files: Vec<PathBuf> = segments(path)?.into_iter().map(|(_, file)| file).collect();
        files.push(path.to_owned());
        let mut head = ChainHead::default();
        let mut previous_name: Option<String> = None;
        for (index, file) in files.iter().enumerate() {
            let bytes = match fs::read(file) {
                Ok(bytes) => bytes,
                Err(error) if error.kind() == io::ErrorKind::NotFound => Vec::new(),
                Err(error) => return Err(error.into()),
            };
            let previous = (index > 0).then_some((&head, previous_name.as_deref()));
            head = verify_linked(&bytes, key, previous, &mut through)?;
            previous_name = file_name(file);
        }
        through.reached(&head)?;
        Ok(head)
    }

    fn active(&self) -> MutexGuard<'_, Active> {
        self.active.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes `entry` as the next record, synced, and checkpoints the head after it; first
    /// rotates if the record would take the segment past its limit (a segment always takes
    /// one record, however large).
    fn write_entry(&self, active: &mut Active, entry: Entry<'_>) -> Result<(), AuditLogError> {
        let (mut line, mut next) = next_line(&self.key, &active.head, entry);
        let too_long = |active: &Active, line: &[u8]| {
            active
                .rotate_at
                .is_some_and(|limit| active.bytes > 0 && active.bytes + line.len() as u64 >= limit)
        };
        if matches!(entry, Entry::Call(..)) && too_long(active, &line) {
            self.rotate_locked(active)?;
            (line, next) = next_line(&self.key, &active.head, entry);
        }
        line.push(b'\n');
        active.file.write_all(&line)?;
        active.file.flush()?;
        active.file.sync_data()?;
        active.bytes += line.len() as u64;
        active.head = next;
        write_checkpoint(&self.path, &self.key, &active.head)?;
        if let Some(heads) = active.tree_heads.as_mut() {
            heads.tree.push(&line[..line.len() - 1]);
            if heads.tree.size() % heads.every == 0 {
                self.publish_tree_head(active)?;
            }
        }
        Ok(())
    }

    fn rotate_locked(&self, active: &mut Active) -> Result<(), AuditLogError> {
        // The segment moved aside ends where a signed head says it does.
        self.publish_tree_head(active)?;
        let number = segments(&self.path)?
            .last()
            .map_or(1, |(number, _)| number + 1);
        let segment = beside(&self.path, &format!(".{number:06}"));
        fs::rename(&self.path, &segment)?;
        sync_parent(&self.path)?;
        active.file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .read(true)
            .open(&self.path)?;
        active.bytes = 0;
        let event = LogEvent::SegmentStarted {
            previous_segment: file_name(&segment),
            reason: SegmentReason::Rotated,
        };
        self.write_entry(active, Entry::Event(&event))
    }

    /// An empty active file under a checkpoint with records: the newest segment, if it ends
    /// at the checkpoint (a rotation a crash cut short), or else a file emptied outside.
    fn start_segment_after_empty(&self, active: &mut Active) -> Result<(), AuditLogError> {
        let newest = segments(&self.path)?.pop();
        let rotated = match &newest {
            Some((_, segment)) => {
                let bytes = fs::read(segment)?;
                let mut verifier = Verifier::new(&self.key, None);
                let read = lines(&bytes).try_for_each(|line| verifier.next(line).map(drop));
                read.is_ok() && *verifier.head() == active.head
            }
            None => false,
        };
        let event = match newest {
            Some((_, segment)) if rotated => LogEvent::SegmentStarted {
                previous_segment: file_name(&segment),
                reason: SegmentReason::Rotated,
            },
            _ => LogEvent::SegmentStarted {
                previous_segment: None,
                reason: SegmentReason::EmptiedOutside,
            },
        };
        self.write_entry(active, Entry::Event(&event))
    }

    /// Moves the bytes after the last whole record to a file of their own and cuts them
    /// off; the event that records it, for the chain.
    fn cut_tail(&self, active: &mut Active, tail: &[u8]) -> Result<LogEvent, AuditLogError> {
        let moved_to = beside(&self.path, &format!(".torn-{}", active.head.records + 1));
        let mut aside = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(&moved_to)?;
        aside.write_all(tail)?;
        aside.sync_all()?;
        active.file.set_len(active.bytes)?;
        active.file.sync_data()?;
        Ok(LogEvent::TailMovedAside {
            bytes: tail.len() as u64,
            sha256: hex::encode(Sha256::digest(tail)),
            moved_to: file_name(&moved_to).unwrap_or_default(),
        })
    }

    /// Notices what another program did to the file since the last append: emptied, it goes
    /// on in a new segment that says so; otherwise changed, it is refused.
    fn follow_outside_changes(&self, active: &mut Active) -> Result<(), AuditLogError> {
        let length = active.file.metadata()?.len();
        if length == active.bytes {
            return Ok(());
        }
        if length != 0 {
            return Err(AuditLogError::ChangedOutside {
                path: self.path.clone(),
            });
        }
        active.bytes = 0;
        let event = LogEvent::SegmentStarted {
            previous_segment: None,
            reason: SegmentReason::EmptiedOutside,
        };
        self.write_entry(active, Entry::Event(&event))
    }
}

impl AuditSink for JsonLinesAuditLog {
    fn append<'a>(&'a self, model: &'a ModelResult, audit: &'a ProtectedAudit) -> AuditFuture<'a> {
        let mut active = self.active();
        let appended = self
            .follow_outside_changes(&mut active)
            .and_then(|()| self.write_entry(&mut active, Entry::Call(model, audit)));
        Box::pin(std::future::ready(appended))
    }
}

/// Heads a chain must pass through: a checkpoint, a head kept elsewhere.
struct Through<'t> {
    targets: Vec<(&'t ChainHead, bool)>,
}

impl<'t> Through<'t> {
    fn new(targets: impl IntoIterator<Item = Option<&'t ChainHead>>) -> Self {
        let targets = targets.into_iter().flatten();
        Through {
            targets: targets
                .map(|target| (target, *target == ChainHead::default()))
                .collect(),
        }
    }

    fn observe(&mut self, head: &ChainHead) {
        for (target, passed) in &mut self.targets {
            *passed |= *target == head;
        }
    }

    /// Every target passed, or the first that was not, against the chain's `head`.
    fn reached(&self, head: &ChainHead) -> Result<(), AuditLogError> {
        match self.targets.iter().find(|(_, passed)| !passed) {
            None => Ok(()),
            Some((target, _)) => Err(AuditLogError::BehindCheckpoint {
                checkpoint: (*target).clone(),
                found: head.clone(),
            }),
        }
    }
}

/// The non-empty lines of a file's whole lines.
fn lines(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    bytes
        .split(|&byte| byte == b'\n')
        .filter(|line| !line.is_empty())
}

/// Verifies the active segment's whole lines (the genesis record or a segment start first)
/// against `checkpoint`, the head sealed beside it. Returns the head to go on from.
fn verify_segment(
    bytes: &[u8],
    key: &SecretKey,
    checkpoint: Option<&ChainHead>,
) -> Result<ChainHead, AuditLogError> {
    let mut verifier = Verifier::new(key, None);
    let mut through = Through::new([checkpoint]);
    for line in lines(bytes) {
        verifier.next(line)?;
        through.observe(verifier.start());
        through.observe(verifier.head());
    }
    let head = verifier.head().clone();
    match checkpoint {
        // An empty file under a checkpoint: the log goes on from the sealed head.
        Some(checkpoint) if bytes.is_empty() => Ok(checkpoint.clone()),
        // A segment that starts after its checkpoint: a rotation cut short before the
        // checkpoint was written; the segment's first record names the head it goes on from.
        Some(checkpoint) if checkpoint.records < verifier.start().records => Ok(head),
        Some(_) => through.reached(&head).map(|()| head),
        None if head.records > 0 => Err(AuditLogError::Checkpoint),
        None => Ok(head),
    }
}

/// Verifies one segment of a whole log: the first from the genesis record, the others from
/// a segment start going on from `previous`, the head and name of the segment before.
fn verify_linked(
    bytes: &[u8],
    key: &SecretKey,
    previous: Option<(&ChainHead, Option<&str>)>,
    through: &mut Through<'_>,
) -> Result<ChainHead, AuditLogError> {
    let start = previous.map_or_else(ChainHead::default, |(head, _)| head.clone());
    let mut verifier = Verifier::new(key, Some(start));
    for (index, line) in lines(bytes).enumerate() {
        let entry = verifier.next(line)?;
        through.observe(verifier.head());
        let Some((_, previous_name)) = previous.filter(|_| index == 0) else {
            continue;
        };
        let links = matches!(
            &entry,
            ReadEntry::Event(LogEvent::SegmentStarted { previous_segment, reason })
                if *reason == SegmentReason::Rotated && previous_segment.as_deref() == previous_name
        );
        if !links {
            return Err(AuditLogError::Broken {
                line: 1,
                link: BrokenLink::Segment,
            });
        }
    }
    Ok(verifier.head().clone())
}

/// The checkpoint beside a log: its head and the keyed digest sealing it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Checkpoint {
    head_sha256: String,
    records: u64,
    seal: String,
}

fn checkpoint_seal(key: &SecretKey, head: &ChainHead) -> String {
    let mut mac = key.mac();
    mac.update(CHECKPOINT_DOMAIN);
    mac.update(itoa::Buffer::new().format(head.records).as_bytes());
    mac.update(b"\n");
    mac.update(head.head_sha256.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

/// The head sealed beside the log at `path`, if there is a checkpoint.
fn read_checkpoint(path: &Path, key: &SecretKey) -> Result<Option<ChainHead>, AuditLogError> {
    let bytes = match fs::read(beside(path, ".head")) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error.into()),
    };
    let checkpoint: Checkpoint =
        depth::from_slice(&bytes).map_err(|_| AuditLogError::Checkpoint)?;
    let head = ChainHead {
        records: checkpoint.records,
        head_sha256: checkpoint.head_sha256,
    };
    if !digests_equal(&checkpoint.seal, &checkpoint_seal(key, &head)) {
        return Err(AuditLogError::Checkpoint);
    }
    Ok(Some(head))
}

/// Seals `head` beside the log at `path`, replacing the checkpoint at once (a crash leaves
/// the old one, which the file still passes through).
fn write_checkpoint(path: &Path, key: &SecretKey, head: &ChainHead) -> io::Result<()> {
    let checkpoint = Checkpoint {
        head_sha256: head.head_sha256.clone(),
        records: head.records,
        seal: checkpoint_seal(key, head),
    };
    let value = infallible(serde_json::to_value(&checkpoint), "a checkpoint serializes");
    let bytes = infallible(
        canonical::to_vec(&value),
        "a checkpoint holds an integer only",
    );
    let temporary = beside(path, ".head.tmp");
    let mut file = File::create(&temporary)?;
    file.write_all(&bytes)?;
    file.sync_data()?;
    fs::rename(&temporary, beside(path, ".head"))
}

/// The segments rotation moved aside, oldest first, with their numbers.
fn segments(path: &Path) -> io::Result<Vec<(u64, PathBuf)>> {
    let Some(name) = file_name(path) else {
        return Ok(Vec::new());
    };
    let directory = parent(path);
    let mut found = Vec::new();
    for entry in fs::read_dir(directory)? {
        let entry = entry?;
        let entry_name = entry.file_name();
        let Some(suffix) = entry_name
            .to_str()
            .and_then(|entry_name| entry_name.strip_prefix(&name))
            .and_then(|rest| rest.strip_prefix('.'))
        else {
            continue;
        };
        if suffix.len() == 6 && suffix.bytes().all(|byte| byte.is_ascii_digit()) {
            let number = suffix.parse().unwrap_or_default();
            found.push((number, entry.path()));
        }
    }
    found.sort();
    Ok(found)
}

/// `path` with `suffix` after its file name.
fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_owned();
    name.push(suffix);
    path.with_file_name(name)
}

pub(super) fn file_name(path: &Path) -> Option<String> {
    path.file_name()?.to_str().map(str::to_owned)
}

fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// Makes a rename in `path`'s directory durable.
fn sync_parent(path: &Path) -> io::Result<()> {
    File::open(parent(path))?.sync_all()
}
