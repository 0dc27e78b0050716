//! The embedded audit log: a JSON-lines file with one writer, a keyed checkpoint of its head
//! beside it, a torn tail moved aside on opening, and rotation into linked segments.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use sha2::{Digest, Sha256};
use tokio::sync::oneshot;

use super::file_checkpoint::{self, Checkpoint};
use super::file_writer::{Append, Writer};
use super::record::{Entry, Members, ReadEntry, Verifier, line_after};
use super::tree::{MerkleTree, SignedTreeHead, TreeHeadsHeld, verify_tree_heads};
use super::{
    AuditFuture, AuditLogError, AuditSink, BrokenLink, ChainHead, LogEvent, SegmentReason,
};
use crate::results::{KeySet, ModelResult, ProtectedAudit, ReceiptSigner, SecretKey};

/// The suffix of the file of a log's checkpoint.
const CHECKPOINT: &str = ".head";

/// The suffix of the file of a log's signed tree heads.
const TREE_HEADS: &str = ".tree-heads";

/// The embedded audit log: an append-only JSON-lines file, one keyed, chained record per call.
///
/// Beside the file `audit.jsonl` it keeps:
/// - `audit.jsonl.lock`, locked while the log is open: a second writer, in this process or
///   another, gets [`AuditLogError::Locked`] instead of forking the chain;
/// - `audit.jsonl.head`, the head after every write, sealed with the key: a log that no
///   longer reaches it (records dropped off its end) does not open
///   ([`AuditLogError::BehindCheckpoint`]). It is written in place, in two slots in turn,
///   and left to the kernel to write back: after a power cut it may stand behind the
///   records by what the kernel had not written yet (at most about 30 s with Linux's
///   defaults), never ahead of them, and a write the cut tore spoils one slot only;
/// - `audit.jsonl.000001`, … the segments [`rotate`](Self::rotate) moved aside, each linked
///   to the next by the chain itself;
/// - `audit.jsonl.torn-N`, bytes a crash left after the last whole record, moved there on
///   opening and recorded in the chain ([`LogEvent::TailMovedAside`]);
/// - `audit.jsonl.tree-heads`, with [`sign_tree_heads`](Self::sign_tree_heads): the log's
///   signed tree heads, one JSON line each, for auditors to copy away and hold the log to
///   with public keys alone ([`verify_published`](Self::verify_published)).
///
/// Appends are written by a thread of the log's own and group-committed: every record
/// waiting is written, then one `sync_data` covers them all, then the checkpoint and the
/// tree head (unsynced), and only then is each caller answered, so a dispatcher still
/// answers a call once its record is durable. No runtime thread waits on the disk; fifty
/// callers at once cost one sync, not fifty, and a batch costs one sync however much it
/// seals. Dropping the log lets the writer finish what was sent, syncs the checkpoint and
/// the tree heads, then lets the lock go.
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
    shared: Arc<Shared>,
    /// Where appends go; taken when the log is dropped, so that its thread has ended before
    /// the lock is let go.
    writer: Option<Writer>,
    /// Holds the lock for as long as the log is open.
    _lock: File,
}

/// What the log and its writer share: the file, the key, and the segment being written.
#[derive(Debug)]
struct Shared {
    path: PathBuf,
    key: SecretKey,
    active: Mutex<Active>,
    /// How many times writes synced the log's file since it opened: once a batch (the
    /// checkpoint and the tree head are not synced then).
    syncs: AtomicU64,
}

/// The segment being written.
#[derive(Debug)]
struct Active {
    file: File,
    head: ChainHead,
    /// The head sealed beside the file, advanced after each sync.
    checkpoint: Checkpoint,
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
    /// `audit.jsonl.tree-heads`, open to append.
    file: File,
    /// Its length as this log wrote it: what a failed write is cut back to.
    bytes: u64,
    every: u64,
    tree: MerkleTree,
    /// The size of the last head published.
    published: u64,
    /// The tree's size at the last sync: a head is due when a sync passes a multiple of
    /// `every`.
    settled: u64,
}

/// Where the segment stood before records were written: what a failed write or sync goes
/// back to.
#[derive(Debug)]
struct Before {
    bytes: u64,
    head: ChainHead,
    tree: Option<MerkleTree>,
}

impl Before {
    fn of(active: &Active) -> Self {
        Before {
            bytes: active.bytes,
            head: active.head.clone(),
            tree: active.tree_heads.as_ref().map(|heads| heads.tree.clone()),
        }
    }

    /// Cuts off what was written after, and takes the head and the tree back. A file that
    /// cannot be cut is caught at the next append ([`AuditLogError::ChangedOutside`]).
    fn restore(&self, active: &mut Active) {
        let _ = active.file.set_len(self.bytes);
        active.bytes = self.bytes;
        active.head = self.head.clone();
        if let (Some(heads), Some(tree)) = (active.tree_heads.as_mut(), &self.tree) {
            heads.tree = tree.clone();
        }
    }
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
        let whole = whole_lines(&bytes);
        let checkpoint = file_checkpoint::read(&beside(&path, CHECKPOINT), &key)?;
        let head = verify_segment(&bytes[..whole], &key, checkpoint.as_ref())?;
        let checkpoint = Checkpoint::create(&beside(&path, CHECKPOINT), &key, &head)?;
        sync_parent(&path)?;
        let shared = Arc::new(Shared {
            key,
            active: Mutex::new(Active {
                file,
                head: head.clone(),
                checkpoint,
                bytes: whole as u64,
                rotate_at: None,
                tree_heads: None,
            }),
            path,
            syncs: AtomicU64::new(0),
        });
        {
            let mut active = shared.active();
            let moved_aside = match whole < bytes.len() {
                true => Some(shared.cut_tail(&mut active, &bytes[whole..])?),
                false => None,
            };
            if whole == 0 && head.records > 0 {
                // Empty, yet the checkpoint has records: the chain goes on in a new segment.
                shared.start_segment_after_empty(&mut active)?;
            }
            if let Some(event) = moved_aside {
                shared.write_event(&mut active, &event)?;
            }
        }
        let writing = Arc::clone(&shared);
        let writer = Writer::start(move |batch| writing.write_batch(batch))?;
        Ok(JsonLinesAuditLog {
            shared,
            writer: Some(writer),
            _lock: lock,
        })
    }

    /// The same log, rotating into a new segment before an append would take the active
    /// file past `max_segment_bytes`.
    #[must_use]
    pub fn rotate_at(self, max_segment_bytes: u64) -> Self {
        self.shared.active().rotate_at = Some(max_segment_bytes);
        self
    }

    /// The same log, publishing its signed tree head (RFC 9162 Merkle root over every record
    /// of every segment, and the chain head there, signed by `signer`) to
    /// `audit.jsonl.tree-heads`: now, before each rotation, and at the end of each write
    /// that took the log past a multiple of `every` records. Appends are written in batches
    /// (see above), so a head vouches for the log up to the last record of its batch: with
    /// `every = 1`, one head per batch, never more than one per sync; with one caller at a
    /// time, one every `every` records exactly. An auditor holding those heads and the
    /// signer's published key checks the log with [`verify_published`](Self::verify_published),
    /// without the audit key, as far as the newest head they hold: every record up to it is
    /// there, in order, unaltered; records after it wait for the next head.
    ///
    /// A head is written once the records it vouches for are synced, and is not synced
    /// itself (the batch's one sync is the records'): the kernel writes it back (within
    /// about 30 s with Linux's defaults), and closing the log syncs it. A head a power cut lost vouched for durable
    /// records only; opening signs the whole log again, and cuts off a head the cut left
    /// half written.
    ///
    /// # Errors
    ///
    /// [`AuditLogError::TreeHeadFailed`] when the signer does not sign now; [`AuditLogError::Io`].
    pub fn sign_tree_heads(self, signer: ReceiptSigner, every: u64) -> Result<Self, AuditLogError> {
        let lines = Self::records(&self.shared.path)?;
        let tree = MerkleTree::of_lines(lines.iter().map(Vec::as_slice));
        let file = open_tree_heads(&self.shared.path)?;
        let bytes = file.metadata()?.len();
        {
            let mut active = self.shared.active();
            active.tree_heads = Some(TreeHeads {
                signer,
                file,
                bytes,
                every: every.max(1),
                settled: tree.size(),
                tree,
                published: 0,
            });
            self.shared.publish_tree_head(&mut active)?;
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
        lines(&bytes[..whole_lines(&bytes)])
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

    /// At most `records` of the newest records before `end` (every record for `None`), in
    /// order, and the number of records the chain holds: read under the log's lock, so that
    /// no append comes between the two, from the files' ends (see
    /// [`AuditHistory::read_page`](super::AuditHistory::read_page)).
    pub(super) fn page(
        &self,
        end: Option<u64>,
        records: usize,
    ) -> Result<(Vec<Vec<u8>>, u64), AuditLogError> {
        let active = self.shared.active();
        let mut files = vec![self.shared.path.clone()];
        files.extend(
            segments(&self.shared.path)?
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
        let _active = self.shared.active();
        let mut files: Vec<PathBuf> = segments(&self.shared.path)?
            .into_iter()
            .map(|(_, file)| file)
            .collect();
        files.push(self.shared.path.clone());
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
        &self.shared.path
    }

    /// Where the chain stands: keep it elsewhere to show a truncation up to it later.
    #[must_use]
    pub fn head(&self) -> ChainHead {
        self.shared.active().head.clone()
    }

    /// Moves the active file aside as the next numbered segment and goes on in a new file
    /// whose first record links to it.
    ///
    /// # Errors
    ///
    /// [`AuditLogError::Io`].
    pub fn rotate(&self) -> Result<(), AuditLogError> {
        let mut active = self.shared.active();
        self.shared.rotate_locked(&mut active)
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
        let checkpoint = file_checkpoint::read(&beside(path, CHECKPOINT), key)?;
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
}

impl Drop for JsonLinesAuditLog {
    /// Lets the writer finish, then makes the checkpoint and the tree heads durable, which
    /// each batch left to the kernel.
    fn drop(&mut self) {
        if let Some(writer) = self.writer.take() {
            writer.stop();
        }
        let active = self.shared.active();
        let _ = active.checkpoint.sync();
        if let Some(heads) = &active.tree_heads {
            let _ = heads.file.sync_data();
        }
    }
}

impl Shared {
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
        let mut line = signed.to_json().into_bytes();
        line.push(b'\n');
        // Unsynced: the records it vouches for are durable already, and a head a power cut
        // loses is signed again when the log opens. A write that failed part way is cut off,
        // so that the next head starts a line of its own.
        if let Err(error) = heads.file.write_all(&line) {
            let _ = heads.file.set_len(heads.bytes);
            return Err(error.into());
        }
        heads.bytes += line.len() as u64;
        heads.published = heads.tree.size();
        Ok(())
    }

    fn active(&self) -> MutexGuard<'_, Active> {
        self.active.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The line of the record after the head holding `members`, and the head after it.
    fn line_for(&self, active: &Active, members: &Members) -> (Vec<u8>, ChainHead) {
        line_after(&self.key, &active.head, members)
    }

    /// Whether `line` would take the segment past its limit (a segment always takes one
    /// record, however large).
    fn past_limit(active: &Active, line: &[u8]) -> bool {
        active
            .rotate_at
            .is_some_and(|limit| active.bytes > 0 && active.bytes + line.len() as u64 >= limit)
    }

    /// Writes `line`, the record that takes the chain to `next`, after the others, unsynced.
    fn write_line(
        &self,
        active: &mut Active,
        line: Vec<u8>,
        next: ChainHead,
    ) -> Result<(), AuditLogError> {
        let mut staged = Staged::default();
        Self::stage(active, &mut staged, &line, next);
        active.file.write_all(&staged.lines)?;
        Ok(())
    }

    /// Takes `line`, the record that takes the chain to `next`, after the others into
    /// `staged`, written with them in one `write` when the batch settles.
    fn stage(active: &mut Active, staged: &mut Staged, line: &[u8], next: ChainHead) {
        staged.lines.extend_from_slice(line);
        staged.lines.push(b'\n');
        active.bytes += line.len() as u64 + 1;
        active.head = next;
        if let Some(heads) = active.tree_heads.as_mut() {
            heads.tree.push(line);
        }
    }

    /// Makes every record written durable; on failure, cuts them off again and goes back to
    /// `before`, so that the file and the head agree.
    fn sync(&self, active: &mut Active, before: &Before) -> Result<(), AuditLogError> {
        let synced = active.file.flush().and_then(|()| self.synced(&active.file));
        if let Err(error) = synced {
            before.restore(active);
            return Err(error.into());
        }
        Ok(())
    }

    /// Syncs `file`, counted.
    fn synced(&self, file: &File) -> io::Result<()> {
        self.syncs.fetch_add(1, Ordering::Relaxed);
        file.sync_data()
    }

    /// After a sync: checkpoints the head, and publishes a signed tree head when the log
    /// passed a multiple of the heads' interval since the last sync. Neither is synced: see
    /// [`Checkpoint`] and [`publish_tree_head`](Self::publish_tree_head).
    fn seal(&self, active: &mut Active) -> Result<(), AuditLogError> {
        active.checkpoint.advance(&self.key, &active.head)?;
        let due = active.tree_heads.as_mut().is_some_and(|heads| {
            let due = heads.tree.size() / heads.every > heads.settled / heads.every;
            heads.settled = heads.tree.size();
            due
        });
        if due {
            self.publish_tree_head(active)?;
        }
        Ok(())
    }

    /// Writes the log's own `event` as the next record, synced, and seals the head after it.
    fn write_event(&self, active: &mut Active, event: &LogEvent) -> Result<(), AuditLogError> {
        let before = Before::of(active);
        let (line, next) = self.line_for(active, &Members::of(Entry::Event(event)));
        if let Err(error) = self.write_line(active, line, next) {
            before.restore(active);
            return Err(error);
        }
        self.sync(active, &before)?;
        self.seal(active)
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
        self.write_event(active, &event)
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
        self.write_event(active, &event)
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
        self.write_event(active, &event)
    }

    /// Writes `batch` in order, in one `write`, syncs once, seals the head, and answers each
    /// append. A record that would take the segment past its limit first has those before it
    /// written, synced and answered, and the segment rotated.
    fn write_batch(&self, batch: Vec<Append>) {
        let mut active = self.active();
        let active = &mut *active;
        if let Err(error) = self.follow_outside_changes(active) {
            for append in batch {
                let _ = append.answer.send(Err(error.again()));
            }
            return;
        }
        let mut staged = Staged::default();
        let mut before = Before::of(active);
        for Append { members, answer } in batch {
            let (mut line, mut next) = self.line_for(active, &members);
            if Shared::past_limit(active, &line) {
                self.settle(active, &before, &mut staged);
                if let Err(error) = self.rotate_locked(active) {
                    let _ = answer.send(Err(error));
                    before = Before::of(active);
                    continue;
                }
                before = Before::of(active);
                (line, next) = self.line_for(active, &members);
            }
            Self::stage(active, &mut staged, &line, next);
            staged.answers.push(answer);
        }
        self.settle(active, &before, &mut staged);
    }

    /// Writes what `staged` holds and syncs it, seals the head after it, then answers each
    /// append: `Ok` once the records are durable; an error if the write or the sync failed
    /// (the records cut off again) or the seal did (the records stay: they are durable, but
    /// the checkpoint or tree head is not).
    fn settle(&self, active: &mut Active, before: &Before, staged: &mut Staged) {
        if staged.answers.is_empty() {
            return;
        }
        let written = active.file.write_all(&staged.lines);
        staged.lines.clear();
        let settled = match written {
            Ok(()) => self.sync(active, before).and_then(|()| self.seal(active)),
            Err(error) => {
                before.restore(active);
                Err(error.into())
            }
        };
        for waiting in staged.answers.drain(..) {
            let _ = waiting.send(settled.as_ref().map_err(AuditLogError::again).copied());
        }
    }
}

/// The records of a batch not written yet, and who waits on each.
#[derive(Default)]
struct Staged {
    lines: Vec<u8>,
    answers: Vec<oneshot::Sender<Result<(), AuditLogError>>>,
}

impl AuditSink for JsonLinesAuditLog {
    /// Hands the record to the log's writer and waits, without holding a thread, until it
    /// is synced: the writer syncs once for all the records waiting with it.
    fn append<'a>(&'a self, model: &'a ModelResult, audit: &'a ProtectedAudit) -> AuditFuture<'a> {
        let members = Members::of(Entry::Call(model, audit));
        let appended = self.writer.as_ref().map(|writer| writer.append(members));
        Box::pin(async move {
            match appended {
                Some(appended) => appended.await,
                None => Err(AuditLogError::WriterStopped),
            }
        })
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

/// The length of `bytes`' whole lines: up to and with the last newline.
fn whole_lines(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .rposition(|&byte| byte == b'\n')
        .map_or(0, |at| at + 1)
}

/// Opens the tree heads beside the log at `path` to append, first cutting off a head a crash
/// left half written.
fn open_tree_heads(path: &Path) -> io::Result<File> {
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .open(beside(path, TREE_HEADS))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    let whole = whole_lines(&bytes);
    if whole < bytes.len() {
        file.set_len(whole as u64)?;
        file.sync_data()?;
    }
    Ok(file)
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn an_event() -> LogEvent {
        LogEvent::TailMovedAside {
            bytes: 1,
            sha256: "0".repeat(64),
            moved_to: "audit.jsonl.torn-1".to_owned(),
        }
    }

    /// A new log in a directory of its own, signing a tree head at every sync.
    fn log(name: &str) -> (JsonLinesAuditLog, PathBuf, SecretKey) {
        let directory = std::env::temp_dir().join(format!(
            "tool-contract-writer-{name}-{}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&directory);
        fs::create_dir_all(&directory).unwrap();
        let path = directory.join("audit.jsonl");
        let key = SecretKey::new([7; 32]).unwrap();
        (signing(&path, &key), path, key)
    }

    /// The log at `path` opened, signing a tree head at every sync.
    fn signing(path: &Path, key: &SecretKey) -> JsonLinesAuditLog {
        let since = time::OffsetDateTime::from_unix_timestamp(1_767_225_600).unwrap();
        JsonLinesAuditLog::open(path, key.clone())
            .unwrap()
            .sign_tree_heads(ReceiptSigner::new("k", [5; 32], since), 1)
            .unwrap()
    }

    fn append_one(log: &JsonLinesAuditLog) -> Result<(), AuditLogError> {
        let appended = log
            .writer
            .as_ref()
            .unwrap()
            .append(Members::of(Entry::Event(&an_event())));
        runtime().block_on(appended)
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn appends_that_wait_together_are_synced_together() {
        let (log, path, key) = log("together");
        let writer = log.writer.as_ref().unwrap();
        let busy = log.shared.active();
        let appends: Vec<_> = (0..50)
            .map(|_| writer.append(Members::of(Entry::Event(&an_event()))))
            .collect();
        // The writer took the first and waits for the file, as behind a slow sync.
        std::thread::sleep(Duration::from_millis(100));
        drop(busy);
        let answers = runtime().block_on(futures_util::future::join_all(appends));
        assert!(answers.iter().all(Result::is_ok), "{answers:?}");
        let sizes: Vec<u64> = JsonLinesAuditLog::tree_heads(&path)
            .unwrap()
            .iter()
            .map(|signed| signed.tree_head.tree_size)
            .collect();
        // The head signed on opening, then one per sync: at most two for fifty records.
        assert!(sizes.len() <= 3, "{sizes:?}");
        assert_eq!(sizes.last(), Some(&50));
        drop(log);
        assert_eq!(
            JsonLinesAuditLog::verify(&path, &key, None)
                .unwrap()
                .records,
            50
        );
    }

    #[test]
    fn an_append_waiting_on_the_disk_holds_no_runtime_thread() {
        let (log, path, _) = log("no-thread");
        let writer = log.writer.as_ref().unwrap();
        let busy = log.shared.active();
        let runtime = runtime();
        let appended = runtime.spawn(writer.append(Members::of(Entry::Event(&an_event()))));
        // On the one runtime thread, a timer still fires while the append waits.
        runtime.block_on(async { tokio::time::sleep(Duration::from_millis(20)).await });
        assert!(!appended.is_finished());
        drop(busy);
        runtime.block_on(appended).unwrap().unwrap();
        assert_eq!(log.head().records, 1);
        assert_eq!(JsonLinesAuditLog::records(&path).unwrap().len(), 1);
    }

    #[test]
    fn a_dropped_log_writes_what_was_sent_and_lets_its_lock_go() {
        let (log, path, key) = log("dropped");
        let appended = log
            .writer
            .as_ref()
            .unwrap()
            .append(Members::of(Entry::Event(&an_event())));
        drop(log);
        assert!(runtime().block_on(appended).is_ok());
        let reopened = JsonLinesAuditLog::open(&path, key).unwrap();
        assert_eq!(reopened.head().records, 1);
    }

    #[test]
    fn a_batch_costs_one_sync_however_much_it_seals() {
        let (log, path, key) = log("one-sync");
        for records in 1..=3 {
            let before = log.shared.syncs.load(Ordering::Relaxed);
            append_one(&log).unwrap();
            assert_eq!(log.shared.syncs.load(Ordering::Relaxed) - before, 1);
            // Checkpointed and signed at that record all the same.
            let checkpoint = file_checkpoint::read(&beside(&path, CHECKPOINT), &key)
                .unwrap()
                .unwrap();
            assert_eq!(checkpoint.records, records);
            let heads = JsonLinesAuditLog::tree_heads(&path).unwrap();
            assert_eq!(heads.last().unwrap().tree_head.tree_size, records);
        }
    }

    #[test]
    fn a_tree_head_a_crash_left_half_written_is_read_past_and_cut_off_on_opening() {
        let (log, path, key) = log("torn-head");
        append_one(&log).unwrap();
        drop(log);
        let mut heads = OpenOptions::new()
            .append(true)
            .open(beside(&path, TREE_HEADS))
            .unwrap();
        heads.write_all(br#"{"tree_head":{"tree_si"#).unwrap();
        // On opening, then after the one record.
        assert_eq!(JsonLinesAuditLog::tree_heads(&path).unwrap().len(), 2);
        let reopened = signing(&path, &key);
        append_one(&reopened).unwrap();
        let sizes: Vec<u64> = JsonLinesAuditLog::tree_heads(&path)
            .unwrap()
            .iter()
            .map(|signed| signed.tree_head.tree_size)
            .collect();
        assert_eq!(sizes, [0, 1, 1, 2]);
    }
}
