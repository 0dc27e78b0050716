//! The one place that says which keys may never reach a model.

/// Key names forbidden wherever they appear, compared after normalisation (see
/// [`ForbiddenKeys`]): these name the calling machinery itself.
pub const FORBIDDEN_KEYS: &[&str] = &[
    "callid",
    "toolcallid",
    "tooluseid",
    "operationid",
    "idempotencykey",
    "sessionid",
];

/// Key endings forbidden wherever they appear, compared after normalisation: credentials and
/// digests. `access_token`, `X-Api-Key`, `set-cookie`, `request_sha256` all end in one.
pub const FORBIDDEN_KEY_SUFFIXES: &[&str] = &[
    "authorization",
    "cookie",
    "password",
    "passwd",
    "secret",
    "token",
    "apikey",
    "privatekey",
    "credentials",
    "sha256",
];

/// Whether `key` ends with `ending`, ignoring ASCII case and every `-` and `_` in `key`.
///
/// `ending` is already normalised (lowercase, no separators). With `whole`, the key must have
/// nothing more than the ending.
const fn ends_with_normalised(key: &str, ending: &str, whole: bool) -> bool {
    let key = key.as_bytes();
    let ending = ending.as_bytes();
    let mut k = key.len();
    let mut e = ending.len();
    while e > 0 {
        if k == 0 {
            return false;
        }
        k -= 1;
        let byte = key[k];
        if byte == b'-' || byte == b'_' {
            continue;
        }
        e -= 1;
        if byte.to_ascii_lowercase() != ending[e] {
            return false;
        }
    }
    if whole {
        while k > 0 {
            k -= 1;
            if key[k] != b'-' && key[k] != b'_' {
                return false;
            }
        }
    }
    true
}

/// Whether the default list forbids `key`. A `const fn`, so the derive can refuse forbidden
/// output field names at compile time with this very list.
#[must_use]
pub const fn is_forbidden_by_default(key: &str) -> bool {
    let mut i = 0;
    while i < FORBIDDEN_KEYS.len() {
        if ends_with_normalised(key, FORBIDDEN_KEYS[i], true) {
            return true;
        }
        i += 1;
    }
    let mut i = 0;
    while i < FORBIDDEN_KEY_SUFFIXES.len() {
        if ends_with_normalised(key, FORBIDDEN_KEY_SUFFIXES[i], false) {
            return true;
        }
        i += 1;
    }
    false
}

/// The keys a validation refuses in free-form values and raw input.
///
/// A key is normalised before it is compared: ASCII letters to lowercase, every `-` and `_`
/// dropped, so `Authorization`, `access_token`, `accessToken` and `X-Api-Key` are caught
/// however they are spelled. The default list is [`FORBIDDEN_KEYS`] (whole names) and
/// [`FORBIDDEN_KEY_SUFFIXES`] (endings); a registry can add whole names.
///
/// ```
/// use tool_contract::vocabulary::ForbiddenKeys;
///
/// let keys = ForbiddenKeys::default().with_name("tenant_id");
/// assert!(keys.is_forbidden("X-Api-Key"));
/// assert!(keys.is_forbidden("TenantId"));
/// assert!(!keys.is_forbidden("order_ref"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ForbiddenKeys {
    extra: Vec<String>,
}

impl ForbiddenKeys {
    /// The default list alone.
    pub const DEFAULT: ForbiddenKeys = ForbiddenKeys { extra: Vec::new() };

    /// The list with one more whole name, e.g. `tenant_id`.
    #[must_use]
    pub fn with_name(mut self, name: &str) -> Self {
        let normalised: String = name
            .chars()
            .filter(|c| *c != '-' && *c != '_')
            .map(|c| c.to_ascii_lowercase())
            .collect();
        if !normalised.is_empty() && !self.extra.contains(&normalised) {
            self.extra.push(normalised);
        }
        self
    }

    /// Whether `key` is forbidden.
    #[must_use]
    pub fn is_forbidden(&self, key: &str) -> bool {
        is_forbidden_by_default(key)
            || self
                .extra
                .iter()
                .any(|name| ends_with_normalised(key, name, true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_of_a_credential_is_caught() {
        for key in [
            "Authorization",
            "access_token",
            "accessToken",
            "X-Api-Key",
            "set-cookie",
            "password",
            "client_secret",
            "call_id",
            "operationId",
            "idempotency_key",
            "request_sha256",
        ] {
            assert!(is_forbidden_by_default(key), "{key}");
        }
    }

    #[test]
    fn ordinary_names_pass() {
        for key in ["order_ref", "status", "recall_id", "tokens_used", "id", ""] {
            assert!(!is_forbidden_by_default(key), "{key}");
        }
    }
}
