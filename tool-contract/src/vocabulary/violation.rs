//! What validation reports: every violation found, each at a JSON Pointer path.

use std::fmt;

use serde::Serialize;

use super::tier::SourceTier;
use crate::json::format::Format;
use crate::json::names::wire_names;
use crate::json::number::json_number;

/// The most violations one validation reports.
///
/// A hostile payload can hold millions of bad values; past this many, validation stops and
/// [`Violations::is_truncated`] says that more may exist.
pub const MAX_VIOLATIONS: usize = 64;

wire_names! {
    /// The JSON type of a value, as named by JSON Schema.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
    pub enum JsonType {
        /// `{...}`
        Object = "object",
        /// `[...]`
        Array = "array",
        /// `"..."`
        String = "string",
        /// A number with no fraction and no exponent.
        Integer = "integer",
        /// Any other number.
        Number = "number",
        /// `true` or `false`.
        Boolean = "boolean",
        /// `null`
        Null = "null",
    }
}

/// What is wrong at one path.
///
/// No kind carries the offending value itself: violations may be shown to a model, and a value
/// an attacker planted must not travel back through them.
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ViolationKind {
    /// The bytes are not JSON (or not UTF-8, or hold a lone surrogate escape).
    #[error("malformed JSON at byte {offset}: {reason}")]
    Syntax {
        /// Byte offset of the first byte that cannot be read.
        offset: usize,
        /// What the reader expected there.
        reason: &'static str,
    },
    /// Containers are nested deeper than the contract allows.
    #[error("nested deeper than {max} levels")]
    TooDeep {
        /// The allowed depth.
        max: usize,
    },
    /// The encoded value is larger than the contract allows.
    #[error("{actual} bytes, over the limit of {max}")]
    TooLarge {
        /// The allowed size in bytes.
        max: usize,
        /// The size found.
        actual: usize,
    },
    /// A key the contract does not declare.
    #[error("unknown field")]
    UnknownField,
    /// A declared key is absent (optional fields must be present, as `null`).
    #[error("missing field")]
    MissingField,
    /// The same key appears twice in one object.
    #[error("duplicate key")]
    DuplicateKey,
    /// A key whose name marks a credential or a control field.
    #[error("forbidden key")]
    ForbiddenKey,
    /// The value has another JSON type than the contract says; nothing is coerced.
    #[error("expected {expected}, found {found}")]
    WrongType {
        /// The type the contract declares.
        expected: JsonType,
        /// The type found.
        found: JsonType,
    },
    /// An integer outside the range the field can hold exactly.
    ///
    /// The range is the Rust type's, narrowed to I-JSON's ±(2^53−1) (RFC 7493 §2.2): outside
    /// it, canonical JSON cannot tell neighbouring integers apart, so no digest would bind one.
    #[error("integer outside {min}..={max}")]
    IntegerOutOfRange {
        /// The least value accepted.
        min: i64,
        /// The greatest value accepted.
        max: i64,
    },
    /// A number that an IEEE-754 double cannot hold exactly (`1e400`, `1e-400`,
    /// `9007199254740993`): accepting it would silently round it.
    #[error("number is not exactly representable as a double")]
    InexactNumber,
    /// A string outside the enum's finite set.
    #[error("not one of the allowed values")]
    NotInEnum {
        /// The values allowed.
        allowed: &'static [&'static str],
    },
    /// A string shorter than `min_len` Unicode scalar values.
    #[error("{actual} characters, fewer than {min}")]
    TooShort {
        /// The least length allowed.
        min: u32,
        /// The length found.
        actual: usize,
    },
    /// A string longer than `max_len` Unicode scalar values.
    #[error("{actual} characters, more than {max}")]
    TooLong {
        /// The greatest length allowed.
        max: u32,
        /// The length found.
        actual: usize,
    },
    /// A string the field's `pattern` does not match.
    #[error("does not match the pattern {pattern}")]
    PatternMismatch {
        /// The pattern, as declared.
        pattern: &'static str,
    },
    /// A string not in the field's named `format`.
    #[error("not a valid {format}")]
    InvalidFormat {
        /// The format declared.
        format: Format,
    },
    /// An array with more than `max_items` items.
    #[error("{actual} items, more than {max}")]
    TooManyItems {
        /// The greatest count allowed.
        max: u32,
        /// The count found.
        actual: usize,
    },
    /// A number below the field's `minimum`.
    #[error("below the minimum {minimum}")]
    BelowMinimum {
        /// The least value allowed.
        minimum: f64,
    },
    /// A number above the field's `maximum`.
    #[error("above the maximum {maximum}")]
    AboveMaximum {
        /// The greatest value allowed.
        maximum: f64,
    },
    /// A `bound` output field that differs from the input of this very call.
    #[error("differs from the input field `{input_field}` of this call")]
    BoundMismatch {
        /// The input field the value must equal.
        input_field: &'static str,
    },
    /// A `grounded` entity whose list of sources is empty.
    #[error("a grounded entity carries no source")]
    MissingSources,
    /// A source claims a higher tier than the contract declares for its tool: a payload
    /// cannot raise its own tier.
    #[error("the source tier is above the contract's `{declared}`")]
    TierAboveContract {
        /// The tier the contract declares.
        declared: SourceTier,
    },
    /// A value of a type read by its own rules (a model result's error, its data) that they
    /// refuse: a member missing or unknown, a duplicate member name, a number no double holds.
    #[error("not a valid {expected}")]
    Unreadable {
        /// What the value should have been.
        expected: &'static str,
    },
    /// A string whose JSON spelling has escapes, read into a `&str` field of a borrowed
    /// output, which can only point into the document as written (a `Cow<str>` field takes a
    /// decoded copy instead).
    #[error("a string with escapes cannot be borrowed")]
    BorrowedEscapes,
    /// A value a synthetic-data detector flags (a placeholder e-mail, a fictional phone
    /// number), on a field declared `reject_synthetic`.
    #[error("synthetic value ({detector})")]
    SyntheticValue {
        /// The detector that flagged it.
        detector: &'static str,
    },
}

wire_names! {
    /// The rule of the contract a violation breaks, as a model is told it in
    /// `INVALID_ARGUMENTS` (with, where the contract publishes one, the rule's value: see
    /// [`ViolationKind::constraint`]). Several kinds name one rule: the model needs to know what
    /// to change, not how the reader noticed.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
    #[non_exhaustive]
    pub enum Constraint {
        /// The bytes are JSON (UTF-8, well formed).
        JsonSyntax = "json_syntax",
        /// Containers nest at most this deep.
        MaxDepth = "max_depth",
        /// The encoded value is at most this many bytes.
        MaxBytes = "max_bytes",
        /// Only the declared members: this one is not.
        UnknownMember = "unknown_member",
        /// A declared member is missing (an optional one is present as `null`).
        Required = "required",
        /// Each member name once per object.
        DuplicateMember = "duplicate_member",
        /// Members that name credentials or control fields are refused.
        ForbiddenMember = "forbidden_member",
        /// The JSON type: the value is this type.
        Type = "type",
        /// An integer within this range, `[least, greatest]`.
        IntegerRange = "integer_range",
        /// A number an IEEE-754 double holds exactly.
        ExactNumber = "exact_number",
        /// One of these values.
        Enum = "enum",
        /// At least this many characters.
        MinLength = "min_length",
        /// At most this many characters.
        MaxLength = "max_length",
        /// Matches this regular expression.
        Pattern = "pattern",
        /// In this named format.
        Format = "format",
        /// At most this many items.
        MaxItems = "max_items",
        /// At least this number.
        Minimum = "minimum",
        /// At most this number.
        Maximum = "maximum",
        /// Equals the input field of this call named here.
        Bound = "bound",
        /// A grounded entity carries at least one source.
        Sources = "sources",
        /// A source's tier is at most this one.
        SourceTier = "source_tier",
        /// A string without escapes (a borrowed field).
        NoEscapes = "no_escapes",
        /// Not a placeholder or fictional value.
        NotSynthetic = "not_synthetic",
    }
}

impl Constraint {
    /// Whether the rule has a value a model is told with it (`max_length` 200), rather than
    /// being whole in its name (`required`).
    #[must_use]
    pub const fn has_value(self) -> bool {
        !matches!(
            self,
            Constraint::JsonSyntax
                | Constraint::UnknownMember
                | Constraint::Required
                | Constraint::DuplicateMember
                | Constraint::ForbiddenMember
                | Constraint::ExactNumber
                | Constraint::Sources
                | Constraint::NoEscapes
                | Constraint::NotSynthetic
        )
    }
}

impl ViolationKind {
    /// The rule this violation breaks, and the rule's value where the contract publishes one
    /// (a length, a pattern, a type, the allowed values). Never the value that broke it: this
    /// is what a model is told of a violation.
    ///
    /// ```
    /// use tool_contract::ViolationKind;
    /// use tool_contract::vocabulary::Constraint;
    ///
    /// let (constraint, value) = ViolationKind::TooLong { max: 100, actual: 250 }.constraint();
    /// assert_eq!((constraint, value), (Constraint::MaxLength, Some(100.into())));
    /// assert_eq!(ViolationKind::UnknownField.constraint(), (Constraint::UnknownMember, None));
    /// ```
    #[must_use]
    pub fn constraint(&self) -> (Constraint, Option<serde_json::Value>) {
        use serde_json::Value;
        match *self {
            ViolationKind::Syntax { .. } => (Constraint::JsonSyntax, None),
            ViolationKind::TooDeep { max } => (Constraint::MaxDepth, Some(max.into())),
            ViolationKind::TooLarge { max, .. } => (Constraint::MaxBytes, Some(max.into())),
            ViolationKind::UnknownField => (Constraint::UnknownMember, None),
            ViolationKind::MissingField => (Constraint::Required, None),
            ViolationKind::DuplicateKey => (Constraint::DuplicateMember, None),
            ViolationKind::ForbiddenKey => (Constraint::ForbiddenMember, None),
            ViolationKind::WrongType { expected, .. } => {
                (Constraint::Type, Some(expected.as_str().into()))
            }
            ViolationKind::IntegerOutOfRange { min, max } => {
                (Constraint::IntegerRange, Some(Value::from(vec![min, max])))
            }
            ViolationKind::InexactNumber => (Constraint::ExactNumber, None),
            ViolationKind::NotInEnum { allowed } => {
                (Constraint::Enum, Some(Value::from(allowed.to_vec())))
            }
            ViolationKind::TooShort { min, .. } => (Constraint::MinLength, Some(min.into())),
            ViolationKind::TooLong { max, .. } => (Constraint::MaxLength, Some(max.into())),
            ViolationKind::PatternMismatch { pattern } => {
                (Constraint::Pattern, Some(pattern.into()))
            }
            ViolationKind::InvalidFormat { format } => {
                (Constraint::Format, Some(format.as_str().into()))
            }
            ViolationKind::TooManyItems { max, .. } => (Constraint::MaxItems, Some(max.into())),
            ViolationKind::BelowMinimum { minimum } => {
                (Constraint::Minimum, Some(json_number(minimum)))
            }
            ViolationKind::AboveMaximum { maximum } => {
                (Constraint::Maximum, Some(json_number(maximum)))
            }
            ViolationKind::BoundMismatch { input_field } => {
                (Constraint::Bound, Some(input_field.into()))
            }
            ViolationKind::MissingSources => (Constraint::Sources, None),
            ViolationKind::TierAboveContract { declared } => {
                (Constraint::SourceTier, Some(declared.as_str().into()))
            }
            ViolationKind::Unreadable { expected } => (Constraint::Type, Some(expected.into())),
            ViolationKind::BorrowedEscapes => (Constraint::NoEscapes, None),
            ViolationKind::SyntheticValue { .. } => (Constraint::NotSynthetic, None),
        }
    }

    /// A stable snake_case name for the kind, fit for logs and metrics.
    #[must_use]
    pub const fn code(&self) -> &'static str {
        match self {
            ViolationKind::Syntax { .. } => "syntax",
            ViolationKind::TooDeep { .. } => "too_deep",
            ViolationKind::TooLarge { .. } => "too_large",
            ViolationKind::UnknownField => "unknown_field",
            ViolationKind::MissingField => "missing_field",
            ViolationKind::DuplicateKey => "duplicate_key",
            ViolationKind::ForbiddenKey => "forbidden_key",
            ViolationKind::WrongType { .. } => "wrong_type",
            ViolationKind::IntegerOutOfRange { .. } => "integer_out_of_range",
            ViolationKind::InexactNumber => "inexact_number",
            ViolationKind::NotInEnum { .. } => "not_in_enum",
            ViolationKind::TooShort { .. } => "too_short",
            ViolationKind::TooLong { .. } => "too_long",
            ViolationKind::PatternMismatch { .. } => "pattern_mismatch",
            ViolationKind::InvalidFormat { .. } => "invalid_format",
            ViolationKind::TooManyItems { .. } => "too_many_items",
            ViolationKind::BelowMinimum { .. } => "below_minimum",
            ViolationKind::AboveMaximum { .. } => "above_maximum",
            ViolationKind::BoundMismatch { .. } => "bound_mismatch",
            ViolationKind::MissingSources => "missing_sources",
            ViolationKind::TierAboveContract { .. } => "tier_above_contract",
            ViolationKind::SyntheticValue { .. } => "synthetic_value",
            ViolationKind::Unreadable { .. } => "unreadable",
            ViolationKind::BorrowedEscapes => "borrowed_escapes",
        }
    }
}

/// One violation: where (a JSON Pointer, RFC 6901) and what.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Violation {
    path: String,
    #[serde(flatten)]
    kind: ViolationKind,
}

impl Violation {
    /// A violation of `kind` at the JSON Pointer `path` (`""` is the whole document).
    #[must_use]
    pub fn new(path: impl Into<String>, kind: ViolationKind) -> Self {
        Violation {
            path: path.into(),
            kind,
        }
    }

    /// The JSON Pointer of the offending value, e.g. `/items/3/sku`.
    #[must_use]
    pub fn path(&self) -> &str {
        &self.path
    }

    /// What is wrong there.
    #[must_use]
    pub fn kind(&self) -> &ViolationKind {
        &self.kind
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.path.is_empty() {
            "(root)"
        } else {
            &self.path
        };
        write!(f, "{path}: {}", self.kind)
    }
}

impl std::error::Error for Violation {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.kind)
    }
}

/// Every violation one validation found, in document order, at most [`MAX_VIOLATIONS`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Violations {
    violations: Vec<Violation>,
    truncated: bool,
}

impl Violations {
    pub(crate) fn new(violations: Vec<Violation>, truncated: bool) -> Self {
        Violations {
            violations,
            truncated,
        }
    }

    /// The violations found.
    #[must_use]
    pub fn as_slice(&self) -> &[Violation] {
        &self.violations
    }

    /// How many violations were found (at most [`MAX_VIOLATIONS`]).
    #[must_use]
    pub fn len(&self) -> usize {
        self.violations.len()
    }

    /// Always `false` for a value returned by validation; present for API symmetry.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.violations.is_empty()
    }

    /// Whether validation stopped at [`MAX_VIOLATIONS`] with more left unreported.
    #[must_use]
    pub fn is_truncated(&self) -> bool {
        self.truncated
    }

    /// The JSON Pointer paths, without the values: what may be shown to a model.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.violations.iter().map(Violation::path)
    }

    /// Iterates over the violations.
    pub fn iter(&self) -> std::slice::Iter<'_, Violation> {
        self.violations.iter()
    }
}

impl<'a> IntoIterator for &'a Violations {
    type Item = &'a Violation;
    type IntoIter = std::slice::Iter<'a, Violation>;

    fn into_iter(self) -> Self::IntoIter {
        self.violations.iter()
    }
}

impl fmt::Display for Violations {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, violation) in self.violations.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{violation}")?;
        }
        if self.truncated {
            f.write_str("; (more not reported)")?;
        }
        Ok(())
    }
}

impl std::error::Error for Violations {}
