//! A passkey's signature over an approval statement: the WebAuthn assertion as the
//! authenticator returned it, kept byte for byte in approvals and receipts, and (with the
//! `passkeys` feature) its verification, by `webauthn-rs-core`, against a statement's
//! challenge and a relying party.

use serde::{Deserialize, Serialize};

/// A WebAuthn assertion (W3C WebAuthn Level 3 §5.2.2, `AuthenticatorAssertionResponse`) as
/// kept: each member the authenticator's bytes, base64url without padding. The signature
/// covers the authenticator data and the SHA-256 of the client data, whose `challenge` is the
/// approval statement's digest.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PasskeyAssertion {
    /// The credential that signed (its id, base64url).
    pub credential_id: String,
    /// The authenticator data: RP ID hash, flags (user present, user verified), counter.
    pub authenticator_data: String,
    /// The client data JSON the browser (or client) wrote: type, challenge, origin.
    pub client_data_json: String,
    /// The signature over the authenticator data and the client data's SHA-256.
    pub signature: String,
}

#[cfg(feature = "passkeys")]
pub use verify::RelyingPartyError;
/// What an approval rests on: the approver's own signature, or the word of whoever recorded
/// it. A receipt says which, and a policy can require signatures.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ApprovalBasis {
    /// Recorded by the application through the API (a back-office job, a person the
    /// application authenticated its own way): asserted by the service, signed by nobody.
    #[default]
    Service,
    /// Answered by an MCP client for the subject of its verified access token: asserted by
    /// the client.
    Client,
    /// Signed by the approver's own passkey: a WebAuthn assertion whose challenge is the
    /// [approval statement](crate::results::ApprovalStatement)'s digest.
    Passkey(PasskeyAssertion),
}

impl ApprovalBasis {
    /// Whether a person's authenticator signed it.
    #[must_use]
    pub fn is_signed(&self) -> bool {
        matches!(self, ApprovalBasis::Passkey(_))
    }

    /// Its name in a receipt: `passkey`, `service` or `client`.
    #[must_use]
    pub fn as_str(&self) -> &'static str {
        match self {
            ApprovalBasis::Service => "service",
            ApprovalBasis::Client => "client",
            ApprovalBasis::Passkey(_) => "passkey",
        }
    }
}

/// The relying party passkeys are checked for: its RP ID (the domain credentials are
/// scoped to) and the origins the console is served from. An assertion made for another
/// RP ID, or whose client data names another origin, does not verify.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelyingParty {
    /// The RP ID: a registrable domain suffix of every origin (`desk.example.com`, or
    /// `localhost`).
    pub id: String,
    /// The name authenticators show at enrollment.
    pub name: String,
    /// The exact origins (scheme, host, port) pages asking for assertions are served
    /// from.
    pub origins: Vec<String>,
}

#[cfg(feature = "passkeys")]
pub(crate) use verify::{credential_of, public_key_jwk, verify_assertion};

#[cfg(feature = "passkeys")]
mod verify {
    use std::time::Duration;

    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use serde_json::{Value, json};
    use url::Url;
    use webauthn_rs_core::WebauthnCore;
    use webauthn_rs_core::proto::{
        AttestationFormat, AttestationMetadata, AuthenticationState, COSEAlgorithm, COSEEC2Key,
        COSEKey, COSEKeyType, COSERSAKey, Credential, ECDSACurve, ParsedAttestation,
        ParsedAttestationData, PublicKeyCredential, RegisteredExtensions, UserVerificationPolicy,
    };

    use super::{PasskeyAssertion, RelyingParty};

    /// Why a relying party's settings were refused.
    #[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
    #[error("the relying party is refused: {0}")]
    pub struct RelyingPartyError(String);

    impl RelyingParty {
        /// The relying party of RP ID `id`, called `name`, whose pages are served from
        /// `origins`.
        ///
        /// # Errors
        ///
        /// [`RelyingPartyError`] when the id is empty, no origin is given, an origin is not
        /// a URL with a host, or its host is not the id or under it.
        pub fn new<O: Into<String>>(
            id: impl Into<String>,
            name: impl Into<String>,
            origins: impl IntoIterator<Item = O>,
        ) -> Result<Self, RelyingPartyError> {
            let party = RelyingParty {
                id: id.into(),
                name: name.into(),
                origins: origins.into_iter().map(Into::into).collect(),
            };
            party.core()?;
            Ok(party)
        }

        /// The verifier of this relying party.
        pub(crate) fn core(&self) -> Result<WebauthnCore, RelyingPartyError> {
            let refused = |why: String| RelyingPartyError(why);
            if self.id.is_empty() || self.origins.is_empty() {
                return Err(refused("it needs an RP ID and at least one origin".into()));
            }
            let mut origins = Vec::with_capacity(self.origins.len());
            for origin in &self.origins {
                let url =
                    Url::parse(origin).map_err(|error| refused(format!("{origin}: {error}")))?;
                let host = url.host_str().unwrap_or_default();
                let under = host == self.id || host.ends_with(&format!(".{}", self.id));
                if !under {
                    return Err(refused(format!(
                        "the origin {origin} is not the RP ID {} or under it",
                        self.id
                    )));
                }
                origins.push(url);
            }
            // Exact origins: no subdomain or other port is accepted in their stead.
            Ok(WebauthnCore::new_unsafe_experts_only(
                &self.name,
                &self.id,
                origins,
                Duration::from_secs(300),
                Some(false),
                Some(false),
            ))
        }
    }

    /// What a verified assertion said beyond its signature.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(crate) struct AssertionFacts {
        /// The authenticator's signature counter (0: it keeps none).
        pub(crate) counter: u32,
    }

    /// The verifier's credential of a published one: its id (base64url), its JWK, and whether
    /// it may be backed up. Registered with user verification required; no counter (the
    /// directory compares counters atomically) and no attestation (none is asked for).
    pub(crate) fn credential_of(
        credential_id: &str,
        jwk: &Value,
        backup_eligible: bool,
    ) -> Result<Credential, String> {
        let cred_id = URL_SAFE_NO_PAD
            .decode(credential_id)
            .map_err(|_| "the credential id is not base64url".to_owned())?;
        Ok(Credential {
            cred_id: cred_id.into(),
            cred: cose_key(jwk)?,
            counter: 0,
            transports: None,
            user_verified: true,
            backup_eligible,
            backup_state: false,
            registration_policy: UserVerificationPolicy::Required,
            extensions: RegisteredExtensions::none(),
            attestation: ParsedAttestation {
                data: ParsedAttestationData::None,
                metadata: AttestationMetadata::None,
            },
            attestation_format: AttestationFormat::None,
        })
    }

    /// Verifies `assertion` with `webauthn-rs-core`: made by `credential` (whose stored
    /// counter is not consulted: the directory compares counters atomically), for this
    /// relying party's RP ID and one of its origins, with the user verified, over client data
    /// whose challenge is `challenge`, signature valid.
    pub(crate) fn verify_assertion(
        core: &WebauthnCore,
        credential: &Credential,
        challenge: &[u8; 32],
        assertion: &PasskeyAssertion,
    ) -> Result<AssertionFacts, String> {
        // The library's own state, with the statement's digest as the challenge it expects:
        // the one thing the library generates at random that an approval fixes.
        let state: AuthenticationState = serde_json::from_value(json!({
            "credentials": [credential],
            "policy": "required",
            "challenge": URL_SAFE_NO_PAD.encode(challenge),
            "appid": null,
            "allow_backup_eligible_upgrade": false,
        }))
        .map_err(|error| format!("the verifier's state: {error}"))?;
        let response: PublicKeyCredential = serde_json::from_value(json!({
            "id": assertion.credential_id,
            "rawId": assertion.credential_id,
            "type": "public-key",
            "response": {
                "authenticatorData": assertion.authenticator_data,
                "clientDataJSON": assertion.client_data_json,
                "signature": assertion.signature,
                "userHandle": null,
            },
            "extensions": {},
        }))
        .map_err(|error| format!("not an assertion: {error}"))?;
        let verified = core
            .authenticate_credential(&response, &state)
            .map_err(|error| error.to_string())?;
        // webauthn-rs-core checks `crossOrigin` at registration only. A relying party here
        // names the origins its pages are served from; an assertion a frame of another
        // origin asked for (WebAuthn Level 3, 5.8.1, `crossOrigin`) is not one of them.
        if made_cross_origin(&assertion.client_data_json)? {
            return Err(
                "the assertion was made cross-origin (`crossOrigin` is true), \
                        which this relying party does not allow"
                    .to_owned(),
            );
        }
        Ok(AssertionFacts {
            counter: verified.counter(),
        })
    }

    /// Whether the client data (base64url JSON) says the assertion was made cross-origin.
    fn made_cross_origin(client_data_json: &str) -> Result<bool, String> {
        let bytes = URL_SAFE_NO_PAD
            .decode(client_data_json)
            .map_err(|_| "the client data is not base64url".to_owned())?;
        let client_data: Value = crate::json::depth::from_slice(&bytes)
            .map_err(|_| "the client data is not JSON".to_owned())?;
        Ok(client_data.get("crossOrigin") == Some(&Value::Bool(true)))
    }

    impl PasskeyAssertion {
        /// The assertion of a `PublicKeyCredential` as a browser's
        /// `navigator.credentials.get()` returns it, in its JSON form (`toJSON()`: members
        /// base64url), re-encoded in this form.
        ///
        /// # Errors
        ///
        /// A description of what is missing or malformed.
        pub fn from_credential_json(json: &[u8]) -> Result<Self, String> {
            let credential: PublicKeyCredential = crate::json::depth::from_slice(json)
                .map_err(|error| format!("not a WebAuthn assertion: {error}"))?;
            let encode = |bytes: &[u8]| URL_SAFE_NO_PAD.encode(bytes);
            Ok(PasskeyAssertion {
                credential_id: encode(credential.raw_id.as_ref()),
                authenticator_data: encode(credential.response.authenticator_data.as_ref()),
                client_data_json: encode(credential.response.client_data_json.as_ref()),
                signature: encode(credential.response.signature.as_ref()),
            })
        }
    }

    /// A credential's public key as a JWK (RFC 7517, RFC 7518 §6): what is published for
    /// auditors, in a form any JOSE library reads.
    pub(crate) fn public_key_jwk(key: &COSEKey) -> Result<Value, String> {
        let encode = |bytes: &[u8]| URL_SAFE_NO_PAD.encode(bytes);
        match (&key.type_, &key.key) {
            (COSEAlgorithm::ES256, COSEKeyType::EC_EC2(ec))
                if ec.curve == ECDSACurve::SECP256R1 =>
            {
                Ok(json!({"kty": "EC", "crv": "P-256", "alg": "ES256",
                          "x": encode(ec.x.as_ref()), "y": encode(ec.y.as_ref())}))
            }
            (COSEAlgorithm::ES384, COSEKeyType::EC_EC2(ec))
                if ec.curve == ECDSACurve::SECP384R1 =>
            {
                Ok(json!({"kty": "EC", "crv": "P-384", "alg": "ES384",
                          "x": encode(ec.x.as_ref()), "y": encode(ec.y.as_ref())}))
            }
            (COSEAlgorithm::RS256, COSEKeyType::RSA(rsa)) => Ok(
                json!({"kty": "RSA", "alg": "RS256", "n": encode(rsa.n.as_ref()), "e": encode(&rsa.e)}),
            ),
            (algorithm, _) => Err(format!("a key of algorithm {algorithm:?} is not published")),
        }
    }

    /// The COSE key of a published JWK (the inverse of [`public_key_jwk`]).
    fn cose_key(jwk: &Value) -> Result<COSEKey, String> {
        let member = |name: &str| -> Result<Vec<u8>, String> {
            let text = jwk
                .get(name)
                .and_then(Value::as_str)
                .ok_or_else(|| format!("the JWK has no {name}"))?;
            URL_SAFE_NO_PAD
                .decode(text)
                .map_err(|_| format!("the JWK's {name} is not base64url"))
        };
        let text = |name: &str| jwk.get(name).and_then(Value::as_str).unwrap_or_default();
        let ec = |curve: ECDSACurve| -> Result<COSEKeyType, String> {
            Ok(COSEKeyType::EC_EC2(COSEEC2Key {
                curve,
                x: member("x")?.into(),
                y: member("y")?.into(),
            }))
        };
        let (type_, key) = match (text("kty"), text("crv"), text("alg")) {
            ("EC", "P-256", "ES256") => (COSEAlgorithm::ES256, ec(ECDSACurve::SECP256R1)?),
            ("EC", "P-384", "ES384") => (COSEAlgorithm::ES384, ec(ECDSACurve::SECP384R1)?),
            ("RSA", "", "RS256") => {
                let e: [u8; 3] = member("e")?
                    .try_into()
                    .map_err(|_| "the JWK's e is not three bytes".to_owned())?;
                let n = member("n")?;
                (
                    COSEAlgorithm::RS256,
                    COSEKeyType::RSA(COSERSAKey { n: n.into(), e }),
                )
            }
            (kty, crv, alg) => {
                return Err(format!(
                    "a JWK of kty {kty:?}, crv {crv:?}, alg {alg:?} is not read"
                ));
            }
        };
        Ok(COSEKey { type_, key })
    }
}
