//! The approval statement: what a person's authenticator signs when they decide a pending
//! write. Its SHA-256 is the WebAuthn challenge, so the assertion itself proves who decided
//! exactly what (as W3C Secure Payment Confirmation binds a payment's amount and payee).

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::json::canonical;
use crate::json::encoding::infallible;

/// The `domain` of every approval statement of this version: a statement is never read as
/// anything else, and no other signed object reads as one.
pub const STATEMENT_DOMAIN: &str = "tool-contract/approval-statement-v1";

/// What a person decides about a pending write, as the statement names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Decision {
    /// Let the write run (as asked, or with the edits the statement names).
    Approve,
    /// Refuse it, giving no reason.
    Reject,
    /// Refuse it: the action is not permitted.
    RejectNotPermitted,
    /// Refuse it: the action's details are wrong.
    RejectWrongDetails,
    /// Refuse it: the action repeats one already done.
    RejectDuplicate,
}

impl Decision {
    /// The decision's name in a statement.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Decision::Approve => "approve",
            Decision::Reject => "reject",
            Decision::RejectNotPermitted => "reject_not_permitted",
            Decision::RejectWrongDetails => "reject_wrong_details",
            Decision::RejectDuplicate => "reject_duplicate",
        }
    }
}

/// One person's decision about one pending write, every member fixed before they sign: the
/// approval, the principal who asked (by keyed reference), the tool, the request and the
/// preview they saw, the edits they made (by digest), the decision, who they are and until
/// when it counts. Signed as the SHA-256 of its RFC 8785 canonical JSON
/// ([`ApprovalStatement::challenge`]).
///
/// ```
/// use tool_contract::results::{ApprovalStatement, Decision};
///
/// let statement = ApprovalStatement::new(
///     "apr_1", "ab".repeat(32), "issue_refund", "cd".repeat(32), "ef".repeat(32),
///     None, Decision::Approve, "sup-ana", "2026-12-03T10:00:00Z",
/// );
/// let other = ApprovalStatement { decision: Decision::Reject, ..statement.clone() };
/// assert_ne!(statement.challenge(), other.challenge());
/// assert!(statement.to_canonical_json().starts_with(r#"{"approval_id":"apr_1","approver_id":"sup-ana""#));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalStatement {
    /// Always [`STATEMENT_DOMAIN`].
    pub domain: String,
    /// The pending approval decided.
    pub approval_id: String,
    /// The keyed reference of the principal whose call it is.
    pub principal_ref: String,
    /// The tool that would run.
    pub tool: String,
    /// The request digest of the exact action asked.
    pub request_sha256: String,
    /// The digest of the preview the person was shown.
    pub preview_sha256: String,
    /// The SHA-256 of the edited arguments' canonical JSON, when the person approves with
    /// edits; `null` otherwise.
    pub edited_arguments_sha256: Option<String>,
    /// What the person decides.
    pub decision: Decision,
    /// The enrolled approver deciding.
    pub approver_id: String,
    /// Until when the decision counts (RFC 3339): an approval's own expiry.
    pub expires_at: String,
}

impl ApprovalStatement {
    /// The statement of these members, under [`STATEMENT_DOMAIN`].
    #[allow(clippy::too_many_arguments)] // the statement's members, each named at the call
    #[must_use]
    pub fn new(
        approval_id: impl Into<String>,
        principal_ref: impl Into<String>,
        tool: impl Into<String>,
        request_sha256: impl Into<String>,
        preview_sha256: impl Into<String>,
        edited_arguments_sha256: Option<String>,
        decision: Decision,
        approver_id: impl Into<String>,
        expires_at: impl Into<String>,
    ) -> Self {
        ApprovalStatement {
            domain: STATEMENT_DOMAIN.to_owned(),
            approval_id: approval_id.into(),
            principal_ref: principal_ref.into(),
            tool: tool.into(),
            request_sha256: request_sha256.into(),
            preview_sha256: preview_sha256.into(),
            edited_arguments_sha256,
            decision,
            approver_id: approver_id.into(),
            expires_at: expires_at.into(),
        }
    }

    /// The statement's RFC 8785 canonical JSON: the bytes its challenge is the digest of.
    #[must_use]
    pub fn to_canonical_json(&self) -> String {
        let value = infallible(
            serde_json::to_value(self),
            "a statement serializes to strings",
        );
        let bytes = infallible(canonical::to_vec(&value), "a statement holds strings only");
        infallible(String::from_utf8(bytes), "canonical JSON is UTF-8")
    }

    /// The WebAuthn challenge of this statement: the SHA-256 of its canonical JSON.
    #[must_use]
    pub fn challenge(&self) -> [u8; 32] {
        Sha256::digest(self.to_canonical_json().as_bytes()).into()
    }
}

/// The SHA-256 (hex) of edited arguments' canonical JSON, as statements and receipts name
/// them.
#[must_use]
pub fn edited_arguments_sha256(canonical_arguments: &str) -> String {
    hex::encode(Sha256::digest(canonical_arguments.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statement() -> ApprovalStatement {
        ApprovalStatement::new(
            "apr_1",
            "ab".repeat(32),
            "issue_refund",
            "cd".repeat(32),
            "ef".repeat(32),
            None,
            Decision::Approve,
            "sup-ana",
            "2026-12-03T10:00:00Z",
        )
    }

    #[test]
    fn the_challenge_is_the_sha256_of_the_canonical_json() {
        let statement = statement();
        let expected: [u8; 32] = Sha256::digest(statement.to_canonical_json().as_bytes()).into();
        assert_eq!(statement.challenge(), expected);
        // Members in RFC 8785 order, a missing edit written as null.
        let json = statement.to_canonical_json();
        assert!(json.contains(r#""edited_arguments_sha256":null"#), "{json}");
        assert!(json.ends_with(r#""tool":"issue_refund"}"#), "{json}");
    }

    #[test]
    fn every_member_changes_the_challenge() {
        let base = statement();
        let changed = [
            ApprovalStatement {
                approval_id: "apr_2".into(),
                ..base.clone()
            },
            ApprovalStatement {
                principal_ref: "00".repeat(32),
                ..base.clone()
            },
            ApprovalStatement {
                tool: "other".into(),
                ..base.clone()
            },
            ApprovalStatement {
                request_sha256: "00".repeat(32),
                ..base.clone()
            },
            ApprovalStatement {
                preview_sha256: "00".repeat(32),
                ..base.clone()
            },
            ApprovalStatement {
                edited_arguments_sha256: Some("00".repeat(32)),
                ..base.clone()
            },
            ApprovalStatement {
                decision: Decision::RejectDuplicate,
                ..base.clone()
            },
            ApprovalStatement {
                approver_id: "sup-ben".into(),
                ..base.clone()
            },
            ApprovalStatement {
                expires_at: "2026-12-03T10:00:01Z".into(),
                ..base.clone()
            },
            ApprovalStatement {
                domain: "tool-contract/approval-statement-v0".into(),
                ..base.clone()
            },
        ];
        for other in changed {
            assert_ne!(other.challenge(), base.challenge(), "{other:?}");
        }
    }
}
