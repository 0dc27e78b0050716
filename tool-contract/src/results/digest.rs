//! The three digests and the principal reference: SHA-256 (or HMAC-SHA256) over RFC 8785
//! canonical JSON, each over an object whose `domain` member names its kind, so that a digest
//! of one kind never verifies as another.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::contract::spec::{CanonicalRevisions, ToolSpec};
use crate::json::canonical;
use crate::json::canonical::object::{Field, member_name as name, write_object};
use crate::json::encoding::infallible;
use crate::vocabulary::call::{CallContext, Principal};
use crate::vocabulary::limits::Limits;

/// How the digests were computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DigestAlgorithm {
    /// Plain SHA-256: anyone can recompute it, so it shows tampering only where the record
    /// itself cannot be rewritten.
    Sha256,
    /// HMAC-SHA256 under a key the verifier holds, for stores an attacker may write to.
    HmacSha256,
}

const REQUEST_DOMAIN: &str = "tool-contract/request-v1";
const RESULT_DOMAIN: &str = "tool-contract/result-v1";
const CALL_BINDING_DOMAIN: &str = "tool-contract/call-binding-v2";
const CALL_BINDING_V1_DOMAIN: &str = "tool-contract/call-binding-v1";
const PRINCIPAL_DOMAIN: &str = "tool-contract/principal-v1";
const PERSON_DOMAIN: &str = "tool-contract/person-v1";
const LEDGER_RECORD_DOMAIN: &str = "tool-contract/ledger-record-v1";
const DERIVED_KEY_DOMAIN: &str = "tool-contract/derived-key-v1";
const KEY_FINGERPRINT_DOMAIN: &str = "tool-contract/key-fingerprint-v1";
/// The bytes of the development key: published here, so not a secret.
const DEVELOPMENT_KEY_LABEL: &str =
    "tool-contract/development-key-v1: not secret, never in production";

/// A secret key for HMAC-SHA256: at least 32 bytes. Its `Debug` shows nothing of it.
///
/// Held as HMAC's keyed state, so each digest starts from a copy of it instead of hashing the
/// key again.
#[derive(Clone)]
pub struct SecretKey {
    mac: Hmac<Sha256>,
    /// HMAC-SHA256 of a fixed label under the key: the same for the same key, and no way back
    /// to it.
    fingerprint: [u8; 32],
    /// Whether it is [`SecretKey::development`], which anyone can compute.
    development: bool,
}

impl SecretKey {
    /// The shortest key accepted, in bytes (SHA-256's output size).
    pub const MIN_LEN: usize = 32;

    /// A key from its bytes.
    ///
    /// # Errors
    ///
    /// [`KeyTooShort`] for fewer than [`MIN_LEN`](Self::MIN_LEN) bytes.
    pub fn new(bytes: impl Into<Vec<u8>>) -> Result<Self, KeyTooShort> {
        let bytes = bytes.into();
        if bytes.len() < Self::MIN_LEN {
            return Err(KeyTooShort { len: bytes.len() });
        }
        Ok(SecretKey::of(&bytes))
    }

    fn of(bytes: &[u8]) -> Self {
        let mac = infallible(
            <Hmac<Sha256> as Mac>::new_from_slice(bytes),
            "HMAC takes keys of any length",
        );
        let fingerprint = mac
            .clone()
            .chain_update(KEY_FINGERPRINT_DOMAIN.as_bytes())
            .finalize()
            .into_bytes()
            .into();
        SecretKey {
            mac,
            fingerprint,
            development: false,
        }
    }

    /// The development key: one fixed, published key, for examples, tests and first steps,
    /// so that a program runs before it has a secret store. It is not secret: anyone can
    /// compute it, so anyone can forge whatever it seals, chains or keys. Its `Debug` says so,
    /// [`is_development`](Self::is_development) tells it apart, and a dispatcher built with it
    /// logs a warning. In production, load a key of your own: `SecretKey::new(bytes)?`.
    ///
    /// ```
    /// use tool_contract::SecretKey;
    ///
    /// let key = SecretKey::development();
    /// assert!(key.is_development());
    /// assert_eq!(format!("{key:?}"), "SecretKey(development key, not secret)");
    /// assert!(!SecretKey::from([7; 32]).is_development());
    /// ```
    #[must_use]
    pub fn development() -> Self {
        let mut key = SecretKey::of(DEVELOPMENT_KEY_LABEL.as_bytes());
        key.development = true;
        key
    }

    /// Whether this is [`SecretKey::development`], the key anyone can compute.
    #[must_use]
    pub fn is_development(&self) -> bool {
        self.development
    }

    pub(crate) fn mac(&self) -> Hmac<Sha256> {
        self.mac.clone()
    }
}

/// A key of exactly 32 bytes, which is always long enough.
///
/// ```
/// use tool_contract::{AuditKeys, Principal, SecretKey};
///
/// let alice = Principal::new("acme", "alice");
/// let from_array = AuditKeys::new(SecretKey::from([7; 32]));
/// let checked = AuditKeys::new(SecretKey::new([7; 32])?);
/// assert_eq!(from_array.principal_ref(&alice), checked.principal_ref(&alice));
/// # Ok::<(), tool_contract::results::KeyTooShort>(())
/// ```
impl From<[u8; SecretKey::MIN_LEN]> for SecretKey {
    fn from(bytes: [u8; SecretKey::MIN_LEN]) -> Self {
        SecretKey::of(&bytes)
    }
}

impl fmt::Debug for SecretKey {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(if self.development {
            "SecretKey(development key, not secret)"
        } else {
            "SecretKey(..)"
        })
    }
}

/// A key shorter than [`SecretKey::MIN_LEN`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a secret key needs at least 32 bytes, not {len}")]
pub struct KeyTooShort {
    /// The length given.
    pub len: usize,
}

/// The keys an application holds for its audit records.
///
/// `principal_ref` is always keyed: a plain hash of a low-entropy subject id (an e-mail, an
/// employee number) is reversed by hashing guesses. The three binding digests are plain
/// SHA-256 by default, or HMAC-SHA256 under a second key for stores an attacker may write to
/// (a plain digest can be recomputed by whoever rewrites the record).
///
/// ```
/// use tool_contract::{AuditKeys, Principal, SecretKey};
/// use tool_contract::results::DigestAlgorithm;
///
/// let keys = AuditKeys::new(SecretKey::new([7; 32])?);
/// let alice = Principal::new("acme", "alice@acme.example");
/// assert_eq!(keys.principal_ref(&alice).len(), 64);
/// assert_eq!(keys.algorithm(), DigestAlgorithm::Sha256);
///
/// let keyed = keys.with_digest_key(SecretKey::new([9; 32])?);
/// assert_eq!(keyed.algorithm(), DigestAlgorithm::HmacSha256);
/// # Ok::<(), tool_contract::results::KeyTooShort>(())
/// ```
#[derive(Debug, Clone)]
pub struct AuditKeys {
    principal: SecretKey,
    digest: Option<SecretKey>,
    principal_refs: Arc<PrincipalRefs>,
}

/// Which digest key made the binding digests (`None`: plain SHA-256), as a derived
/// fingerprint that shows nothing of the key: equal for equal keys, so that what one set of
/// keys computed is taken for what another would compute only when the other's would be the
/// same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KeysId(Option<[u8; 32]>);

/// The principal references already made, so that one principal's keyed reference is paid
/// once, not on every call (it is asked several times per call). Shared by the clones of one
/// set of keys; bounded, emptied when full.
#[derive(Default)]
struct PrincipalRefs(Mutex<HashMap<Principal, String>>);

impl PrincipalRefs {
    /// How many principals are remembered before the memory is emptied.
    const CAPACITY: usize = 4096;

    fn get_or_make(&self, principal: &Principal, make: impl FnOnce() -> String) -> String {
        let mut known = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(reference) = known.get(principal) {
            return reference.clone();
        }
        let reference = make();
        if known.len() >= Self::CAPACITY {
            known.clear();
        }
        known.insert(principal.clone(), reference.clone());
        reference
    }
}

impl fmt::Debug for PrincipalRefs {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("PrincipalRefs(..)")
    }
}

impl AuditKeys {
    /// Keys with plain SHA-256 binding digests.
    #[must_use]
    pub fn new(principal_key: SecretKey) -> Self {
        AuditKeys {
            principal: principal_key,
            digest: None,
            principal_refs: Arc::default(),
        }
    }

    /// Keys over the [development key](SecretKey::development), which anyone can compute: for
    /// examples, tests and first steps, never production.
    #[must_use]
    pub fn development() -> Self {
        AuditKeys::new(SecretKey::development())
    }

    /// Whether any of these keys is the [development key](SecretKey::development).
    #[must_use]
    pub fn is_development(&self) -> bool {
        self.principal.is_development()
            || self.digest.as_ref().is_some_and(SecretKey::is_development)
    }

    /// The same keys with HMAC-SHA256 binding digests under `digest_key`.
    #[must_use]
    pub fn with_digest_key(mut self, digest_key: SecretKey) -> Self {
        self.digest = Some(digest_key);
        self
    }

    /// Which digest key these keys compute the binding digests with.
    pub(crate) fn id(&self) -> KeysId {
        KeysId(self.digest.as_ref().map(|key| key.fingerprint))
    }

    /// How the binding digests are computed.
    #[must_use]
    pub fn algorithm(&self) -> DigestAlgorithm {
        match self.digest {
            None => DigestAlgorithm::Sha256,
            Some(_) => DigestAlgorithm::HmacSha256,
        }
    }

    /// A key for `purpose`, derived from the principal key (HMAC-SHA256 of a labelled
    /// purpose): every process that holds the same keys derives the same one, and no two
    /// purposes share a key.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn derived_key(&self, purpose: &str) -> [u8; 32] {
        let mut mac = self.principal.mac();
        mac.update(DERIVED_KEY_DOMAIN.as_bytes());
        mac.update(&[0]);
        mac.update(purpose.as_bytes());
        mac.finalize().into_bytes().into()
    }

    /// The principal's reference: HMAC-SHA256 of its canonical form, 64 lowercase hex.
    /// Made once per principal and remembered by these keys (and their clones).
    #[must_use]
    pub fn principal_ref(&self, principal: &Principal) -> String {
        self.principal_refs
            .get_or_make(principal, || self.make_principal_ref(principal))
    }

    /// The reference of a person of `tenant` by `identity`, their name as approvals compare
    /// names (an [`ApproverIdentity`](crate::control::ApproverIdentity)'s string): what tells
    /// whether an approver is the principal who asked, however either is spelled.
    pub(crate) fn person_ref(&self, tenant: &str, identity: &str) -> String {
        let mut hasher = Hasher::Keyed(self.principal.mac());
        hash_object(
            &mut hasher,
            &[
                (name!("domain"), Field::Plain(PERSON_DOMAIN)),
                (name!("identity"), Field::Str(identity)),
                (name!("tenant"), Field::Str(tenant)),
            ],
        );
        hasher.finish()
    }

    fn make_principal_ref(&self, principal: &Principal) -> String {
        let mut hasher = Hasher::Keyed(self.principal.mac());
        hash_object(
            &mut hasher,
            &[
                (name!("domain"), Field::Plain(PRINCIPAL_DOMAIN)),
                (name!("subject"), Field::Str(&principal.subject)),
                (name!("tenant"), Field::Str(&principal.tenant)),
            ],
        );
        hasher.finish()
    }

    /// The key a call of `principal` sends downstream for the application's `key` (an
    /// idempotency key or an operation id): the key scoped to the principal, so that two
    /// tenants who happen to choose one key never meet at the remote service. It is the first
    /// 32 hex digits of the [principal reference](Self::principal_ref), a `:`, and the key.
    ///
    /// ```
    /// use tool_contract::{AuditKeys, Principal, SecretKey};
    ///
    /// let keys = AuditKeys::new(SecretKey::new([7; 32])?);
    /// let alice = keys.downstream_key(&Principal::new("acme", "alice"), "refund:ORDER-7");
    /// let bob = keys.downstream_key(&Principal::new("globex", "bob"), "refund:ORDER-7");
    /// assert_ne!(alice, bob);
    /// assert!(alice.ends_with(":refund:ORDER-7"));
    /// # Ok::<(), tool_contract::results::KeyTooShort>(())
    /// ```
    #[must_use]
    pub fn downstream_key(&self, principal: &Principal, key: &str) -> String {
        let scope = self.principal_ref(principal);
        format!("{}:{key}", &scope[..32])
    }

    fn hasher(&self) -> Hasher {
        match &self.digest {
            None => Hasher::Plain(Sha256::new()),
            Some(key) => Hasher::Keyed(key.mac()),
        }
    }

    /// The seal of a result the idempotency ledger keeps to replay under `ledger_key` for
    /// the request `request_sha256`: always keyed (under the digest key where there is one,
    /// else the principal key), so a row edited in the database, or moved to another key,
    /// no longer matches, whoever can write to the store.
    pub(crate) fn ledger_record_digest(
        &self,
        ledger_key: &str,
        request_sha256: &str,
        model_json: &[u8],
    ) -> String {
        let key = self.digest.as_ref().unwrap_or(&self.principal);
        let mut hasher = Hasher::Keyed(key.mac());
        hash_object(
            &mut hasher,
            &[
                (name!("domain"), Field::Plain(LEDGER_RECORD_DOMAIN)),
                (name!("ledger_key"), Field::Str(ledger_key)),
                (name!("model_result"), Field::Json(model_json)),
                (name!("request_sha256"), Field::Str(request_sha256)),
            ],
        );
        hasher.finish()
    }

    /// `request_sha256`: the intent, with no call id and no idempotency key.
    pub(crate) fn request_digest(
        &self,
        principal: &Principal,
        tool: &str,
        spec: Option<&ToolSpec>,
        arguments: &[u8],
    ) -> String {
        let revisions = match spec {
            Some(spec) => {
                let canonical = spec.canonical_revisions();
                [&canonical.effect, &canonical.input, &canonical.output]
                    .map(|json| Field::Json(json.as_bytes()))
            }
            None => [Field::NULL, Field::NULL, Field::NULL],
        };
        // Arguments over the contract's size, or not I-JSON, still bind, by the digest of
        // their exact bytes under a member name no canonical form uses; oversized ones are
        // never parsed, so a refused input costs no more than its own bytes.
        let canonical_arguments = canonical_within(spec, arguments);
        let unparsed_digest;
        let arguments = match &canonical_arguments {
            Some(canonical) => Field::Json(canonical),
            None => {
                unparsed_digest = hex::encode(Sha256::digest(arguments));
                Field::Plain(&unparsed_digest)
            }
        };
        let mut hasher = self.hasher();
        write_request(&mut hasher, principal, tool, revisions, arguments);
        hasher.finish()
    }

    /// `result_sha256`: the model result's canonical bytes, as the model is sent them.
    pub(crate) fn result_digest(&self, model_json: &[u8]) -> String {
        let mut hasher = self.hasher();
        hash_object(
            &mut hasher,
            &[
                (name!("domain"), Field::Plain(RESULT_DOMAIN)),
                (name!("model_result"), Field::Json(model_json)),
            ],
        );
        hasher.finish()
    }

    /// `call_binding_sha256`: the provider call, the operation, the contract (by its
    /// [`contract_sha256`](ToolSpec::contract_sha256), made once per spec), and the two
    /// digests.
    pub(crate) fn call_binding_digest(
        &self,
        context: &CallContext,
        spec: Option<&ToolSpec>,
        request_sha256: &str,
        result_sha256: &str,
    ) -> String {
        let call = &context.call;
        let contract = spec.map_or(Field::NULL, |spec| Field::Plain(spec.contract_sha256()));
        let mut hasher = self.hasher();
        hash_object(
            &mut hasher,
            &[
                (
                    name!("adapter_revision"),
                    Field::Str(&call.adapter_revision),
                ),
                (name!("api"), Field::Plain(call.api.as_str())),
                (name!("call_id"), Field::Str(&call.call_id)),
                (name!("contract_sha256"), contract),
                (name!("domain"), Field::Plain(CALL_BINDING_DOMAIN)),
                (
                    name!("idempotency_key"),
                    Field::OptStr(context.idempotency_key.as_deref()),
                ),
                (name!("operation_id"), Field::Str(&context.operation_id)),
                (
                    name!("provider"),
                    Field::Plain(call.api.provider().as_str()),
                ),
                // Digests this binder computed: hex, with nothing to escape.
                (name!("request_sha256"), Field::Plain(request_sha256)),
                (
                    name!("response_id"),
                    Field::OptStr(call.response_id.as_deref()),
                ),
                (name!("result_sha256"), Field::Plain(result_sha256)),
                (name!("tool"), Field::Str(&call.name)),
            ],
        );
        hasher.finish()
    }

    /// `call_binding_sha256` as audits of [`PROTECTED_AUDIT_SCHEMA_VERSION_V1`] computed it,
    /// with each revision a member of its own: only to verify them.
    ///
    /// [`PROTECTED_AUDIT_SCHEMA_VERSION_V1`]: super::audit::PROTECTED_AUDIT_SCHEMA_VERSION_V1
    pub(crate) fn call_binding_v1_digest(
        &self,
        context: &CallContext,
        spec: Option<&ToolSpec>,
        request_sha256: &str,
        result_sha256: &str,
    ) -> String {
        let call = &context.call;
        let revisions = spec.map(ToolSpec::canonical_revisions);
        let revision = |pick: fn(&CanonicalRevisions) -> &String| {
            revisions.map_or(Field::NULL, |revisions| {
                Field::Json(pick(revisions).as_bytes())
            })
        };
        let mut hasher = self.hasher();
        hash_object(
            &mut hasher,
            &[
                (
                    name!("adapter_revision"),
                    Field::Str(&call.adapter_revision),
                ),
                (name!("api"), Field::Plain(call.api.as_str())),
                (name!("call_id"), Field::Str(&call.call_id)),
                (name!("domain"), Field::Plain(CALL_BINDING_V1_DOMAIN)),
                (name!("effect_revision"), revision(|r| &r.effect)),
                (name!("handler_revision"), revision(|r| &r.handler)),
                (
                    name!("idempotency_key"),
                    Field::OptStr(context.idempotency_key.as_deref()),
                ),
                (name!("input_revision"), revision(|r| &r.input)),
                (name!("operation_id"), Field::Str(&context.operation_id)),
                (name!("output_revision"), revision(|r| &r.output)),
                (name!("policy_revision"), revision(|r| &r.policy)),
                (name!("producer_revision"), revision(|r| &r.producer)),
                (
                    name!("provider"),
                    Field::Plain(call.api.provider().as_str()),
                ),
                (name!("request_sha256"), Field::Plain(request_sha256)),
                (
                    name!("response_id"),
                    Field::OptStr(call.response_id.as_deref()),
                ),
                (name!("result_sha256"), Field::Plain(result_sha256)),
                (name!("tool"), Field::Str(&call.name)),
            ],
        );
        hasher.finish()
    }
}

/// The contract revisions a request digest binds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RequestRevisions<'a> {
    pub(crate) effect: &'a str,
    pub(crate) input: &'a str,
    pub(crate) output: &'a str,
}

impl<'a> RequestRevisions<'a> {
    /// As the request object's fields, in its members' order: escaped as they are written.
    fn fields(&self) -> [Field<'a>; 3] {
        [self.effect, self.input, self.output].map(Field::Str)
    }
}

/// The plain (unkeyed) `request_sha256` of a call whose arguments are `canonical_arguments`
/// (RFC 8785): what anyone holding the call can recompute, without the application's keys.
pub(crate) fn plain_request_digest(
    principal: &Principal,
    tool: &str,
    revisions: &RequestRevisions<'_>,
    canonical_arguments: &[u8],
) -> String {
    let mut hasher = Hasher::Plain(Sha256::new());
    let arguments = Field::Json(canonical_arguments);
    write_request(&mut hasher, principal, tool, revisions.fields(), arguments);
    hasher.finish()
}

/// The request object, fed to `hasher`: `revisions` are the effect, input and output
/// revisions; `arguments` is the canonical arguments ([`Field::Json`]) or, for arguments
/// that could not be read, their bytes' digest (under a member name no canonical form uses).
fn write_request(
    hasher: &mut Hasher,
    principal: &Principal,
    tool: &str,
    revisions: [Field<'_>; 3],
    arguments: Field<'_>,
) {
    let arguments = match arguments {
        Field::Json(canonical) => (name!("arguments"), Field::Json(canonical)),
        other => (name!("arguments_bytes_sha256"), other),
    };
    let [effect, input, output] = revisions;
    hash_object(
        hasher,
        &[
            arguments,
            (name!("domain"), Field::Plain(REQUEST_DOMAIN)),
            (name!("effect_revision"), effect),
            (name!("input_revision"), input),
            (name!("output_revision"), output),
            (name!("subject"), Field::Str(&principal.subject)),
            (name!("tenant"), Field::Str(&principal.tenant)),
            (name!("tool"), Field::Str(tool)),
        ],
    );
}

/// The canonical form of a call's `arguments`, if they are within the size the tool `spec`
/// allows (the default limits for a tool the registry lacks) and I-JSON. Oversized arguments
/// are not parsed at all.
pub(crate) fn canonical_within(spec: Option<&ToolSpec>, arguments: &[u8]) -> Option<Vec<u8>> {
    let limits = spec.map_or(Limits::DEFAULT, ToolSpec::argument_limits);
    if arguments.len() > limits.max_bytes {
        return None;
    }
    canonical::canonicalize(arguments).ok()
}

/// Whether two digests are equal, in time independent of where they differ: compared eight
/// bytes at a time (each word in constant time), which for 64 hex digits costs an eighth of
/// comparing byte by byte.
pub(crate) fn digests_equal(a: &str, b: &str) -> bool {
    use subtle::{Choice, ConstantTimeEq};
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let (a_words, a_rest) = a.as_chunks::<8>();
    let (b_words, b_rest) = b.as_chunks::<8>();
    let words = a_words
        .iter()
        .zip(b_words)
        .fold(Choice::from(1), |equal, (x, y)| {
            equal & u64::from_ne_bytes(*x).ct_eq(&u64::from_ne_bytes(*y))
        });
    bool::from(words & a_rest.ct_eq(b_rest))
}

enum Hasher {
    Plain(Sha256),
    Keyed(Hmac<Sha256>),
}

impl Hasher {
    fn update(&mut self, bytes: &[u8]) {
        match self {
            Hasher::Plain(hasher) => Digest::update(hasher, bytes),
            Hasher::Keyed(mac) => Mac::update(mac, bytes),
        }
    }

    fn finish(self) -> String {
        match self {
            Hasher::Plain(hasher) => lower_hex(&hasher.finalize()),
            Hasher::Keyed(mac) => lower_hex(&mac.finalize().into_bytes()),
        }
    }
}

/// `bytes` as lowercase hex, as `hex::encode` writes it, without building it a `char` at a
/// time (every call pays for three digests).
pub(crate) fn lower_hex(bytes: &[u8]) -> String {
    let mut text = vec![0; bytes.len() * 2];
    infallible(
        hex::encode_to_slice(bytes, &mut text),
        "the buffer is twice the bytes' length",
    );
    infallible(String::from_utf8(text), "hex digits are ASCII")
}

/// Feeds the canonical form of an object to `hasher` ([`write_object`]).
fn hash_object(hasher: &mut Hasher, members: &[(&[u8], Field<'_>)]) {
    write_object(&mut |bytes: &[u8]| hasher.update(bytes), members);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remembered_principal_reference_is_the_one_made_afresh_and_the_memory_is_bounded() {
        let keys = AuditKeys::new(SecretKey::from([5; 32]));
        let clone = keys.clone();
        for round in 0..2 {
            for index in 0..PrincipalRefs::CAPACITY + 10 {
                let principal = Principal::new("acme", format!("user-{index}"));
                let remembered = if round == 0 {
                    keys.principal_ref(&principal)
                } else {
                    clone.principal_ref(&principal)
                };
                assert_eq!(remembered, keys.make_principal_ref(&principal));
            }
        }
        let known = keys.principal_refs.0.lock().unwrap().len();
        assert!(known <= PrincipalRefs::CAPACITY, "{known} remembered");
        assert!(Arc::ptr_eq(&keys.principal_refs, &clone.principal_refs));
    }

    #[test]
    fn digests_are_equal_only_when_every_byte_is() {
        let digest = "0123456789abcdef".repeat(4);
        assert!(digests_equal(&digest, &digest.clone()));
        for len in [0, 1, 7, 8, 9, 63, 64] {
            let (a, b) = (&digest[..len], &digest[..len]);
            assert!(digests_equal(a, b), "{len}");
            for at in 0..len {
                let mut changed = b.as_bytes().to_vec();
                changed[at] ^= 1;
                let changed = String::from_utf8(changed).unwrap();
                assert!(!digests_equal(a, &changed), "{len} {at}");
            }
        }
        assert!(!digests_equal(&digest[..63], &digest));
        assert!(!digests_equal(&digest, &digest[..56]));
    }

    #[test]
    fn lower_hex_is_hex_encode() {
        for bytes in [&b""[..], b"\x00\xff\x10", &[0xab; 32]] {
            assert_eq!(lower_hex(bytes), hex::encode(bytes));
        }
    }

    #[test]
    fn other_keys_give_other_references_for_the_same_principal() {
        let alice = Principal::new("acme", "alice");
        let one = AuditKeys::new(SecretKey::from([5; 32]));
        let other = AuditKeys::new(SecretKey::from([6; 32]));
        assert_ne!(one.principal_ref(&alice), other.principal_ref(&alice));
    }
}
