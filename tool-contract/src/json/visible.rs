//! JSON text for a person to read, in which no character hides or reorders what they see.
//!
//! JSON escapes decode to the same value, so the text still says exactly what runs: only how
//! it looks changes. Escaped, as `\uXXXX`: controls (`char::is_control`), whitespace other
//! than the space, the Bidi_Control characters of UAX #9 (which can make `exe.txt` read as
//! `txt.exe`), and the invisible Default_Ignorable_Code_Point ranges of Unicode's
//! DerivedCoreProperties.txt (zero-width characters, soft hyphen, variation selectors, tags).

use std::fmt::Write as _;

/// Whether `character` hides or reorders text when shown.
fn hides(character: char) -> bool {
    let code = u32::from(character);
    character.is_control()
        || (character.is_whitespace() && character != ' ')
        || matches!(
            code,
            // Bidi_Control (UAX #9).
            0x061C | 0x200E | 0x200F | 0x202A..=0x202E | 0x2066..=0x2069
            // Default_Ignorable_Code_Point.
            | 0x00AD | 0x034F | 0x115F | 0x1160 | 0x17B4 | 0x17B5 | 0x180B..=0x180F
            | 0x200B..=0x200D | 0x2060..=0x206F | 0x3164 | 0xFE00..=0xFE0F | 0xFEFF
            | 0xFFA0 | 0xFFF0..=0xFFF8 | 0x1BCA0..=0x1BCA3 | 0x1D173..=0x1D17A
            | 0xE0000..=0xE0FFF
        )
}

/// `json` (JSON text) with every character that [`hides`] written as a JSON escape. Such
/// characters only occur inside strings, where an escape means the same character.
pub(crate) fn escape_hidden(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for character in json.chars() {
        if character != '\n' && hides(character) {
            let mut units = [0; 2];
            for unit in character.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(character);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    #[test]
    fn hidden_characters_are_escaped_and_mean_the_same() {
        let value =
            json!({ "file": "invoice\u{202e}fdp.exe", "to": "bob\u{200b}@x", "tag": "a\u{e0041}" });
        let text = escape_hidden(&serde_json::to_string_pretty(&value).unwrap());
        assert!(
            text.contains("\\u202e") && text.contains("\\u200b"),
            "{text}"
        );
        assert!(text.contains("\\udb40\\udc41"), "{text}");
        assert!(!text.chars().any(|c| c != '\n' && hides(c)), "{text}");
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), value);
    }

    #[test]
    fn ordinary_text_is_left_as_it_is() {
        let text = "{\n  \"name\": \"Zoë Ångström 名前\"\n}";
        assert_eq!(escape_hidden(text), text);
    }
}
