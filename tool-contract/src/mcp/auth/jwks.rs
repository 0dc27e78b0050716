//! An issuer's published signing keys (a JWK Set, RFC 7517), each with the one algorithm it
//! verifies: the key's own `alg` when it names one, else the one its type and curve allow.
//! A token is verified with the algorithm of the key it names, never the one it claims.

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde::Deserialize;
use serde_json::Value;

/// One signing key.
pub(super) struct Key {
    pub(super) kid: Option<String>,
    pub(super) algorithm: Algorithm,
    pub(super) decoding: DecodingKey,
}

/// The keys of one issuer.
#[derive(Default)]
pub(super) struct KeySet {
    keys: Vec<Key>,
}

impl KeySet {
    /// The signing keys of the JWK Set `bytes`. A key this crate cannot use (an encryption
    /// key, a symmetric key, an unknown type or curve) is passed over with a warning; a set
    /// that is not a JWK Set at all is an error.
    pub(super) fn parse(bytes: &[u8]) -> Result<KeySet, serde_json::Error> {
        #[derive(Deserialize)]
        struct Set {
            keys: Vec<Value>,
        }
        let set: Set = serde_json::from_slice(bytes)?;
        let keys = set
            .keys
            .into_iter()
            .filter_map(|key| {
                let key = signing_key(key);
                if let Err(reason) = &key {
                    tracing::warn!(reason, "a published key is passed over");
                }
                key.ok()
            })
            .collect();
        Ok(KeySet { keys })
    }

    /// The key `kid` names; without a `kid`, the issuer's only key, if it has one only.
    pub(super) fn find(&self, kid: Option<&str>) -> Option<&Key> {
        match kid {
            Some(kid) => self.keys.iter().find(|key| key.kid.as_deref() == Some(kid)),
            None => match self.keys.as_slice() {
                [only] => Some(only),
                _ => None,
            },
        }
    }

    /// How many keys it holds.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.keys.len()
    }
}

fn signing_key(value: Value) -> Result<Key, &'static str> {
    let jwk: Jwk = serde_json::from_value(value).map_err(|_| "not a JWK this crate reads")?;
    if matches!(
        jwk.common.public_key_use,
        Some(PublicKeyUse::Encryption | PublicKeyUse::Other(_))
    ) {
        return Err("not a signing key");
    }
    let algorithm = algorithm_of(&jwk).ok_or("no signature algorithm fits the key")?;
    let decoding = DecodingKey::from_jwk(&jwk).map_err(|_| "the key does not decode")?;
    Ok(Key {
        kid: jwk.common.key_id.clone(),
        algorithm,
        decoding,
    })
}

/// The one algorithm `jwk` verifies. A symmetric key is never one: a published key set is
/// public, and a MAC under a public key proves nothing.
fn algorithm_of(jwk: &Jwk) -> Option<Algorithm> {
    let implied = match &jwk.algorithm {
        // RS256 is the algorithm every issuer of JWT access tokens supports (RFC 9068,
        // section 4); an RSA key for another says so in its `alg`.
        AlgorithmParameters::RSA(_) => Algorithm::RS256,
        AlgorithmParameters::EllipticCurve(params) => match params.curve {
            EllipticCurve::P256 => Algorithm::ES256,
            EllipticCurve::P384 => Algorithm::ES384,
            _ => return None,
        },
        AlgorithmParameters::OctetKeyPair(params) => match params.curve {
            EllipticCurve::Ed25519 => Algorithm::EdDSA,
            _ => return None,
        },
        _ => return None,
    };
    let Some(named) = &jwk.common.key_algorithm else {
        return Some(implied);
    };
    let named = match named {
        KeyAlgorithm::RS256 => Algorithm::RS256,
        KeyAlgorithm::RS384 => Algorithm::RS384,
        KeyAlgorithm::RS512 => Algorithm::RS512,
        KeyAlgorithm::PS256 => Algorithm::PS256,
        KeyAlgorithm::PS384 => Algorithm::PS384,
        KeyAlgorithm::PS512 => Algorithm::PS512,
        KeyAlgorithm::ES256 => Algorithm::ES256,
        KeyAlgorithm::ES384 => Algorithm::ES384,
        KeyAlgorithm::EdDSA => Algorithm::EdDSA,
        _ => return None,
    };
    // The named algorithm must be of the key's own family: an RSA key saying `ES256` is
    // refused, not trusted.
    (named.family() == implied.family()).then_some(named)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A P-256 public key (RFC 7515, appendix A.3).
    fn p256(extra: Value) -> Value {
        let mut key = json!({
            "kty": "EC", "crv": "P-256",
            "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
            "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0",
        });
        if let (Value::Object(key), Value::Object(extra)) = (&mut key, extra) {
            key.extend(extra);
        }
        key
    }

    fn set(keys: Vec<Value>) -> KeySet {
        KeySet::parse(json!({ "keys": keys }).to_string().as_bytes()).unwrap()
    }

    #[test]
    fn a_key_verifies_the_algorithm_of_its_type_or_its_own_alg() {
        let keys = set(vec![p256(json!({ "kid": "a" }))]);
        assert_eq!(keys.find(Some("a")).unwrap().algorithm, Algorithm::ES256);
        let named = set(vec![p256(json!({ "kid": "a", "alg": "ES256" }))]);
        assert_eq!(named.find(Some("a")).unwrap().algorithm, Algorithm::ES256);
    }

    #[test]
    fn symmetric_encryption_and_mismatched_keys_are_passed_over() {
        let keys = set(vec![
            json!({ "kty": "oct", "k": "c2VjcmV0", "kid": "mac" }),
            p256(json!({ "kid": "enc", "use": "enc" })),
            p256(json!({ "kid": "lies", "alg": "RS256" })),
            p256(json!({ "kid": "hmac", "alg": "HS256" })),
            json!({ "kty": "XYZ", "kid": "odd" }),
        ]);
        assert_eq!(keys.len(), 0);
    }

    #[test]
    fn a_token_without_kid_finds_the_only_key_and_no_other() {
        let one = set(vec![p256(json!({ "kid": "a" }))]);
        assert!(one.find(None).is_some());
        let two = set(vec![
            p256(json!({ "kid": "a" })),
            p256(json!({ "kid": "b" })),
        ]);
        assert!(two.find(None).is_none());
        assert!(two.find(Some("c")).is_none());
    }

    #[test]
    fn what_is_not_a_key_set_is_an_error() {
        assert!(KeySet::parse(b"{\"keys\":7}").is_err());
        assert!(KeySet::parse(b"[]").is_err());
    }
}
