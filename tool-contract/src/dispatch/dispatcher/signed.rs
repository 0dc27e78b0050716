//! Who approves: the approver directory, enrollment of their passkeys, and decisions each
//! signed by a passkey over the approval statement.

use std::time::Duration;

use serde_json::Value;
use tracing::info;

use super::{Dispatcher, Edit};
use crate::control::{
    ApprovalError, Approved, Approver, DirectoryChange, DirectoryWrite, EnrollError,
    PendingApproval, SignedDecisionRefusal, StoreError, later_by, rfc3339,
};
use crate::results::{
    ApprovalStatement, ApproverKeys, Decision, PublishedApprover, PublishedCredential,
    RelyingParty, edited_arguments_sha256,
};
use crate::vocabulary::Principal;

impl Dispatcher {
    /// Adds an approver to the directory every replica sharing the store reads, or changes
    /// one's name, tenants, tools and subject (their enrolled credentials stay).
    ///
    /// # Errors
    ///
    /// [`EnrollError::Registration`] for an approver without an id; [`EnrollError::Store`]
    /// when the store failed.
    pub async fn put_approver(&self, approver: Approver) -> Result<Approver, EnrollError> {
        self.write_directory(DirectoryChange::Put(approver)).await
    }

    /// Revokes one of an approver's credentials from now on: it signs no decision after.
    ///
    /// # Errors
    ///
    /// [`EnrollError::UnknownApprover`] when no approver has that id or the credential is not
    /// theirs; [`EnrollError::Store`] when the store failed.
    pub async fn revoke_credential(
        &self,
        approver_id: &str,
        credential_id: &str,
    ) -> Result<Approver, EnrollError> {
        self.write_directory(DirectoryChange::Revoke {
            approver_id: approver_id.to_owned(),
            credential_id: credential_id.to_owned(),
            at: rfc3339(self.now()),
        })
        .await
    }

    /// Ends every session `approver_id` has begun so far, on every replica over this store
    /// (their [`sign_outs`](Approver::sign_outs) moves on): the approvals console asks it when
    /// they sign out, and reads it on every request.
    ///
    /// # Errors
    ///
    /// [`EnrollError::UnknownApprover`] when no approver has that id; [`EnrollError::Store`]
    /// when the store failed.
    pub async fn end_sessions(&self, approver_id: &str) -> Result<Approver, EnrollError> {
        self.write_directory(DirectoryChange::SignOut {
            approver_id: approver_id.to_owned(),
        })
        .await
    }

    /// Every enrolled approver, by id.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    pub async fn approvers(&self) -> Result<Vec<Approver>, StoreError> {
        self.store.approvers(&self.row_seal).await
    }

    /// The approver `approver_id`, if enrolled.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    pub async fn approver(&self, approver_id: &str) -> Result<Option<Approver>, StoreError> {
        self.store.approver(approver_id, &self.row_seal).await
    }

    /// The approver keys to publish: the relying party and every enrolled approver's
    /// credentials with the dates they sign between (enrolled, revoked). With the receipt
    /// signer's published key, what an auditor needs to check receipts offline
    /// (`KeySet::verify_with_approvers`). `None` without a relying party.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    pub async fn published_approvers(&self) -> Result<Option<ApproverKeys>, StoreError> {
        let Some(relying_party) = self.relying_party() else {
            return Ok(None);
        };
        let approvers = self.approvers().await?.into_iter().map(published).collect();
        Ok(Some(ApproverKeys {
            relying_party: relying_party.clone(),
            approvers,
        }))
    }

    /// [`published_approvers`](Self::published_approvers) of `approver_ids` alone (those
    /// enrolled), each read by key: what checking a few receipts needs, however large the
    /// directory.
    #[cfg(feature = "console")]
    pub(crate) async fn published_approvers_named(
        &self,
        approver_ids: impl IntoIterator<Item = &str>,
    ) -> Result<Option<ApproverKeys>, StoreError> {
        let Some(relying_party) = self.relying_party() else {
            return Ok(None);
        };
        let mut approvers = Vec::new();
        for approver_id in approver_ids {
            if let Some(approver) = self.approver(approver_id).await? {
                approvers.push(published(approver));
            }
        }
        Ok(Some(ApproverKeys {
            relying_party: relying_party.clone(),
            approvers,
        }))
    }

    /// The relying party passkeys are checked for, if the dispatcher has one.
    #[must_use]
    pub fn relying_party(&self) -> Option<&RelyingParty> {
        #[cfg(feature = "passkeys")]
        return self.passkeys.as_ref().map(|passkeys| &passkeys.party);
        #[cfg(not(feature = "passkeys"))]
        None
    }

    pub(super) async fn write_directory(
        &self,
        change: DirectoryChange,
    ) -> Result<Approver, EnrollError> {
        let write = DirectoryWrite {
            change,
            seal: self.row_seal.clone(),
        };
        let written = self
            .store
            .write_directory(&write)
            .await
            .map_err(EnrollError::Store)??;
        info!(
            stage = "directory",
            approver_id = %written.approver_id,
            credentials = written.credentials.len(),
            "approver directory changed"
        );
        Ok(written)
    }

    /// The approval statement `approver_id` signs to decide the pending approval
    /// `approval_id`: its members taken from the pending approval as the store holds it, the
    /// edits (checked against the contract) by digest, and an expiry `lifetime` from now (at
    /// most the [statement lifetime](crate::dispatch::DispatcherBuilder::statement_lifetime)), in UTC.
    /// Its [`challenge`](ApprovalStatement::challenge) is what their authenticator signs.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::NotPending`] when nothing is pending under that id;
    /// [`ApprovalError::InvalidEdit`] for edits outside the contract, or with a rejection.
    pub async fn approval_statement(
        &self,
        approval_id: &str,
        approver_id: &str,
        decision: Decision,
        edited_arguments: Option<&Value>,
        lifetime: Duration,
    ) -> Result<ApprovalStatement, ApprovalError> {
        let pending = self.pending(approval_id).await?;
        let edit = self.statement_edit(&pending, decision, edited_arguments)?;
        let expires_at = later_by(self.now(), lifetime.min(self.statement_lifetime));
        Ok(statement_of(
            &pending,
            edit.as_ref(),
            decision,
            approver_id,
            &rfc3339(expires_at),
        ))
    }

    fn statement_edit(
        &self,
        pending: &PendingApproval,
        decision: Decision,
        edited_arguments: Option<&Value>,
    ) -> Result<Option<Edit>, ApprovalError> {
        match (decision, edited_arguments) {
            (_, None) => Ok(None),
            (Decision::Approve, Some(edited)) => self.checked_edit(pending, edited).map(Some),
            (_, Some(_)) => Err(ApprovalError::InvalidEdit(
                "a rejection carries no edits".into(),
            )),
        }
    }

    #[cfg_attr(not(feature = "passkeys"), allow(dead_code))]
    /// Whether `approver` may decide `pending` at all: its tenant and tool are theirs, and
    /// (separation of duties) the call is not their own.
    pub(crate) fn may_decide(
        &self,
        approver: &Approver,
        pending: &PendingApproval,
    ) -> Result<(), SignedDecisionRefusal> {
        if !approver.decides_for(&pending.tenant) {
            return Err(SignedDecisionRefusal::OtherTenant);
        }
        if !approver.decides_tool(&pending.preview.tool) {
            return Err(SignedDecisionRefusal::OtherTool);
        }
        if let Some(subject) = &approver.subject {
            let as_principal = Principal::new(pending.tenant.clone(), subject.clone());
            if self.keys.principal_ref(&as_principal) == pending.principal_ref {
                return Err(SignedDecisionRefusal::OwnCall);
            }
        }
        Ok(())
    }
}

/// The statement of `decision` on `pending` by `approver_id`, until `expires_at`.
fn statement_of(
    pending: &PendingApproval,
    edit: Option<&Edit>,
    decision: Decision,
    approver_id: &str,
    expires_at: &str,
) -> ApprovalStatement {
    ApprovalStatement::new(
        pending.approval_id.clone(),
        pending.principal_ref.clone(),
        pending.preview.tool.clone(),
        pending.request_sha256.clone(),
        pending.preview_sha256.clone(),
        edit.map(|edit| edited_arguments_sha256(&edit.arguments)),
        decision,
        approver_id,
        expires_at,
    )
}

/// What a signed decision came to.
// Returned once per decision and matched at once; boxing would only make that harder.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SignedDecision {
    /// An approval, recorded: the grant, or the pending approval with it counted.
    Approved(Approved),
    /// A rejection, recorded: the operation is refused from now on.
    Rejected,
}

#[cfg(feature = "passkeys")]
pub use ceremonies::{Enrollment, SigningRequest};

#[cfg(feature = "passkeys")]
mod ceremonies {
    use std::time::Duration;

    use serde_json::{Value, json};
    use time::OffsetDateTime;
    use time::format_description::well_known::Rfc3339;
    use tracing::{info, warn};
    use webauthn_rs_core::proto::{
        RegisterPublicKeyCredential, RegistrationState, UserVerificationPolicy,
    };

    use super::{Dispatcher, SignedDecision, later_by, rfc3339, statement_of};
    use crate::control::{
        ApprovalBasis, ApprovalError, Approver, DirectoryChange, EnrollError, EnrolledCredential,
        RejectionReason, SignCount, SignCountCheck, SignedDecisionRefusal, StoreError,
    };
    use crate::dispatch::dispatcher::Approving;
    use crate::results::Decision;
    use crate::results::assertion::{credential_of, public_key_jwk, verify_assertion};
    use crate::results::{ApprovalStatement, PasskeyAssertion};

    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    /// An enrollment under way: what the page passes to `navigator.credentials.create()`,
    /// and the state the server keeps until the authenticator answers.
    #[derive(Debug, Clone)]
    pub struct Enrollment {
        /// The approver enrolling.
        pub approver_id: String,
        /// The `CredentialCreationOptions` (JSON, members base64url) for
        /// `navigator.credentials.create()`: user verification required.
        pub options: Value,
        state: RegistrationState,
        /// The credentials the approver held when it began.
        holding: Vec<String>,
    }

    /// What an approver's authenticator is asked to sign: the statement, and the
    /// `CredentialRequestOptions` (JSON, members base64url) whose challenge is its digest, for
    /// `navigator.credentials.get()`: user verification required, this approver's
    /// credentials allowed.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct SigningRequest {
        /// The approval statement.
        pub statement: ApprovalStatement,
        /// The request options, challenge included.
        pub options: Value,
    }

    fn refused(refusal: SignedDecisionRefusal) -> ApprovalError {
        ApprovalError::Refused(refusal)
    }

    impl Dispatcher {
        fn relying_party_core(&self) -> Option<&webauthn_rs_core::WebauthnCore> {
            self.passkeys.as_ref().map(|passkeys| &passkeys.core)
        }

        /// Begins enrolling a passkey for `approver_id` (added first with
        /// [`put_approver`](Self::put_approver)): a WebAuthn registration ceremony with user
        /// verification required, whose options the approver's browser (or authenticator)
        /// answers; [`finish_enrollment`](Self::finish_enrollment) then checks the answer.
        ///
        /// # Errors
        ///
        /// [`EnrollError::UnknownApprover`] when no approver has that id;
        /// [`EnrollError::Registration`] without a relying party; [`EnrollError::Store`]
        /// when the store failed.
        pub async fn begin_enrollment(&self, approver_id: &str) -> Result<Enrollment, EnrollError> {
            let Some(core) = self.relying_party_core() else {
                return Err(EnrollError::Registration(
                    SignedDecisionRefusal::NoRelyingParty.to_string(),
                ));
            };
            let approver = self
                .approver(approver_id)
                .await
                .map_err(EnrollError::Store)?
                .ok_or(EnrollError::UnknownApprover)?;
            let exclude = approver
                .credentials
                .iter()
                .filter_map(|credential| URL_SAFE_NO_PAD.decode(&credential.credential_id).ok())
                .map(Into::into)
                .collect();
            let registration = |why: String| EnrollError::Registration(why);
            let builder = core
                .new_challenge_register_builder(
                    approver.approver_id.as_bytes(),
                    &approver.approver_id,
                    &approver.display_name,
                )
                .map_err(|error| registration(error.to_string()))?
                .user_verification_policy(UserVerificationPolicy::Required)
                .exclude_credentials(Some(exclude));
            let (options, state) = core
                .generate_challenge_register(builder)
                .map_err(|error| registration(error.to_string()))?;
            let options =
                serde_json::to_value(options).map_err(|error| registration(error.to_string()))?;
            let holding = approver
                .credentials
                .iter()
                .map(|credential| credential.credential_id.clone())
                .collect();
            Ok(Enrollment {
                approver_id: approver.approver_id,
                options,
                state,
                holding,
            })
        }

        /// Finishes an enrollment with the authenticator's answer: the `PublicKeyCredential`
        /// of `navigator.credentials.create()` in its JSON form. `webauthn-rs-core` checks it
        /// (challenge, origin, RP ID, user verification, algorithm); the credential is added
        /// to the approver in the directory, unless any approver holds it already.
        ///
        /// # Errors
        ///
        /// [`EnrollError::Registration`] when the answer does not verify;
        /// [`EnrollError::NotUnderWay`] when this enrollment was finished already (here or
        /// on another replica) or another enrollment of the approver's finished since it
        /// began: one ceremony enrols one credential, atomically;
        /// [`EnrollError::CredentialTaken`]; [`EnrollError::UnknownApprover`];
        /// [`EnrollError::Store`].
        pub async fn finish_enrollment(
            &self,
            enrollment: &Enrollment,
            credential_json: &[u8],
        ) -> Result<Approver, EnrollError> {
            let registration = |why: String| EnrollError::Registration(why);
            let Some(core) = self.relying_party_core() else {
                return Err(registration(
                    SignedDecisionRefusal::NoRelyingParty.to_string(),
                ));
            };
            let answer: RegisterPublicKeyCredential =
                crate::json::depth::from_slice(credential_json)
                    .map_err(|error| registration(format!("not a credential: {error}")))?;
            let credential = core
                .register_credential(&answer, &enrollment.state, None)
                .map_err(|error| registration(error.to_string()))?;
            let enrolled = EnrolledCredential {
                credential_id: URL_SAFE_NO_PAD.encode(credential.cred_id.as_ref()),
                public_key: public_key_jwk(&credential.cred).map_err(registration)?,
                backup_eligible: credential.backup_eligible,
                sign_count: credential.counter,
                enrolled_at: rfc3339(self.now()),
                revoked_at: None,
                counter_regressions: Vec::new(),
            };
            let approver = self
                .write_directory(DirectoryChange::Enroll {
                    approver_id: enrollment.approver_id.clone(),
                    credential: enrolled,
                    holding: enrollment.holding.clone(),
                })
                .await?;
            info!(stage = "directory", approver_id = %approver.approver_id, "passkey enrolled");
            Ok(approver)
        }

        /// The signing request of `statement` (from
        /// [`approval_statement`](Self::approval_statement)) for its approver's passkeys.
        ///
        /// # Errors
        ///
        /// [`ApprovalError::Refused`] without a relying party, or when the approver is not
        /// enrolled or has no credential; [`ApprovalError::Store`].
        pub async fn signing_request(
            &self,
            statement: &ApprovalStatement,
        ) -> Result<SigningRequest, ApprovalError> {
            let options = self
                .passkey_request(&statement.approver_id, &statement.challenge())
                .await?;
            Ok(SigningRequest {
                statement: statement.clone(),
                options,
            })
        }

        /// The `CredentialRequestOptions` asking `approver_id`'s passkeys (not revoked) to sign
        /// `challenge`, with user verification required.
        pub(crate) async fn passkey_request(
            &self,
            approver_id: &str,
            challenge: &[u8; 32],
        ) -> Result<Value, ApprovalError> {
            let Some(party) = self.relying_party() else {
                return Err(refused(SignedDecisionRefusal::NoRelyingParty));
            };
            let approver = self
                .approver(approver_id)
                .await
                .map_err(ApprovalError::Store)?
                .ok_or(refused(SignedDecisionRefusal::UnknownApprover))?;
            let allow: Vec<&str> = approver
                .credentials
                .iter()
                .filter(|credential| credential.revoked_at.is_none())
                .map(|credential| credential.credential_id.as_str())
                .collect();
            if allow.is_empty() {
                return Err(refused(SignedDecisionRefusal::UnknownCredential));
            }
            Ok(request_options(&party.id, challenge, &allow))
        }

        /// [`passkey_request`](Self::passkey_request), or for an id nobody enrolled, or
        /// without a passkey, the same options naming decoy credentials: a sign-in page
        /// answers every id alike, so that nobody lists the enrolled ones by asking.
        ///
        /// The decoys take the shape of an enrolled approver's passkeys (how many, and each
        /// id's length), the approver chosen by the asked id under `decoy`, a keyed function
        /// of its input: the same id always gets the same decoys, like a real approver, and
        /// what an unknown id is offered looks like what some enrolled one is.
        #[cfg_attr(not(feature = "console"), allow(dead_code))]
        pub(crate) async fn passkey_request_or_decoy(
            &self,
            approver_id: &str,
            challenge: &[u8; 32],
            decoy: impl Fn(&[u8]) -> [u8; 32],
        ) -> Result<Value, ApprovalError> {
            match self.passkey_request(approver_id, challenge).await {
                Err(ApprovalError::Refused(
                    SignedDecisionRefusal::UnknownApprover
                    | SignedDecisionRefusal::UnknownCredential,
                )) => {
                    let Some(party) = self.relying_party() else {
                        return Err(refused(SignedDecisionRefusal::NoRelyingParty));
                    };
                    let shapes = self.passkey_shapes().await.map_err(ApprovalError::Store)?;
                    let seed = decoy(approver_id.to_lowercase().as_bytes());
                    let pick = u64::from_be_bytes(seed[..8].try_into().unwrap_or_default());
                    let shape = usize::try_from(pick % shapes.len().max(1) as u64)
                        .ok()
                        .and_then(|index| shapes.get(index))
                        .map_or(&[TYPICAL_CREDENTIAL_ID][..], Vec::as_slice);
                    let ids: Vec<String> = shape
                        .iter()
                        .enumerate()
                        .map(|(index, length)| {
                            URL_SAFE_NO_PAD.encode(decoy_id(&decoy, &seed, index, *length))
                        })
                        .collect();
                    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
                    Ok(request_options(&party.id, challenge, &ids))
                }
                answer => answer,
            }
        }

        /// Each enrolled approver's passkeys as a sign-in lists them: the length in bytes of
        /// each credential id not revoked, in order; approvers without one left out.
        async fn passkey_shapes(&self) -> Result<Vec<Vec<usize>>, StoreError> {
            Ok(self
                .approvers()
                .await?
                .iter()
                .map(|approver| {
                    approver
                        .credentials
                        .iter()
                        .filter(|credential| credential.revoked_at.is_none())
                        .filter_map(|credential| {
                            URL_SAFE_NO_PAD.decode(&credential.credential_id).ok()
                        })
                        .map(|id| id.len())
                        .collect::<Vec<_>>()
                })
                .filter(|shape| !shape.is_empty())
                .collect())
        }
    }

    /// The length of a credential id where no approver has one yet: what platform and
    /// software authenticators commonly make.
    const TYPICAL_CREDENTIAL_ID: usize = 16;

    /// The `index`th decoy id of `seed`, `length` bytes of `decoy` (a keyed function) run on
    /// the seed, the index and a counter.
    fn decoy_id(
        decoy: &impl Fn(&[u8]) -> [u8; 32],
        seed: &[u8; 32],
        index: usize,
        length: usize,
    ) -> Vec<u8> {
        let mut id = Vec::with_capacity(length);
        let mut block = 0u64;
        while id.len() < length {
            let mut input = seed.to_vec();
            input.extend_from_slice(&(index as u64).to_be_bytes());
            input.extend_from_slice(&block.to_be_bytes());
            let bytes = decoy(&input);
            let wanted = (length - id.len()).min(bytes.len());
            id.extend_from_slice(&bytes[..wanted]);
            block += 1;
        }
        id
    }

    /// The `CredentialRequestOptions` asking one of `credential_ids` to sign `challenge` for
    /// the RP ID `rp_id`, with user verification required.
    fn request_options(rp_id: &str, challenge: &[u8; 32], credential_ids: &[&str]) -> Value {
        let allow: Vec<Value> = credential_ids
            .iter()
            .map(|id| json!({"type": "public-key", "id": id}))
            .collect();
        json!({
            "publicKey": {
                "challenge": URL_SAFE_NO_PAD.encode(challenge),
                "timeout": 300_000,
                "rpId": rp_id,
                "allowCredentials": allow,
                "userVerification": "required",
            }
        })
    }

    impl Dispatcher {
        /// Checks that `approver_id` signed `challenge` with one of their passkeys: as a
        /// signed decision is checked (credential theirs and not revoked, the assertion
        /// verified by `webauthn-rs-core`, the counter rising across replicas), for a page's
        /// sign-in. The approver, and the id of the credential that signed.
        #[cfg_attr(not(feature = "console"), allow(dead_code))]
        pub(crate) async fn sign_in(
            &self,
            approver_id: &str,
            challenge: &[u8; 32],
            credential_json: &[u8],
        ) -> Result<(Approver, String), ApprovalError> {
            let approver = self
                .approver(approver_id)
                .await
                .map_err(ApprovalError::Store)?
                .ok_or(refused(SignedDecisionRefusal::UnknownApprover))?;
            let assertion = self
                .verified_passkey(&approver, challenge, credential_json)
                .await?;
            info!(
                stage = "console",
                approver_id = %approver.approver_id,
                credential_id = %assertion.credential_id,
                "signed in with a passkey"
            );
            Ok((approver, assertion.credential_id))
        }

        /// The assertion in `credential_json`, once it is shown to be `approver`'s over
        /// `challenge`: one of their credentials, not revoked, verified by
        /// `webauthn-rs-core`, and its signature counter risen (atomically across replicas).
        async fn verified_passkey(
            &self,
            approver: &Approver,
            challenge: &[u8; 32],
            credential_json: &[u8],
        ) -> Result<PasskeyAssertion, ApprovalError> {
            let Some(core) = self.relying_party_core() else {
                return Err(refused(SignedDecisionRefusal::NoRelyingParty));
            };
            let now = self.now();
            let assertion = PasskeyAssertion::from_credential_json(credential_json)
                .map_err(|why| refused(SignedDecisionRefusal::Assertion(why)))?;
            let enrolled = approver
                .credential(&assertion.credential_id)
                .ok_or(refused(SignedDecisionRefusal::UnknownCredential))?;
            let revoked = enrolled
                .revoked_at
                .as_deref()
                .is_some_and(|at| OffsetDateTime::parse(at, &Rfc3339).map_or(true, |at| at <= now));
            if revoked {
                return Err(refused(SignedDecisionRefusal::RevokedCredential));
            }
            let credential = credential_of(
                &enrolled.credential_id,
                &enrolled.public_key,
                enrolled.backup_eligible,
            )
            .map_err(|why| refused(SignedDecisionRefusal::Assertion(why)))?;
            let facts = verify_assertion(core, &credential, challenge, &assertion)
                .map_err(|why| refused(SignedDecisionRefusal::Assertion(why)))?;
            let count = SignCount {
                approver_id: approver.approver_id.clone(),
                credential_id: assertion.credential_id.clone(),
                presented: facts.counter,
                now,
                seal: self.row_seal.clone(),
            };
            match self.store.sign_count(&count).await {
                Err(error) => return Err(self.approval_store_failed(error)),
                Ok(SignCountCheck::Accepted) => {}
                Ok(SignCountCheck::Unknown) => {
                    return Err(refused(SignedDecisionRefusal::UnknownCredential));
                }
                Ok(SignCountCheck::Regressed { stored }) => {
                    warn!(
                        stage = "approval",
                        approver_id = %approver.approver_id,
                        credential_id = %assertion.credential_id,
                        stored,
                        presented = facts.counter,
                        "a passkey's signature counter went back; the decision was refused"
                    );
                    return Err(refused(SignedDecisionRefusal::CounterRegressed {
                        stored,
                        presented: facts.counter,
                    }));
                }
            }
            Ok(assertion)
        }

        /// Records a decision its approver signed with a passkey: `credential_json` is the
        /// `PublicKeyCredential` of `navigator.credentials.get()` (JSON form) over
        /// `statement`'s challenge; `edited_arguments` the edits the statement names, if any.
        ///
        /// The statement is made again from the pending approval as the store holds it, and
        /// must be this one member for member (an assertion for another approval, edit or
        /// decision is refused); the approver must be enrolled for the principal's tenant and
        /// the tool, and (when the directory knows them as a principal) not be the one who
        /// asked; the credential must be theirs and not revoked; `webauthn-rs-core` checks
        /// the assertion (challenge, origin, RP ID, user verification, signature); and the
        /// signature counter must rise, atomically across replicas (a regression is refused
        /// and recorded on the credential). Then the decision is recorded as an approval
        /// signed by its passkey (counted once per approver id), or a rejection.
        ///
        /// # Errors
        ///
        /// [`ApprovalError::Refused`] naming the check that refused it; otherwise as
        /// [`approve`](Self::approve) and [`reject`](Self::reject).
        pub async fn decide_signed(
            &self,
            statement: &ApprovalStatement,
            edited_arguments: Option<&Value>,
            credential_json: &[u8],
        ) -> Result<SignedDecision, ApprovalError> {
            self.decide_signed_within(
                statement,
                edited_arguments,
                credential_json,
                self.statement_lifetime,
            )
            .await
        }

        /// [`decide_signed`](Self::decide_signed), with statements running at most
        /// `lifetime` (the console's own) and the dispatcher's statement lifetime.
        pub(crate) async fn decide_signed_within(
            &self,
            statement: &ApprovalStatement,
            edited_arguments: Option<&Value>,
            credential_json: &[u8],
            lifetime: Duration,
        ) -> Result<SignedDecision, ApprovalError> {
            if self.relying_party_core().is_none() {
                return Err(refused(SignedDecisionRefusal::NoRelyingParty));
            }
            let pending = self.pending(&statement.approval_id).await?;
            let edit = self.statement_edit(&pending, statement.decision, edited_arguments)?;
            let expected = statement_of(
                &pending,
                edit.as_ref(),
                statement.decision,
                &statement.approver_id,
                &statement.expires_at,
            );
            if let Some(member) = differing_member(statement, &expected) {
                return Err(refused(SignedDecisionRefusal::OtherStatement(member)));
            }
            let now = self.now();
            let lifetime = lifetime.min(self.statement_lifetime);
            let expires_at = statement_expiry(&expected.expires_at, now, lifetime)?;
            let approver = self
                .approver(&expected.approver_id)
                .await
                .map_err(ApprovalError::Store)?
                .ok_or(refused(SignedDecisionRefusal::UnknownApprover))?;
            self.may_decide(&approver, &pending).map_err(refused)?;
            let assertion = self
                .verified_passkey(&approver, &expected.challenge(), credential_json)
                .await?;
            info!(
                stage = "approval",
                approver_id = %approver.approver_id,
                credential_id = %assertion.credential_id,
                decision = statement.decision.as_str(),
                "signed decision verified"
            );
            match rejection_reason(statement.decision) {
                None => {
                    // An enrolled approver is the person the directory's subject says, or
                    // nobody the store can tell from the caller.
                    let approving = Approving {
                        person_ref: approver
                            .subject
                            .as_deref()
                            .and_then(|subject| self.person_ref(&pending.tenant, subject)),
                        name: approver.approver_id,
                        basis: ApprovalBasis::Passkey(assertion),
                    };
                    let approved = self
                        .approve_as(
                            &pending.approval_id,
                            &pending.preview_sha256,
                            approving,
                            expires_at,
                            edit,
                        )
                        .await?;
                    Ok(SignedDecision::Approved(approved))
                }
                Some(reason) => {
                    self.reject_as(&pending.approval_id, reason).await?;
                    Ok(SignedDecision::Rejected)
                }
            }
        }
    }

    /// How far a replica's clock may run behind the one that made a statement.
    const CLOCK_SKEW: Duration = Duration::from_secs(60);

    /// The expiry a statement names, when the service could have set it: in UTC, in the one
    /// spelling statements are made in (the receipt spells it so, and its verifier recomputes
    /// the challenge from that spelling), after `now`, and no further ahead than `lifetime`
    /// (and the clock skew between replicas).
    fn statement_expiry(
        expires_at: &str,
        now: OffsetDateTime,
        lifetime: Duration,
    ) -> Result<OffsetDateTime, ApprovalError> {
        let other = || refused(SignedDecisionRefusal::OtherStatement("expires_at"));
        let parsed = OffsetDateTime::parse(expires_at, &Rfc3339).map_err(|_| other())?;
        if !parsed.offset().is_utc() || rfc3339(parsed) != expires_at {
            return Err(other());
        }
        if parsed <= now {
            return Err(ApprovalError::Expired);
        }
        if parsed > later_by(now, lifetime.saturating_add(CLOCK_SKEW)) {
            return Err(other());
        }
        Ok(parsed)
    }

    /// The first member in which `given` differs from `expected`, by its name.
    fn differing_member(
        given: &ApprovalStatement,
        expected: &ApprovalStatement,
    ) -> Option<&'static str> {
        let members: [(&'static str, bool); 10] = [
            ("domain", given.domain == expected.domain),
            ("approval_id", given.approval_id == expected.approval_id),
            (
                "principal_ref",
                given.principal_ref == expected.principal_ref,
            ),
            ("tool", given.tool == expected.tool),
            (
                "request_sha256",
                given.request_sha256 == expected.request_sha256,
            ),
            (
                "preview_sha256",
                given.preview_sha256 == expected.preview_sha256,
            ),
            (
                "edited_arguments_sha256",
                given.edited_arguments_sha256 == expected.edited_arguments_sha256,
            ),
            ("decision", given.decision == expected.decision),
            ("approver_id", given.approver_id == expected.approver_id),
            ("expires_at", given.expires_at == expected.expires_at),
        ];
        members
            .into_iter()
            .find_map(|(name, same)| (!same).then_some(name))
    }

    /// The rejection a decision is, with its reason, or `None` for an approval.
    fn rejection_reason(decision: Decision) -> Option<Option<RejectionReason>> {
        match decision {
            Decision::Approve => None,
            Decision::Reject => Some(None),
            Decision::RejectNotPermitted => Some(Some(RejectionReason::NotPermitted)),
            Decision::RejectWrongDetails => Some(Some(RejectionReason::WrongDetails)),
            Decision::RejectDuplicate => Some(Some(RejectionReason::Duplicate)),
        }
    }
}

/// An approver as published: its credentials with the dates they sign between.
fn published(approver: Approver) -> PublishedApprover {
    PublishedApprover {
        approver_id: approver.approver_id,
        display_name: approver.display_name,
        credentials: approver
            .credentials
            .into_iter()
            .map(|credential| PublishedCredential {
                credential_id: credential.credential_id,
                public_key: credential.public_key,
                backup_eligible: credential.backup_eligible,
                valid_from: credential.enrolled_at,
                valid_until: credential.revoked_at,
            })
            .collect(),
    }
}
