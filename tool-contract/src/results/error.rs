//! `ModelError`: the error half of a model result, a catalog entry as the model reads it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::catalog::{Category, ErrorCode, Recovery};
use crate::contract::reader::{Reader, Stop};
use crate::contract::rules::Rules;
use crate::contract::shape::Shape;
use crate::contract::{ContractField, ReadField};
use crate::json::canonical::write as canonical;
use crate::json::encoding::infallible;
use crate::vocabulary::name::is_tool_name;
use crate::vocabulary::violation::{Constraint, MAX_VIOLATIONS, Violation, Violations};

/// The error half of a model result: a catalog entry as the model reads it.
///
/// ```
/// use tool_contract::ErrorCode;
/// use tool_contract::results::{ModelError, Recovery};
///
/// let error = ModelError::retry_after(ErrorCode::RateLimit, 2_500);
/// assert_eq!(error.recovery(), Recovery::RetryAfter);
/// assert_eq!(error.retry_after_ms(), Some(2_500));
/// assert_eq!(error.message(), ErrorCode::RateLimit.entry().message);
/// assert!(error.check().is_ok());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelError {
    code: ErrorCode,
    category: Category,
    message: String,
    recovery: Recovery,
    retry_after_ms: Option<u64>,
    paths: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    violations: Vec<ArgumentViolation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    next_tool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    alternate_source: Option<bool>,
}

impl ModelError {
    /// The code's entry as it stands, with the catalog's default wait where one applies.
    #[must_use]
    pub fn new(code: ErrorCode) -> Self {
        let entry = code.entry();
        ModelError {
            code,
            category: entry.category,
            message: entry.message.to_owned(),
            recovery: entry.recovery,
            retry_after_ms: entry.retry_after.map(|wait| wait.default_ms),
            paths: Vec::new(),
            violations: Vec::new(),
            next_tool: None,
            alternate_source: code.tells_alternate_source().then_some(false),
        }
    }

    /// The code with a wait of `ms` (a server's hint), kept within 1 ms and the catalog's
    /// maximum. For a code without a wait, the same as [`new`](Self::new).
    #[must_use]
    pub fn retry_after(code: ErrorCode, ms: u64) -> Self {
        let mut error = Self::new(code);
        if let Some(wait) = code.entry().retry_after {
            error.retry_after_ms = Some(ms.clamp(1, wait.max_ms));
        }
        error
    }

    /// `INVALID_ARGUMENTS` with the JSON Pointer of each violation in `paths`, and in
    /// `violations` each one's path and the rule it breaks, with the rule's value where the
    /// contract publishes one: never the value that broke it.
    ///
    /// ```
    /// use tool_contract::{ErrorCode, Violations};
    /// use tool_contract::results::ModelError;
    /// # use tool_contract::{ToolContract, ToolOutput};
    /// # /// Find a book.
    /// # #[derive(serde::Deserialize, ToolContract)]
    /// # #[tool_contract(output = Found, effect = read_only)]
    /// # struct FindBook { #[tool_contract(max_len = 13)] isbn: String }
    /// # #[derive(serde::Serialize, ToolOutput)]
    /// # struct Found { title: String }
    ///
    /// let arguments = br#"{"isbn":"9780141439518-and-more","shelf":3}"#;
    /// let refused: Violations = FindBook::parse_arguments(arguments).err().expect("refused");
    /// let error = serde_json::to_value(ModelError::invalid_arguments(&refused))?;
    /// assert_eq!(error["paths"], serde_json::json!(["/isbn", "/shelf"]));
    /// assert_eq!(error["violations"], serde_json::json!([
    ///     {"path": "/isbn", "constraint": "max_length", "expected": 13},
    ///     {"path": "/shelf", "constraint": "unknown_member"},
    /// ]));
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    #[must_use]
    pub fn invalid_arguments(violations: &Violations) -> Self {
        let mut error = Self::new(ErrorCode::InvalidArguments);
        for violation in violations {
            let path = violation.path();
            if !error.paths.iter().any(|seen| seen == path) {
                error.paths.push(path.to_owned());
            }
            let told = ArgumentViolation::of(violation);
            if !error.violations.contains(&told) {
                error.violations.push(told);
            }
        }
        error
    }

    /// `PREREQUISITE_REQUIRED`, naming the tool to call first (a registered tool's name; the
    /// dispatcher checks it, and so does verification).
    #[must_use]
    pub fn prerequisite(next_tool: impl Into<String>) -> Self {
        let mut error = Self::new(ErrorCode::PrerequisiteRequired);
        error.next_tool = Some(next_tool.into());
        error
    }

    /// The same error saying whether another source may be tried, for codes that
    /// [tell it](ErrorCode::tells_alternate_source); other codes are returned unchanged.
    ///
    /// ```
    /// use tool_contract::ErrorCode;
    /// use tool_contract::results::ModelError;
    ///
    /// let blocked = ModelError::new(ErrorCode::SourceBlocked).with_alternate_source(true);
    /// assert_eq!(blocked.alternate_source(), Some(true));
    /// assert_eq!(ModelError::new(ErrorCode::RateLimit).with_alternate_source(true).alternate_source(), None);
    /// ```
    #[must_use]
    pub fn with_alternate_source(mut self, alternate_source: bool) -> Self {
        if self.code.tells_alternate_source() {
            self.alternate_source = Some(alternate_source);
        }
        self
    }

    /// The code.
    #[must_use]
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The code's category.
    #[must_use]
    pub fn category(&self) -> Category {
        self.category
    }

    /// The safe message.
    #[must_use]
    pub fn message(&self) -> &str {
        &self.message
    }

    /// What the model should do next.
    #[must_use]
    pub fn recovery(&self) -> Recovery {
        self.recovery
    }

    /// How long to wait before calling again, for [`Recovery::RetryAfter`].
    #[must_use]
    pub fn retry_after_ms(&self) -> Option<u64> {
        self.retry_after_ms
    }

    /// For `INVALID_ARGUMENTS`, the JSON Pointers of the fields at fault.
    #[must_use]
    pub fn paths(&self) -> &[String] {
        &self.paths
    }

    /// For `INVALID_ARGUMENTS`, what is wrong at each path: the rule broken. Empty for every
    /// other code (and for an `INVALID_ARGUMENTS` written before this member existed).
    #[must_use]
    pub fn violations(&self) -> &[ArgumentViolation] {
        &self.violations
    }

    /// For [`Recovery::CallTool`], the tool to call first.
    #[must_use]
    pub fn next_tool(&self) -> Option<&str> {
        self.next_tool.as_deref()
    }

    /// For a source that failed, whether another source may be tried for the same fact: the
    /// hint beside the recovery. `None` for codes that do not tell it.
    #[must_use]
    pub fn alternate_source(&self) -> Option<bool> {
        self.alternate_source
    }

    /// Whether this error is exactly what the catalog says of its code.
    ///
    /// # Errors
    ///
    /// The first [`CatalogMismatch`] found.
    pub fn check(&self) -> Result<(), CatalogMismatch> {
        let entry = self.code.entry();
        if self.category != entry.category {
            return Err(CatalogMismatch::Category);
        }
        if self.message != entry.message {
            return Err(CatalogMismatch::Message);
        }
        if self.recovery != entry.recovery {
            return Err(CatalogMismatch::Recovery);
        }
        let wait_fits = match (entry.retry_after, self.retry_after_ms) {
            (Some(wait), Some(ms)) => (1..=wait.max_ms).contains(&ms),
            (None, None) => true,
            _ => false,
        };
        if !wait_fits {
            return Err(CatalogMismatch::RetryAfter);
        }
        let paths_fit = self.paths.is_empty()
            || (self.code == ErrorCode::InvalidArguments
                && self.paths.len() <= MAX_VIOLATIONS
                && self
                    .paths
                    .iter()
                    .all(|path| path.is_empty() || path.starts_with('/')));
        if !paths_fit {
            return Err(CatalogMismatch::Paths);
        }
        let violations_fit = self.violations.len() <= MAX_VIOLATIONS
            && self.violations.iter().all(|violation| {
                violation.expected.is_some() == violation.constraint.has_value()
                    && self.paths.contains(&violation.path)
            });
        if !violations_fit {
            return Err(CatalogMismatch::Violations);
        }
        let next_tool_fits = match &self.next_tool {
            None => entry.recovery != Recovery::CallTool,
            Some(name) => entry.recovery == Recovery::CallTool && is_tool_name(name),
        };
        if !next_tool_fits {
            return Err(CatalogMismatch::NextTool);
        }
        if self.alternate_source.is_some() != self.code.tells_alternate_source() {
            return Err(CatalogMismatch::AlternateSource);
        }
        Ok(())
    }
}

/// How an error differs from its catalog entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogMismatch {
    /// Another category.
    #[error("the category is not the catalog's")]
    Category,
    /// Another message.
    #[error("the message is not the catalog's")]
    Message,
    /// Another recovery.
    #[error("the recovery is not the catalog's")]
    Recovery,
    /// A wait where none applies, none where one does, or one beyond the catalog's bounds.
    #[error("the retry-after is not within the catalog's bounds")]
    RetryAfter,
    /// Paths on a code other than `INVALID_ARGUMENTS`, too many, or not JSON Pointers.
    #[error("the paths are not allowed here")]
    Paths,
    /// Violations on a code other than `INVALID_ARGUMENTS` (whose paths are empty), too
    /// many, at a path not in `paths`, or with a value where their rule has none (or none
    /// where it has one).
    #[error("the violations are not allowed here")]
    Violations,
    /// A `next_tool` where the recovery is not `call_tool`, none where it is, or not a tool
    /// name.
    #[error("next_tool does not fit the recovery")]
    NextTool,
    /// `alternate_source` on a code that does not tell it, or missing where it does.
    #[error("alternate_source does not fit the code")]
    AlternateSource,
}

/// One argument the model must change, as `INVALID_ARGUMENTS` tells it: where (a JSON
/// Pointer), which rule of the contract it breaks, and the rule's value where the contract
/// publishes one (`{"path":"/query","constraint":"max_length","expected":200}`). It never
/// holds the value that broke the rule: a value an attacker planted must not travel back to
/// the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArgumentViolation {
    path: String,
    constraint: Constraint,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expected: Option<Value>,
}

impl ArgumentViolation {
    /// What the model is told of `violation`.
    #[must_use]
    pub fn of(violation: &Violation) -> Self {
        let (constraint, expected) = violation.kind().constraint();
        ArgumentViolation {
            path: violation.path().to_owned(),
            constraint,
            expected,
        }
    }

    /// The JSON Pointer of the argument.
    #[must_use]
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The rule it breaks.
    #[must_use]
    pub fn constraint(&self) -> Constraint {
        self.constraint
    }

    /// The rule's value as the contract publishes it (`200` for `max_length`, `"integer"` for
    /// `type`), or `None` for a rule without one (`required`, `unknown_member`).
    #[must_use]
    pub fn expected(&self) -> Option<&Value> {
        self.expected.as_ref()
    }
}

// Its serde declaration is its only one: it is read with it, and written canonically from its
// serde form, so the bytes the model is sent are RFC 8785 of that form by construction.
impl ContractField for ModelError {
    type __Check<I: crate::contract::ToolContract> = crate::contract::bound::NoBounds;

    fn __shape() -> Shape {
        // Which members an error has depends on its code: the model result's schema gives one
        // alternative per catalog entry.
        Shape::FreeForm
    }

    fn __write_canonical(&self, out: &mut Vec<u8>) {
        let value = infallible(
            serde_json::to_value(self),
            "a model error serializes to strings, integers and booleans",
        );
        infallible(
            canonical::write_value(out, &value),
            "a model error holds no number beyond a double",
        );
    }
}

impl<'de> ReadField<'de> for ModelError {
    fn __read(reader: &mut Reader<'de, '_>, _rules: &Rules) -> Result<Option<Self>, Stop> {
        reader.read_serde("a model error")
    }
}
