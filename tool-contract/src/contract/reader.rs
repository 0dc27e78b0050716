//! One pass over untrusted JSON bytes: the syntax, the limits, and every violation on the way.
//!
//! Generated validators drive a [`Reader`] token by token and build the typed value as they
//! go, so nothing is parsed into a `serde_json::Value` first and walked again. A violation is
//! recorded and reading goes on, so one call reports them all; only malformed JSON, a depth
//! over the limit or [`MAX_VIOLATIONS`] stop it.

use std::borrow::Cow;
use std::fmt::Write as _;

use serde_json::{Map, Number, Value};
use smallvec::SmallVec;

use super::rules::Rules;
use crate::json::canonical::{self, CanonicalError};
use crate::json::depth;
use crate::json::encoding::infallible;
use crate::json::number::{self, IntegerError};
use crate::json::scan::find_string_special;
use crate::vocabulary::forbidden::ForbiddenKeys;
use crate::vocabulary::limits::{FreeFormLimits, Limits};
use crate::vocabulary::synthetic::{Stripped, SyntheticAction};
use crate::vocabulary::tier::SourceTier;
use crate::vocabulary::violation::{
    JsonType, MAX_VIOLATIONS, Violation, ViolationKind, Violations,
};

/// Reading cannot go on: the reason is already recorded as a violation.
#[derive(Debug)]
pub struct Stop(());

/// One step of the path to the value being read. `Copy`, so stepping back costs nothing.
#[derive(Debug, Clone, Copy)]
enum Segment<'a> {
    /// A key as it is.
    Key(&'a str),
    /// A key as the document spells it, escapes and all; decoded only for a report.
    Escaped(&'a str),
    Index(usize),
}

/// An object key read from the document.
#[derive(Debug)]
pub struct Key<'a> {
    /// The text between the quotes, as written.
    raw: &'a str,
    /// The key with escapes decoded.
    text: Cow<'a, str>,
}

impl<'a> Key<'a> {
    fn segment(&self) -> Segment<'a> {
        match &self.text {
            Cow::Borrowed(text) => Segment::Key(text),
            Cow::Owned(_) => Segment::Escaped(self.raw),
        }
    }
}

impl std::ops::Deref for Key<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        &self.text
    }
}

/// A position in the path, to return to when the step below it is read.
#[derive(Debug, Clone, Copy)]
#[must_use]
pub struct PathMark(usize);

/// An open object being read key by key.
#[derive(Debug)]
pub struct ObjectCursor {
    first: bool,
}

/// An open array being read item by item.
#[derive(Debug)]
pub struct ArrayCursor {
    first: bool,
}

/// The value of an input field that output fields may be `bound` to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoundValue<'a> {
    /// A string.
    Str(&'a str),
    /// An integer of any width.
    Int(i128),
    /// A boolean.
    Bool(bool),
}

/// Looks up the input fields of the call whose output is being validated.
pub trait BoundInputs {
    /// The value of the input field named `field` (its Rust name), if it can be bound.
    fn bound_value(&self, field: &str) -> Option<BoundValue<'_>>;

    /// The highest tier a source in the output may claim: the contract's. `None` checks no
    /// tier (arguments, which are not evidence).
    fn tier_ceiling(&self) -> Option<SourceTier> {
        None
    }
}

/// No input: what arguments are validated against.
pub(crate) struct NoBoundInputs;

impl BoundInputs for NoBoundInputs {
    fn bound_value(&self, _field: &str) -> Option<BoundValue<'_>> {
        None
    }
}

/// Whether `byte` is JSON whitespace (RFC 8259 section 2).
#[inline]
fn is_whitespace(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r')
}

/// The index of the first byte at or after `from` that is not JSON whitespace.
#[inline]
fn skip_whitespace(bytes: &[u8], mut from: usize) -> usize {
    while bytes.get(from).copied().is_some_and(is_whitespace) {
        from += 1;
    }
    from
}

/// Whether `bytes[at..]` starts with `prefix` (a key: a few to a few dozen bytes), compared
/// eight bytes at a time in line, which for keys costs less than a call to `memcmp`.
#[inline]
fn starts_with_at(bytes: &[u8], at: usize, prefix: &[u8]) -> bool {
    let len = prefix.len();
    let Some(candidate) = bytes.get(at..).and_then(|rest| rest.get(..len)) else {
        return false;
    };
    if len < 8 {
        return candidate.iter().zip(prefix).all(|(a, b)| a == b);
    }
    // Whole words, then the last eight bytes (overlapping the last word unless the length is
    // a multiple of eight).
    let mut from = 0;
    while from + 8 < len {
        if word(&candidate[from..]) != word(&prefix[from..]) {
            return false;
        }
        from += 8;
    }
    word(&candidate[len - 8..]) == word(&prefix[len - 8..])
}

/// The first eight bytes of `chunk`, which has at least eight.
#[inline]
fn word(chunk: &[u8]) -> [u8; 8] {
    chunk.first_chunk().copied().unwrap_or_default()
}

/// The path steps a reader holds without allocating: more than the nesting of most documents.
const PATH_INLINE: usize = 16;

/// The reader state of one validation: the document's text, borrowed for `'de` (what a
/// borrowed output's strings borrow), and the validation's rules, borrowed for `'r`.
pub struct Reader<'de, 'r> {
    text: &'de str,
    pos: usize,
    depth: usize,
    max_depth: usize,
    /// Kept as steps and spelled out as a JSON Pointer only when a violation is recorded.
    path: SmallVec<[Segment<'de>; PATH_INLINE]>,
    violations: Vec<Violation>,
    truncated: bool,
    forbidden: &'r ForbiddenKeys,
    bounds: &'r dyn BoundInputs,
    tier_ceiling: Option<SourceTier>,
    /// Values removed by `strip_synthetic` detectors, for the audit.
    stripped: Vec<Stripped>,
    /// The string just read was flagged for stripping; the nearest `Option` or `Vec` drops it.
    strip_pending: bool,
}

/// Validates a whole document with `read`, the generated reader of its top-level type; with
/// the value, the values synthetic-data detectors stripped from it.
pub(crate) fn read_document<'de, T>(
    bytes: &'de [u8],
    limits: Limits,
    forbidden: &ForbiddenKeys,
    bounds: &dyn BoundInputs,
    read: impl FnOnce(&mut Reader<'de, '_>) -> Result<Option<T>, Stop>,
) -> Result<(T, Vec<Stripped>), Violations> {
    if bytes.len() > limits.max_bytes {
        let kind = ViolationKind::TooLarge {
            max: limits.max_bytes,
            actual: bytes.len(),
        };
        return Err(Violations::new(vec![Violation::new("", kind)], false));
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(error) => {
            let kind = ViolationKind::Syntax {
                offset: error.valid_up_to(),
                reason: "invalid UTF-8",
            };
            return Err(Violations::new(vec![Violation::new("", kind)], false));
        }
    };
    let mut reader = Reader {
        text,
        pos: 0,
        depth: 0,
        max_depth: limits.max_depth,
        path: SmallVec::new(),
        violations: Vec::new(),
        truncated: false,
        forbidden,
        bounds,
        tier_ceiling: bounds.tier_ceiling(),
        stripped: Vec::new(),
        strip_pending: false,
    };
    let value = read(&mut reader).and_then(|value| {
        if reader.peek().is_some() {
            Err(reader.syntax("trailing characters after the value"))
        } else {
            Ok(value)
        }
    });
    match value {
        Ok(Some(value)) if reader.violations.is_empty() => Ok((value, reader.stripped)),
        _ => Err(Violations::new(reader.violations, reader.truncated)),
    }
}

impl<'de> Reader<'de, '_> {
    // ---- violations and the path ----

    /// Records `kind` at the current path; stops once [`MAX_VIOLATIONS`] are recorded.
    pub fn report(&mut self, kind: ViolationKind) -> Result<(), Stop> {
        if self.violations.len() >= MAX_VIOLATIONS {
            self.truncated = true;
            return Err(Stop(()));
        }
        self.violations.push(Violation::new(self.pointer(), kind));
        Ok(())
    }

    /// Records a syntax error at the current byte and returns the [`Stop`] it causes.
    fn syntax(&mut self, reason: &'static str) -> Stop {
        let kind = ViolationKind::Syntax {
            offset: self.pos,
            reason,
        };
        if self.violations.len() >= MAX_VIOLATIONS {
            self.truncated = true;
        } else {
            self.violations.push(Violation::new(self.pointer(), kind));
        }
        Stop(())
    }

    /// The current path as a JSON Pointer (RFC 6901: `~` and `/` escaped).
    fn pointer(&self) -> String {
        let mut pointer = String::new();
        for segment in &self.path {
            pointer.push('/');
            let decoded;
            let key = match *segment {
                Segment::Key(key) => key,
                Segment::Escaped(raw) => {
                    decoded = infallible(
                        serde_json::from_str::<String>(&format!("\"{raw}\"")),
                        "the key was read as a valid JSON string",
                    );
                    &decoded
                }
                Segment::Index(index) => {
                    // Writing to a String cannot fail.
                    let _ = write!(pointer, "{index}");
                    continue;
                }
            };
            for c in key.chars() {
                match c {
                    '~' => pointer.push_str("~0"),
                    '/' => pointer.push_str("~1"),
                    c => pointer.push(c),
                }
            }
        }
        pointer
    }

    /// Where the path is now.
    #[inline]
    pub(crate) fn path_mark(&self) -> PathMark {
        PathMark(self.path.len())
    }

    /// Appends an object key to the path.
    #[inline]
    pub(crate) fn enter_key(&mut self, key: &'de str) -> PathMark {
        self.enter(Segment::Key(key))
    }

    #[inline]
    fn enter(&mut self, segment: Segment<'de>) -> PathMark {
        let mark = PathMark(self.path.len());
        self.path.push(segment);
        mark
    }

    /// Appends an array index to the path.
    #[inline]
    pub fn enter_index(&mut self, index: usize) -> PathMark {
        self.enter(Segment::Index(index))
    }

    /// Returns the path to where it was at `mark`.
    #[inline]
    pub(crate) fn leave(&mut self, mark: PathMark) {
        self.path.truncate(mark.0);
    }

    // ---- object fields ----

    /// Reports a key the object does not declare (as forbidden if it is) and skips its value.
    pub(crate) fn unknown_key(&mut self, key: &Key<'de>) -> Result<(), Stop> {
        let mark = self.enter(key.segment());
        let kind = if self.forbidden.is_forbidden(key) {
            ViolationKind::ForbiddenKey
        } else {
            ViolationKind::UnknownField
        };
        self.report(kind)?;
        self.skip_value()?;
        self.leave(mark);
        Ok(())
    }

    /// Reports a second occurrence of `key` in one object and skips its value.
    pub(crate) fn duplicate_key(&mut self, key: &Key<'de>) -> Result<(), Stop> {
        let mark = self.enter(key.segment());
        self.report(ViolationKind::DuplicateKey)?;
        self.skip_value()?;
        self.leave(mark);
        Ok(())
    }

    /// Reports that the object lacks the declared `key`.
    pub(crate) fn missing_key(&mut self, key: &'static str) -> Result<(), Stop> {
        let mark = self.enter_key(key);
        self.report(ViolationKind::MissingField)?;
        self.leave(mark);
        Ok(())
    }

    /// Reports a string outside an enum's values.
    pub fn not_in_enum(&mut self, allowed: &'static [&'static str]) -> Result<(), Stop> {
        self.report(ViolationKind::NotInEnum { allowed })
    }

    /// Checks a `bound` output value against the input field of this call.
    #[inline]
    pub fn check_bound(
        &mut self,
        input_field: &'static str,
        value: BoundValue<'_>,
    ) -> Result<(), Stop> {
        if self.bounds.bound_value(input_field) == Some(value) {
            Ok(())
        } else {
            self.report(ViolationKind::BoundMismatch { input_field })
        }
    }

    /// Checks a source's tier against the contract's ceiling.
    pub fn check_source_tier(&mut self, tier: SourceTier) -> Result<bool, Stop> {
        match self.tier_ceiling {
            Some(declared) if tier > declared => self
                .report(ViolationKind::TierAboveContract { declared })
                .map(|()| false),
            _ => Ok(true),
        }
    }

    /// Runs the field's synthetic-data detectors on a string: a flagged value is reported
    /// (`Reject`, returns `false`) or marked for the nearest `Option` or `Vec` to drop
    /// (`Strip`, recorded for the audit).
    #[inline]
    pub fn check_synthetic(&mut self, value: &str, rules: &Rules) -> Result<bool, Stop> {
        let Some(rule) = rules.synthetic() else {
            return Ok(true);
        };
        let Some(detector) = rule.detect(value) else {
            return Ok(true);
        };
        match rule.action() {
            SyntheticAction::Reject => self
                .report(ViolationKind::SyntheticValue { detector })
                .map(|()| false),
            SyntheticAction::Strip => {
                self.stripped.push(Stripped {
                    path: self.pointer(),
                    detector,
                });
                self.strip_pending = true;
                Ok(true)
            }
        }
    }

    /// Whether the value just read was stripped: the caller drops it. Clears the mark.
    #[inline]
    pub fn take_stripped(&mut self) -> bool {
        std::mem::take(&mut self.strip_pending)
    }

    /// Reports a `grounded` entity whose sources are empty.
    pub fn missing_sources(&mut self) -> Result<(), Stop> {
        self.report(ViolationKind::MissingSources)
    }

    // ---- tokens ----

    #[inline]
    fn peek(&mut self) -> Option<u8> {
        let bytes = self.text.as_bytes();
        while let Some(&b) = bytes.get(self.pos) {
            if !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                return Some(b);
            }
            self.pos += 1;
        }
        None
    }

    #[inline]
    fn eat(&mut self, byte: u8) -> bool {
        if self.peek() == Some(byte) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn open(&mut self) -> Result<(), Stop> {
        self.pos += 1;
        self.depth += 1;
        if self.depth > self.max_depth {
            let max = self.max_depth;
            self.report(ViolationKind::TooDeep { max })?;
            return Err(Stop(()));
        }
        Ok(())
    }

    fn close(&mut self) {
        self.pos += 1;
        self.depth -= 1;
    }

    /// Reports that the next value is not of the `expected` type, and skips it.
    fn wrong_type(&mut self, expected: JsonType) -> Result<(), Stop> {
        let found = match self.peek() {
            Some(b'{') => JsonType::Object,
            Some(b'[') => JsonType::Array,
            Some(b'"') => JsonType::String,
            Some(b't' | b'f') => JsonType::Boolean,
            Some(b'n') => JsonType::Null,
            Some(b'-' | b'0'..=b'9') => {
                let literal = self.number()?;
                let found = if number::is_integer_literal(literal) {
                    JsonType::Integer
                } else {
                    JsonType::Number
                };
                return self.report(ViolationKind::WrongType { expected, found });
            }
            _ => return Err(self.syntax("expected a value")),
        };
        self.report(ViolationKind::WrongType { expected, found })?;
        self.skip_value()
    }

    /// Opens the object that should come next; `None` (after a report) if another value does.
    #[inline]
    pub(crate) fn begin_object(&mut self) -> Result<Option<ObjectCursor>, Stop> {
        if self.peek() == Some(b'{') {
            self.open()?;
            Ok(Some(ObjectCursor { first: true }))
        } else {
            self.wrong_type(JsonType::Object).map(|()| None)
        }
    }

    /// Whether the open object ends here (after whitespace), and if so closes it: what
    /// `next_field` asks once it has read every declared key in order.
    #[inline]
    pub(crate) fn end_object_is(&mut self, _object: &mut ObjectCursor) -> bool {
        if self.peek() == Some(b'}') {
            self.close();
            true
        } else {
            false
        }
    }

    /// The next key of the open object, positioned at its value; `None` at the object's end.
    #[inline]
    pub(crate) fn next_key(&mut self, object: &mut ObjectCursor) -> Result<Option<Key<'de>>, Stop> {
        match self.peek() {
            Some(b'}') => {
                self.close();
                return Ok(None);
            }
            Some(b',') if !object.first => {
                self.pos += 1;
                if self.peek() != Some(b'"') {
                    return Err(self.syntax("expected a key"));
                }
            }
            Some(b'"') if object.first => {}
            _ if object.first => return Err(self.syntax("expected a key or `}`")),
            _ => return Err(self.syntax("expected `,` or `}`")),
        }
        object.first = false;
        let start = self.pos + 1;
        let text = self.string()?;
        let raw = &self.text[start..self.pos - 1];
        if !self.eat(b':') {
            return Err(self.syntax("expected `:`"));
        }
        Ok(Some(Key { raw, text }))
    }

    /// Whether the open object's next key is spelled exactly as `key_colon` says (the key's
    /// canonical JSON string, quotes included, then `:`), and if so reads past it, to its
    /// value. Otherwise nothing is read, and [`next_key`](Self::next_key) reads what comes
    /// next.
    ///
    /// A generated reader's `next_field` tries each declared key in order first: producers
    /// mostly write them so, and a key recognised by its bytes needs no scan, no decoding and
    /// no lookup. A key written another way (escapes, another order) is simply read the
    /// general way. Compact
    /// JSON (`,"key":`) is recognised in one comparison; whitespace before or after the comma
    /// (and then also before the colon), by a second look.
    #[inline]
    pub(crate) fn next_key_is(&mut self, object: &mut ObjectCursor, key_colon: &[u8]) -> bool {
        let bytes = self.text.as_bytes();
        let at_key = self.pos + usize::from(!object.first);
        if (object.first || bytes.get(self.pos) == Some(&b','))
            && starts_with_at(bytes, at_key, key_colon)
        {
            self.pos = at_key + key_colon.len();
            object.first = false;
            return true;
        }
        // Another key, or this one written with whitespace: only the second is looked at again.
        let spaced = match bytes.get(self.pos) {
            Some(b',') => bytes.get(at_key).copied().is_some_and(is_whitespace),
            Some(&byte) => is_whitespace(byte),
            None => false,
        };
        spaced && self.next_key_is_spaced(object, key_colon)
    }

    /// [`next_key_is`](Self::next_key_is) where whitespace may stand before the comma, after
    /// it, and between the key and its colon.
    #[inline(never)]
    fn next_key_is_spaced(&mut self, object: &mut ObjectCursor, key_colon: &[u8]) -> bool {
        let Some((b':', quoted)) = key_colon.split_last() else {
            return false;
        };
        let Some(at) = self.peek() else {
            return false;
        };
        let mut at_key = self.pos;
        if !object.first {
            if at != b',' {
                return false;
            }
            at_key = skip_whitespace(self.text.as_bytes(), at_key + 1);
        }
        let bytes = self.text.as_bytes();
        if !starts_with_at(bytes, at_key, quoted) {
            return false;
        }
        let colon = skip_whitespace(bytes, at_key + quoted.len());
        if bytes.get(colon) != Some(&b':') {
            return false;
        }
        self.pos = colon + 1;
        object.first = false;
        true
    }

    /// Opens the array that should come next; `None` (after a report) if another value does.
    #[inline]
    pub fn begin_array(&mut self) -> Result<Option<ArrayCursor>, Stop> {
        if self.peek() == Some(b'[') {
            self.open()?;
            Ok(Some(ArrayCursor { first: true }))
        } else {
            self.wrong_type(JsonType::Array).map(|()| None)
        }
    }

    /// Whether the open array has another item, positioned at it.
    #[inline]
    pub fn next_item(&mut self, array: &mut ArrayCursor) -> Result<bool, Stop> {
        match self.peek() {
            Some(b']') => {
                self.close();
                return Ok(false);
            }
            Some(b',') if !array.first => self.pos += 1,
            Some(_) if array.first => {}
            _ => return Err(self.syntax("expected `,` or `]`")),
        }
        array.first = false;
        Ok(true)
    }

    /// Consumes a `null` if one comes next.
    #[inline]
    pub fn take_null(&mut self) -> Result<bool, Stop> {
        if self.peek() != Some(b'n') {
            return Ok(false);
        }
        self.literal("null")?;
        Ok(true)
    }

    /// The string that should come next; `None` (after a report) if another value does.
    #[inline]
    pub fn read_string(&mut self) -> Result<Option<Cow<'de, str>>, Stop> {
        if self.peek() == Some(b'"') {
            self.string().map(Some)
        } else {
            self.wrong_type(JsonType::String).map(|()| None)
        }
    }

    /// The boolean that should come next; `None` (after a report) if another value does.
    #[inline]
    pub fn read_bool(&mut self) -> Result<Option<bool>, Stop> {
        match self.peek() {
            Some(b't') => self.literal("true").map(|()| Some(true)),
            Some(b'f') => self.literal("false").map(|()| Some(false)),
            _ => self.wrong_type(JsonType::Boolean).map(|()| None),
        }
    }

    /// The integer that should come next, within `min..=max` and ±(2^53 − 1); `None` (after
    /// a report) otherwise. `1.0` is a number, not an integer.
    pub fn read_integer(&mut self, min: i64, max: i64, rules: &Rules) -> Result<Option<i64>, Stop> {
        // The common case, kept apart from every other so that it needs few registers: a
        // non-negative integer of plain digits in range, with no `minimum` or `maximum`.
        if self.peek().is_some()
            && rules.minimum().is_none()
            && rules.maximum().is_none()
            && let Some((value, end)) = number::scan_plain_integer(self.text.as_bytes(), self.pos)
            && (min..=max).contains(&value)
        {
            self.pos = end;
            return Ok(Some(value));
        }
        self.read_integer_otherwise(min, max, rules)
    }

    /// [`read_integer`](Self::read_integer) for every case but plain digits in range with no
    /// bounds of their own.
    #[cold]
    #[inline(never)]
    fn read_integer_otherwise(
        &mut self,
        min: i64,
        max: i64,
        rules: &Rules,
    ) -> Result<Option<i64>, Stop> {
        if !matches!(self.peek(), Some(b'-' | b'0'..=b'9')) {
            return self.wrong_type(JsonType::Integer).map(|()| None);
        }
        let min = min.max(-number::MAX_SAFE_INTEGER);
        let max = max.min(number::MAX_SAFE_INTEGER);
        let literal = self.number()?;
        let negative = literal.starts_with('-');
        let value = match number::parse_integer(literal) {
            Ok(value) if (min..=max).contains(&value) => value,
            Ok(_) | Err(IntegerError::OutOfRange) => {
                return self
                    .report(beyond_range(negative, min, max, rules))
                    .map(|()| None);
            }
            Err(IntegerError::NotInteger) => {
                let kind = ViolationKind::WrongType {
                    expected: JsonType::Integer,
                    found: JsonType::Number,
                };
                return self.report(kind).map(|()| None);
            }
        };
        // |value| ≤ 2^53 − 1, so the conversion is exact.
        #[allow(clippy::cast_precision_loss)]
        let ok = self.check_range(value as f64, rules)?;
        Ok(ok.then_some(value))
    }

    /// The finite double that should come next, exactly as written; `None` (after a report)
    /// otherwise.
    pub fn read_f64(&mut self, rules: &Rules) -> Result<Option<f64>, Stop> {
        if !matches!(self.peek(), Some(b'-' | b'0'..=b'9')) {
            return self.wrong_type(JsonType::Number).map(|()| None);
        }
        let literal = self.number()?;
        let Some(value) = number::parse_exact_f64(literal) else {
            return self.report(ViolationKind::InexactNumber).map(|()| None);
        };
        let ok = self.check_range(value, rules)?;
        Ok(ok.then_some(value))
    }

    /// Checks a number against the `minimum` and `maximum` rules, if it has either: most
    /// fields have neither, so that question stays in line and the check itself does not.
    #[inline]
    fn check_range(&mut self, value: f64, rules: &Rules) -> Result<bool, Stop> {
        if rules.minimum().is_none() && rules.maximum().is_none() {
            return Ok(true);
        }
        self.check_bounds(value, rules)
    }

    fn check_bounds(&mut self, value: f64, rules: &Rules) -> Result<bool, Stop> {
        let mut ok = true;
        if let Some(minimum) = rules.minimum().filter(|minimum| value < *minimum) {
            self.report(ViolationKind::BelowMinimum { minimum })?;
            ok = false;
        }
        if let Some(maximum) = rules.maximum().filter(|maximum| value > *maximum) {
            self.report(ViolationKind::AboveMaximum { maximum })?;
            ok = false;
        }
        Ok(ok)
    }

    /// Checks a string against the length, pattern and format `rules`; reports each miss.
    #[inline]
    pub fn check_string(&mut self, value: &str, rules: &Rules) -> Result<bool, Stop> {
        rules.check_str(value, |kind| self.report(kind))
    }

    /// Checks an array's item count against `rules`.
    #[inline]
    pub fn check_items(&mut self, actual: usize, rules: &Rules) -> Result<bool, Stop> {
        match rules.max_items().filter(|max| actual > *max as usize) {
            Some(max) => self
                .report(ViolationKind::TooManyItems { max, actual })
                .map(|()| false),
            None => Ok(true),
        }
    }

    fn literal(&mut self, word: &'static str) -> Result<(), Stop> {
        if self.text.as_bytes()[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(self.syntax("expected a value"))
        }
    }

    /// A number literal, checked against the JSON grammar (RFC 8259 §6).
    fn number(&mut self) -> Result<&'de str, Stop> {
        let bytes = self.text.as_bytes();
        let start = self.pos;
        let mut i = start;
        let digits = |i: &mut usize| {
            let from = *i;
            while bytes.get(*i).is_some_and(u8::is_ascii_digit) {
                *i += 1;
            }
            *i > from
        };
        if bytes.get(i) == Some(&b'-') {
            i += 1;
        }
        match bytes.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => {
                digits(&mut i);
            }
            _ => {
                self.pos = i;
                return Err(self.syntax("expected a digit"));
            }
        }
        if bytes.get(i) == Some(&b'.') {
            i += 1;
            if !digits(&mut i) {
                self.pos = i;
                return Err(self.syntax("expected a digit after `.`"));
            }
        }
        if matches!(bytes.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(bytes.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            if !digits(&mut i) {
                self.pos = i;
                return Err(self.syntax("expected a digit in the exponent"));
            }
        }
        self.pos = i;
        Ok(&self.text[start..i])
    }

    /// A string (the reader is at its opening quote), with escapes decoded.
    fn string(&mut self) -> Result<Cow<'de, str>, Stop> {
        let bytes = self.text.as_bytes();
        self.pos += 1;
        let start = self.pos;
        self.pos = find_string_special(bytes, self.pos);
        if bytes.get(self.pos) == Some(&b'"') {
            let text = &self.text[start..self.pos];
            self.pos += 1;
            return Ok(Cow::Borrowed(text));
        }
        self.string_otherwise(start)
    }

    /// The rest of the string [`string`](Self::string) began at `start`, from the first
    /// escape, control character or end of the text: what few strings have, kept apart so
    /// the common case needs few registers.
    #[inline(never)]
    fn string_otherwise(&mut self, start: usize) -> Result<Cow<'de, str>, Stop> {
        let bytes = self.text.as_bytes();
        match bytes.get(self.pos) {
            Some(b'\\') => {}
            Some(_) => return Err(self.syntax("control character in a string")),
            None => return Err(self.syntax("unterminated string")),
        }
        let mut owned = String::from(&self.text[start..self.pos]);
        loop {
            let run_start = self.pos;
            self.pos = find_string_special(bytes, self.pos);
            owned.push_str(&self.text[run_start..self.pos]);
            match bytes.get(self.pos) {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(Cow::Owned(owned));
                }
                Some(b'\\') => {
                    let c = self.escape()?;
                    owned.push(c);
                }
                Some(_) => return Err(self.syntax("control character in a string")),
                None => return Err(self.syntax("unterminated string")),
            }
        }
    }

    /// One escape sequence (the reader is at its backslash).
    fn escape(&mut self) -> Result<char, Stop> {
        let bytes = self.text.as_bytes();
        let c = match bytes.get(self.pos + 1) {
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'/') => '/',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => return self.unicode_escape(),
            _ => {
                self.pos += 1;
                return Err(self.syntax("invalid escape"));
            }
        };
        self.pos += 2;
        Ok(c)
    }

    fn hex4(&mut self) -> Result<u32, Stop> {
        let hex = self.text.as_bytes().get(self.pos + 2..self.pos + 6);
        let value = hex
            .filter(|hex| hex.iter().all(u8::is_ascii_hexdigit))
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u32::from_str_radix(hex, 16).ok());
        match value {
            Some(value) => {
                self.pos += 6;
                Ok(value)
            }
            None => Err(self.syntax("invalid \\u escape")),
        }
    }

    /// A `\uXXXX` escape, joining a surrogate pair; a lone surrogate is not I-JSON.
    fn unicode_escape(&mut self) -> Result<char, Stop> {
        let first = self.hex4()?;
        let code = match first {
            0xD800..=0xDBFF => {
                if !self.text.as_bytes()[self.pos..].starts_with(b"\\u") {
                    return Err(self.syntax("lone surrogate in a \\u escape"));
                }
                let second = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&second) {
                    return Err(self.syntax("lone surrogate in a \\u escape"));
                }
                0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
            }
            0xDC00..=0xDFFF => return Err(self.syntax("lone surrogate in a \\u escape")),
            code => code,
        };
        char::from_u32(code).ok_or_else(|| self.syntax("invalid \\u escape"))
    }

    /// Skips one value of any type, checking its syntax, without recursion.
    pub fn skip_value(&mut self) -> Result<(), Stop> {
        // Each entry is the closing byte of an open container.
        let mut open: Vec<u8> = Vec::new();
        'value: loop {
            match self.peek() {
                Some(b'{') => {
                    self.open()?;
                    if self.peek() == Some(b'}') {
                        self.close();
                    } else {
                        open.push(b'}');
                        self.skip_key()?;
                        continue 'value;
                    }
                }
                Some(b'[') => {
                    self.open()?;
                    if self.peek() == Some(b']') {
                        self.close();
                    } else {
                        open.push(b']');
                        continue 'value;
                    }
                }
                Some(b'"') => {
                    self.string()?;
                }
                Some(b't') => self.literal("true")?,
                Some(b'f') => self.literal("false")?,
                Some(b'n') => self.literal("null")?,
                Some(b'-' | b'0'..=b'9') => {
                    self.number()?;
                }
                _ => return Err(self.syntax("expected a value")),
            }
            // After a value: close what ends here, or go on to the next item.
            loop {
                let Some(&closing) = open.last() else {
                    return Ok(());
                };
                match self.peek() {
                    Some(b',') => {
                        self.pos += 1;
                        if closing == b'}' {
                            self.skip_key()?;
                        }
                        continue 'value;
                    }
                    Some(b) if b == closing => {
                        self.close();
                        open.pop();
                    }
                    _ if closing == b'}' => return Err(self.syntax("expected `,` or `}`")),
                    _ => return Err(self.syntax("expected `,` or `]`")),
                }
            }
        }
    }

    fn skip_key(&mut self) -> Result<(), Stop> {
        if self.peek() != Some(b'"') {
            return Err(self.syntax("expected a key"));
        }
        self.string()?;
        if self.eat(b':') {
            Ok(())
        } else {
            Err(self.syntax("expected `:`"))
        }
    }

    // ---- values read by other rules ----

    /// The next value's exact text (its syntax and depth checked), for a type with rules of
    /// its own.
    fn read_raw(&mut self) -> Result<&'de str, Stop> {
        let start = match self.peek() {
            Some(_) => self.pos,
            None => return Err(self.syntax("expected a value")),
        };
        self.skip_value()?;
        Ok(&self.text[start..self.pos])
    }

    /// The next value read by its own serde declaration; `None` after reporting it
    /// [`Unreadable`](ViolationKind::Unreadable) as `expected`.
    pub(crate) fn read_serde<T: serde::de::DeserializeOwned>(
        &mut self,
        expected: &'static str,
    ) -> Result<Option<T>, Stop> {
        let raw = self.read_raw()?;
        match depth::from_slice(raw.as_bytes()) {
            Ok(value) => Ok(Some(value)),
            Err(_) => self
                .report(ViolationKind::Unreadable { expected })
                .map(|()| None),
        }
    }

    /// The next value in RFC 8785 canonical form; `None` after reporting a value that has none
    /// (a duplicate member name, a number beyond a double).
    pub(crate) fn read_canonical(&mut self) -> Result<Option<String>, Stop> {
        let raw = self.read_raw()?;
        match canonical::canonicalize(raw.as_bytes()) {
            Ok(bytes) => Ok(Some(infallible(
                String::from_utf8(bytes),
                "canonical JSON is UTF-8",
            ))),
            Err(CanonicalError::DuplicateKey { .. }) => {
                self.report(ViolationKind::DuplicateKey).map(|()| None)
            }
            Err(_) => self
                .report(ViolationKind::Unreadable {
                    expected: "I-JSON value",
                })
                .map(|()| None),
        }
    }

    // ---- free-form values ----

    /// A free-form JSON value within `limits`, with the forbidden-key scan, duplicate-key
    /// refusal and exact numbers applied at every depth; `None` after reports.
    pub fn read_free_form(&mut self, limits: FreeFormLimits) -> Result<Option<Value>, Stop> {
        let start = match self.peek() {
            Some(_) => self.pos,
            None => return Err(self.syntax("expected a value")),
        };
        let reports = self.violations.len();
        let value = self.free_value(limits.max_depth, limits.max_depth)?;
        let actual = self.pos - start;
        if actual > limits.max_bytes {
            let max = limits.max_bytes;
            self.report(ViolationKind::TooLarge { max, actual })?;
        }
        Ok(value.filter(|_| self.violations.len() == reports))
    }

    fn free_value(&mut self, depth_left: usize, max: usize) -> Result<Option<Value>, Stop> {
        match self.peek() {
            Some(b'{' | b'[') if depth_left == 0 => {
                self.report(ViolationKind::TooDeep { max })?;
                self.skip_value().map(|()| None)
            }
            Some(b'{') => self.free_object(depth_left - 1, max),
            Some(b'[') => self.free_array(depth_left - 1, max),
            Some(b'"') => Ok(Some(Value::String(self.string()?.into_owned()))),
            Some(b't') => self.literal("true").map(|()| Some(Value::Bool(true))),
            Some(b'f') => self.literal("false").map(|()| Some(Value::Bool(false))),
            Some(b'n') => self.literal("null").map(|()| Some(Value::Null)),
            Some(b'-' | b'0'..=b'9') => self.free_number(),
            _ => Err(self.syntax("expected a value")),
        }
    }

    /// A free-form object (the reader is at its `{`), members within `depth_left` more levels.
    fn free_object(&mut self, depth_left: usize, max: usize) -> Result<Option<Value>, Stop> {
        self.open()?;
        let mut object = ObjectCursor { first: true };
        let mut map = Map::new();
        let mut ok = true;
        while let Some(key) = self.next_key(&mut object)? {
            if self.forbidden.is_forbidden(&key) {
                self.unknown_key(&key)?;
                ok = false;
            } else if map.contains_key(&*key) {
                self.duplicate_key(&key)?;
                ok = false;
            } else {
                let mark = self.enter(key.segment());
                match self.free_value(depth_left, max)? {
                    Some(value) => {
                        map.insert(key.text.into_owned(), value);
                    }
                    None => ok = false,
                }
                self.leave(mark);
            }
        }
        Ok(ok.then_some(Value::Object(map)))
    }

    /// A free-form array (the reader is at its `[`), items within `depth_left` more levels.
    fn free_array(&mut self, depth_left: usize, max: usize) -> Result<Option<Value>, Stop> {
        self.open()?;
        let mut array = ArrayCursor { first: true };
        let mut items = Vec::new();
        let mut ok = true;
        while self.next_item(&mut array)? {
            let mark = self.enter_index(items.len());
            match self.free_value(depth_left, max)? {
                Some(value) => items.push(value),
                None => {
                    ok = false;
                    items.push(Value::Null);
                }
            }
            self.leave(mark);
        }
        Ok(ok.then_some(Value::Array(items)))
    }

    /// A free-form number, exactly: an integer within ±(2^53 − 1), or a double as written.
    fn free_number(&mut self) -> Result<Option<Value>, Stop> {
        let literal = self.number()?;
        if number::is_integer_literal(literal) {
            match number::parse_integer(literal) {
                Ok(value) => Ok(Some(Value::Number(Number::from(value)))),
                Err(_) => {
                    let max = number::MAX_SAFE_INTEGER;
                    let kind = ViolationKind::IntegerOutOfRange { min: -max, max };
                    self.report(kind).map(|()| None)
                }
            }
        } else {
            match number::parse_exact_f64(literal).and_then(Number::from_f64) {
                Some(value) => Ok(Some(Value::Number(value))),
                None => self.report(ViolationKind::InexactNumber).map(|()| None),
            }
        }
    }
}

/// What an integer outside its type's range `min..=max` is told, on the side `negative`
/// says: the contract's own `minimum` or `maximum` on that side where it states one within
/// the range (the bound the model was shown), the type's range otherwise.
fn beyond_range(negative: bool, min: i64, max: i64, rules: &Rules) -> ViolationKind {
    // |min|, |max| ≤ 2^53 − 1 here, so the conversions are exact.
    #[allow(clippy::cast_precision_loss)]
    let (low, high) = (min as f64, max as f64);
    match (negative, rules.minimum(), rules.maximum()) {
        (true, Some(minimum), _) if minimum >= low => ViolationKind::BelowMinimum { minimum },
        (false, _, Some(maximum)) if maximum <= high => ViolationKind::AboveMaximum { maximum },
        _ => ViolationKind::IntegerOutOfRange { min, max },
    }
}

#[cfg(test)]
mod tests {
    use super::starts_with_at;

    #[test]
    fn a_prefix_is_found_exactly_where_every_byte_agrees() {
        let text: Vec<u8> = (0..40u8).map(|i| b'a' + i % 26).collect();
        for at in 0..=text.len() {
            for len in 0..=24 {
                let fits = at + len <= text.len();
                let prefix: Vec<u8> = text[at..(at + len).min(text.len())].to_vec();
                assert!(starts_with_at(&text, at, &prefix), "{at} {len}");
                if !fits || len == 0 {
                    continue;
                }
                for differs in 0..len {
                    let mut other = prefix.clone();
                    other[differs] ^= 0x20;
                    assert!(!starts_with_at(&text, at, &other), "{at} {len} {differs}");
                }
                let mut longer = prefix.clone();
                longer.push(b'!');
                assert!(!starts_with_at(&text, at, &longer), "{at} {len} past");
            }
        }
    }
}
