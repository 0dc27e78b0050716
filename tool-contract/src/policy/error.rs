//! What a dispatcher's build says of a policy it refused: where, and what.

use std::fmt;

/// A policy problem found when a dispatcher is built: where, and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyError {
    pub(super) file: String,
    pub(super) policy: Option<String>,
    pub(super) line: Option<usize>,
    pub(super) column: Option<usize>,
    pub(super) message: String,
}

impl PolicyError {
    pub(super) fn schema(message: String) -> Self {
        PolicyError {
            file: String::new(),
            policy: None,
            line: None,
            column: None,
            message,
        }
    }

    /// The name [`Policies::cedar`](super::Policies::cedar) was given for the text; empty for
    /// a problem of the schema.
    #[must_use]
    pub fn file(&self) -> &str {
        &self.file
    }

    /// The policy's id (`@id`, or `policy0`, `policy1`, … by place), when the problem is one
    /// policy's.
    #[must_use]
    pub fn policy(&self) -> Option<&str> {
        self.policy.as_deref()
    }

    /// The line of the text the problem is on (1-based), when Cedar says.
    #[must_use]
    pub fn line(&self) -> Option<usize> {
        self.line
    }

    /// The column (1-based, in characters), when Cedar says.
    #[must_use]
    pub fn column(&self) -> Option<usize> {
        self.column
    }

    /// What is wrong, in Cedar's words.
    #[must_use]
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.file.is_empty() {
            f.write_str("the Cedar schema")?;
        } else {
            f.write_str(&self.file)?;
        }
        if let (Some(line), Some(column)) = (self.line, self.column) {
            write!(f, ":{line}:{column}")?;
        }
        if let Some(policy) = &self.policy {
            write!(f, ": policy {policy:?}")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for PolicyError {}
