//! Why a JSON text or value has no canonical form.

/// Why a JSON text or value has no canonical form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CanonicalError {
    /// The text is not JSON, or not I-JSON: bad syntax, invalid UTF-8, a lone surrogate, a
    /// number beyond the range of a double, or nesting deeper than
    /// [`MAX_NESTING`](crate::json::MAX_NESTING) levels.
    #[error("not I-JSON at line {line}, column {column}: {reason}")]
    Invalid {
        /// 1-based line of the fault.
        line: usize,
        /// 1-based column of the fault.
        column: usize,
        /// What is wrong there.
        reason: String,
    },
    /// An object names one member twice; I-JSON leaves no way to choose between them.
    #[error("an object has the member name {name:?} twice")]
    DuplicateKey {
        /// The repeated name.
        name: String,
    },
    /// A number that is not a finite double (only possible in a `Value` built with
    /// serde_json's `arbitrary_precision`).
    #[error("the number {0} is not a finite IEEE-754 double")]
    NonFiniteNumber(String),
}
