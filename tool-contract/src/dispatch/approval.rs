//! Approvals bound to the exact action: request digest, preview, approver, expiry; used once.

use std::collections::HashMap;
use std::sync::Mutex;

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use time::OffsetDateTime;

use crate::json::canonical;
use crate::json::encoding::infallible;
use crate::json::visible::escape_hidden;
use crate::vocabulary::Effect;

/// What the person approving sees: built by the dispatcher from the validated arguments and
/// the registry, never from text the model wrote about the action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Preview {
    /// The tool that will run.
    pub tool: String,
    /// The tool's description, from its contract.
    pub description: String,
    /// What the tool does to the world.
    pub effect: Effect,
    /// The validated arguments, exactly as the handler will receive them.
    pub arguments: Value,
}

impl Preview {
    /// The SHA-256 (hex) of the preview's RFC 8785 canonical JSON: what an approval names to
    /// say "this is what I saw".
    #[must_use]
    pub fn sha256(&self) -> String {
        let value = infallible(
            serde_json::to_value(self),
            "a preview serializes to strings and a `Value`",
        );
        let bytes = infallible(
            canonical::to_vec(&value),
            "a preview's arguments were validated: exact, finite numbers only",
        );
        hex::encode(Sha256::digest(bytes))
    }

    /// The preview as a person should be shown it: indented JSON in which every character
    /// that hides or reorders text (bidi controls, zero-width and other invisible
    /// characters, controls) is a `\uXXXX` escape. The escapes decode to the same value, so
    /// what is shown is exactly what runs.
    ///
    /// ```
    /// use tool_contract::dispatch::Preview;
    /// use tool_contract::Effect;
    ///
    /// let preview = Preview {
    ///     tool: "send_file".into(),
    ///     description: "Send a file.".into(),
    ///     effect: Effect::NonIdempotentWrite,
    ///     arguments: serde_json::json!({ "name": "invoice\u{202e}fdp.exe" }),
    /// };
    /// assert!(preview.to_text().contains(r"invoice\u202efdp.exe"));
    /// ```
    #[must_use]
    pub fn to_text(&self) -> String {
        let text = infallible(
            serde_json::to_string_pretty(self),
            "a preview serializes to strings and a `Value`",
        );
        escape_hidden(&text)
    }
}

/// A write waiting for a person: what they are asked to approve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingApproval {
    /// The id to approve or reject it by.
    pub approval_id: String,
    /// The request digest of the exact action.
    pub request_sha256: String,
    /// What the person sees.
    pub preview: Preview,
    /// [`Preview::sha256`] of `preview`.
    pub preview_sha256: String,
    /// The keyed reference of the principal who asked.
    pub principal_ref: String,
    /// The logical operation.
    pub operation_id: String,
    /// The ledger key of the operation.
    pub(crate) ledger_key: String,
}

/// A person's approval of one pending action. It covers that request digest, tool, principal,
/// operation and key only, until `expires_at`, and is consumed by the one execution it allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalGrant {
    /// The pending approval it answers.
    pub approval_id: String,
    /// The request digest approved.
    pub request_sha256: String,
    /// The preview the person saw.
    pub preview_sha256: String,
    /// The tool approved.
    pub tool: String,
    /// The principal it was approved for.
    pub principal_ref: String,
    /// The operation it was approved for.
    pub operation_id: String,
    /// Who approved (the application's own name for the person).
    pub approver: String,
    /// When it lapses.
    pub expires_at: OffsetDateTime,
    pub(crate) ledger_key: String,
}

/// Why an approval or rejection was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ApprovalError {
    /// No pending approval has that id: it never existed, was decided, or was superseded by
    /// a changed request.
    #[error("no pending approval has that id (decided, superseded, or never issued)")]
    NotPending,
    /// The preview digest given is not the one the pending approval showed.
    #[error("the preview approved is not the preview pending")]
    PreviewMismatch,
    /// The expiry is not after now.
    #[error("the approval would already have expired")]
    Expired,
    /// The expiry is beyond what RFC 3339 can write (a year past 9999), so no audit could
    /// record it.
    #[error("the approval's expiry is out of range")]
    ExpiryOutOfRange,
}

/// Why a request cannot run on the approval at hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Invalidity {
    /// The arguments (hence request digest) changed since approval.
    RequestChanged,
    /// The approval is for another tool, principal or operation.
    Moved,
    /// The approval has lapsed.
    Expired,
}

impl Invalidity {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Invalidity::RequestChanged => "request changed after approval",
            Invalidity::Moved => "approval is for another tool, principal or operation",
            Invalidity::Expired => "approval expired",
        }
    }
}

/// What the approval stage decides for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ApprovalCheck {
    /// Approved: the grant is consumed.
    Proceed(ApprovalGrant),
    /// Waiting for a person (first ask, or the same request asked again).
    Required(PendingApproval),
    /// The approval does not cover this request: a new pending approval replaces it.
    Invalid(PendingApproval, Invalidity),
    /// A person refused this operation.
    Rejected,
}

/// The facts of the request at the approval stage.
pub(crate) struct Asked<'a> {
    pub(crate) ledger_key: &'a str,
    pub(crate) request_sha256: &'a str,
    pub(crate) tool: &'a str,
    pub(crate) principal_ref: &'a str,
    pub(crate) operation_id: &'a str,
    pub(crate) now: OffsetDateTime,
}

#[derive(Debug)]
enum Entry {
    /// Waiting since the instant given.
    Pending(PendingApproval, OffsetDateTime),
    Granted(ApprovalGrant),
    /// Refused at the instant given.
    Rejected(OffsetDateTime),
}

/// Pending approvals and grants, one entry per operation (ledger key).
#[derive(Debug, Default)]
pub(crate) struct ApprovalBook {
    entries: Mutex<HashMap<String, Entry>>,
}

impl ApprovalBook {
    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Decides the approval stage, atomically: a grant is taken out as it is used.
    pub(crate) fn check(
        &self,
        asked: &Asked<'_>,
        pending: impl FnOnce() -> PendingApproval,
    ) -> ApprovalCheck {
        let mut entries = self.entries();
        let invalidity = match entries.remove(asked.ledger_key) {
            None => None,
            Some(Entry::Rejected(at)) => {
                entries.insert(asked.ledger_key.to_owned(), Entry::Rejected(at));
                return ApprovalCheck::Rejected;
            }
            Some(Entry::Pending(waiting, since))
                if waiting.request_sha256 == asked.request_sha256 =>
            {
                entries.insert(
                    asked.ledger_key.to_owned(),
                    Entry::Pending(waiting.clone(), since),
                );
                return ApprovalCheck::Required(waiting);
            }
            // Changed before anyone approved: simply a new request to approve.
            Some(Entry::Pending(..)) => None,
            Some(Entry::Granted(grant)) => match grant_covers(&grant, asked) {
                Ok(()) => return ApprovalCheck::Proceed(grant),
                Err(invalidity) => Some(invalidity),
            },
        };
        let fresh = pending();
        entries.insert(
            asked.ledger_key.to_owned(),
            Entry::Pending(fresh.clone(), asked.now),
        );
        match invalidity {
            Some(invalidity) => ApprovalCheck::Invalid(fresh, invalidity),
            None => ApprovalCheck::Required(fresh),
        }
    }

    /// Puts back `grant`, taken by [`check`](Self::check) for a dispatch that then ran
    /// nothing, unless the operation has another entry by now.
    pub(crate) fn restore(&self, grant: ApprovalGrant) {
        let key = grant.ledger_key.clone();
        self.entries().entry(key).or_insert(Entry::Granted(grant));
    }

    pub(crate) fn approve(
        &self,
        approval_id: &str,
        preview_sha256: &str,
        approver: &str,
        expires_at: OffsetDateTime,
        now: OffsetDateTime,
    ) -> Result<ApprovalGrant, ApprovalError> {
        let mut entries = self.entries();
        let (key, pending) = find_pending(&entries, approval_id)?;
        if pending.preview_sha256 != preview_sha256 {
            return Err(ApprovalError::PreviewMismatch);
        }
        if expires_at <= now {
            return Err(ApprovalError::Expired);
        }
        let grant = ApprovalGrant {
            approval_id: pending.approval_id.clone(),
            request_sha256: pending.request_sha256.clone(),
            preview_sha256: pending.preview_sha256.clone(),
            tool: pending.preview.tool.clone(),
            principal_ref: pending.principal_ref.clone(),
            operation_id: pending.operation_id.clone(),
            approver: approver.to_owned(),
            expires_at,
            ledger_key: pending.ledger_key.clone(),
        };
        entries.insert(key, Entry::Granted(grant.clone()));
        Ok(grant)
    }

    pub(crate) fn reject(
        &self,
        approval_id: &str,
        now: OffsetDateTime,
    ) -> Result<(), ApprovalError> {
        let mut entries = self.entries();
        let (key, _) = find_pending(&entries, approval_id)?;
        entries.insert(key, Entry::Rejected(now));
        Ok(())
    }

    /// Forgets grants that lapsed, and pending approvals and rejections older than
    /// `retention`; returns how many.
    pub(crate) fn purge(&self, now: OffsetDateTime, retention: std::time::Duration) -> usize {
        let mut entries = self.entries();
        let before = entries.len();
        entries.retain(|_, entry| match entry {
            Entry::Pending(_, at) | Entry::Rejected(at) => later_by(*at, retention) > now,
            Entry::Granted(grant) => grant.expires_at > now,
        });
        before - entries.len()
    }
}

/// `at` moved on by `lifetime`, or the last instant an audit can write (the end of year
/// 9999, RFC 3339's last) if that is sooner: a lifetime too long for the calendar lasts as
/// long as one can, and never overflows.
pub(crate) fn later_by(at: OffsetDateTime, lifetime: std::time::Duration) -> OffsetDateTime {
    let last = infallible(
        OffsetDateTime::from_unix_timestamp(253_402_300_799),
        "9999-12-31T23:59:59Z is a time's instant",
    );
    time::Duration::try_from(lifetime)
        .ok()
        .and_then(|lifetime| at.checked_add(lifetime))
        .map_or(last, |later| later.min(last))
}

fn find_pending(
    entries: &HashMap<String, Entry>,
    approval_id: &str,
) -> Result<(String, PendingApproval), ApprovalError> {
    entries
        .iter()
        .find_map(|(key, entry)| match entry {
            Entry::Pending(pending, _) if pending.approval_id == approval_id => {
                Some((key.clone(), pending.clone()))
            }
            _ => None,
        })
        .ok_or(ApprovalError::NotPending)
}

fn grant_covers(grant: &ApprovalGrant, asked: &Asked<'_>) -> Result<(), Invalidity> {
    if grant.tool != asked.tool
        || grant.principal_ref != asked.principal_ref
        || grant.operation_id != asked.operation_id
        || grant.ledger_key != asked.ledger_key
    {
        return Err(Invalidity::Moved);
    }
    if grant.request_sha256 != asked.request_sha256 {
        return Err(Invalidity::RequestChanged);
    }
    if grant.expires_at <= asked.now {
        return Err(Invalidity::Expired);
    }
    Ok(())
}
