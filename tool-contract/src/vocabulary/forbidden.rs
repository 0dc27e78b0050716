//! The one place that says which keys may never reach a model, nor be asked of one: the
//! rule is [`ForbiddenKeys`]'s.

use std::borrow::Cow;

use unicode_normalization::UnicodeNormalization;

mod words;

pub use words::{FORBIDDEN_KEY_SUFFIXES, FORBIDDEN_KEYS, FORBIDDEN_LAST_WORDS};
use words::{holds, is_forbidden_ascii};

/// `key` brought to ASCII as [`ForbiddenKeys`] says: NFKC, confusables read as the ASCII
/// they imitate, every other character a separator.
fn ascii_form(key: &str) -> Cow<'_, str> {
    if key.is_ascii() {
        return Cow::Borrowed(key);
    }
    let mut ascii = String::with_capacity(key.len());
    let mut buffer = [0; 4];
    for character in key.nfkc() {
        let character = disguised_letter(character).unwrap_or(character);
        if character.is_ascii() {
            ascii.push(character);
            continue;
        }
        let before = ascii.len();
        let skeleton = unicode_security::skeleton(character.encode_utf8(&mut buffer));
        ascii.extend(skeleton.filter(char::is_ascii_alphanumeric));
        if ascii.len() == before {
            ascii.push('_');
        }
    }
    Cow::Owned(ascii)
}

/// The ASCII letter or digit a character that neither NFKC nor the confusables skeleton maps
/// stands for, where it spells one plainly: Unicode tag characters (U+E0020..U+E007E, the
/// ASCII block shifted), negative circled and negative squared capitals (U+1F150..U+1F169,
/// U+1F170..U+1F189) and the small capitals of the IPA and phonetic blocks (their names,
/// `LATIN LETTER SMALL CAPITAL X`, in the Unicode Character Database).
fn disguised_letter(character: char) -> Option<char> {
    let code = u32::from(character);
    let shifted = |from: u32, first: u8| {
        u8::try_from(code - from)
            .ok()
            .map(|offset| char::from(first + offset))
    };
    match code {
        0xE0030..=0xE0039 => shifted(0xE0030, b'0'),
        0xE0041..=0xE005A => shifted(0xE0041, b'a'),
        0xE0061..=0xE007A => shifted(0xE0061, b'a'),
        0x1F150..=0x1F169 => shifted(0x1F150, b'a'),
        0x1F170..=0x1F189 => shifted(0x1F170, b'a'),
        _ => SMALL_CAPITALS
            .iter()
            .find(|(small, _)| *small == character)
            .map(|(_, letter)| *letter),
    }
}

/// Each `LATIN LETTER SMALL CAPITAL` with the letter it is.
const SMALL_CAPITALS: [(char, char); 25] = [
    ('\u{1D00}', 'a'),
    ('\u{0299}', 'b'),
    ('\u{1D04}', 'c'),
    ('\u{1D05}', 'd'),
    ('\u{1D07}', 'e'),
    ('\u{A730}', 'f'),
    ('\u{0262}', 'g'),
    ('\u{029C}', 'h'),
    ('\u{026A}', 'i'),
    ('\u{1D0A}', 'j'),
    ('\u{1D0B}', 'k'),
    ('\u{029F}', 'l'),
    ('\u{1D0D}', 'm'),
    ('\u{0274}', 'n'),
    ('\u{1D0F}', 'o'),
    ('\u{1D18}', 'p'),
    ('\u{A7AF}', 'q'),
    ('\u{0280}', 'r'),
    ('\u{A731}', 's'),
    ('\u{1D1B}', 't'),
    ('\u{1D1C}', 'u'),
    ('\u{1D20}', 'v'),
    ('\u{1D21}', 'w'),
    ('\u{028F}', 'y'),
    ('\u{1D22}', 'z'),
];

/// `name` as the lists hold words: its ASCII form's letters and digits, lowercase.
fn word_of(name: &str) -> String {
    ascii_form(name)
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|character| character.to_ascii_lowercase())
        .collect()
}

/// The keys a validation refuses in free-form values and raw input, and the derives refuse as
/// field names: the default lists, the words a registry adds, less the names it allows on
/// purpose.
///
/// A key is read as words, the way people write names: split at every character that is not
/// an ASCII letter or digit (`_`, `-`, `.`, spaces, and anything invisible) and where
/// `camelCase` and `ACRONYMCase` change case. A key is forbidden when
///
/// 1. a run of its words spells one of [`FORBIDDEN_KEYS`], from a word's start to a word's
///    end: the calling machinery (`call_id`, `operationId`, `idempotency_key`, `session_id`),
///    bearer credentials (`bearer`, `jwt`), and payment and one-time secrets too short to look
///    for inside a word (`pin`, `otp`, `cvv`, `cvc`: `card_pin`, `otp_code`, but not `spin`);
/// 2. a word of it ends with one of [`FORBIDDEN_KEY_SUFFIXES`]: credentials, keys, payment
///    numbers and digests (`access_token`, `X-Api-Key`, `client_secret`, `set-cookie`,
///    `card_number`, `account_number`, `auth_code`, `request_sha256`);
/// 3. its last word is one of [`FORBIDDEN_LAST_WORDS`]: `key`, a key to a service
///    (`stripe_key`, `service_key`), where elsewhere the word names something else
///    (`key_count`);
///
/// and a key's last word in the plural counts as the word (`access_tokens`, `call_ids`).
/// `aws_secret_access_key` holds the word `secret`; `tokens_used` holds no listed word
/// (`tokens` is another word, not the last).
///
/// A name that only contains a secret's name as a word is refused all the same
/// (`token_count`, `password_reset_required`): the lists err toward the model never seeing a
/// credential. Such a field is allowed on purpose, and only it: `#[tool_output(allow_forbidden_key)]`
/// on an output field, `#[tool_contract(allow_forbidden_key)]` on an input field, or
/// [`ForbiddenKeys::allowing`] for free-form values.
///
/// Before that, a key that is not ASCII is brought to ASCII: NFKC (fullwidth `ｔｏｋｅｎ` is
/// `token`), then each other character drawn to look like an ASCII letter or digit is read
/// as it (Unicode's confusables, as `unicode-security`'s skeleton maps them: Cyrillic `о` is
/// `o`), and every character left over, invisible format characters (`to\u{2060}ken`,
/// `pass\u{ad}word`) among them, separates words. Case is compared folded.
///
/// ```
/// use tool_contract::vocabulary::ForbiddenKeys;
///
/// let keys = ForbiddenKeys::default().with_name("tenant_id");
/// assert!(keys.is_forbidden("X-Api-Key"));
/// assert!(keys.is_forbidden("aws_secret_access_key"));
/// assert!(keys.is_forbidden("ｔｏｋｅｎ"));
/// assert!(keys.is_forbidden("TenantId"));
/// assert!(!keys.is_forbidden("tokens_used"));
///
/// // A name that only looks like a credential, allowed on purpose.
/// assert!(keys.is_forbidden("token_count"));
/// let keys = keys.allowing("token_count");
/// assert!(!keys.is_forbidden("tokenCount"));
/// assert!(keys.is_forbidden("token"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ForbiddenKeys {
    extra: Vec<String>,
    allowed: Vec<String>,
}

impl ForbiddenKeys {
    /// The default lists alone.
    pub const DEFAULT: ForbiddenKeys = ForbiddenKeys {
        extra: Vec::new(),
        allowed: Vec::new(),
    };

    /// The lists with one more forbidden word, e.g. `tenant_id`: a key holding it as a run of
    /// whole words is forbidden.
    #[must_use]
    pub fn with_name(mut self, name: &str) -> Self {
        let word = word_of(name);
        if !word.is_empty() && !self.extra.contains(&word) {
            self.extra.push(word);
        }
        self
    }

    /// The lists with `name` allowed on purpose: a key whose letters and digits are the same
    /// (case folded, separators aside) is never forbidden, whatever it holds. For a field
    /// that only looks like a credential (`token_count`); everything else stays forbidden.
    #[must_use]
    pub fn allowing(mut self, name: &str) -> Self {
        let word = word_of(name);
        if !word.is_empty() && !self.allowed.contains(&word) {
            self.allowed.push(word);
        }
        self
    }

    /// Whether `key` is forbidden.
    #[must_use]
    pub fn is_forbidden(&self, key: &str) -> bool {
        let ascii = ascii_form(key);
        let ascii = ascii.as_bytes();
        let forbidden = is_forbidden_ascii(ascii)
            || self
                .extra
                .iter()
                .any(|word| holds(ascii, word.as_bytes(), true));
        // The allowed names are looked up only for a key that would be refused.
        forbidden && (self.allowed.is_empty() || !self.allowed.contains(&word_of(key)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forbidden(key: &str) -> bool {
        ForbiddenKeys::DEFAULT.is_forbidden(key)
    }

    #[test]
    fn every_spelling_of_a_credential_is_caught() {
        for key in [
            "Authorization",
            "access_token",
            "accessToken",
            "accesstoken",
            "X-Api-Key",
            "APIKey",
            "set-cookie",
            "password",
            "client_secret",
            "call_id",
            "tool_call_id",
            "operationId",
            "idempotency_key",
            "request_sha256",
        ] {
            assert!(is_forbidden_ascii(key.as_bytes()), "{key}");
            assert!(forbidden(key), "{key}");
        }
    }

    #[test]
    fn payment_and_one_time_secrets_and_service_keys_are_caught() {
        for key in [
            "cvv",
            "CVV2",
            "card_cvc",
            "pin",
            "card_pin",
            "pinCode",
            "otp",
            "otp_code",
            "totp",
            "card_number",
            "cardNumber",
            "account_number",
            "bank_account_number",
            "auth_code",
            "authCode",
            "security_code",
            "passcode",
            "stripe_key",
            "service_key",
            "openaiKey",
        ] {
            assert!(is_forbidden_ascii(key.as_bytes()), "{key}");
            assert!(forbidden(key), "{key}");
        }
        for key in [
            "spin",
            "pinned",
            "hotpot",
            "key_count",
            "keyboard",
            "monkey",
            "keys",
        ] {
            assert!(!forbidden(key), "{key}");
        }
    }

    #[test]
    fn a_forbidden_word_anywhere_in_a_name_is_caught() {
        for key in [
            "aws_secret_access_key",
            "SecretAccessKey",
            "private key",
            "signing_key",
            "bearer",
            "Bearer_value",
            "jwt",
            "user_jwt",
            "api key",
            "api.key",
            "password_hint",
            // A secret's name as a word refuses a key: allowed on purpose only.
            "token_count",
            "password_reset_required",
        ] {
            assert!(forbidden(key), "{key}");
        }
    }

    #[test]
    fn other_spellings_of_a_forbidden_word_are_caught() {
        for key in [
            "to\u{2060}ken",
            "pass\u{ad}word",
            "pa\u{200b}ss\u{200b}word",
            "ｔｏｋｅｎ",
            "ＡＰＩ＿ＫＥＹ",
            "t\u{43e}ken",
            "\u{441}ookie",
            "ca\u{200b}ll_id",
            "secret\u{fe0f}",
        ] {
            assert!(forbidden(key), "{key:?}");
        }
    }

    #[test]
    fn the_plural_of_a_listed_word_ending_a_key_is_caught() {
        for key in [
            "secrets",
            "passwords",
            "api_keys",
            "apiKeys",
            "access_tokens",
            "cookies",
            "private_keys",
            "session_ids",
            "call_ids",
            "client_secrets",
            "jwts",
            "AccessTokens",
        ] {
            assert!(is_forbidden_ascii(key.as_bytes()), "{key}");
            assert!(forbidden(key), "{key}");
        }
        for key in [
            "tokens_used",
            "secrets_count",
            "recall_ids",
            "keys",
            "monkeys",
        ] {
            assert!(!forbidden(key), "{key}");
        }
    }

    #[test]
    fn letters_in_disguise_spelling_a_listed_word_are_caught() {
        let tags: String = "token"
            .chars()
            .map(|c| char::from_u32(0xE0000 + u32::from(c)).unwrap())
            .collect();
        let negative_circled: String = "TOKEN"
            .chars()
            .map(|c| char::from_u32(0x1F150 + u32::from(c) - 0x41).unwrap())
            .collect();
        let negative_squared: String = "SECRET"
            .chars()
            .map(|c| char::from_u32(0x1F170 + u32::from(c) - 0x41).unwrap())
            .collect();
        for key in [
            tags.as_str(),
            negative_circled.as_str(),
            negative_squared.as_str(),
            "\u{1D1B}\u{1D0F}\u{1D0B}\u{1D07}\u{0274}",
            "\u{1D18}\u{1D00}\u{A731}\u{A731}\u{1D21}\u{1D0F}\u{0280}\u{1D05}",
        ] {
            assert!(forbidden(key), "{key:?}");
        }
    }

    #[test]
    fn ordinary_names_pass() {
        for key in [
            "order_ref",
            "status",
            "recall_id",
            "tokens_used",
            "id",
            "",
            "keyboard",
            "monkey",
            "secretary",
            "prénom",
            "名前",
        ] {
            assert!(!forbidden(key), "{key}");
        }
    }

    #[test]
    fn a_name_allowed_on_purpose_passes_and_nothing_else_does() {
        let keys = ForbiddenKeys::default().allowing("token_count");
        assert!(!keys.is_forbidden("token_count"));
        assert!(!keys.is_forbidden("TokenCount"));
        assert!(keys.is_forbidden("token_counts"));
        assert!(keys.is_forbidden("access_token"));
    }

    #[test]
    fn added_words_are_whole_words() {
        let keys = ForbiddenKeys::default().with_name("tenant_id");
        assert!(keys.is_forbidden("tenantId"));
        assert!(keys.is_forbidden("x_tenant_id"));
        assert!(!keys.is_forbidden("subtenant_id"));
    }
}
