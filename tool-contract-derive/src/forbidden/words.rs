//! The default lists of forbidden words and the matching of a key's words against them, in
//! `const fn`s over ASCII bytes. This file has no dependencies: `tool-contract-derive` holds
//! an identical copy (`src/forbidden_words.rs`, kept identical by a test there), so that a
//! forbidden output field name is refused as the macro expands, at native speed, with these
//! very lists.

/// Forbidden words, wherever a run of a key's words spells one whole: these name the calling
/// machinery itself, bearer credentials, and short payment and one-time secrets (too short to
/// look for inside a word: `spin`, `hotpot`). Lowercase, without separators.
pub const FORBIDDEN_KEYS: &[&str] = &[
    "callid",
    "toolcallid",
    "tooluseid",
    "operationid",
    "idempotencykey",
    "sessionid",
    "bearer",
    "jwt",
    "pin",
    "otp",
    "totp",
    "hotp",
    "cvv",
    "cvv2",
    "cvc",
    "cvc2",
];

/// Forbidden word endings, wherever a key's word ends with one (the match may begin inside a
/// word and span several): credentials, keys and digests. `access_token`, `X-Api-Key`,
/// `set-cookie`, `aws_secret_access_key`, `request_sha256` all have one. Lowercase, without
/// separators.
pub const FORBIDDEN_KEY_SUFFIXES: &[&str] = &[
    "authorization",
    "cookie",
    "password",
    "passwd",
    "passphrase",
    "passcode",
    "secret",
    "token",
    "apikey",
    "accesskey",
    "privatekey",
    "signingkey",
    "credential",
    "credentials",
    "cardnumber",
    "accountnumber",
    "authcode",
    "securitycode",
    "sha256",
];

/// Forbidden last words: a key whose last word is one names that thing (`stripe_key`,
/// `service_key`: a key to a service), while the word elsewhere names something else
/// (`key_count`). Lowercase.
pub const FORBIDDEN_LAST_WORDS: &[&str] = &["key"];

/// Whether a word of `key` (ASCII) starts at byte `at`.
const fn word_starts_at(key: &[u8], at: usize) -> bool {
    if at >= key.len() || !key[at].is_ascii_alphanumeric() {
        return false;
    }
    if at == 0 {
        return true;
    }
    let (before, here) = (key[at - 1], key[at]);
    if !before.is_ascii_alphanumeric() {
        return true;
    }
    if !here.is_ascii_uppercase() {
        return false;
    }
    // `camelCase`, `md5Sum`, and the last capital of an acronym before a word: `APIKey`.
    before.is_ascii_lowercase()
        || before.is_ascii_digit()
        || (before.is_ascii_uppercase() && at + 1 < key.len() && key[at + 1].is_ascii_lowercase())
}

/// Whether a word of `key` (ASCII) ends just before byte `end`.
const fn word_ends_at(key: &[u8], end: usize) -> bool {
    end > 0
        && key[end - 1].is_ascii_alphanumeric()
        && (end == key.len() || !key[end].is_ascii_alphanumeric() || word_starts_at(key, end))
}

/// Where `word` (lowercase, no separators) begins if `key` spells it ending just before byte
/// `end`, its letters compared case-folded and separators between them skipped.
const fn spelled_before(key: &[u8], end: usize, word: &[u8]) -> Option<usize> {
    let (mut k, mut w) = (end, word.len());
    while w > 0 {
        while k > 0 && !key[k - 1].is_ascii_alphanumeric() {
            k -= 1;
        }
        if k == 0 {
            return None;
        }
        k -= 1;
        w -= 1;
        if key[k].to_ascii_lowercase() != word[w] {
            return None;
        }
    }
    Some(k)
}

/// Whether `key` (ASCII) holds `word` as a run of whole words (`whole`), or ends a word with
/// it.
pub(crate) const fn holds(key: &[u8], word: &[u8], whole: bool) -> bool {
    let mut end = 1;
    while end <= key.len() {
        if word_ends_at(key, end) {
            match spelled_before(key, end, word) {
                Some(start) if !whole || word_starts_at(key, start) => return true,
                _ => {}
            }
        }
        end += 1;
    }
    false
}

/// Whether the last word of `key` (ASCII) is `word` in the plural (`word` and an `s`): as a
/// run of whole words (`whole`), or ending that last word. Only the last word, the thing a key
/// names: `access_tokens` names tokens, `tokens_used` a count.
const fn ends_with_plural(key: &[u8], word: &[u8], whole: bool) -> bool {
    let mut end = key.len();
    while end > 0 && !key[end - 1].is_ascii_alphanumeric() {
        end -= 1;
    }
    if end < 2 || !key[end - 1].eq_ignore_ascii_case(&b's') || word_starts_at(key, end - 1) {
        return false;
    }
    match spelled_before(key, end - 1, word) {
        Some(start) => !whole || word_starts_at(key, start),
        None => false,
    }
}

/// Whether the default lists forbid the ASCII key `key`; other bytes separate words.
pub(crate) const fn is_forbidden_ascii(key: &[u8]) -> bool {
    let mut i = 0;
    while i < FORBIDDEN_KEYS.len() {
        let word = FORBIDDEN_KEYS[i].as_bytes();
        if holds(key, word, true) || ends_with_plural(key, word, true) {
            return true;
        }
        i += 1;
    }
    let mut i = 0;
    while i < FORBIDDEN_KEY_SUFFIXES.len() {
        let word = FORBIDDEN_KEY_SUFFIXES[i].as_bytes();
        if holds(key, word, false) || ends_with_plural(key, word, false) {
            return true;
        }
        i += 1;
    }
    let mut i = 0;
    while i < FORBIDDEN_LAST_WORDS.len() {
        let word = FORBIDDEN_LAST_WORDS[i].as_bytes();
        if last_word_is(key, word) {
            return true;
        }
        i += 1;
    }
    false
}

/// Whether the last word of `key` (ASCII) is `word`, whole.
const fn last_word_is(key: &[u8], word: &[u8]) -> bool {
    let mut end = key.len();
    while end > 0 && !key[end - 1].is_ascii_alphanumeric() {
        end -= 1;
    }
    if !word_ends_at(key, end) {
        return false;
    }
    match spelled_before(key, end, word) {
        Some(start) => word_starts_at(key, start),
        None => false,
    }
}
