//! The keyed checkpoint beside a file log: the head after each batch, sealed with the audit
//! key, in two slots written in turn and in place, so that the batch's one sync is the
//! records' own.
//!
//! A log that no longer reaches its checkpoint does not open. For that the checkpoint must
//! never stand ahead of the records on disk, and a crash must never leave it unreadable. It
//! is written only after the records it seals are synced, so it never stands ahead. It is not
//! synced itself: after a power cut it may stand behind, as far as the kernel had not written
//! it back, which costs the check those last records and nothing else. A write a crash tears
//! spoils at most the one slot it wrote: the other holds the head before it. Each slot is one
//! 512-byte sector, the unit disks write whole.

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use hmac::Mac;
use serde::{Deserialize, Serialize};

use super::{AuditLogError, ChainHead};
use crate::json::encoding::infallible;
use crate::json::{canonical, depth};
use crate::results::SecretKey;
use crate::results::digest::{digests_equal, lower_hex};

const CHECKPOINT_DOMAIN: &[u8] = b"tool-contract/audit-checkpoint-v1\n";

/// The bytes of one slot: a sector. A sealed head is under 200.
const SLOT_BYTES: usize = 512;

/// How many slots the file holds, written in turn.
const SLOTS: u64 = 2;

/// A head as the checkpoint's file holds it.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Sealed {
    head_sha256: String,
    records: u64,
    seal: String,
}

/// The open checkpoint of a log being written.
#[derive(Debug)]
pub(super) struct Checkpoint {
    file: File,
    /// The slot the next head goes to.
    next_slot: u64,
}

impl Checkpoint {
    /// Replaces the checkpoint at `path` with `head` in every slot (a new file, synced, then
    /// renamed over the old one: a crash leaves either; the caller syncs the directory), and
    /// keeps it open for the heads after it.
    pub(super) fn create(path: &Path, key: &SecretKey, head: &ChainHead) -> io::Result<Self> {
        let mut temporary = OsString::from(path.as_os_str());
        temporary.push(".tmp");
        let temporary = PathBuf::from(temporary);
        let slot = slot(key, head);
        let mut file = File::create(&temporary)?;
        for _ in 0..SLOTS {
            file.write_all(&slot)?;
        }
        file.sync_data()?;
        fs::rename(&temporary, path)?;
        let file = OpenOptions::new().write(true).open(path)?;
        Ok(Checkpoint { file, next_slot: 0 })
    }

    /// Seals `head` into the next slot, in place and unsynced. Only once the records up to
    /// `head` are durable.
    pub(super) fn advance(&mut self, key: &SecretKey, head: &ChainHead) -> io::Result<()> {
        self.file
            .seek(SeekFrom::Start(self.next_slot * SLOT_BYTES as u64))?;
        self.file.write_all(&slot(key, head))?;
        self.next_slot = (self.next_slot + 1) % SLOTS;
        Ok(())
    }

    /// Makes the heads written durable: when the log closes.
    pub(super) fn sync(&self) -> io::Result<()> {
        self.file.sync_data()
    }
}

/// The head sealed in the checkpoint at `path`, if there is one: the newest slot whose seal
/// holds. A file of an earlier version, one head and no padding, reads as one slot.
///
/// # Errors
///
/// [`AuditLogError::Checkpoint`] when no slot holds a sealed head; [`AuditLogError::Io`].
pub(super) fn read(path: &Path, key: &SecretKey) -> Result<Option<ChainHead>, AuditLogError> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error.into()),
    };
    bytes
        .chunks(SLOT_BYTES)
        .filter_map(|slot| unsealed(slot, key))
        .max_by_key(|head| head.records)
        .map(Some)
        .ok_or(AuditLogError::Checkpoint)
}

/// The head in `slot`, if it reads and its seal holds.
fn unsealed(slot: &[u8], key: &SecretKey) -> Option<ChainHead> {
    let sealed: Sealed = depth::from_slice(slot).ok()?;
    let head = ChainHead {
        records: sealed.records,
        head_sha256: sealed.head_sha256,
    };
    digests_equal(&sealed.seal, &seal(key, &head)).then_some(head)
}

/// `head` sealed, as one slot: its canonical JSON padded with spaces to a line of
/// [`SLOT_BYTES`].
fn slot(key: &SecretKey, head: &ChainHead) -> Vec<u8> {
    let sealed = Sealed {
        head_sha256: head.head_sha256.clone(),
        records: head.records,
        seal: seal(key, head),
    };
    let value = infallible(serde_json::to_value(&sealed), "a checkpoint serializes");
    let mut bytes = infallible(
        canonical::to_vec(&value),
        "a checkpoint holds an integer only",
    );
    // Two digests of 64 hex digits and a u64: about 190 bytes.
    debug_assert!(bytes.len() < SLOT_BYTES, "a sealed head fits its slot");
    bytes.resize(SLOT_BYTES - 1, b' ');
    bytes.push(b'\n');
    bytes
}

fn seal(key: &SecretKey, head: &ChainHead) -> String {
    let mut mac = key.mac();
    mac.update(CHECKPOINT_DOMAIN);
    mac.update(itoa::Buffer::new().format(head.records).as_bytes());
    mac.update(b"\n");
    mac.update(head.head_sha256.as_bytes());
    lower_hex(&mac.finalize().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checkpoint_path(name: &str) -> PathBuf {
        let directory = std::env::temp_dir().join(format!(
            "tool-contract-checkpoint-{name}-{}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&directory);
        fs::create_dir_all(&directory).unwrap();
        directory.join("audit.jsonl.head")
    }

    fn head(records: u64) -> ChainHead {
        ChainHead {
            records,
            head_sha256: format!("{records:064x}"),
        }
    }

    fn key() -> SecretKey {
        SecretKey::new([3; 32]).unwrap()
    }

    #[test]
    fn the_newest_head_written_is_the_one_read() {
        let path = checkpoint_path("newest");
        let mut checkpoint = Checkpoint::create(&path, &key(), &head(1)).unwrap();
        for records in 2..=5 {
            checkpoint.advance(&key(), &head(records)).unwrap();
            assert_eq!(read(&path, &key()).unwrap(), Some(head(records)));
        }
        assert_eq!(fs::read(&path).unwrap().len(), 2 * SLOT_BYTES);
    }

    #[test]
    fn a_slot_a_crash_tore_leaves_the_head_before_it() {
        let path = checkpoint_path("torn");
        let mut checkpoint = Checkpoint::create(&path, &key(), &head(1)).unwrap();
        checkpoint.advance(&key(), &head(2)).unwrap();
        checkpoint.advance(&key(), &head(3)).unwrap();
        // The write of head 3 (the second slot) cut off halfway.
        let mut bytes = fs::read(&path).unwrap();
        bytes[SLOT_BYTES + 100..].fill(0);
        fs::write(&path, &bytes).unwrap();
        assert_eq!(read(&path, &key()).unwrap(), Some(head(2)));
        // Both spoiled, it is no checkpoint.
        bytes[100..SLOT_BYTES].fill(0);
        fs::write(&path, &bytes).unwrap();
        assert!(matches!(
            read(&path, &key()),
            Err(AuditLogError::Checkpoint)
        ));
    }

    #[test]
    fn a_slot_sealed_with_another_key_is_not_read() {
        let path = checkpoint_path("other-key");
        Checkpoint::create(&path, &SecretKey::new([4; 32]).unwrap(), &head(9)).unwrap();
        assert!(matches!(
            read(&path, &key()),
            Err(AuditLogError::Checkpoint)
        ));
    }

    #[test]
    fn a_checkpoint_of_one_unpadded_head_still_reads() {
        let path = checkpoint_path("unpadded");
        Checkpoint::create(&path, &key(), &head(7)).unwrap();
        let bytes = fs::read(&path).unwrap();
        let json = std::str::from_utf8(&bytes[..SLOT_BYTES])
            .unwrap()
            .trim_end();
        // As earlier versions wrote it: the canonical JSON alone.
        fs::write(&path, json).unwrap();
        assert_eq!(read(&path, &key()).unwrap(), Some(head(7)));
    }
}
