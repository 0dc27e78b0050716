//! The constraints a field may declare beyond its type, and the patterns among them.

use std::fmt;
use std::sync::OnceLock;

use regex::Regex;

use crate::json::format::Format;
use crate::vocabulary::limits::FreeFormLimits;
use crate::vocabulary::synthetic::SyntheticRule;
use crate::vocabulary::violation::ViolationKind;

/// A `pattern = "..."` rule: its source and, compiled on first use, its regex.
///
/// The derive checks the syntax at compile time. Should the compiled program still not fit the
/// regex engine's size limit, every value fails the pattern: the check fails closed.
pub struct Pattern {
    source: &'static str,
    regex: OnceLock<Option<Regex>>,
}

impl Pattern {
    /// A pattern from its source text (Rust `regex` syntax; unanchored, as in JSON Schema).
    #[must_use]
    pub const fn new(source: &'static str) -> Self {
        Pattern {
            source,
            regex: OnceLock::new(),
        }
    }

    /// The pattern as declared.
    #[must_use]
    pub const fn source(&self) -> &'static str {
        self.source
    }

    /// Whether `value` contains a match.
    #[must_use]
    pub fn is_match(&self, value: &str) -> bool {
        self.regex
            .get_or_init(|| Regex::new(self.source).ok())
            .as_ref()
            .is_some_and(|regex| regex.is_match(value))
    }
}

impl fmt::Debug for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Pattern").field(&self.source).finish()
    }
}

/// The constraints declared on one field, beyond its type.
///
/// Length counts Unicode scalar values; `minimum`/`maximum` are inclusive.
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    min_len: Option<u32>,
    max_len: Option<u32>,
    pattern: Option<&'static Pattern>,
    format: Option<Format>,
    max_items: Option<u32>,
    minimum: Option<f64>,
    maximum: Option<f64>,
    free_form: Option<FreeFormLimits>,
    grounded: bool,
    synthetic: Option<&'static SyntheticRule>,
}

impl Rules {
    /// No constraint beyond the type.
    pub const NONE: Rules = Rules {
        min_len: None,
        max_len: None,
        pattern: None,
        format: None,
        max_items: None,
        minimum: None,
        maximum: None,
        free_form: None,
        grounded: false,
        synthetic: None,
    };

    /// With a least string length.
    #[must_use]
    pub const fn with_min_len(mut self, n: u32) -> Self {
        self.min_len = Some(n);
        self
    }

    /// With a greatest string length.
    #[must_use]
    pub const fn with_max_len(mut self, n: u32) -> Self {
        self.max_len = Some(n);
        self
    }

    /// With a pattern strings must match.
    #[must_use]
    pub const fn with_pattern(mut self, pattern: &'static Pattern) -> Self {
        self.pattern = Some(pattern);
        self
    }

    /// With a named format strings must have.
    #[must_use]
    pub const fn with_format(mut self, format: Format) -> Self {
        self.format = Some(format);
        self
    }

    /// With a greatest item count for arrays.
    #[must_use]
    pub const fn with_max_items(mut self, n: u32) -> Self {
        self.max_items = Some(n);
        self
    }

    /// With a least number.
    #[must_use]
    pub const fn with_minimum(mut self, minimum: f64) -> Self {
        self.minimum = Some(minimum);
        self
    }

    /// With a greatest number.
    #[must_use]
    pub const fn with_maximum(mut self, maximum: f64) -> Self {
        self.maximum = Some(maximum);
        self
    }

    /// With the limits of a free-form JSON value.
    #[must_use]
    pub const fn with_free_form(mut self, limits: FreeFormLimits) -> Self {
        self.free_form = Some(limits);
        self
    }

    /// The least string length, if any.
    #[must_use]
    pub const fn min_len(&self) -> Option<u32> {
        self.min_len
    }

    /// The greatest string length, if any.
    #[must_use]
    pub const fn max_len(&self) -> Option<u32> {
        self.max_len
    }

    /// The pattern, if any.
    #[must_use]
    pub const fn pattern(&self) -> Option<&'static Pattern> {
        self.pattern
    }

    /// The named format, if any.
    #[must_use]
    pub const fn format(&self) -> Option<Format> {
        self.format
    }

    /// The greatest item count, if any.
    #[must_use]
    pub const fn max_items(&self) -> Option<u32> {
        self.max_items
    }

    /// The least number, if any.
    #[must_use]
    pub const fn minimum(&self) -> Option<f64> {
        self.minimum
    }

    /// The greatest number, if any.
    #[must_use]
    pub const fn maximum(&self) -> Option<f64> {
        self.maximum
    }

    /// The limits of a free-form JSON value, if the field is one.
    #[must_use]
    pub const fn free_form(&self) -> Option<FreeFormLimits> {
        self.free_form
    }

    /// Marked `grounded`: the value (each item, for a list) must carry one or more sources.
    #[must_use]
    pub const fn with_grounded(mut self) -> Self {
        self.grounded = true;
        self
    }

    /// With synthetic-data detectors on the string values.
    #[must_use]
    pub const fn with_synthetic(mut self, rule: &'static SyntheticRule) -> Self {
        self.synthetic = Some(rule);
        self
    }

    /// Calls `report` with each way `value` breaks the string rules, in the order length,
    /// pattern, format; whether it broke none. A `report` that fails stops the checks.
    ///
    /// Always in line: the common case is two comparisons, and left to the optimizer's
    /// judgement the call was kept in some builds and not others (400 instructions a ~1 KiB
    /// validation apart).
    #[inline(always)]
    pub(crate) fn check_str<E>(
        &self,
        value: &str,
        mut report: impl FnMut(ViolationKind) -> Result<(), E>,
    ) -> Result<bool, E> {
        let mut ok = true;
        // A string has at most one character per byte and at least one per four, so most
        // lengths are settled without counting.
        let bytes = value.len();
        let max_settled = self.max_len.is_none_or(|max| bytes <= max as usize);
        let min_settled = self
            .min_len
            .is_none_or(|min| bytes.div_ceil(4) >= min as usize);
        if !(max_settled && min_settled) {
            let actual = value.chars().count();
            if let Some(min) = self.min_len.filter(|min| actual < *min as usize) {
                report(ViolationKind::TooShort { min, actual })?;
                ok = false;
            }
            if let Some(max) = self.max_len.filter(|max| actual > *max as usize) {
                report(ViolationKind::TooLong { max, actual })?;
                ok = false;
            }
        }
        if let Some(pattern) = self.pattern.filter(|pattern| !pattern.is_match(value)) {
            report(ViolationKind::PatternMismatch {
                pattern: pattern.source(),
            })?;
            ok = false;
        }
        if let Some(format) = self.format.filter(|format| !format.matches(value)) {
            report(ViolationKind::InvalidFormat { format })?;
            ok = false;
        }
        Ok(ok)
    }

    /// Whether `value` breaks any string rule.
    pub(crate) fn breaks_string(&self, value: &str) -> bool {
        // Stops at the first: nothing is reported.
        self.check_str(value, |_| Err(())) != Ok(true)
    }

    /// Whether the value must carry sources.
    #[must_use]
    pub const fn grounded(&self) -> bool {
        self.grounded
    }

    /// The synthetic-data detectors, if any.
    #[must_use]
    pub const fn synthetic(&self) -> Option<&'static SyntheticRule> {
        self.synthetic
    }
}
