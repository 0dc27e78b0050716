//! Approval receipts: proof, kept with the audit, that these people approved exactly this
//! action, which anyone holding the published key can check offline.
//!
//! A receipt is issued when a grant is redeemed: an RFC 8785 canonical JSON document naming
//! the approvers, the principal reference, the tool, the request and preview digests, the
//! approval, expiry and redemption times and the operation, signed with Ed25519 (RFC 8032,
//! verified strictly: no malleable signatures, no small-order keys). The signing key's public
//! half is published in a [`KeySet`] with its id and the dates it signs between, so a key can
//! be rotated without making old receipts unverifiable.

use std::fmt;

use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::assertion::{ApprovalBasis, PasskeyAssertion};
use super::digest::{DigestAlgorithm, RequestRevisions, lower_hex, plain_request_digest};
use super::statement::{ApprovalStatement, Decision};
use crate::json::canonical;
use crate::json::depth;
use crate::json::encoding::infallible;
use crate::vocabulary::call::Principal;

/// The `domain` of every receipt of this version: a receipt is never read as anything else.
/// It names the rule the approvals met and what each approval rests on (a passkey's
/// assertion, or someone's word).
pub const RECEIPT_DOMAIN: &str = "tool-contract/approval-receipt-v2";

/// The `domain` of the first receipts, which named the approvers only: they still verify.
pub const RECEIPT_DOMAIN_V1: &str = "tool-contract/approval-receipt-v1";

/// The only signature algorithm a published key names.
const ED25519: &str = "ed25519";

/// What a receipt says: signed, field for field, as its RFC 8785 canonical JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalReceipt {
    /// Always [`RECEIPT_DOMAIN`].
    domain: String,
    /// The id of the key that signed it, in the published [`KeySet`].
    pub key_id: String,
    /// The pending approval the people answered.
    pub approval_id: String,
    /// Each approval, in the order given: one, or as many as the policy required.
    pub approvals: Vec<ReceiptApproval>,
    /// The keyed reference of the principal the action ran for.
    pub principal_ref: String,
    /// The tool.
    pub tool: String,
    /// The logical operation.
    pub operation_id: String,
    /// The request digest approved: the `request_sha256` of the model's call.
    pub request_sha256: String,
    /// How `request_sha256` was computed: plain SHA-256 can be recomputed from the call by
    /// anyone ([`ApprovalReceipt::check_call`]); HMAC-SHA256 only with the application's
    /// digest key.
    pub request_digest: DigestAlgorithm,
    /// The contract revisions the request digest binds.
    pub revisions: ReceiptRevisions,
    /// The digest of the preview the people saw.
    pub preview_sha256: String,
    /// When the approval would have lapsed (RFC 3339).
    pub expires_at: String,
    /// When the execution redeemed it (RFC 3339): the receipt's own time.
    pub redeemed_at: String,
    /// The SHA-256 of the arguments as the people changed them (canonical JSON), when they
    /// approved with edits: what ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited_arguments_sha256: Option<String>,
    /// How many different approvers the rule asked for (in every receipt of
    /// [`RECEIPT_DOMAIN`]; none in a first-version one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approvals_required: Option<u32>,
    /// Whether the rule counted approvals signed by passkeys only (as
    /// `approvals_required`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signatures_required: Option<bool>,
    /// The earlier run of this operation, when it ran before and its `within` window ended:
    /// what the people were shown they approved a repeat of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub earlier_run: Option<EarlierRun>,
    /// The approval rules (Cedar policies, by id) that asked for the approval, when policies
    /// did: the preview the people saw named them, and an edit they approved added those that
    /// ask of the edited arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_by: Vec<String>,
}

/// The earlier run of an operation whose window ended (`within = "30d"`): a repeat after it is
/// a new operation, and what a person approving it is shown, and its receipt names, so that
/// it is never silently a first time.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EarlierRun {
    /// How it ended, as the ledger says: `succeeded`, `failed`, `cancelled` or `rejected`.
    pub ended: String,
    /// When its window ended (RFC 3339): from then on, a repeat is a new operation.
    pub window_ended_at: String,
    /// The `result_sha256` of what the model read of it, as its audit record binds it: how
    /// an auditor finds that record. `None` when the ledger kept no result of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_sha256: Option<String>,
}

/// One person's approval, as a receipt names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReceiptApproval {
    /// Who approved: the enrolled approver's id, or the application's own name for the person.
    pub approver: String,
    /// When (RFC 3339).
    pub approved_at: String,
    /// Until when their approval counted (RFC 3339): the statement they signed names it
    /// (in every receipt of [`RECEIPT_DOMAIN`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// What the approval rests on (in every receipt of [`RECEIPT_DOMAIN`]; a first-version
    /// receipt's approvals are the service's word).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub basis: Option<BasisKind>,
    /// The approver's passkey assertion over the approval statement, when `basis` is
    /// `passkey`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assertion: Option<PasskeyAssertion>,
}

/// What a receipt's approval rests on, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BasisKind {
    /// Signed by the approver's passkey: its assertion is in the receipt.
    Passkey,
    /// Asserted by the service (the application's API), signed by nobody.
    Service,
    /// Asserted by an MCP client for its token's subject, signed by nobody.
    Client,
}

impl ReceiptApproval {
    /// Whether the receipt says a passkey signed it (checked only by
    /// `KeySet::verify_with_approvers`).
    #[must_use]
    pub fn is_signed(&self) -> bool {
        self.basis == Some(BasisKind::Passkey)
    }
}

/// The contract revisions of the tool approved, as its request digest binds them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReceiptRevisions {
    /// Of the effect declaration.
    pub effect: String,
    /// Of the arguments' schema.
    pub input: String,
    /// Of the output's schema.
    pub output: String,
}

/// A receipt and its signature: what the audit and the audit log keep, and what an auditor
/// checks with [`KeySet::verify`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignedReceipt {
    /// What was signed.
    pub receipt: ApprovalReceipt,
    /// The Ed25519 signature of the receipt's canonical JSON: 128 lowercase hex.
    pub signature: String,
}

impl SignedReceipt {
    /// The receipt as compact JSON (its members in canonical order): what to hand an
    /// auditor.
    #[must_use]
    pub fn to_json(&self) -> String {
        let value = infallible(
            serde_json::to_value(self),
            "a receipt serializes to strings",
        );
        let bytes = infallible(canonical::to_vec(&value), "a receipt holds strings only");
        infallible(String::from_utf8(bytes), "canonical JSON is UTF-8")
    }
}

/// One approval a redemption rests on, as the receipt states it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalFact {
    /// Who approved (the enrolled approver's id, or the application's name for them).
    pub approver: String,
    /// When.
    pub approved_at: OffsetDateTime,
    /// Until when it counted.
    pub expires_at: OffsetDateTime,
    /// What it rests on.
    pub basis: ApprovalBasis,
}

/// The facts of one redemption a receipt states (everything but the key id and the times'
/// text, which the signer writes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiptFacts {
    /// The pending approval answered.
    pub approval_id: String,
    /// Each approval, in the order given.
    pub approvals: Vec<ApprovalFact>,
    /// How many different approvers the rule asked for.
    pub approvals_required: u32,
    /// Whether the rule counted signed approvals only.
    pub signatures_required: bool,
    /// The keyed reference of the principal.
    pub principal_ref: String,
    /// The tool.
    pub tool: String,
    /// The logical operation.
    pub operation_id: String,
    /// The request digest approved.
    pub request_sha256: String,
    /// How it was computed.
    pub request_digest: DigestAlgorithm,
    /// The contract revisions it binds.
    pub revisions: ReceiptRevisions,
    /// The preview's digest.
    pub preview_sha256: String,
    /// When the approval would have lapsed.
    pub expires_at: OffsetDateTime,
    /// When it was redeemed.
    pub redeemed_at: OffsetDateTime,
    /// The edited arguments (canonical JSON), when approved with edits.
    pub edited_arguments: Option<String>,
    /// The operation's earlier run, when its window ended and this is a repeat.
    pub earlier_run: Option<EarlierRun>,
    /// The approval rules that asked for the approval, by id: the preview's, and those an
    /// approved edit added.
    pub required_by: Vec<String>,
}

/// One published verification key: its id, its public half, and the times it signs between.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PublishedKey {
    /// The id receipts name it by.
    pub key_id: String,
    /// Always `"ed25519"`.
    pub algorithm: String,
    /// The Ed25519 public key: 64 lowercase hex.
    pub public_key: String,
    /// The first instant it signs (RFC 3339).
    pub valid_from: String,
    /// The instant it stops signing (RFC 3339), once it is rotated out; `None` while it is
    /// current. A receipt redeemed outside `[valid_from, valid_until)` does not verify.
    pub valid_until: Option<String>,
}

/// Signs receipts with one Ed25519 key. Its `Debug` shows the key id, never the key.
#[derive(Clone)]
pub struct ReceiptSigner {
    key_id: String,
    signing_key: SigningKey,
    valid_from: OffsetDateTime,
    valid_until: Option<OffsetDateTime>,
}

impl fmt::Debug for ReceiptSigner {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("ReceiptSigner")
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

impl ReceiptSigner {
    /// A signer with the Ed25519 secret key `secret` (32 bytes, RFC 8032's seed) under
    /// `key_id`, signing from `valid_from` on.
    ///
    /// ```
    /// use tool_contract::results::ReceiptSigner;
    ///
    /// let since = time::OffsetDateTime::from_unix_timestamp(1_796_083_200)?;
    /// let signer = ReceiptSigner::new("desk-2026-12", [7; 32], since);
    /// let published = signer.published_key();
    /// assert_eq!(published.key_id, "desk-2026-12");
    /// assert_eq!(published.public_key.len(), 64);
    /// assert_eq!(published.valid_from, "2026-12-01T00:00:00Z");
    /// # Ok::<(), time::error::ComponentRange>(())
    /// ```
    #[must_use]
    pub fn new(key_id: impl Into<String>, secret: [u8; 32], valid_from: OffsetDateTime) -> Self {
        ReceiptSigner {
            key_id: key_id.into(),
            signing_key: SigningKey::from_bytes(&secret),
            valid_from,
            valid_until: None,
        }
    }

    /// The same signer, rotated out at `valid_until`: it signs nothing from then on.
    #[must_use]
    pub fn valid_until(mut self, valid_until: OffsetDateTime) -> Self {
        self.valid_until = Some(valid_until);
        self
    }

    /// The key's id.
    #[must_use]
    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    /// What to publish so that anyone can verify this signer's receipts.
    #[must_use]
    pub fn published_key(&self) -> PublishedKey {
        // A date RFC 3339 cannot write (a negative year) publishes as "", which no key set
        // accepts: such a key verifies nothing.
        let format = |at: OffsetDateTime| at.format(&Rfc3339).unwrap_or_default();
        PublishedKey {
            key_id: self.key_id.clone(),
            algorithm: ED25519.to_owned(),
            public_key: hex::encode(self.signing_key.verifying_key().as_bytes()),
            valid_from: format(self.valid_from),
            valid_until: self.valid_until.map(format),
        }
    }

    /// The signature (128 lowercase hex) of `bytes`, made at `at`.
    pub(crate) fn sign_bytes(
        &self,
        bytes: &[u8],
        at: OffsetDateTime,
    ) -> Result<String, ReceiptError> {
        if at < self.valid_from || self.valid_until.is_some_and(|until| at >= until) {
            return Err(ReceiptError::KeyNotValid {
                key_id: self.key_id.clone(),
            });
        }
        Ok(lower_hex(&self.signing_key.sign(bytes).to_bytes()))
    }

    /// The signed receipt of `facts`.
    ///
    /// # Errors
    ///
    /// [`ReceiptError::KeyNotValid`] when `facts.redeemed_at` is outside the key's dates;
    /// [`ReceiptError::Malformed`] when a time cannot be written as RFC 3339.
    pub fn sign(&self, facts: &ReceiptFacts) -> Result<SignedReceipt, ReceiptError> {
        let at = facts.redeemed_at;
        if at < self.valid_from || self.valid_until.is_some_and(|until| at >= until) {
            return Err(ReceiptError::KeyNotValid {
                key_id: self.key_id.clone(),
            });
        }
        let rfc3339 = |at: OffsetDateTime| {
            at.format(&Rfc3339)
                .map_err(|error| ReceiptError::Malformed(error.to_string()))
        };
        let approvals = facts
            .approvals
            .iter()
            .map(|fact| {
                let (basis, assertion) = match &fact.basis {
                    ApprovalBasis::Passkey(assertion) => {
                        (BasisKind::Passkey, Some(assertion.clone()))
                    }
                    ApprovalBasis::Client => (BasisKind::Client, None),
                    ApprovalBasis::Service => (BasisKind::Service, None),
                };
                Ok(ReceiptApproval {
                    approver: fact.approver.clone(),
                    approved_at: rfc3339(fact.approved_at)?,
                    expires_at: Some(rfc3339(fact.expires_at)?),
                    basis: Some(basis),
                    assertion,
                })
            })
            .collect::<Result<_, ReceiptError>>()?;
        let receipt = ApprovalReceipt {
            domain: RECEIPT_DOMAIN.to_owned(),
            key_id: self.key_id.clone(),
            approval_id: facts.approval_id.clone(),
            approvals,
            principal_ref: facts.principal_ref.clone(),
            tool: facts.tool.clone(),
            operation_id: facts.operation_id.clone(),
            request_sha256: facts.request_sha256.clone(),
            request_digest: facts.request_digest,
            revisions: facts.revisions.clone(),
            preview_sha256: facts.preview_sha256.clone(),
            expires_at: rfc3339(facts.expires_at)?,
            redeemed_at: rfc3339(at)?,
            edited_arguments_sha256: facts
                .edited_arguments
                .as_ref()
                .map(|edited| hex::encode(Sha256::digest(edited.as_bytes()))),
            approvals_required: Some(facts.approvals_required),
            signatures_required: Some(facts.signatures_required),
            earlier_run: facts.earlier_run.clone(),
            required_by: facts.required_by.clone(),
        };
        let signature = self.signing_key.sign(&signed_bytes(&receipt));
        Ok(SignedReceipt {
            receipt,
            signature: hex::encode(signature.to_bytes()),
        })
    }
}

/// The bytes a receipt's signature covers: its RFC 8785 canonical JSON.
fn signed_bytes(receipt: &ApprovalReceipt) -> Vec<u8> {
    let value = infallible(
        serde_json::to_value(receipt),
        "a receipt serializes to strings",
    );
    infallible(canonical::to_vec(&value), "a receipt holds strings only")
}

/// The published keys receipts are checked against: what an auditor holds.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KeySet {
    keys: Vec<CheckedKey>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct CheckedKey {
    published: PublishedKey,
    verifying_key: VerifyingKey,
    valid_from: OffsetDateTime,
    valid_until: Option<OffsetDateTime>,
}

/// The published form of a [`KeySet`]: `{"keys": [...]}`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PublishedKeys {
    keys: Vec<PublishedKey>,
}

impl KeySet {
    /// The key set of these published keys.
    ///
    /// # Errors
    ///
    /// [`ReceiptError::KeySet`] for a key that is not Ed25519, not 64 lowercase hex, not a
    /// valid public key, with dates that are not RFC 3339 or end before they start, or an id
    /// given twice.
    pub fn new(keys: impl IntoIterator<Item = PublishedKey>) -> Result<Self, ReceiptError> {
        let mut checked: Vec<CheckedKey> = Vec::new();
        for published in keys {
            let bad =
                |why: &str| ReceiptError::KeySet(format!("key {:?}: {why}", published.key_id));
            if published.algorithm != ED25519 {
                return Err(bad("the algorithm is not ed25519"));
            }
            if checked
                .iter()
                .any(|key| key.published.key_id == published.key_id)
            {
                return Err(bad("the id is given twice"));
            }
            let bytes: [u8; 32] = lowercase_hex(&published.public_key)
                .and_then(|bytes| bytes.try_into().ok())
                .ok_or_else(|| bad("the public key is not 64 lowercase hex"))?;
            let verifying_key = VerifyingKey::from_bytes(&bytes)
                .map_err(|_| bad("the public key is not an Ed25519 point"))?;
            if verifying_key.is_weak() {
                return Err(bad("the public key has small order"));
            }
            let time = |text: &str| {
                OffsetDateTime::parse(text, &Rfc3339).map_err(|_| bad("a date is not RFC 3339"))
            };
            let valid_from = time(&published.valid_from)?;
            let valid_until = published.valid_until.as_deref().map(time).transpose()?;
            if valid_until.is_some_and(|until| until <= valid_from) {
                return Err(bad("it stops signing before it starts"));
            }
            checked.push(CheckedKey {
                published,
                verifying_key,
                valid_from,
                valid_until,
            });
        }
        Ok(KeySet { keys: checked })
    }

    /// The key set of its published JSON, `{"keys": [PublishedKey, ...]}`.
    ///
    /// # Errors
    ///
    /// [`ReceiptError::KeySet`] when the text is not that, or a key is refused as by
    /// [`KeySet::new`].
    pub fn from_json(json: &[u8]) -> Result<Self, ReceiptError> {
        let published: PublishedKeys =
            depth::from_slice(json).map_err(|error| ReceiptError::KeySet(error.to_string()))?;
        Self::new(published.keys)
    }

    /// The published JSON of this key set.
    #[must_use]
    pub fn to_json(&self) -> String {
        let published = PublishedKeys {
            keys: self.keys.iter().map(|key| key.published.clone()).collect(),
        };
        infallible(
            serde_json::to_string_pretty(&published),
            "published keys serialize to strings",
        )
    }

    /// Checks a receipt's text: read exactly (unknown or duplicate members refused), exactly
    /// the RFC 8785 canonical bytes [`SignedReceipt::to_json`] writes (a pretty-printed,
    /// reordered or differently escaped copy is refused, though it would mean the same),
    /// signed by the key it names, redeemed while that key signed. Returns what it says.
    ///
    /// # Errors
    ///
    /// [`ReceiptError`] for a receipt that is malformed, not in its canonical bytes, of
    /// another version, names a key this set does not hold or one that did not sign at its
    /// time, or whose signature does not verify.
    ///
    /// A receipt of [`RECEIPT_DOMAIN`] must also meet the rule it names: as many different
    /// approvers as it asked for, all signed where it asked for signatures. A receipt
    /// carrying passkey assertions is refused here ([`ReceiptError::ApproverKeysNeeded`]):
    /// `KeySet::verify_with_approvers` (feature `passkeys`) checks each against the published
    /// approver keys.
    pub fn verify(&self, receipt_json: &[u8]) -> Result<ApprovalReceipt, ReceiptError> {
        let signed = self.verify_service(receipt_json)?;
        if signed
            .receipt
            .approvals
            .iter()
            .any(ReceiptApproval::is_signed)
        {
            return Err(ReceiptError::ApproverKeysNeeded);
        }
        check_rule(&signed.receipt, &[])?;
        Ok(signed.receipt)
    }

    /// The receipt of `receipt_json`, read exactly, in its canonical bytes, signed by the
    /// service key it names within its dates.
    pub(crate) fn verify_service(
        &self,
        receipt_json: &[u8],
    ) -> Result<SignedReceipt, ReceiptError> {
        let signed: SignedReceipt = depth::from_slice(receipt_json)
            .map_err(|error| ReceiptError::Malformed(error.to_string()))?;
        if signed.to_json().as_bytes() != receipt_json {
            return Err(ReceiptError::NotCanonical);
        }
        self.verify_signed(&signed)?;
        Ok(signed)
    }

    /// Checks `signature` (128 lowercase hex) of `bytes` by the key `key_id`, made at `at`:
    /// the key published, valid then, the signature strict Ed25519.
    pub(crate) fn verify_bytes(
        &self,
        key_id: &str,
        bytes: &[u8],
        signature: &str,
        at: OffsetDateTime,
    ) -> Result<(), ReceiptError> {
        let key = self
            .keys
            .iter()
            .find(|key| key.published.key_id == key_id)
            .ok_or_else(|| ReceiptError::UnknownKey(key_id.to_owned()))?;
        let signature: [u8; 64] = lowercase_hex(signature)
            .and_then(|bytes| bytes.try_into().ok())
            .ok_or(ReceiptError::BadSignature)?;
        key.verifying_key
            .verify_strict(bytes, &Signature::from_bytes(&signature))
            .map_err(|_| ReceiptError::BadSignature)?;
        if at < key.valid_from || key.valid_until.is_some_and(|until| at >= until) {
            return Err(ReceiptError::KeyNotValid {
                key_id: key_id.to_owned(),
            });
        }
        Ok(())
    }

    /// Checks a receipt already read (see [`KeySet::verify`]).
    ///
    /// # Errors
    ///
    /// As [`KeySet::verify`].
    pub fn verify_signed(&self, signed: &SignedReceipt) -> Result<(), ReceiptError> {
        let receipt = &signed.receipt;
        match receipt.domain.as_str() {
            RECEIPT_DOMAIN => check_v2_shape(receipt)?,
            RECEIPT_DOMAIN_V1 => check_v1_shape(receipt)?,
            _ => return Err(ReceiptError::OtherVersion),
        }
        let key = self
            .keys
            .iter()
            .find(|key| key.published.key_id == receipt.key_id)
            .ok_or_else(|| ReceiptError::UnknownKey(receipt.key_id.clone()))?;
        let signature: [u8; 64] = lowercase_hex(&signed.signature)
            .and_then(|bytes| bytes.try_into().ok())
            .ok_or(ReceiptError::BadSignature)?;
        key.verifying_key
            .verify_strict(&signed_bytes(receipt), &Signature::from_bytes(&signature))
            .map_err(|_| ReceiptError::BadSignature)?;
        // Checked after the signature: only a signed time says when the key was used.
        let redeemed_at = OffsetDateTime::parse(&receipt.redeemed_at, &Rfc3339)
            .map_err(|error| ReceiptError::Malformed(error.to_string()))?;
        let before = redeemed_at < key.valid_from;
        let after = key.valid_until.is_some_and(|until| redeemed_at >= until);
        if before || after {
            return Err(ReceiptError::KeyNotValid {
                key_id: receipt.key_id.clone(),
            });
        }
        check_times(receipt)
    }
}

/// A receipt's times in the order a redemption has them: each approval made before its own
/// expiry and no later than the redemption, the redemption before the receipt's expiry and
/// before every approval's. The service key can sign any times; the approvers' signatures
/// hold their approvals to the expiry they signed, even against the service. Each time is in
/// UTC and in the one spelling receipts are written in.
fn check_times(receipt: &ApprovalReceipt) -> Result<(), ReceiptError> {
    let out_of_order = |why: &'static str| Err(ReceiptError::TimesOutOfOrder(why));
    let redeemed = receipt_time(&receipt.redeemed_at)?;
    if redeemed >= receipt_time(&receipt.expires_at)? {
        return out_of_order("redeemed at or after the receipt's expiry");
    }
    for approval in &receipt.approvals {
        let approved = receipt_time(&approval.approved_at)?;
        if approved > redeemed {
            return out_of_order("an approval dated after the redemption");
        }
        if let Some(expires_at) = &approval.expires_at {
            let expires = receipt_time(expires_at)?;
            if approved >= expires {
                return out_of_order("an approval made at or after its own expiry");
            }
            if redeemed >= expires {
                return out_of_order("redeemed at or after an approval's expiry");
            }
        }
    }
    Ok(())
}

/// A time of a receipt: RFC 3339 in UTC, spelled as a receipt is written.
fn receipt_time(text: &str) -> Result<OffsetDateTime, ReceiptError> {
    let malformed = || ReceiptError::Malformed(format!("{text:?} is not a receipt's time"));
    let at = OffsetDateTime::parse(text, &Rfc3339).map_err(|_| malformed())?;
    if !at.offset().is_utc() || at.format(&Rfc3339).ok().as_deref() != Some(text) {
        return Err(malformed());
    }
    Ok(at)
}

/// A receipt of [`RECEIPT_DOMAIN`] names its rule and, for each approval, its expiry and
/// basis, with an assertion exactly when the basis is a passkey.
fn check_v2_shape(receipt: &ApprovalReceipt) -> Result<(), ReceiptError> {
    let malformed = |why: &str| Err(ReceiptError::Malformed(why.to_owned()));
    if receipt.approvals_required.is_none() || receipt.signatures_required.is_none() {
        return malformed("a receipt of this version names its rule");
    }
    for approval in &receipt.approvals {
        let Some(basis) = approval.basis else {
            return malformed("every approval names its basis");
        };
        if approval.expires_at.is_none() {
            return malformed("every approval names its expiry");
        }
        if (basis == BasisKind::Passkey) != approval.assertion.is_some() {
            return malformed("an assertion goes with a passkey approval, and only with one");
        }
    }
    Ok(())
}

/// A first-version receipt has none of the second version's members.
fn check_v1_shape(receipt: &ApprovalReceipt) -> Result<(), ReceiptError> {
    let v2_member = receipt.approvals_required.is_some()
        || receipt.signatures_required.is_some()
        || receipt.approvals.iter().any(|approval| {
            approval.expires_at.is_some()
                || approval.basis.is_some()
                || approval.assertion.is_some()
        });
    if v2_member {
        return Err(ReceiptError::Malformed(
            "a first-version receipt with a later version's members".into(),
        ));
    }
    Ok(())
}

/// Whether a verified receipt meets the rule it names: as many different approvers as it
/// asked for, each approval signed (by a passkey verified, one of `signed`) where it asked
/// for signatures. A first-version receipt names no rule: nothing to check.
pub(crate) fn check_rule(receipt: &ApprovalReceipt, signed: &[&str]) -> Result<(), ReceiptError> {
    let (Some(required), Some(signatures)) =
        (receipt.approvals_required, receipt.signatures_required)
    else {
        return Ok(());
    };
    let mut counted: Vec<&str> = receipt
        .approvals
        .iter()
        .map(|approval| approval.approver.as_str())
        .filter(|approver| !signatures || signed.contains(approver))
        .collect();
    counted.sort_unstable();
    counted.dedup();
    let counted = u32::try_from(counted.len()).unwrap_or(u32::MAX);
    if counted < required.max(1) {
        return Err(ReceiptError::RuleNotMet {
            required,
            counted,
            signed_only: signatures,
        });
    }
    Ok(())
}

impl ApprovalReceipt {
    /// Checks that this receipt covers the call of `principal` with these `arguments` (the
    /// model's call, as JSON): recomputes its request digest from them and the revisions the
    /// receipt names. A receipt moved to another call, principal or tool does not match.
    ///
    /// # Errors
    ///
    /// [`ReceiptError::KeyedRequestDigest`] when the digest is HMAC-SHA256 (it needs the
    /// application's digest key); [`ReceiptError::Malformed`] for arguments that are not
    /// I-JSON; [`ReceiptError::OtherCall`] when the digest differs.
    pub fn check_call(&self, principal: &Principal, arguments: &[u8]) -> Result<(), ReceiptError> {
        if self.request_digest != DigestAlgorithm::Sha256 {
            return Err(ReceiptError::KeyedRequestDigest);
        }
        let canonical_arguments = canonical::canonicalize(arguments)
            .map_err(|error| ReceiptError::Malformed(error.to_string()))?;
        let revisions = RequestRevisions {
            effect: &self.revisions.effect,
            input: &self.revisions.input,
            output: &self.revisions.output,
        };
        let recomputed =
            plain_request_digest(principal, &self.tool, &revisions, &canonical_arguments);
        if recomputed != self.request_sha256 {
            return Err(ReceiptError::OtherCall);
        }
        Ok(())
    }

    /// The approval statement `approval` (one of this receipt's) signed: this receipt's
    /// approval, principal, tool, request, preview and edits, the decision `approve`, the
    /// approver and their approval's expiry.
    #[must_use]
    pub fn statement_of(&self, approval: &ReceiptApproval) -> ApprovalStatement {
        ApprovalStatement::new(
            self.approval_id.clone(),
            self.principal_ref.clone(),
            self.tool.clone(),
            self.request_sha256.clone(),
            self.preview_sha256.clone(),
            self.edited_arguments_sha256.clone(),
            Decision::Approve,
            approval.approver.clone(),
            approval.expires_at.clone().unwrap_or_default(),
        )
    }

    /// The receipt's `domain` ([`RECEIPT_DOMAIN`] for any that verifies).
    #[must_use]
    pub fn domain(&self) -> &str {
        &self.domain
    }
}

/// Lowercase hex only: an uppercase digit would spell the same bytes another way, and a
/// receipt has one spelling.
fn lowercase_hex(text: &str) -> Option<Vec<u8>> {
    let lowercase = text
        .bytes()
        .all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'));
    if !lowercase {
        return None;
    }
    hex::decode(text).ok()
}

/// Why a receipt, or a key set, was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReceiptError {
    /// The text is not a receipt: not JSON, a member missing, unknown or given twice, a time
    /// not RFC 3339.
    #[error("not a well-formed receipt: {0}")]
    Malformed(String),
    /// The text is a receipt, but not in the canonical bytes that were signed (pretty-printed,
    /// members reordered, characters escaped otherwise, anything around it): only those bytes
    /// are accepted.
    #[error("the receipt is not in its canonical (RFC 8785) bytes")]
    NotCanonical,
    /// A receipt of another version or kind.
    #[error("the receipt is of another version")]
    OtherVersion,
    /// The key set holds no key of that id.
    #[error("no published key has the id {0:?}")]
    UnknownKey(String),
    /// The receipt was redeemed outside the dates its key signs between (or, when signing,
    /// the key does not sign now).
    #[error("key {key_id:?} does not sign at the receipt's time")]
    KeyNotValid {
        /// The key.
        key_id: String,
    },
    /// The signature is not the named key's over this receipt.
    #[error("the signature does not verify")]
    BadSignature,
    /// The request digest is keyed: it cannot be recomputed without the application's key.
    #[error("the request digest is HMAC-SHA256: recomputing it needs the digest key")]
    KeyedRequestDigest,
    /// The receipt is for another call: its request digest is not this call's.
    #[error("the receipt does not cover this call")]
    OtherCall,
    /// A published key set was refused.
    #[error("a published key set was refused: {0}")]
    KeySet(String),
    /// The receipt carries passkey assertions: verifying it needs the published approver
    /// keys too.
    #[error("the receipt's approvals are signed by passkeys: verify it with the approver keys")]
    ApproverKeysNeeded,
    /// The receipt's times are not in the order a redemption has them: an approval dated
    /// after the redemption or made after its own expiry, or a redemption after the
    /// receipt's or an approval's expiry.
    #[error("the receipt's times are out of order: {0}")]
    TimesOutOfOrder(&'static str),
    /// The approvals do not meet the rule the receipt names.
    #[error(
        "the rule asks for {required} different approvers{}; {counted} counted",
        if *signed_only { " with signed approvals" } else { "" }
    )]
    RuleNotMet {
        /// How many the rule asked for.
        required: u32,
        /// How many different approvers counted.
        counted: u32,
        /// Whether only signed approvals counted.
        signed_only: bool,
    },
    /// A signed approval's approver, or the credential that signed, is not in the published
    /// approver keys, or the credential was not valid when the approval was given.
    #[error("approver {approver:?}: {why}")]
    UnknownApprover {
        /// The approver.
        approver: String,
        /// What is missing.
        why: String,
    },
    /// A signed approval's assertion does not verify against the statement the receipt
    /// makes for it.
    #[error("approver {approver:?}'s assertion does not verify: {why}")]
    BadAssertion {
        /// The approver.
        approver: String,
        /// Which check refused it.
        why: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(1_796_000_000 + seconds).unwrap()
    }

    fn facts() -> ReceiptFacts {
        ReceiptFacts {
            approval_id: "apr_1".into(),
            approvals: ["alice", "bob"]
                .into_iter()
                .zip([at(10), at(20)])
                .map(|(approver, approved_at)| ApprovalFact {
                    approver: approver.into(),
                    approved_at,
                    expires_at: at(600),
                    basis: ApprovalBasis::Service,
                })
                .collect(),
            approvals_required: 2,
            signatures_required: false,
            principal_ref: "ab".repeat(32),
            tool: "issue_refund".into(),
            operation_id: "refund:ORDER-7".into(),
            request_sha256: "cd".repeat(32),
            request_digest: DigestAlgorithm::Sha256,
            revisions: ReceiptRevisions {
                effect: "e".into(),
                input: "i".into(),
                output: "o".into(),
            },
            preview_sha256: "ef".repeat(32),
            expires_at: at(600),
            redeemed_at: at(30),
            edited_arguments: None,
            earlier_run: None,
            required_by: Vec::new(),
        }
    }

    #[test]
    fn a_signer_refuses_a_time_outside_its_dates() {
        let signer = ReceiptSigner::new("k1", [1; 32], at(0)).valid_until(at(30));
        let error = signer.sign(&facts()).unwrap_err();
        assert!(matches!(error, ReceiptError::KeyNotValid { .. }));
        let early = ReceiptSigner::new("k1", [1; 32], at(31));
        assert!(early.sign(&facts()).is_err());
    }

    /// `facts()` changed by `change`, signed and verified with its published key.
    fn verified_with(change: impl FnOnce(&mut ReceiptFacts)) -> Result<(), ReceiptError> {
        let signer = ReceiptSigner::new("k1", [1; 32], at(0));
        let keys = KeySet::new([signer.published_key()]).unwrap();
        let mut facts = facts();
        change(&mut facts);
        let signed = signer.sign(&facts).unwrap();
        keys.verify(signed.to_json().as_bytes()).map(drop)
    }

    #[test]
    fn a_receipt_redeemed_after_its_approvals_expired_is_refused() {
        assert_eq!(verified_with(|_| {}), Ok(()));
        let refused = verified_with(|facts| {
            // An hour after both approvals lapsed, within the grant's own (longer) expiry.
            facts.redeemed_at = at(600 + 3600);
            facts.expires_at = at(7200);
        });
        assert!(
            matches!(refused, Err(ReceiptError::TimesOutOfOrder(why)) if why.contains("an approval's expiry")),
            "{refused:?}"
        );
    }

    #[test]
    fn a_receipt_whose_approval_is_dated_after_its_redemption_is_refused() {
        let refused = verified_with(|facts| facts.approvals[1].approved_at = at(31));
        assert!(
            matches!(refused, Err(ReceiptError::TimesOutOfOrder(why)) if why.contains("after the redemption")),
            "{refused:?}"
        );
    }

    #[test]
    fn a_receipt_redeemed_after_its_own_expiry_is_refused() {
        let refused = verified_with(|facts| facts.expires_at = at(30));
        assert!(
            matches!(refused, Err(ReceiptError::TimesOutOfOrder(why)) if why.contains("receipt's expiry")),
            "{refused:?}"
        );
    }

    #[test]
    fn an_approval_made_after_its_own_expiry_is_refused() {
        let refused = verified_with(|facts| facts.approvals[0].expires_at = at(5));
        assert!(
            matches!(refused, Err(ReceiptError::TimesOutOfOrder(_))),
            "{refused:?}"
        );
    }

    #[test]
    fn a_receipts_time_in_another_spelling_is_refused() {
        let signer = ReceiptSigner::new("k1", [1; 32], at(0));
        let keys = KeySet::new([signer.published_key()]).unwrap();
        let mut signed = signer.sign(&facts()).unwrap();
        signed.receipt.expires_at = signed.receipt.expires_at.replace('Z', "+00:00");
        signed.signature = hex::encode(
            signer
                .signing_key
                .sign(&signed_bytes(&signed.receipt))
                .to_bytes(),
        );
        assert!(matches!(
            keys.verify(signed.to_json().as_bytes()),
            Err(ReceiptError::Malformed(_))
        ));
    }

    #[test]
    fn an_uppercase_signature_is_refused() {
        let signer = ReceiptSigner::new("k1", [1; 32], at(0));
        let keys = KeySet::new([signer.published_key()]).unwrap();
        let mut signed = signer.sign(&facts()).unwrap();
        keys.verify_signed(&signed).unwrap();
        signed.signature = signed.signature.to_uppercase();
        assert_eq!(keys.verify_signed(&signed), Err(ReceiptError::BadSignature));
    }

    #[test]
    fn a_key_set_refuses_a_key_given_twice_and_a_bad_point() {
        let signer = ReceiptSigner::new("k1", [1; 32], at(0));
        let twice = KeySet::new([signer.published_key(), signer.published_key()]);
        assert!(matches!(twice, Err(ReceiptError::KeySet(_))));
        let mut bad = signer.published_key();
        bad.public_key = "0".repeat(63) + "1";
        assert!(matches!(KeySet::new([bad]), Err(ReceiptError::KeySet(_))));
        let round_trip = KeySet::new([signer.published_key()]).unwrap();
        assert_eq!(
            KeySet::from_json(round_trip.to_json().as_bytes()).unwrap(),
            round_trip
        );
    }
}
