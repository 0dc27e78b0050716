//! Encodings that cannot fail.

use std::fmt;

/// The value of an encoding that cannot fail, for the reason `invariant` states.
///
/// Every caller holds an invariant that rules the error out (a `Value` always serializes,
/// validated arguments are I-JSON, canonical JSON is UTF-8), so an error here is a bug in this
/// crate, never an answer to input. It fails loudly, with a panic that names the invariant,
/// and never goes on with a stand-in: an empty or default encoding would be hashed, sent or
/// stored as if it were the value.
#[track_caller]
pub(crate) fn infallible<T, E: fmt::Display>(result: Result<T, E>, invariant: &'static str) -> T {
    match result {
        Ok(value) => value,
        Err(error) => panic!("tool-contract bug: {invariant} ({error})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[should_panic(expected = "tool-contract bug: canonical JSON is UTF-8")]
    fn a_broken_invariant_fails_loudly() {
        let broken: Result<(), &str> = Err("invalid UTF-8");
        infallible(broken, "canonical JSON is UTF-8");
    }
}
