//! Audit logs anyone can check: a Merkle tree over the records' lines (RFC 9162 §2.1), its
//! head signed now and then with the service's Ed25519 key, and a verifier that holds a log
//! up to signed heads with public keys alone. The keyed chain shows an operator an edit; a
//! signed tree head shows anyone an edit, a truncation or a rollback below it.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::{ChainHead, TreeHeadError};
use crate::json::encoding::infallible;
use crate::json::{canonical, depth};
use crate::results::digest::lower_hex;
use crate::results::{KeySet, ReceiptError, ReceiptSigner};

/// The `domain` of every signed tree head of this version.
pub const TREE_HEAD_DOMAIN: &str = "tool-contract/audit-tree-head-v1";

/// The Merkle Tree Hash (RFC 9162 §2.1.1) of a log's records, each leaf one record's line as
/// written (no newline), grown one record at a time: it keeps the root of each perfect
/// subtree, so an append costs O(log n) and memory stays O(log n).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MerkleTree {
    size: u64,
    /// Roots of the perfect subtrees, largest (leftmost) first: one per bit of `size`.
    peaks: Vec<[u8; 32]>,
}

impl MerkleTree {
    /// The tree of no record.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The tree of `lines`, in order.
    pub fn of_lines<'a>(lines: impl IntoIterator<Item = &'a [u8]>) -> Self {
        let mut tree = Self::new();
        for line in lines {
            tree.push(line);
        }
        tree
    }

    /// Appends the record `line` (no newline).
    pub fn push(&mut self, line: &[u8]) {
        let mut node = leaf(line);
        // Each trailing one bit of the old size is a perfect subtree the new leaf completes.
        let mut carried = self.size;
        while carried & 1 == 1 {
            let left = self.peaks.pop().unwrap_or_default();
            node = interior(&left, &node);
            carried >>= 1;
        }
        self.peaks.push(node);
        self.size += 1;
    }

    /// How many records it holds.
    #[must_use]
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Its root: MTH of the records (SHA-256 of nothing for none).
    #[must_use]
    pub fn root(&self) -> [u8; 32] {
        // Folded from the right: MTH(D[0:n]) = H(0x01 || MTH(D[0:k]) || MTH(D[k:n])), k the
        // largest power of two below n, is the leftmost peak over the fold of the rest.
        let mut peaks = self.peaks.iter().rev();
        let Some(last) = peaks.next() else {
            return Sha256::digest([]).into();
        };
        peaks.fold(*last, |right, left| interior(left, &right))
    }
}

impl MerkleTree {
    /// The inclusion proof (RFC 9162 §2.1.3.1, the audit path) of record `index` (from 0) in
    /// the tree of `lines`: the sibling hashes from the leaf up, with which anyone holding a
    /// tree head of `lines.len()` records checks that one record is in the log without the
    /// rest ([`TreeHead::includes`]). `None` for an index past the end.
    #[must_use]
    pub fn inclusion_proof(lines: &[&[u8]], index: u64) -> Option<Vec<[u8; 32]>> {
        let index = usize::try_from(index).ok()?;
        (index < lines.len()).then(|| audit_path(index, lines))
    }
}

/// PATH(m, D[n]) of RFC 9162 §2.1.3.1, for `m` below `n`.
fn audit_path(m: usize, leaves: &[&[u8]]) -> Vec<[u8; 32]> {
    let n = leaves.len();
    if n <= 1 {
        return Vec::new();
    }
    let k = largest_power_of_two_below(n);
    let (mut path, sibling) = if m < k {
        (audit_path(m, &leaves[..k]), subtree_root(&leaves[k..]))
    } else {
        (audit_path(m - k, &leaves[k..]), subtree_root(&leaves[..k]))
    };
    path.push(sibling);
    path
}

/// MTH of `leaves`: the tree grown over them.
fn subtree_root(leaves: &[&[u8]]) -> [u8; 32] {
    MerkleTree::of_lines(leaves.iter().copied()).root()
}

fn largest_power_of_two_below(n: usize) -> usize {
    n.next_power_of_two() / 2
}

/// RFC 9162 §2.1.1: a leaf is SHA-256(0x00 || entry).
fn leaf(line: &[u8]) -> [u8; 32] {
    Sha256::new()
        .chain_update([0x00])
        .chain_update(line)
        .finalize()
        .into()
}

impl TreeHead {
    /// Whether `line` is record `index` (from 0) of the log this head vouches for, by
    /// `proof` ([`MerkleTree::inclusion_proof`]): the verification of RFC 9162 §2.1.3.2
    /// against this head's root. Hold the head's signature first
    /// ([`SignedTreeHead::verify_signature`]).
    #[must_use]
    pub fn includes(&self, line: &[u8], index: u64, proof: &[[u8; 32]]) -> bool {
        if index >= self.tree_size {
            return false;
        }
        let (mut f, mut s) = (index, self.tree_size - 1);
        let mut r = leaf(line);
        for p in proof {
            if s == 0 {
                return false;
            }
            if f & 1 == 1 || f == s {
                r = interior(p, &r);
                if f & 1 == 0 {
                    while f & 1 == 0 && f != 0 {
                        f >>= 1;
                        s >>= 1;
                    }
                }
            } else {
                r = interior(&r, p);
            }
            f >>= 1;
            s >>= 1;
        }
        s == 0 && hex::encode(r) == self.root_sha256
    }
}

/// RFC 9162 §2.1.1: an interior node is SHA-256(0x01 || left || right).
fn interior(left: &[u8; 32], right: &[u8; 32]) -> [u8; 32] {
    Sha256::new()
        .chain_update([0x01])
        .chain_update(left)
        .chain_update(right)
        .finalize()
        .into()
}

/// What a tree head states: the log, how many records, their Merkle root, the keyed chain's
/// head at that record, when, and by which key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TreeHead {
    /// Always [`TREE_HEAD_DOMAIN`].
    pub domain: String,
    /// The log: a file's name, or a PostgreSQL stream.
    pub log: String,
    /// How many records the tree holds: the log's first `tree_size` lines.
    pub tree_size: u64,
    /// The Merkle Tree Hash of those lines (64 lowercase hex).
    pub root_sha256: String,
    /// The keyed chain's head at record `tree_size`: its `record_sha256`.
    pub chain_head: ChainHead,
    /// When it was signed (RFC 3339).
    pub signed_at: String,
    /// The key that signed it, in the published [`KeySet`].
    pub key_id: String,
}

/// A tree head and its Ed25519 signature over its RFC 8785 canonical JSON: what a log
/// publishes for auditors to copy away.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignedTreeHead {
    /// What was signed.
    pub tree_head: TreeHead,
    /// The signature: 128 lowercase hex.
    pub signature: String,
}

impl SignedTreeHead {
    /// The tree head of `tree` over `log`, at `chain_head`, signed by `signer` at `at`.
    ///
    /// # Errors
    ///
    /// [`ReceiptError::KeyNotValid`] when the key does not sign at `at`.
    pub fn sign(
        signer: &ReceiptSigner,
        log: &str,
        tree: &MerkleTree,
        chain_head: &ChainHead,
        at: OffsetDateTime,
    ) -> Result<Self, ReceiptError> {
        let tree_head = TreeHead {
            domain: TREE_HEAD_DOMAIN.to_owned(),
            log: log.to_owned(),
            tree_size: tree.size(),
            root_sha256: lower_hex(&tree.root()),
            chain_head: chain_head.clone(),
            signed_at: at
                .format(&Rfc3339)
                .map_err(|error| ReceiptError::Malformed(error.to_string()))?,
            key_id: signer.key_id().to_owned(),
        };
        let signature = signer.sign_bytes(&canonical_bytes(&tree_head), at)?;
        Ok(SignedTreeHead {
            tree_head,
            signature,
        })
    }

    /// Its compact JSON (members in canonical order), one line of a published file.
    #[must_use]
    pub fn to_json(&self) -> String {
        let value = infallible(serde_json::to_value(self), "a tree head serializes");
        let bytes = infallible(canonical::to_vec(&value), "a tree head holds integers only");
        infallible(String::from_utf8(bytes), "canonical JSON is UTF-8")
    }

    /// Reads one from its JSON.
    ///
    /// # Errors
    ///
    /// [`ReceiptError::Malformed`] when the text is not one.
    pub fn from_json(json: &[u8]) -> Result<Self, ReceiptError> {
        depth::from_slice(json).map_err(|error| ReceiptError::Malformed(error.to_string()))
    }

    /// Checks its signature with `keys`: the key it names, valid when it was signed.
    ///
    /// # Errors
    ///
    /// [`ReceiptError`] for another version, an unknown key, a key not valid then, or a bad
    /// signature.
    pub fn verify_signature(&self, keys: &KeySet) -> Result<(), ReceiptError> {
        let head = &self.tree_head;
        if head.domain != TREE_HEAD_DOMAIN {
            return Err(ReceiptError::OtherVersion);
        }
        let at = OffsetDateTime::parse(&head.signed_at, &Rfc3339)
            .map_err(|error| ReceiptError::Malformed(error.to_string()))?;
        keys.verify_bytes(&head.key_id, &canonical_bytes(head), &self.signature, at)
    }
}

fn canonical_bytes(tree_head: &TreeHead) -> Vec<u8> {
    let value = infallible(serde_json::to_value(tree_head), "a tree head serializes");
    infallible(canonical::to_vec(&value), "a tree head holds integers only")
}

/// What holding a log up to signed tree heads found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeHeadsHeld {
    /// The records the log holds.
    pub records: u64,
    /// The largest tree size a signed head vouched for (0 with none).
    pub verified_through: u64,
}

/// Holds `lines` (a log's records in order, every segment's, no newlines) up to each of
/// `heads`, with public keys alone: every head signed by a key of `keys` for `log`; the
/// records numbered and linked in order (`seq`, `prev_sha256`, as far as that is seen without
/// the key); each head's tree size reached, with its Merkle root and chain head there. A cut
/// tail is [`TreeHeadError::Truncated`]; an edit, insertion, removal or a rollback rewritten
/// is [`TreeHeadError::Altered`].
///
/// # Errors
///
/// The first [`TreeHeadError`] found.
pub fn verify_tree_heads<'a>(
    log: &str,
    lines: impl IntoIterator<Item = &'a [u8]>,
    heads: &[SignedTreeHead],
    keys: &KeySet,
) -> Result<TreeHeadsHeld, TreeHeadError> {
    for head in heads {
        let tree_size = head.tree_head.tree_size;
        head.verify_signature(keys)
            .map_err(|error| TreeHeadError::Signature { tree_size, error })?;
        if head.tree_head.log != log {
            return Err(TreeHeadError::OtherLog {
                expected: log.to_owned(),
                found: head.tree_head.log.clone(),
            });
        }
    }
    let mut pending: Vec<&TreeHead> = heads.iter().map(|head| &head.tree_head).collect();
    pending.sort_by_key(|head| head.tree_size);
    let mut tree = MerkleTree::new();
    let mut previous: Option<String> = None;
    let mut verified_through = 0;
    // A head of no record is a root of nothing: held by any log.
    let held_at = |tree: &MerkleTree, previous: &Option<String>, head: &TreeHead| {
        let chain = previous.as_deref().unwrap_or(super::GENESIS_SHA256);
        hex::encode(tree.root()) == head.root_sha256
            && head.chain_head.records == tree.size()
            && head.chain_head.head_sha256 == chain
    };
    let mut next = 0;
    while next < pending.len() && pending[next].tree_size == 0 {
        if !held_at(&tree, &previous, pending[next]) {
            return Err(TreeHeadError::Altered { tree_size: 0 });
        }
        next += 1;
    }
    for line in lines {
        let number = tree.size() + 1;
        previous = Some(linked(line, number, previous.as_deref())?);
        tree.push(line);
        while next < pending.len() && pending[next].tree_size == tree.size() {
            if !held_at(&tree, &previous, pending[next]) {
                return Err(TreeHeadError::Altered {
                    tree_size: tree.size(),
                });
            }
            verified_through = tree.size();
            next += 1;
        }
    }
    if let Some(head) = pending.get(next) {
        return Err(TreeHeadError::Truncated {
            records: tree.size(),
            tree_size: head.tree_size,
        });
    }
    Ok(TreeHeadsHeld {
        records: tree.size(),
        verified_through,
    })
}

/// The `record_sha256` of record `line`, numbered `number`, after `previous`: checks what
/// can be checked without the key (its `seq`, and that its `prev_sha256` is the record
/// before's digest; the first record of the log goes on from the genesis).
fn linked(line: &[u8], number: u64, previous: Option<&str>) -> Result<String, TreeHeadError> {
    let unlinked = TreeHeadError::Unlinked { line: number };
    let Ok(Value::Object(record)) = depth::from_slice::<Value>(line) else {
        return Err(unlinked);
    };
    let seq = record.get("seq").and_then(Value::as_u64);
    let prev = record.get("prev_sha256").and_then(Value::as_str);
    let digest = record.get("record_sha256").and_then(Value::as_str);
    let (Some(seq), Some(prev), Some(digest)) = (seq, prev, digest) else {
        return Err(unlinked);
    };
    let expected_prev = previous.unwrap_or(super::GENESIS_SHA256);
    if seq != number || prev != expected_prev {
        return Err(unlinked);
    }
    Ok(digest.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// MTH as RFC 9162 §2.1.1 defines it, recursively: the reference the tree is checked by.
    fn reference_root(leaves: &[&[u8]]) -> [u8; 32] {
        match leaves.len() {
            0 => Sha256::digest([]).into(),
            1 => Sha256::new()
                .chain_update([0x00])
                .chain_update(leaves[0])
                .finalize()
                .into(),
            n => {
                // The largest power of two below n.
                let k = n.next_power_of_two() / 2;
                interior(&reference_root(&leaves[..k]), &reference_root(&leaves[k..]))
            }
        }
    }

    #[test]
    fn the_grown_tree_has_the_recursive_definitions_root_at_every_size() {
        let lines: Vec<Vec<u8>> = (0..70)
            .map(|n| format!("record {n}").into_bytes())
            .collect();
        let mut tree = MerkleTree::new();
        assert_eq!(tree.root(), reference_root(&[]));
        for size in 1..=lines.len() {
            tree.push(&lines[size - 1]);
            let leaves: Vec<&[u8]> = lines[..size].iter().map(Vec::as_slice).collect();
            assert_eq!(tree.root(), reference_root(&leaves), "size {size}");
        }
    }

    fn head_of(lines: &[&[u8]]) -> TreeHead {
        let tree = MerkleTree::of_lines(lines.iter().copied());
        TreeHead {
            domain: TREE_HEAD_DOMAIN.to_owned(),
            log: "log".to_owned(),
            tree_size: tree.size(),
            root_sha256: hex::encode(tree.root()),
            chain_head: ChainHead::default(),
            signed_at: String::new(),
            key_id: String::new(),
        }
    }

    #[test]
    fn every_record_of_every_size_is_proven_included_and_nothing_else_is() {
        let owned: Vec<Vec<u8>> = (0..33)
            .map(|n| format!("record {n}").into_bytes())
            .collect();
        for size in 1..=owned.len() {
            let lines: Vec<&[u8]> = owned[..size].iter().map(Vec::as_slice).collect();
            let head = head_of(&lines);
            for index in 0..size {
                let proof = MerkleTree::inclusion_proof(&lines, index as u64).unwrap();
                let at = index as u64;
                assert!(head.includes(lines[index], at, &proof), "{index} of {size}");
                // Another record, another place, a proof cut short or lengthened: refused.
                assert!(!head.includes(b"not a record", at, &proof));
                if size > 1 {
                    let other = (index + 1) % size;
                    assert!(!head.includes(lines[index], other as u64, &proof));
                }
                if let Some((_, shorter)) = proof.split_last() {
                    assert!(!head.includes(lines[index], at, shorter));
                }
                let mut longer = proof.clone();
                longer.push([0; 32]);
                assert!(!head.includes(lines[index], at, &longer));
            }
            assert!(MerkleTree::inclusion_proof(&lines, size as u64).is_none());
            assert!(!head.includes(lines[0], size as u64, &[]));
        }
    }

    #[test]
    fn the_empty_tree_is_the_hash_of_nothing() {
        // RFC 9162 §2.1.1: MTH({}) = SHA-256().
        assert_eq!(
            hex::encode(MerkleTree::new().root()),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
