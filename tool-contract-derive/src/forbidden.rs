//! The runtime's default forbidden output keys, checked as the macro expands: the same lists
//! and the same matching (`words`, an identical copy of the runtime's
//! `vocabulary/forbidden/words.rs`, which a test below holds equal), on the same ASCII form.
//! Natively here, where a constant the runtime evaluated per field cost rustc more than all
//! else the derive emits.

mod words;

/// Whether the runtime's default lists forbid the output key `key`.
pub fn is_forbidden(key: &str) -> bool {
    words::is_forbidden_ascii(ascii_form(key).as_bytes())
}

/// `key` as the runtime's forbidden-key check reads it (`tool_contract::vocabulary`'s
/// `ascii_form`, which a proc-macro crate cannot call): NFKC, then each character drawn to
/// look like ASCII read as it, every other character beyond ASCII a separator.
fn ascii_form(key: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
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
    ascii
}

/// The letter a character neither NFKC nor the skeleton maps stands for, as the runtime's
/// `vocabulary::forbidden` reads it (the same ranges and table): tag characters, negative
/// circled and squared capitals, small capitals.
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
        _ => "\u{1D00}\u{0299}\u{1D04}\u{1D05}\u{1D07}\u{A730}\u{0262}\u{029C}\u{026A}\u{1D0A}\u{1D0B}\u{029F}\u{1D0D}\u{0274}\u{1D0F}\u{1D18}\u{A7AF}\u{0280}\u{A731}\u{1D1B}\u{1D1C}\u{1D20}\u{1D21}\u{028F}\u{1D22}"
            .chars()
            .zip("abcdefghijklmnopqrstuvwyz".chars())
            .find(|(small, _)| *small == character)
            .map(|(_, letter)| letter),
    }
}

#[cfg(test)]
mod tests {
    use super::is_forbidden;

    #[test]
    fn the_words_are_the_runtimes_own() {
        assert_eq!(
            include_str!("forbidden/words.rs"),
            include_str!("../../tool-contract/src/vocabulary/forbidden/words.rs"),
            "edit both copies alike"
        );
    }

    #[test]
    fn keys_read_as_the_runtime_reads_them() {
        for key in [
            "access_token",
            "X-Api-Key",
            "ａｃｃｅｓｓ_ｔｏｋｅｎ",
            "to\u{2060}ken",
        ] {
            assert!(is_forbidden(key), "{key}");
        }
        for key in ["tokens_used", "order_ref", "keyboard"] {
            assert!(!is_forbidden(key), "{key}");
        }
    }
}
