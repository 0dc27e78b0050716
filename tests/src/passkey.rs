//! A software authenticator for the tests: 1Password's `passkey-authenticator` behind its
//! WebAuthn client, so registration and assertion ceremonies run in process with the same
//! JSON a browser's `navigator.credentials` would exchange, and no browser.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use passkey_authenticator::{Authenticator, MemoryStore, UiHint, UserCheck, UserValidationMethod};
use passkey_client::{Client, DefaultClientData};
use passkey_crypto::AvailableBackend;
use passkey_types::Passkey;
use passkey_types::ctap2::{Aaguid, Ctap2Error};
use serde_json::Value;
use tool_contract::control::{Approver, EnrollError, PendingApproval};
use tool_contract::dispatch::Dispatcher;
use tool_contract::results::{ApprovalStatement, Decision};
use url::Url;

/// The relying party of the tests: its RP ID and the one origin its pages are served from.
pub const RP_ID: &str = "desk.example";
/// The origin the tests' approvals console is served from.
pub const ORIGIN: &str = "https://desk.example";

/// What the person at the authenticator does: present and verified, or present only.
#[derive(Debug, Clone)]
struct Person {
    verifies: Arc<AtomicBool>,
}

impl Person {
    fn verifies(&self) -> bool {
        self.verifies.load(Ordering::Relaxed)
    }
}

#[async_trait::async_trait]
impl UserValidationMethod for Person {
    type PasskeyItem = Passkey;

    async fn check_user<'a>(
        &self,
        _hint: UiHint<'a, Passkey>,
        presence: bool,
        verification: bool,
    ) -> Result<UserCheck, Ctap2Error> {
        Ok(UserCheck {
            presence,
            verification: verification && self.verifies(),
        })
    }

    fn is_presence_enabled(&self) -> bool {
        true
    }

    fn is_verification_enabled(&self) -> Option<bool> {
        Some(self.verifies())
    }
}

/// One person's authenticator, holding the passkeys it made.
pub struct SoftAuthenticator {
    client: Client<MemoryStore, Person, AvailableBackend, public_suffix::PublicSuffixList, ()>,
    origin: Url,
    verifies: Arc<AtomicBool>,
}

impl SoftAuthenticator {
    /// An authenticator that verifies its user (a PIN or biometric, as a platform
    /// authenticator does), with a signature counter, answering for [`ORIGIN`].
    pub fn new() -> Self {
        Self::at(ORIGIN, true)
    }

    /// An authenticator whose user is present but never verified.
    pub fn without_user_verification() -> Self {
        Self::at(ORIGIN, false)
    }

    /// An authenticator answering pages of `origin` (another site, for the phishing cases).
    pub fn at(origin: &str, verifies: bool) -> Self {
        let verifies = Arc::new(AtomicBool::new(verifies));
        let person = Person {
            verifies: verifies.clone(),
        };
        let mut authenticator = Authenticator::new(
            Aaguid::new_empty(),
            MemoryStore::new(),
            person,
            AvailableBackend,
        );
        authenticator.set_make_credentials_with_signature_counter(true);
        SoftAuthenticator {
            client: Client::new(authenticator),
            origin: Url::parse(origin).expect("an origin"),
            verifies,
        }
    }

    /// Answers `navigator.credentials.create(options)`: the new credential, as the page would
    /// post it (JSON, members base64url).
    pub async fn register(&mut self, options: &Value) -> Vec<u8> {
        let options = serde_json::from_value(options.clone()).expect("creation options");
        let created = self
            .client
            .register(&self.origin, options, DefaultClientData)
            .await
            .expect("the authenticator registers a credential");
        serde_json::to_vec(&created).expect("a credential encodes")
    }

    /// Answers `navigator.credentials.get(options)`: the assertion, as the page would post it.
    pub async fn sign(&mut self, options: &Value) -> Vec<u8> {
        let options = serde_json::from_value(options.clone()).expect("request options");
        let asserted = self
            .client
            .authenticate(&self.origin, options, DefaultClientData)
            .await
            .expect("the authenticator signs");
        serde_json::to_vec(&asserted).expect("an assertion encodes")
    }

    /// Answers `navigator.credentials.get(options)` as a frame of another origin would: the
    /// client data says `"crossOrigin": true`, and the authenticator signs its hash.
    pub async fn sign_cross_origin(&mut self, options: &Value) -> Vec<u8> {
        use base64::Engine as _;
        use base64::engine::general_purpose::URL_SAFE_NO_PAD;
        use sha2::Digest as _;

        let challenge = options["publicKey"]["challenge"]
            .as_str()
            .expect("a challenge");
        let client_data = serde_json::json!({
            "type": "webauthn.get",
            "challenge": challenge,
            "origin": self.origin.as_str().trim_end_matches('/'),
            "crossOrigin": true,
        })
        .to_string();
        let hash = sha2::Sha256::digest(client_data.as_bytes()).to_vec();
        let request = serde_json::from_value(options.clone()).expect("request options");
        let asserted = self
            .client
            .authenticate(
                &self.origin,
                request,
                passkey_client::DefaultClientDataWithCustomHash(hash),
            )
            .await
            .expect("the authenticator signs");
        let mut credential = serde_json::to_value(&asserted).expect("an assertion encodes");
        credential["response"]["clientDataJSON"] = URL_SAFE_NO_PAD.encode(client_data).into();
        serde_json::to_vec(&credential).expect("an assertion encodes")
    }

    /// Whether the person is verified from now on (the authenticator still signs without).
    pub fn verify_users(&mut self, verifies: bool) {
        self.verifies.store(verifies, Ordering::Relaxed);
    }

    /// Answers pages of `origin` from now on (the client data names it).
    pub fn answer_for(&mut self, origin: &str) {
        self.origin = Url::parse(origin).expect("an origin");
    }

    /// The authenticator's passkeys as they are now: restored later, its counters go back (a
    /// cloned authenticator).
    pub fn snapshot(&self) -> MemoryStore {
        self.client.authenticator().store().clone()
    }

    /// Puts back passkeys taken by [`snapshot`](Self::snapshot).
    pub fn restore(&mut self, store: MemoryStore) {
        *self.client.authenticator_mut().store_mut() = store;
    }
}

impl Default for SoftAuthenticator {
    fn default() -> Self {
        Self::new()
    }
}

/// Adds `approver_id` for `tenants` and every tool, and enrols a passkey on a new
/// authenticator.
pub async fn enrol(
    dispatcher: &Dispatcher,
    approver_id: &str,
    tenants: &[&str],
) -> SoftAuthenticator {
    let approver = Approver::new(approver_id, approver_id, tenants.iter().copied(), ["*"]);
    enrol_approver(dispatcher, approver).await
}

/// Adds `approver` and enrols a passkey on a new authenticator.
pub async fn enrol_approver(dispatcher: &Dispatcher, approver: Approver) -> SoftAuthenticator {
    let approver_id = approver.approver_id.clone();
    dispatcher.put_approver(approver).await.expect("added");
    let mut authenticator = SoftAuthenticator::new();
    enrol_on(dispatcher, &approver_id, &mut authenticator)
        .await
        .expect("the passkey is enrolled");
    authenticator
}

/// Enrols a passkey for `approver_id` on `authenticator`: the registration ceremony a page
/// would hold.
pub async fn enrol_on(
    dispatcher: &Dispatcher,
    approver_id: &str,
    authenticator: &mut SoftAuthenticator,
) -> Result<Approver, EnrollError> {
    let enrollment = dispatcher.begin_enrollment(approver_id).await?;
    let answer = authenticator.register(&enrollment.options).await;
    dispatcher.finish_enrollment(&enrollment, &answer).await
}

/// `approver_id`'s statement of `decision` on `pending` (valid for an hour), signed on
/// `authenticator`: the statement and the assertion the page would post.
pub async fn signed(
    dispatcher: &Dispatcher,
    authenticator: &mut SoftAuthenticator,
    pending: &PendingApproval,
    approver_id: &str,
    decision: Decision,
    edits: Option<&Value>,
) -> (ApprovalStatement, Vec<u8>) {
    let statement = dispatcher
        .approval_statement(
            &pending.approval_id,
            approver_id,
            decision,
            edits,
            Duration::from_secs(3600),
        )
        .await
        .expect("a statement of a pending approval");
    let request = dispatcher
        .signing_request(&statement)
        .await
        .expect("a signing request");
    let assertion = authenticator.sign(&request.options).await;
    (statement, assertion)
}
