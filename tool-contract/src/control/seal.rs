//! Approval rows sealed as the ledger's results are: each row a store writes carries an
//! HMAC-SHA256, under a key derived from the application's audit keys, of its content and the
//! ledger key it is stored under. A row edited, inserted or moved by anything that does not
//! hold the keys (a database user, a restored backup of another row) is refused when read,
//! and the step that read it fails closed.

use std::fmt;

use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

use super::store::stored::approval_row;
use crate::control::approval::ApprovalEntry;
use crate::control::{Lease, StoreError};
use crate::results::AuditKeys;
use crate::results::digest::digests_equal;

/// What the seal's key is derived for: no other key of the application is this one.
const PURPOSE: &str = "tool-contract/approval-row-seal-v1";

/// What an approval row's seal covers first: no other row's seal is one.
const APPROVAL_ROW: &str = "approval";

/// What an approver directory row's seal covers first: no other row's seal is one.
const APPROVER_ROW: &str = "approver";

/// What a task row's seal covers first: no other row's seal is one.
const TASK_ROW: &str = "task";

/// What a worker's lease row's seal covers first: no other row's seal is one.
const WORKER_ROW: &str = "worker";

/// The key approval rows are sealed with. Every process holding the same [`AuditKeys`]
/// derives the same one, so replicas read each other's rows; a store step is handed it with
/// the request ([`ApprovalAsk`](crate::control::ApprovalAsk), …) and checks every approval
/// row it reads with it.
#[derive(Clone)]
pub struct RowSeal {
    key: [u8; 32],
}

impl RowSeal {
    /// The seal of the application that holds `keys`.
    #[must_use]
    pub fn new(keys: &AuditKeys) -> Self {
        RowSeal {
            key: keys.derived_key(PURPOSE),
        }
    }

    /// The seal of `entry`, stored under `ledger_key`: 64 lowercase hex.
    ///
    /// # Errors
    ///
    /// [`StoreError::Corrupt`] when the entry has no stored form (an expiry RFC 3339 cannot
    /// write).
    pub fn seal(&self, ledger_key: &str, entry: &ApprovalEntry) -> Result<String, StoreError> {
        let row = approval_row(entry)?;
        let expires_at_ms = row.expires_at_ms.to_string();
        let redeemed_by = row
            .redeemed_by
            .as_ref()
            .map(|Lease { owner, generation }| (owner.as_str(), generation.to_string()));
        let (redeemed, redeemer, generation) = match &redeemed_by {
            Some((owner, generation)) => ("redeemed", *owner, generation.as_str()),
            None => ("unredeemed", "", ""),
        };
        self.seal_members(&[
            APPROVAL_ROW,
            ledger_key,
            &row.approval_id,
            row.state,
            &expires_at_ms,
            &row.body,
            redeemed,
            redeemer,
            generation,
        ])
    }

    /// Checks that `seal` is this application's seal of `entry` under `ledger_key`.
    ///
    /// # Errors
    ///
    /// [`StoreError::Unsealed`] when there is no seal or it is another's: the row was edited,
    /// inserted or moved outside the store's own steps.
    pub fn open(
        &self,
        ledger_key: &str,
        entry: &ApprovalEntry,
        seal: Option<&str>,
    ) -> Result<(), StoreError> {
        let expected = self.seal(ledger_key, entry)?;
        match seal {
            Some(seal) if digests_equal(seal, &expected) => Ok(()),
            _ => Err(StoreError::Unsealed(format!(
                "the approval row of {} ({})",
                entry.approval_id(),
                if seal.is_some() {
                    "its seal does not match"
                } else {
                    "it has no seal"
                }
            ))),
        }
    }
}

impl RowSeal {
    /// The seal of a row of `kind` (an approver, a task): `body` (its stored JSON) under `id`,
    /// 64 lowercase hex.
    fn seal_row(&self, kind: &str, id: &str, body: &str) -> Result<String, StoreError> {
        self.seal_members(&[kind, id, body])
    }

    /// The seal of a row's `members`, the first its kind: 64 lowercase hex. Each member goes
    /// after its length (8 bytes, big-endian), so that no two rows' members read alike, with
    /// nothing to escape: a body is sealed as it is stored.
    fn seal_members(&self, members: &[&str]) -> Result<String, StoreError> {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.key)
            .map_err(|_| StoreError::Corrupt("a seal key HMAC refuses".into()))?;
        mac.update(PURPOSE.as_bytes());
        mac.update(b"\n");
        for member in members {
            let length = u64::try_from(member.len())
                .map_err(|_| StoreError::Corrupt("a row too long to seal".into()))?;
            mac.update(&length.to_be_bytes());
            mac.update(member.as_bytes());
        }
        Ok(hex::encode(mac.finalize().into_bytes()))
    }

    /// Checks that `seal` is this application's seal of the `kind` row `body` under `id`.
    fn open_row(
        &self,
        kind: &str,
        id: &str,
        body: &str,
        seal: Option<&str>,
    ) -> Result<(), StoreError> {
        let expected = self.seal_row(kind, id, body)?;
        match seal {
            Some(seal) if digests_equal(seal, &expected) => Ok(()),
            _ => Err(StoreError::Unsealed(format!("the {kind} row of {id:?}"))),
        }
    }

    /// The seal of an approver directory row: `body` (the approver's stored JSON) under
    /// `approver_id`, 64 lowercase hex.
    pub(crate) fn seal_approver(
        &self,
        approver_id: &str,
        body: &str,
    ) -> Result<String, StoreError> {
        self.seal_row(APPROVER_ROW, approver_id, body)
    }

    /// Checks that `seal` is this application's seal of the approver row `body` under
    /// `approver_id`.
    ///
    /// # Errors
    ///
    /// [`StoreError::Unsealed`] when there is no seal or it is another's.
    pub(crate) fn open_approver(
        &self,
        approver_id: &str,
        body: &str,
        seal: Option<&str>,
    ) -> Result<(), StoreError> {
        self.open_row(APPROVER_ROW, approver_id, body, seal)
    }

    /// The seal of a task's row: `body` (the task's stored JSON, its result included) under
    /// `task_id`, 64 lowercase hex. A result written into the row by anyone without the keys
    /// is refused when read, as an approval row is.
    pub(crate) fn seal_task(&self, task_id: &str, body: &str) -> Result<String, StoreError> {
        self.seal_row(TASK_ROW, task_id, body)
    }

    /// Checks that `seal` is this application's seal of the task row `body` under `task_id`.
    ///
    /// # Errors
    ///
    /// [`StoreError::Unsealed`] when there is no seal or it is another's.
    pub(crate) fn open_task(
        &self,
        task_id: &str,
        body: &str,
        seal: Option<&str>,
    ) -> Result<(), StoreError> {
        self.open_row(TASK_ROW, task_id, body, seal)
    }

    /// The seal of `worker`'s lease row, held until `until_ms`: 64 lowercase hex.
    pub(crate) fn seal_worker(&self, worker: &str, until_ms: u64) -> Result<String, StoreError> {
        self.seal_row(WORKER_ROW, worker, &until_ms.to_string())
    }

    /// Checks that `seal` is this application's seal of `worker`'s lease until `until_ms`.
    ///
    /// # Errors
    ///
    /// [`StoreError::Unsealed`] when there is no seal or it is another's.
    pub(crate) fn open_worker(
        &self,
        worker: &str,
        until_ms: u64,
        seal: Option<&str>,
    ) -> Result<(), StoreError> {
        self.open_row(WORKER_ROW, worker, &until_ms.to_string(), seal)
    }
}

impl fmt::Debug for RowSeal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RowSeal(..)")
    }
}

impl PartialEq for RowSeal {
    fn eq(&self, other: &Self) -> bool {
        self.key.ct_eq(&other.key).into()
    }
}

impl Eq for RowSeal {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::SecretKey;

    fn rejection(id: &str) -> ApprovalEntry {
        ApprovalEntry::Rejected {
            approval_id: id.to_owned(),
            reason: None,
            expires_at_ms: 7,
        }
    }

    fn seal_of(key: u8) -> RowSeal {
        RowSeal::new(&AuditKeys::new(SecretKey::from([key; 32])))
    }

    #[test]
    fn a_row_opens_under_its_own_key_with_its_own_seal_only() {
        let seal = seal_of(1);
        let entry = rejection("apr_1");
        let sealed = seal.seal("p:k", &entry).unwrap();
        assert_eq!(sealed.len(), 64);
        seal.open("p:k", &entry, Some(&sealed)).unwrap();
        for (key, entry, with) in [
            ("p:other", rejection("apr_1"), Some(sealed.as_str())),
            ("p:k", rejection("apr_2"), Some(sealed.as_str())),
            ("p:k", rejection("apr_1"), None),
        ] {
            assert!(matches!(
                seal.open(key, &entry, with),
                Err(StoreError::Unsealed(_))
            ));
        }
        assert!(matches!(
            seal_of(2).open("p:k", &entry, Some(&sealed)),
            Err(StoreError::Unsealed(_))
        ));
    }

    fn granted(redeemed_by: Option<(&str, u64)>) -> ApprovalEntry {
        ApprovalEntry::Granted {
            grant: crate::control::ApprovalGrant {
                approval_id: "apr_1".to_owned(),
                request_sha256: "r".repeat(64),
                preview_sha256: "p".repeat(64),
                tool: "send_message".to_owned(),
                principal_ref: "principal".to_owned(),
                operation_id: "operation".to_owned(),
                approvals: Vec::new(),
                approvals_required: 1,
                signatures_required: false,
                expires_at: time::OffsetDateTime::from_unix_timestamp(1_796_385_600).unwrap(),
                ledger_key: "p:k".to_owned(),
                edited_arguments: None,
                earlier_run: None,
                required_by: Vec::new(),
            },
            redeemed_by: redeemed_by.map(|(owner, generation)| Lease {
                owner: owner.to_owned(),
                generation,
            }),
        }
    }

    #[test]
    fn a_grants_seal_covers_whether_and_by_whom_it_was_redeemed() {
        let seal = seal_of(1);
        let entries = [
            granted(None),
            granted(Some(("", 0))),
            granted(Some(("replica-a", 1))),
            granted(Some(("replica-a", 2))),
            granted(Some(("replica-b", 1))),
        ];
        for (sealed_index, sealed_entry) in entries.iter().enumerate() {
            let sealed = seal.seal("p:k", sealed_entry).unwrap();
            for (index, entry) in entries.iter().enumerate() {
                let opened = seal.open("p:k", entry, Some(&sealed));
                assert_eq!(
                    opened.is_ok(),
                    index == sealed_index,
                    "{sealed_index} {index}"
                );
            }
        }
    }

    #[test]
    fn a_rows_seal_covers_its_kind_its_id_and_its_body_each_apart() {
        let seal = seal_of(1);
        let sealed = seal.seal_task("task_ab", "{}").unwrap();
        seal.open_task("task_ab", "{}", Some(&sealed)).unwrap();
        for refused in [
            seal.open_task("task_a", "b{}", Some(&sealed)),
            seal.open_task("task_ab", "{} ", Some(&sealed)),
            seal.open_approver("task_ab", "{}", Some(&sealed)),
            seal_of(2).open_task("task_ab", "{}", Some(&sealed)),
        ] {
            assert!(matches!(refused, Err(StoreError::Unsealed(_))));
        }
        let lease = seal.seal_worker("replica-a", 90_000).unwrap();
        seal.open_worker("replica-a", 90_000, Some(&lease)).unwrap();
        for refused in [
            seal.open_worker("replica-a", 90_001, Some(&lease)),
            seal.open_worker("replica-b", 90_000, Some(&lease)),
            seal.open_worker("replica-a", 90_000, None),
        ] {
            assert!(matches!(refused, Err(StoreError::Unsealed(_))));
        }
    }

    #[test]
    fn the_key_never_shows_in_debug() {
        assert_eq!(format!("{:?}", seal_of(1)), "RowSeal(..)");
    }
}
