//! The approver directory: enrolled identities, each with the tenants and tools it may decide
//! for and its WebAuthn credentials, kept in the control store beside the approvals so every
//! replica counts the same people.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::seal::RowSeal;

/// An enrolled approver: a stable id the approvals are counted by, what the person is called,
/// what they may decide, and the passkeys that sign their decisions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Approver {
    /// The stable id approvals, statements and receipts name (`sup-ana`): never a display
    /// name, which may change.
    pub approver_id: String,
    /// What the person is called, for pages and receipts' readers.
    pub display_name: String,
    /// The tenants whose calls they may decide; `"*"` for every tenant.
    pub tenants: Vec<String>,
    /// The tools whose calls they may decide; `"*"` for every tool.
    pub tools: Vec<String>,
    /// The subject this person has as a principal (their access tokens' `sub`), if they are
    /// one too: with separation of duties, they never decide a call they asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// Their enrolled credentials, in the order enrolled.
    #[serde(default)]
    pub credentials: Vec<EnrolledCredential>,
    /// How many times they have signed out: a session records the count it began under and
    /// is over, on every replica, once the count has moved on.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sign_outs: u64,
}

fn is_zero(count: &u64) -> bool {
    *count == 0
}

impl Approver {
    /// A new approver with no credential yet, deciding for `tenants` and `tools`.
    ///
    /// ```
    /// use tool_contract::control::Approver;
    ///
    /// let ana = Approver::new("sup-ana", "Ana Lima", ["acme-shop"], ["*"]);
    /// assert!(ana.may_decide("acme-shop", "create_refund_draft"));
    /// assert!(!ana.may_decide("other-shop", "create_refund_draft"));
    /// ```
    #[must_use]
    pub fn new<T: Into<String>, U: Into<String>>(
        approver_id: impl Into<String>,
        display_name: impl Into<String>,
        tenants: impl IntoIterator<Item = T>,
        tools: impl IntoIterator<Item = U>,
    ) -> Self {
        Approver {
            approver_id: approver_id.into(),
            display_name: display_name.into(),
            tenants: tenants.into_iter().map(Into::into).collect(),
            tools: tools.into_iter().map(Into::into).collect(),
            subject: None,
            credentials: Vec::new(),
            sign_outs: 0,
        }
    }

    /// The same approver, known as the principal subject `subject` too.
    #[must_use]
    pub fn with_subject(mut self, subject: impl Into<String>) -> Self {
        self.subject = Some(subject.into());
        self
    }

    /// Whether they may decide a call of `tool` by a principal of `tenant`.
    #[must_use]
    pub fn may_decide(&self, tenant: &str, tool: &str) -> bool {
        self.decides_for(tenant) && self.decides_tool(tool)
    }

    /// Whether they may decide calls of principals of `tenant`.
    #[must_use]
    pub fn decides_for(&self, tenant: &str) -> bool {
        listed(&self.tenants, tenant)
    }

    /// Whether they may decide calls of `tool`.
    #[must_use]
    pub fn decides_tool(&self, tool: &str) -> bool {
        listed(&self.tools, tool)
    }

    /// Their credential of id `credential_id` (base64url), if it is theirs.
    #[must_use]
    pub fn credential(&self, credential_id: &str) -> Option<&EnrolledCredential> {
        self.credentials
            .iter()
            .find(|credential| credential.credential_id == credential_id)
    }
}

/// Whether `name` is on `list`, or the list has `"*"`.
fn listed(list: &[String], name: &str) -> bool {
    list.iter().any(|it| it == "*" || it == name)
}

/// One passkey of an approver, as a registration ceremony (with user verification) enrolled
/// it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnrolledCredential {
    /// The credential id (base64url, unpadded).
    pub credential_id: String,
    /// The public key as a JWK (RFC 7517): what assertions are verified with, here and by
    /// anyone holding the published approver key set.
    pub public_key: serde_json::Value,
    /// Whether the authenticator said the credential may be backed up or synced.
    pub backup_eligible: bool,
    /// The highest signature counter seen; 0 for an authenticator that keeps none.
    pub sign_count: u32,
    /// When it was enrolled (RFC 3339): it signs nothing before.
    pub enrolled_at: String,
    /// When it was revoked (RFC 3339), if it was: it signs nothing from then on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<String>,
    /// Each time it presented a counter not above the one seen (a cloned authenticator, or a
    /// replayed assertion), when and what: kept for auditors.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub counter_regressions: Vec<CounterRegression>,
}

/// A signature counter that went back: the assertion was refused, and this is its record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CounterRegression {
    /// When (RFC 3339).
    pub at: String,
    /// The counter the directory held.
    pub stored: u32,
    /// The counter the assertion presented.
    pub presented: u32,
}

/// A credential's signature counter, presented by an assertion: the directory keeps the
/// highest and refuses any that does not rise (W3C WebAuthn §6.1.1), atomically, so two
/// replicas never both accept one count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignCount {
    /// The approver.
    pub approver_id: String,
    /// The credential (base64url).
    pub credential_id: String,
    /// The counter the assertion presented.
    pub presented: u32,
    /// Now.
    pub now: OffsetDateTime,
    /// The seal every directory row read is checked with and every one written carries.
    pub seal: RowSeal,
}

/// What the directory made of a presented counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignCountCheck {
    /// It rose (or the authenticator keeps no counter: both 0): accepted and kept.
    Accepted,
    /// It did not rise: refused, and recorded on the credential.
    Regressed {
        /// The counter the directory held.
        stored: u32,
    },
    /// No such approver or credential.
    Unknown,
}

/// The one decision every store makes for a presented counter: the approver to write, if
/// any, and the answer.
#[must_use]
pub fn decide_sign_count(
    existing: Option<&Approver>,
    count: &SignCount,
) -> (Option<Approver>, SignCountCheck) {
    let Some(mut approver) = existing.cloned() else {
        return (None, SignCountCheck::Unknown);
    };
    let Some(credential) = approver
        .credentials
        .iter_mut()
        .find(|credential| credential.credential_id == count.credential_id)
    else {
        return (None, SignCountCheck::Unknown);
    };
    let stored = credential.sign_count;
    // An authenticator without a counter always presents 0 (§6.1.1): nothing to compare.
    let no_counter = stored == 0 && count.presented == 0;
    if no_counter {
        return (None, SignCountCheck::Accepted);
    }
    if count.presented > stored {
        credential.sign_count = count.presented;
        return (Some(approver), SignCountCheck::Accepted);
    }
    credential.counter_regressions.push(CounterRegression {
        at: rfc3339(count.now),
        stored,
        presented: count.presented,
    });
    (Some(approver), SignCountCheck::Regressed { stored })
}

/// A change to the approver directory, decided by [`decide_directory_write`] on whatever the
/// store holds, in one step.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DirectoryChange {
    /// Adds an approver, or changes one's name, scope and subject (their credentials stay).
    Put(Approver),
    /// Adds a credential a registration ceremony verified to an approver.
    Enroll {
        /// The approver.
        approver_id: String,
        /// The credential.
        credential: EnrolledCredential,
        /// The ids of the credentials the approver held when the ceremony began: it adds
        /// its credential only while they hold exactly these, so one ceremony (and one
        /// invitation) enrols one credential, once, however many replicas finish it.
        holding: Vec<String>,
    },
    /// Ends every session an approver has begun so far: their sign-out.
    SignOut {
        /// The approver.
        approver_id: String,
    },
    /// Revokes one of an approver's credentials from `at` on.
    Revoke {
        /// The approver.
        approver_id: String,
        /// The credential (base64url).
        credential_id: String,
        /// When it stops signing (RFC 3339).
        at: String,
    },
}

impl DirectoryChange {
    /// The approver it changes.
    #[must_use]
    pub fn approver_id(&self) -> &str {
        match self {
            DirectoryChange::Put(approver) => &approver.approver_id,
            DirectoryChange::Enroll { approver_id, .. }
            | DirectoryChange::SignOut { approver_id, .. }
            | DirectoryChange::Revoke { approver_id, .. } => approver_id,
        }
    }
}

/// The one decision every store makes for a directory change, given the approver it holds
/// under that id and whether any approver holds the credential being enrolled: the approver
/// to write.
///
/// # Errors
///
/// [`EnrollError::UnknownApprover`] when an enrollment or revocation names nobody, or the
/// credential revoked is not theirs; [`EnrollError::NotUnderWay`] when the approver no longer
/// holds the credentials an enrollment began with; [`EnrollError::CredentialTaken`] when any approver holds
/// a credential of the id enrolled; [`EnrollError::Registration`] for an approver without an
/// id or a scope.
pub fn decide_directory_write(
    existing: Option<&Approver>,
    change: &DirectoryChange,
    credential_taken: bool,
) -> Result<Approver, EnrollError> {
    match change {
        DirectoryChange::Put(approver) => {
            if approver.approver_id.trim().is_empty() {
                return Err(EnrollError::Registration("an approver needs an id".into()));
            }
            let mut written = approver.clone();
            written.credentials = existing
                .map(|it| it.credentials.clone())
                .unwrap_or_default();
            written.sign_outs = existing.map_or(0, |it| it.sign_outs);
            Ok(written)
        }
        DirectoryChange::Enroll {
            credential,
            holding,
            ..
        } => {
            let Some(approver) = existing else {
                return Err(EnrollError::UnknownApprover);
            };
            let mut held: Vec<&str> = approver
                .credentials
                .iter()
                .map(|credential| credential.credential_id.as_str())
                .collect();
            let mut began: Vec<&str> = holding.iter().map(String::as_str).collect();
            held.sort_unstable();
            began.sort_unstable();
            if held != began {
                // Finished already, here or on another replica, or overtaken by another
                // enrollment: the ceremony is spent.
                return Err(EnrollError::NotUnderWay);
            }
            if credential_taken {
                return Err(EnrollError::CredentialTaken);
            }
            let mut approver = approver.clone();
            approver.credentials.push(credential.clone());
            Ok(approver)
        }
        DirectoryChange::SignOut { .. } => {
            let mut approver = existing.cloned().ok_or(EnrollError::UnknownApprover)?;
            approver.sign_outs = approver.sign_outs.saturating_add(1);
            Ok(approver)
        }
        DirectoryChange::Revoke {
            credential_id, at, ..
        } => {
            let mut approver = existing.cloned().ok_or(EnrollError::UnknownApprover)?;
            let credential = approver
                .credentials
                .iter_mut()
                .find(|credential| &credential.credential_id == credential_id)
                .ok_or(EnrollError::UnknownApprover)?;
            // A credential revoked earlier stays revoked from its first revocation.
            credential.revoked_at.get_or_insert_with(|| at.clone());
            Ok(approver)
        }
    }
}

/// Why a change to the approver directory was refused.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum EnrollError {
    /// No approver has that id: add them first.
    #[error("no approver has that id")]
    UnknownApprover,
    /// A credential of that id is enrolled already (for them or anyone).
    #[error("that credential is enrolled already")]
    CredentialTaken,
    /// The registration ceremony failed: the detail says which check refused it.
    #[error("the registration was refused: {0}")]
    Registration(String),
    /// The enrollment is not under way: finished already (here or on another replica), or
    /// overtaken by another enrollment of the same approver that finished since it began.
    #[error("no enrollment of that id is under way")]
    NotUnderWay,
    /// The control-plane store failed: nothing was recorded.
    #[error("the enrollment could not be recorded")]
    Store(#[source] crate::control::StoreError),
}

pub(crate) fn rfc3339(at: OffsetDateTime) -> String {
    use time::format_description::well_known::Rfc3339;
    // Years past 9999 cannot be written: such a time is never "now" here.
    at.format(&Rfc3339).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credential(id: &str, sign_count: u32) -> EnrolledCredential {
        EnrolledCredential {
            credential_id: id.into(),
            public_key: serde_json::json!({}),
            backup_eligible: false,
            sign_count,
            enrolled_at: "2026-12-01T00:00:00Z".into(),
            revoked_at: None,
            counter_regressions: Vec::new(),
        }
    }

    fn count(presented: u32) -> SignCount {
        SignCount {
            approver_id: "sup-ana".into(),
            credential_id: "c1".into(),
            presented,
            now: OffsetDateTime::UNIX_EPOCH,
            seal: RowSeal::new(&crate::results::AuditKeys::new(
                crate::results::SecretKey::from([1; 32]),
            )),
        }
    }

    #[test]
    fn a_rising_counter_is_kept_and_a_regression_recorded() {
        let mut ana = Approver::new("sup-ana", "Ana", ["*"], ["*"]);
        ana.credentials.push(credential("c1", 5));
        let (written, check) = decide_sign_count(Some(&ana), &count(6));
        assert_eq!(check, SignCountCheck::Accepted);
        assert_eq!(written.unwrap().credentials[0].sign_count, 6);
        for presented in [5, 4, 0] {
            let (written, check) = decide_sign_count(Some(&ana), &count(presented));
            assert_eq!(check, SignCountCheck::Regressed { stored: 5 });
            let written = written.unwrap();
            assert_eq!(written.credentials[0].sign_count, 5);
            assert_eq!(
                written.credentials[0].counter_regressions[0].presented,
                presented
            );
        }
    }

    #[test]
    fn an_authenticator_without_a_counter_is_accepted_and_nothing_written() {
        let mut ana = Approver::new("sup-ana", "Ana", ["*"], ["*"]);
        ana.credentials.push(credential("c1", 0));
        assert_eq!(
            decide_sign_count(Some(&ana), &count(0)),
            (None, SignCountCheck::Accepted)
        );
        let other = SignCount {
            credential_id: "c2".into(),
            ..count(1)
        };
        assert_eq!(
            decide_sign_count(Some(&ana), &other),
            (None, SignCountCheck::Unknown)
        );
    }

    #[test]
    fn scopes_list_names_or_a_star() {
        let ana = Approver::new("sup-ana", "Ana", ["acme"], ["refund", "draft"]);
        assert!(ana.may_decide("acme", "draft"));
        assert!(!ana.may_decide("acme", "delete"));
        assert!(!ana.may_decide("Acme", "draft"));
        let all = Approver::new("root", "Root", ["*"], ["*"]);
        assert!(all.may_decide("any", "thing"));
    }
}
