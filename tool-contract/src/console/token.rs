//! What the console hands out and takes back, signed with its key: the session its cookie
//! carries, the CSRF token of that session, and invitations. Each kind is signed under a
//! domain of its own, so one is never read as another.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::Mac as _;
use rand::TryRng as _;
use rand::rngs::SysRng;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq as _;

use crate::results::SecretKey;

const SESSION: &[u8] = b"tool-contract/console-session-v1";
const CSRF: &[u8] = b"tool-contract/console-csrf-v1";
const INVITATION: &[u8] = b"tool-contract/console-invitation-v1";
const DECOY: &[u8] = b"tool-contract/console-decoy-credential-v1";

/// The longest token read: a session or an invitation is a few hundred bytes.
const MAX_TOKEN: usize = 2048;

/// One visit to the console: anonymous until someone signs in, then whose it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Session {
    /// A random id, new at every sign-in (a session fixed before sign-in is not kept after).
    pub visit: String,
    /// The approver signed in, if anyone is.
    pub approver_id: Option<String>,
    /// The credential they signed in with: the session ends when it is revoked.
    pub credential_id: Option<String>,
    /// Unix seconds after which the session is void.
    pub expires_at: i64,
    /// The approver's sign-out count when they signed in: one more sign-out ends it.
    #[serde(default)]
    pub sign_outs: u64,
}

impl Session {
    /// A new anonymous visit, until `expires_at`.
    pub fn anonymous(expires_at: i64) -> Option<Session> {
        Some(Session {
            visit: random_id()?,
            approver_id: None,
            credential_id: None,
            expires_at,
            sign_outs: 0,
        })
    }
}

/// An invitation to enrol the first passkey of an approver already in the directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Invitation {
    /// Who is invited.
    pub approver_id: String,
    /// Unix seconds after which it is void.
    pub expires_at: i64,
    /// Random: two invitations of one approver are two tokens.
    pub nonce: String,
}

/// Signs and checks the console's tokens with its key.
#[derive(Debug)]
pub(super) struct Signer {
    key: SecretKey,
}

impl Signer {
    pub fn new(key: SecretKey) -> Signer {
        Signer { key }
    }

    fn mac(&self, domain: &[u8], payload: &[u8]) -> [u8; 32] {
        let mut mac = self.key.mac();
        mac.update(domain);
        mac.update(&[0]);
        mac.update(payload);
        mac.finalize().into_bytes().into()
    }

    fn seal<T: Serialize>(&self, domain: &[u8], value: &T) -> String {
        let payload = serde_json::to_vec(value).unwrap_or_default();
        let mac = self.mac(domain, &payload);
        format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(&payload),
            URL_SAFE_NO_PAD.encode(mac)
        )
    }

    /// The value `token` carries, if this key signed it under `domain` and it has not
    /// expired at `now` (Unix seconds).
    fn open<T: DeserializeOwned>(&self, domain: &[u8], token: &str) -> Option<T> {
        if token.len() > MAX_TOKEN {
            return None;
        }
        let (payload, mac) = token.split_once('.')?;
        let payload = URL_SAFE_NO_PAD.decode(payload).ok()?;
        let mac = URL_SAFE_NO_PAD.decode(mac).ok()?;
        if !bool::from(self.mac(domain, &payload).ct_eq(&mac)) {
            return None;
        }
        crate::json::depth::from_slice(&payload).ok()
    }

    pub fn seal_session(&self, session: &Session) -> String {
        self.seal(SESSION, session)
    }

    pub fn open_session(&self, token: &str, now: i64) -> Option<Session> {
        self.open::<Session>(SESSION, token)
            .filter(|session| session.expires_at > now)
    }

    pub fn seal_invitation(&self, invitation: &Invitation) -> String {
        self.seal(INVITATION, invitation)
    }

    pub fn open_invitation(&self, token: &str, now: i64) -> Option<Invitation> {
        self.open::<Invitation>(INVITATION, token)
            .filter(|invitation| invitation.expires_at > now)
    }

    /// The keyed bytes a sign-in's decoy credentials are made of, for `input`: the same on
    /// every request and replica, and told from a real credential id by nobody without this
    /// key.
    pub fn decoy_bytes(&self, input: &[u8]) -> [u8; 32] {
        self.mac(DECOY, input)
    }

    /// The CSRF token of a visit: what every state-changing request of it must carry.
    pub fn csrf(&self, session: &Session) -> String {
        URL_SAFE_NO_PAD.encode(self.mac(CSRF, session.visit.as_bytes()))
    }

    /// Whether `given` is the CSRF token of `session`, compared in constant time.
    pub fn csrf_matches(&self, session: &Session, given: &str) -> bool {
        bool::from(self.csrf(session).as_bytes().ct_eq(given.as_bytes()))
    }
}

/// `N` bytes from the operating system's generator, or `None` when it cannot give them (the
/// console then refuses the request rather than use weaker randomness).
pub(super) fn random_bytes<const N: usize>() -> Option<[u8; N]> {
    let mut bytes = [0; N];
    SysRng.try_fill_bytes(&mut bytes).ok()?;
    Some(bytes)
}

/// 128 random bits, hex: visit, ceremony and invitation ids.
pub(super) fn random_id() -> Option<String> {
    random_bytes::<16>().map(hex::encode)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signer(byte: u8) -> Signer {
        Signer::new(SecretKey::new([byte; 32]).unwrap())
    }

    fn session() -> Session {
        Session {
            visit: "v1".into(),
            approver_id: Some("sup-ana".into()),
            credential_id: Some("cred".into()),
            expires_at: 2_000,
            sign_outs: 0,
        }
    }

    #[test]
    fn a_session_opens_under_its_key_until_it_expires() {
        let token = signer(1).seal_session(&session());
        assert_eq!(signer(1).open_session(&token, 1_999), Some(session()));
        assert_eq!(signer(1).open_session(&token, 2_000), None);
        assert_eq!(signer(2).open_session(&token, 1_000), None);
    }

    #[test]
    fn a_session_with_any_byte_changed_is_refused() {
        let token = signer(1).seal_session(&session());
        let (payload, mac) = token.split_once('.').unwrap();
        let mut bytes = URL_SAFE_NO_PAD.decode(payload).unwrap();
        let at = bytes.iter().position(|&byte| byte == b'a').unwrap();
        bytes[at] = b'b';
        let forged = format!("{}.{mac}", URL_SAFE_NO_PAD.encode(bytes));
        assert_eq!(signer(1).open_session(&forged, 1_000), None);
    }

    #[test]
    fn a_session_is_never_read_as_an_invitation() {
        let token = signer(1).seal_session(&session());
        assert_eq!(signer(1).open_invitation(&token, 1_000), None);
    }

    #[test]
    fn the_csrf_token_is_the_visits_own() {
        let signer = signer(1);
        let mine = session();
        let other = Session {
            visit: "v2".into(),
            ..session()
        };
        assert!(signer.csrf_matches(&mine, &signer.csrf(&mine)));
        assert!(!signer.csrf_matches(&other, &signer.csrf(&mine)));
        assert!(!signer.csrf_matches(&mine, ""));
    }

    #[test]
    fn malformed_tokens_are_refused_without_a_panic() {
        let signer = signer(1);
        for token in ["", ".", "a.b", "%%%.%%%", &"a".repeat(5_000), "e30.AAAA"] {
            assert_eq!(signer.open_session(token, 0), None, "{token}");
        }
    }
}
