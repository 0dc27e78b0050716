//! Tokens already verified, so that a client's next request with the same token costs a digest
//! and a look-up, not a signature check. Kept by the token's SHA-256 (the token itself is not
//! held), until the token expires or the cache's own lifetime ends, whichever comes first.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use sha2::{Digest, Sha256};

use super::claims::now_s;
use super::token::VerifiedToken;

/// Tokens kept at once; past that the oldest goes.
const CAPACITY: usize = 4096;

type TokenDigest = [u8; 32];

/// Verified tokens, by digest.
#[derive(Debug)]
pub(super) struct TokenCache {
    /// How long an entry is trusted, in seconds, even when its token lives longer: a key the
    /// issuer withdraws stops vouching for cached tokens after this.
    lifetime_s: u64,
    /// Seconds past `exp` a token is still accepted (the verifier's leeway).
    leeway_s: u64,
    entries: Mutex<Entries>,
}

#[derive(Debug, Default)]
struct Entries {
    by_digest: HashMap<TokenDigest, (u64, Arc<VerifiedToken>)>,
    order: VecDeque<TokenDigest>,
}

impl TokenCache {
    pub(super) fn new(lifetime_s: u64, leeway_s: u64) -> Self {
        TokenCache {
            lifetime_s,
            leeway_s,
            entries: Mutex::new(Entries::default()),
        }
    }

    /// `token` as it was verified for `resource`, while its entry is good.
    pub(super) fn get(&self, resource: &str, token: &str) -> Option<Arc<VerifiedToken>> {
        if self.lifetime_s == 0 {
            return None;
        }
        let digest = digest(resource, token);
        let now = now_s();
        let mut entries = self.entries();
        match entries.by_digest.get(&digest) {
            Some((until, verified)) if now < *until => Some(verified.clone()),
            Some(_) => {
                entries.by_digest.remove(&digest);
                None
            }
            None => None,
        }
    }

    /// Keeps `verified` for `token` presented to `resource`.
    pub(super) fn put(&self, resource: &str, token: &str, verified: Arc<VerifiedToken>) {
        if self.lifetime_s == 0 {
            return;
        }
        let now = now_s();
        let mut until = now.saturating_add(self.lifetime_s);
        if let Some(expires_at) = verified.expires_at {
            until = until.min(expires_at.saturating_add(self.leeway_s));
        }
        let digest = digest(resource, token);
        let mut entries = self.entries();
        if entries.by_digest.len() >= CAPACITY {
            entries.by_digest.retain(|_, (until, _)| now < *until);
            let Entries { by_digest, order } = &mut *entries;
            order.retain(|kept| by_digest.contains_key(kept));
            while by_digest.len() >= CAPACITY {
                let Some(oldest) = order.pop_front() else {
                    break;
                };
                by_digest.remove(&oldest);
            }
        }
        if entries
            .by_digest
            .insert(digest, (until, verified))
            .is_none()
        {
            entries.order.push_back(digest);
        }
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The digest of a token for a resource: a token verified for one resource is not taken for
/// another's.
fn digest(resource: &str, token: &str) -> TokenDigest {
    let mut digest = Sha256::new();
    digest.update(resource.as_bytes());
    digest.update([0]);
    digest.update(token.as_bytes());
    digest.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocabulary::Principal;

    const R: &str = "https://mcp.example.com";

    fn verified(expires_at: u64) -> Arc<VerifiedToken> {
        Arc::new(
            VerifiedToken::new(Principal::new("t", "s"), "https://as.example")
                .expiring_at(expires_at),
        )
    }

    #[test]
    fn a_kept_token_is_found_for_its_resource_and_another_is_not() {
        let cache = TokenCache::new(60, 0);
        cache.put(R, "a.b.c", verified(now_s() + 600));
        assert!(cache.get(R, "a.b.c").is_some());
        assert!(cache.get(R, "a.b.d").is_none());
        assert!(cache.get("https://other.example", "a.b.c").is_none());
    }

    #[test]
    fn an_expired_token_is_never_found() {
        let cache = TokenCache::new(60, 0);
        cache.put(R, "a.b.c", verified(now_s().saturating_sub(1)));
        assert!(cache.get(R, "a.b.c").is_none());
    }

    #[test]
    fn a_cache_of_no_lifetime_keeps_nothing() {
        let cache = TokenCache::new(0, 0);
        cache.put(R, "a.b.c", verified(now_s() + 600));
        assert!(cache.get(R, "a.b.c").is_none());
    }

    #[test]
    fn a_full_cache_lets_the_oldest_go() {
        let cache = TokenCache::new(60, 0);
        for token in 0..=CAPACITY {
            cache.put(R, &token.to_string(), verified(now_s() + 600));
        }
        assert!(cache.get(R, "0").is_none());
        assert!(cache.get(R, &CAPACITY.to_string()).is_some());
        assert_eq!(cache.entries().by_digest.len(), CAPACITY);
    }
}
