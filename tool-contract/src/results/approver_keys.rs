//! The approver keys an auditor holds: the relying party, and each enrolled approver's
//! passkeys' public keys with the dates they sign between. With the service's [`KeySet`],
//! the two published files check a receipt's every signature offline.

use serde::{Deserialize, Serialize};

use super::assertion::RelyingParty;
use super::receipt::ReceiptError;
use crate::json::depth;
use crate::json::encoding::infallible;

/// The published approver key set: `{"relying_party": …, "approvers": [...]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApproverKeys {
    /// The relying party every assertion was made for: its RP ID and origins.
    pub relying_party: RelyingParty,
    /// Each approver, by id.
    pub approvers: Vec<PublishedApprover>,
}

/// One approver as published: their id, name, and credentials.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PublishedApprover {
    /// The id receipts name them by.
    pub approver_id: String,
    /// What they are called.
    pub display_name: String,
    /// Their passkeys' public keys.
    pub credentials: Vec<PublishedCredential>,
}

/// One passkey's public key as published.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PublishedCredential {
    /// The credential id (base64url, unpadded).
    pub credential_id: String,
    /// The public key, a JWK (RFC 7517): `EC` P-256 or P-384, or `RSA`, with its `alg`.
    pub public_key: serde_json::Value,
    /// Whether the authenticator said it may be backed up or synced.
    pub backup_eligible: bool,
    /// When it was enrolled (RFC 3339): it signs nothing before.
    pub valid_from: String,
    /// When it was revoked (RFC 3339), if it was: it signs nothing from then on.
    pub valid_until: Option<String>,
}

impl ApproverKeys {
    /// The key set of its published JSON.
    ///
    /// # Errors
    ///
    /// [`ReceiptError::KeySet`] when the text is not that.
    pub fn from_json(json: &[u8]) -> Result<Self, ReceiptError> {
        depth::from_slice(json).map_err(|error| ReceiptError::KeySet(error.to_string()))
    }

    /// Its published JSON.
    #[must_use]
    pub fn to_json(&self) -> String {
        infallible(
            serde_json::to_string_pretty(self),
            "published keys serialize to strings",
        )
    }

    /// The credential `credential_id` of `approver_id`, if published.
    #[must_use]
    pub fn credential(
        &self,
        approver_id: &str,
        credential_id: &str,
    ) -> Option<&PublishedCredential> {
        self.approvers
            .iter()
            .filter(|approver| approver.approver_id == approver_id)
            .flat_map(|approver| &approver.credentials)
            .find(|credential| credential.credential_id == credential_id)
    }
}

#[cfg(feature = "passkeys")]
mod checks {
    use time::OffsetDateTime;
    use time::format_description::well_known::Rfc3339;

    use super::ApproverKeys;
    use crate::results::assertion::PasskeyAssertion;
    use crate::results::assertion::{credential_of, verify_assertion};
    use crate::results::receipt::{ApprovalReceipt, KeySet, ReceiptError, check_rule};
    use crate::results::statement::ApprovalStatement;

    impl KeySet {
        /// Checks a receipt's text as [`KeySet::verify`] does, and each approval signed by a
        /// passkey against `approvers`: the approver and the credential published, the credential
        /// valid when the approval was given, and the assertion verified (`webauthn-rs-core`:
        /// RP ID, origin, user verification, signature) over the challenge of the approval
        /// statement the receipt makes for that approver (its approval, principal, tool, request,
        /// preview, edits, decision `approve`, approver and expiry). Then the rule: as many
        /// different approvers as it names, each signed where it asked for signatures.
        ///
        /// # Errors
        ///
        /// As [`KeySet::verify`], and [`ReceiptError::UnknownApprover`],
        /// [`ReceiptError::BadAssertion`] or [`ReceiptError::RuleNotMet`].
        #[cfg_attr(docsrs, doc(cfg(feature = "passkeys")))]
        pub fn verify_with_approvers(
            &self,
            receipt_json: &[u8],
            approvers: &ApproverKeys,
        ) -> Result<ApprovalReceipt, ReceiptError> {
            let signed = self.verify_service(receipt_json)?;
            let receipt = signed.receipt;
            let verified = signed_approvers(&receipt, approvers)?;
            let verified: Vec<&str> = verified.iter().map(String::as_str).collect();
            check_rule(&receipt, &verified)?;
            Ok(receipt)
        }
    }

    impl ApproverKeys {
        /// Checks one approval offline: `assertion`, by `approver_id`'s published
        /// credential, valid at `approved_at`, verifies (`webauthn-rs-core`: RP ID, origin,
        /// user verification, signature) over `statement`'s challenge.
        ///
        /// # Errors
        ///
        /// [`ReceiptError::UnknownApprover`] when the credential is not theirs or not valid
        /// then; [`ReceiptError::BadAssertion`] when the assertion does not verify;
        /// [`ReceiptError::KeySet`] for a relying party or dates that do not read.
        #[cfg_attr(docsrs, doc(cfg(feature = "passkeys")))]
        pub fn verify_assertion(
            &self,
            approver_id: &str,
            approved_at: OffsetDateTime,
            statement: &ApprovalStatement,
            assertion: &PasskeyAssertion,
        ) -> Result<(), ReceiptError> {
            let core = self
                .relying_party
                .core()
                .map_err(|error| ReceiptError::KeySet(error.to_string()))?;
            let unknown = |why: &str| ReceiptError::UnknownApprover {
                approver: approver_id.to_owned(),
                why: why.to_owned(),
            };
            let published = self
                .credential(approver_id, &assertion.credential_id)
                .ok_or_else(|| unknown("no published credential of theirs signed"))?;
            let time = |text: &str| {
                OffsetDateTime::parse(text, &Rfc3339)
                    .map_err(|_| ReceiptError::KeySet("a credential's dates".into()))
            };
            let from = time(&published.valid_from)?;
            let until = published.valid_until.as_deref().map(time).transpose()?;
            if approved_at < from || until.is_some_and(|until| approved_at >= until) {
                return Err(unknown(
                    "the credential did not sign at the approval's time",
                ));
            }
            let bad = |why: String| ReceiptError::BadAssertion {
                approver: approver_id.to_owned(),
                why,
            };
            let credential = credential_of(
                &published.credential_id,
                &published.public_key,
                published.backup_eligible,
            )
            .map_err(bad)?;
            verify_assertion(&core, &credential, &statement.challenge(), assertion).map_err(bad)?;
            Ok(())
        }
    }

    /// The approvers whose passkey approvals in `receipt` verify against `approvers`; the
    /// first that does not is the error.
    fn signed_approvers(
        receipt: &ApprovalReceipt,
        approvers: &ApproverKeys,
    ) -> Result<Vec<String>, ReceiptError> {
        let mut verified = Vec::new();
        for approval in &receipt.approvals {
            let Some(assertion) = &approval.assertion else {
                continue;
            };
            let approved_at = OffsetDateTime::parse(&approval.approved_at, &Rfc3339)
                .map_err(|_| ReceiptError::Malformed("an approval time".into()))?;
            approvers.verify_assertion(
                &approval.approver,
                approved_at,
                &receipt.statement_of(approval),
                assertion,
            )?;
            verified.push(approval.approver.clone());
        }
        Ok(verified)
    }
}
