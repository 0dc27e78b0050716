//! The one rule for tool names: what every supported provider accepts.
//!
//! OpenAI: `^[a-zA-Z0-9_-]+$`, at most 64 characters; Anthropic: `^[a-zA-Z0-9_-]{1,64}$`;
//! Gemini: a letter or `_` first, then `a-zA-Z0-9_.:-`, at most 64 (`../shared/PROVIDERS.md`,
//! "Tool names"). A name that satisfies all three: [`TOOL_NAME_PATTERN`].

/// The rule [`is_tool_name`] checks, as a regular expression (JSON Schema `pattern`).
pub const TOOL_NAME_PATTERN: &str = "^[A-Za-z_][A-Za-z0-9_-]{0,63}$";

/// Whether `name` fits every provider's tool-name rules: [`TOOL_NAME_PATTERN`].
///
/// A `const fn`, so that the derive checks every contract's name at compile time with this
/// very rule, and the registry and the catalog check names at run time with it too.
///
/// ```
/// use tool_contract::vocabulary::is_tool_name;
///
/// assert!(is_tool_name("get_order"));
/// assert!(!is_tool_name("7up"));
/// assert!(!is_tool_name("get.order"));
/// ```
#[must_use]
pub const fn is_tool_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.len() > 64 {
        return false;
    }
    if !(bytes[0].is_ascii_alphabetic() || bytes[0] == b'_') {
        return false;
    }
    let mut i = 1;
    while i < bytes.len() {
        let byte = bytes[i];
        if !(byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-') {
            return false;
        }
        i += 1;
    }
    true
}

#[cfg(test)]
mod tests {
    use regex::Regex;

    use super::*;

    #[test]
    fn the_pattern_and_the_function_agree() {
        let pattern = Regex::new(TOOL_NAME_PATTERN).expect("the pattern compiles");
        let alphabet = ['a', 'Z', '0', '9', '_', '-', '.', ' ', 'é', ':'];
        let mut names = vec![String::new()];
        for first in alphabet {
            names.push(first.to_string());
            for second in alphabet {
                names.push(format!("{first}{second}"));
            }
        }
        for length in [63, 64, 65] {
            names.push("a".repeat(length));
            names.push(format!("_{}", "-".repeat(length - 1)));
        }
        for name in &names {
            assert_eq!(is_tool_name(name), pattern.is_match(name), "{name:?}");
        }
    }
}
