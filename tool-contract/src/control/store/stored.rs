//! How the SQL stores write an approval entry: a few columns to select and purge by, and the
//! rest as one JSON document. Every store seals an entry in this written form.

// Reading rows back is the SQL stores' alone.
#![cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::control::{
    ApprovalBasis, ApprovalEntry, ApprovalGrant, GivenApproval, PendingApproval, Preview,
    RejectionReason,
};
use crate::control::{Lease, StoreError};
use crate::json::depth;
use crate::results::{EarlierRun, PasskeyAssertion};

/// An approval entry as its columns hold it.
pub(crate) struct ApprovalRow {
    pub(crate) approval_id: String,
    /// Whose request it is, for counting a principal's pending approvals.
    pub(crate) principal_ref: Option<String>,
    pub(crate) state: &'static str,
    pub(crate) expires_at_ms: u64,
    pub(crate) body: String,
    pub(crate) redeemed_by: Option<Lease>,
}

/// An approval entry's columns as read back.
pub(crate) struct ReadApprovalRow {
    pub(crate) state: String,
    pub(crate) approval_id: String,
    pub(crate) expires_at_ms: i64,
    pub(crate) body: String,
    pub(crate) redeemed_owner: Option<String>,
    pub(crate) redeemed_generation: Option<i64>,
    /// The row's seal (none in a row written before approval rows were sealed).
    pub(crate) seal: Option<String>,
}

pub(crate) const PENDING: &str = "pending";
pub(crate) const GRANTED: &str = "granted";
pub(crate) const REJECTED: &str = "rejected";

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredPending {
    approval_id: String,
    request_sha256: String,
    preview: Preview,
    preview_sha256: String,
    principal_ref: String,
    // A row written before approvers were enrolled names no tenant.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    tenant: String,
    operation_id: String,
    ledger_key: String,
    // A row written before four eyes existed needs one approver and has none yet.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    approvals_required: u32,
    #[serde(default, skip_serializing_if = "is_false")]
    signatures_required: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    approvals: Vec<StoredApproval>,
    // A row written before approvals said by whom was `by_caller`, and names no person.
    #[serde(default, skip_serializing_if = "is_false")]
    by_another: bool,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    caller_person_ref: String,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
fn is_false(flag: &bool) -> bool {
    !*flag
}

fn one() -> u32 {
    1
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
fn is_one(count: &u32) -> bool {
    *count == 1
}

/// One person's approval; times as RFC 3339.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredApproval {
    approver: String,
    approved_at: String,
    expires_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    edited_arguments: Option<String>,
    // A row written before approvals had a basis was the service's word.
    #[serde(default, skip_serializing_if = "StoredBasis::is_service")]
    basis: StoredBasis,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    person_ref: Option<String>,
}

/// What an approval rests on, as a row writes it.
#[derive(Default, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
enum StoredBasis {
    #[default]
    Service,
    Client,
    Passkey {
        assertion: PasskeyAssertion,
    },
}

impl StoredBasis {
    fn is_service(&self) -> bool {
        matches!(self, StoredBasis::Service)
    }

    fn of(basis: &ApprovalBasis) -> Self {
        match basis {
            ApprovalBasis::Service => StoredBasis::Service,
            ApprovalBasis::Client => StoredBasis::Client,
            ApprovalBasis::Passkey(assertion) => StoredBasis::Passkey {
                assertion: assertion.clone(),
            },
        }
    }

    fn basis(self) -> ApprovalBasis {
        match self {
            StoredBasis::Service => ApprovalBasis::Service,
            StoredBasis::Client => ApprovalBasis::Client,
            StoredBasis::Passkey { assertion } => ApprovalBasis::Passkey(assertion),
        }
    }
}

impl StoredApproval {
    fn of(given: &GivenApproval) -> Result<Self, StoreError> {
        Ok(StoredApproval {
            approver: given.approver.clone(),
            approved_at: given.approved_at.format(&Rfc3339).map_err(corrupt)?,
            expires_at: given.expires_at.format(&Rfc3339).map_err(corrupt)?,
            edited_arguments: given.edited_arguments.clone(),
            basis: StoredBasis::of(&given.basis),
            person_ref: given.person_ref.clone(),
        })
    }

    fn given(self) -> Result<GivenApproval, StoreError> {
        Ok(GivenApproval {
            approver: self.approver,
            approved_at: OffsetDateTime::parse(&self.approved_at, &Rfc3339).map_err(corrupt)?,
            expires_at: OffsetDateTime::parse(&self.expires_at, &Rfc3339).map_err(corrupt)?,
            edited_arguments: self.edited_arguments,
            basis: self.basis.basis(),
            person_ref: self.person_ref,
        })
    }
}

fn stored_approvals(approvals: &[GivenApproval]) -> Result<Vec<StoredApproval>, StoreError> {
    approvals.iter().map(StoredApproval::of).collect()
}

fn given_approvals(approvals: Vec<StoredApproval>) -> Result<Vec<GivenApproval>, StoreError> {
    approvals.into_iter().map(StoredApproval::given).collect()
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredRejection {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<RejectionReason>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredGrant {
    approval_id: String,
    request_sha256: String,
    preview_sha256: String,
    tool: String,
    principal_ref: String,
    operation_id: String,
    approvals: Vec<StoredApproval>,
    // A grant written before its rule was kept: as many as approved it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    approvals_required: Option<u32>,
    #[serde(default, skip_serializing_if = "is_false")]
    signatures_required: bool,
    expires_at: String,
    ledger_key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    edited_arguments: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    earlier_run: Option<EarlierRun>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    required_by: Vec<String>,
}

fn to_json(value: &impl Serialize) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|error| StoreError::Corrupt(error.to_string()))
}

fn corrupt(what: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("an approval row: {what}"))
}

pub(crate) fn approval_row(entry: &ApprovalEntry) -> Result<ApprovalRow, StoreError> {
    let expires_at_ms = entry.expires_at_ms();
    let (state, body, redeemed_by) = match entry {
        ApprovalEntry::Pending { pending, .. } => {
            let stored = StoredPending {
                approval_id: pending.approval_id.clone(),
                request_sha256: pending.request_sha256.clone(),
                preview: pending.preview.clone(),
                preview_sha256: pending.preview_sha256.clone(),
                principal_ref: pending.principal_ref.clone(),
                tenant: pending.tenant.clone(),
                operation_id: pending.operation_id.clone(),
                ledger_key: pending.ledger_key.clone(),
                approvals_required: pending.approvals_required,
                signatures_required: pending.signatures_required,
                approvals: stored_approvals(&pending.approvals)?,
                by_another: pending.by_another,
                caller_person_ref: pending.caller_person_ref.clone(),
            };
            (PENDING, to_json(&stored)?, None)
        }
        ApprovalEntry::Granted { grant, redeemed_by } => {
            let expires_at = grant.expires_at.format(&Rfc3339).map_err(corrupt)?;
            let stored = StoredGrant {
                approval_id: grant.approval_id.clone(),
                request_sha256: grant.request_sha256.clone(),
                preview_sha256: grant.preview_sha256.clone(),
                tool: grant.tool.clone(),
                principal_ref: grant.principal_ref.clone(),
                operation_id: grant.operation_id.clone(),
                approvals: stored_approvals(&grant.approvals)?,
                approvals_required: Some(grant.approvals_required),
                signatures_required: grant.signatures_required,
                expires_at,
                ledger_key: grant.ledger_key.clone(),
                edited_arguments: grant.edited_arguments.clone(),
                earlier_run: grant.earlier_run.clone(),
                required_by: grant.required_by.clone(),
            };
            (GRANTED, to_json(&stored)?, redeemed_by.clone())
        }
        ApprovalEntry::Rejected { reason, .. } => {
            let stored = StoredRejection { reason: *reason };
            (REJECTED, to_json(&stored)?, None)
        }
    };
    let principal_ref = match entry {
        ApprovalEntry::Pending { pending, .. } => Some(pending.principal_ref.clone()),
        ApprovalEntry::Granted { grant, .. } => Some(grant.principal_ref.clone()),
        ApprovalEntry::Rejected { .. } => None,
    };
    Ok(ApprovalRow {
        approval_id: entry.approval_id().to_owned(),
        principal_ref,
        state,
        expires_at_ms,
        body,
        redeemed_by,
    })
}

/// The entry a row holds, with the seal it carries.
pub(crate) fn sealed_entry(
    mut row: ReadApprovalRow,
) -> Result<(ApprovalEntry, Option<String>), StoreError> {
    let seal = row.seal.take();
    Ok((approval_entry(row)?, seal))
}

pub(crate) fn approval_entry(row: ReadApprovalRow) -> Result<ApprovalEntry, StoreError> {
    let expires_at_ms = u64::try_from(row.expires_at_ms).map_err(corrupt)?;
    match row.state.as_str() {
        PENDING => {
            let stored: StoredPending = depth::from_slice(row.body.as_bytes()).map_err(corrupt)?;
            let pending = PendingApproval {
                approval_id: stored.approval_id,
                request_sha256: stored.request_sha256,
                preview: stored.preview,
                preview_sha256: stored.preview_sha256,
                principal_ref: stored.principal_ref,
                tenant: stored.tenant,
                operation_id: stored.operation_id,
                ledger_key: stored.ledger_key,
                approvals_required: stored.approvals_required,
                signatures_required: stored.signatures_required,
                approvals: given_approvals(stored.approvals)?,
                by_another: stored.by_another,
                caller_person_ref: stored.caller_person_ref,
            };
            Ok(ApprovalEntry::Pending {
                pending,
                expires_at_ms,
            })
        }
        GRANTED => {
            let stored: StoredGrant = depth::from_slice(row.body.as_bytes()).map_err(corrupt)?;
            let expires_at =
                OffsetDateTime::parse(&stored.expires_at, &Rfc3339).map_err(corrupt)?;
            let redeemed_by = match (row.redeemed_owner, row.redeemed_generation) {
                (Some(owner), Some(generation)) => Some(Lease {
                    owner,
                    generation: u64::try_from(generation).map_err(corrupt)?,
                }),
                (None, None) => None,
                _ => return Err(corrupt("half a redeeming lease")),
            };
            let grant = ApprovalGrant {
                approval_id: stored.approval_id,
                request_sha256: stored.request_sha256,
                preview_sha256: stored.preview_sha256,
                tool: stored.tool,
                principal_ref: stored.principal_ref,
                operation_id: stored.operation_id,
                approvals_required: stored
                    .approvals_required
                    .unwrap_or(u32::try_from(stored.approvals.len()).unwrap_or(u32::MAX)),
                signatures_required: stored.signatures_required,
                approvals: given_approvals(stored.approvals)?,
                expires_at,
                ledger_key: stored.ledger_key,
                edited_arguments: stored.edited_arguments,
                earlier_run: stored.earlier_run,
                required_by: stored.required_by,
            };
            Ok(ApprovalEntry::Granted { grant, redeemed_by })
        }
        REJECTED => Ok(ApprovalEntry::Rejected {
            // A rejection written before reasons existed is `{}`: no reason.
            reason: depth::from_slice::<StoredRejection>(row.body.as_bytes())
                .map_err(corrupt)?
                .reason,
            approval_id: row.approval_id,
            expires_at_ms,
        }),
        other => Err(corrupt(format!("unknown state {other:?}"))),
    }
}

/// SQL integers are signed; a time past `i64::MAX` ms (year 292 million) is held at it.
pub(crate) fn to_sql_u64(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

/// A stored time or generation, which must not be negative.
pub(crate) fn from_sql_u64(value: i64, what: &str) -> Result<u64, StoreError> {
    u64::try_from(value).map_err(|_| StoreError::Corrupt(format!("negative {what} {value}")))
}

/// A worker's lease as a SQL store's columns hold it (`NULL`s where the join found no row):
/// until when, and its seal.
pub(crate) fn worker_lease_columns(
    until: Option<i64>,
    seal: Option<String>,
) -> Result<Option<(u64, String)>, StoreError> {
    match (until, seal) {
        (Some(until), Some(seal)) => Ok(Some((from_sql_u64(until, "time")?, seal))),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rejected_row(body: &str) -> ReadApprovalRow {
        ReadApprovalRow {
            state: REJECTED.to_owned(),
            approval_id: "apr_1".to_owned(),
            expires_at_ms: 5,
            body: body.to_owned(),
            redeemed_owner: None,
            redeemed_generation: None,
            seal: None,
        }
    }

    #[test]
    fn a_rejection_keeps_its_reason_and_one_written_before_reasons_has_none() {
        let entry = ApprovalEntry::Rejected {
            approval_id: "apr_1".to_owned(),
            reason: Some(RejectionReason::Duplicate),
            expires_at_ms: 5,
        };
        let row = approval_row(&entry).unwrap();
        assert_eq!(row.body, r#"{"reason":"duplicate"}"#);
        assert_eq!(approval_entry(rejected_row(&row.body)).unwrap(), entry);
        let before = approval_entry(rejected_row("{}")).unwrap();
        assert!(matches!(
            before,
            ApprovalEntry::Rejected { reason: None, .. }
        ));
        assert!(approval_entry(rejected_row(r#"{"reason":"bored"}"#)).is_err());
    }
}
