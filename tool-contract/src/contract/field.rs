//! The Rust types a contract's fields may have ([`ContractField`]'s implementations), and how
//! each reads exactly; [`BoundField`], the types a `bound` may compare.

use std::borrow::Cow;

use serde_json::Value;
use time::OffsetDateTime;

use super::bound::NoBounds;
use super::reader::{BoundValue, Reader, Stop};
use super::rules::Rules;
use super::shape::Shape;
use super::traits::{ContractField, ReadField, ToolContract};
use crate::json::canonical::write as canonical;
use crate::json::encoding::infallible;
use crate::json::format::{self, Format};
use crate::json::number::MAX_SAFE_INTEGER;
use crate::vocabulary::limits::FreeFormLimits;
use crate::vocabulary::violation::ViolationKind;

/// The three string types: `String`, and a borrowed output's `&str` and `Cow<str>`. One JSON
/// string each, written the same way.
macro_rules! string_field {
    ($($ty:ty),*) => {$(
        impl ContractField for $ty {
            type __Check<I: ToolContract> = NoBounds;

            fn __shape() -> Shape {
                Shape::String
            }

            fn __write_canonical(&self, out: &mut Vec<u8>) {
                canonical::write_str(out, self);
            }
        }
    )*};
}

string_field!(String, &str, Cow<'_, str>);

/// A borrowed output's string: borrowed from the document when it has no escapes, decoded
/// into a copy when it has. A `&str` is read through it.
impl<'de: 'a, 'a> ReadField<'de> for Cow<'a, str> {
    // In line: the two other string types read through it.
    #[inline]
    fn __read(reader: &mut Reader<'de, '_>, rules: &Rules) -> Result<Option<Self>, Stop> {
        let Some(value) = reader.read_string()? else {
            return Ok(None);
        };
        let ok = reader.check_string(&value, rules)? && reader.check_synthetic(&value, rules)?;
        Ok(ok.then_some(value))
    }
}

impl<'de> ReadField<'de> for String {
    // Its own body, not `Cow`'s turned owned: through `Cow`, the validator ran 2% more
    // instructions.
    fn __read(reader: &mut Reader<'de, '_>, rules: &Rules) -> Result<Option<Self>, Stop> {
        let Some(value) = reader.read_string()? else {
            return Ok(None);
        };
        let ok = reader.check_string(&value, rules)? && reader.check_synthetic(&value, rules)?;
        Ok(ok.then(|| value.into_owned()))
    }
}

/// A borrowed output's string, pointing into the document as written: one without escapes
/// (`BorrowedEscapes` otherwise, since its decoded form is nowhere in the document).
impl<'de: 'a, 'a> ReadField<'de> for &'a str {
    fn __read(reader: &mut Reader<'de, '_>, rules: &Rules) -> Result<Option<Self>, Stop> {
        match Cow::__read(reader, rules)? {
            Some(Cow::Borrowed(text)) => Ok(Some(text)),
            Some(Cow::Owned(_)) => {
                reader.report(ViolationKind::BorrowedEscapes)?;
                Ok(None)
            }
            None => Ok(None),
        }
    }
}

impl ContractField for bool {
    type __Check<I: ToolContract> = NoBounds;

    fn __shape() -> Shape {
        Shape::Boolean
    }

    fn __write_canonical(&self, out: &mut Vec<u8>) {
        canonical::write_bool(out, *self);
    }
}

impl<'de> ReadField<'de> for bool {
    fn __read(reader: &mut Reader<'de, '_>, _rules: &Rules) -> Result<Option<Self>, Stop> {
        reader.read_bool()
    }
}

macro_rules! integer_field {
    ($($ty:ty),*) => {$(
        impl ContractField for $ty {
            type __Check<I: ToolContract> = NoBounds;

            fn __shape() -> Shape {
                let (min, max) = safe_range(i128::from(<$ty>::MIN), i128::from(<$ty>::MAX));
                Shape::Integer { min, max }
            }

            fn __write_canonical(&self, out: &mut Vec<u8>) {
                canonical::write_integer(out, i128::from(*self));
            }
        }

        impl<'de> ReadField<'de> for $ty {
            #[inline]
            fn __read(reader: &mut Reader<'de, '_>, rules: &Rules) -> Result<Option<Self>, Stop> {
                const RANGE: (i64, i64) = safe_range(<$ty>::MIN as i128, <$ty>::MAX as i128);
                let value = reader.read_integer(RANGE.0, RANGE.1, rules)?;
                // In range by the check above.
                Ok(value.and_then(|value| <$ty>::try_from(value).ok()))
            }
        }

        impl BoundField for $ty {
            fn bound_value(&self) -> BoundValue<'_> {
                BoundValue::Int(i128::from(*self))
            }
        }
    )*};
}

/// An integer type's range narrowed to ±(2^53 − 1); `const`, so each type's is computed once,
/// at compile time.
const fn safe_range(min: i128, max: i128) -> (i64, i64) {
    let safe = MAX_SAFE_INTEGER as i128;
    let min = if min < -safe { -safe } else { min };
    let max = if max > safe { safe } else { max };
    // Clamped to ±(2^53 − 1), so both fit an i64.
    #[allow(clippy::cast_possible_truncation)]
    (min as i64, max as i64)
}

integer_field!(i8, i16, i32, i64, u8, u16, u32, u64);

impl ContractField for f64 {
    type __Check<I: ToolContract> = NoBounds;

    fn __shape() -> Shape {
        Shape::Number
    }

    fn __write_canonical(&self, out: &mut Vec<u8>) {
        // serde_json writes a non-finite double as null; a validated one is always finite.
        if self.is_finite() {
            canonical::write_f64(out, *self);
        } else {
            out.extend_from_slice(b"null");
        }
    }
}

impl<'de> ReadField<'de> for f64 {
    fn __read(reader: &mut Reader<'de, '_>, rules: &Rules) -> Result<Option<Self>, Stop> {
        reader.read_f64(rules)
    }
}

impl ContractField for OffsetDateTime {
    type __Check<I: ToolContract> = NoBounds;

    fn __shape() -> Shape {
        Shape::DateTime
    }

    fn __write_canonical(&self, out: &mut Vec<u8>) {
        // As `time::serde::rfc3339`, the only `with` the derive accepts for it, writes it.
        let text = infallible(
            self.format(&time::format_description::well_known::Rfc3339),
            "a time read by validation was parsed from RFC 3339, so it formats as RFC 3339",
        );
        canonical::write_str(out, &text);
    }
}

impl<'de> ReadField<'de> for OffsetDateTime {
    fn __read(reader: &mut Reader<'de, '_>, rules: &Rules) -> Result<Option<Self>, Stop> {
        let Some(value) = reader.read_string()? else {
            return Ok(None);
        };
        let format = rules.format().unwrap_or(Format::Rfc3339);
        let parsed = format::parse_rfc3339(&value).filter(|_| format.matches(&value));
        if parsed.is_none() {
            reader.report(ViolationKind::InvalidFormat { format })?;
        }
        Ok(parsed)
    }
}

/// The limits a free-form value gets should generated code ever pass none (the derive
/// refuses a `serde_json::Value` field without them): scalars only, small.
const NO_FREE_FORM: FreeFormLimits = FreeFormLimits {
    max_depth: 0,
    max_bytes: 1024,
};

impl ContractField for Value {
    type __Check<I: ToolContract> = NoBounds;

    fn __shape() -> Shape {
        Shape::FreeForm
    }

    fn __write_canonical(&self, out: &mut Vec<u8>) {
        // A value validated as free-form holds finite doubles only; a number no double can
        // hold exists only under serde_json's `arbitrary_precision`, and is written as null
        // (never as half a value).
        let start = out.len();
        if canonical::write_value(out, self).is_err() {
            out.truncate(start);
            out.extend_from_slice(b"null");
        }
    }
}

impl<'de> ReadField<'de> for Value {
    fn __read(reader: &mut Reader<'de, '_>, rules: &Rules) -> Result<Option<Self>, Stop> {
        reader.read_free_form(rules.free_form().unwrap_or(NO_FREE_FORM))
    }
}

impl<T: ContractField> ContractField for Option<T> {
    type __Check<I: ToolContract> = T::__Check<I>;

    fn __shape() -> Shape {
        Shape::Nullable(T::__shape)
    }

    fn __write_canonical(&self, out: &mut Vec<u8>) {
        write_option(self, out, T::__write_canonical);
    }

    const __HOLDS_SOURCES: bool = T::__HOLDS_SOURCES;
    const __CLAIMS_TIER: bool = T::__CLAIMS_TIER;
}

impl<'de, T: ReadField<'de>> ReadField<'de> for Option<T> {
    fn __read(reader: &mut Reader<'de, '_>, rules: &Rules) -> Result<Option<Self>, Stop> {
        read_option(reader, rules, T::__read)
    }
}

/// Reads an `Option` whose value `item` reads: `null`, or the value (a value a detector
/// stripped reads as `null`). `Option<T>`'s reader, and the one generated code composes for a
/// field of a derived type under `Option`s and `Vec`s, so that such a field's type is named to
/// the compiler once, as the type it holds.
#[inline]
pub fn read_option<'de, 'r, T>(
    reader: &mut Reader<'de, 'r>,
    rules: &Rules,
    item: impl FnOnce(&mut Reader<'de, 'r>, &Rules) -> Result<Option<T>, Stop>,
) -> Result<Option<Option<T>>, Stop> {
    if reader.take_null()? {
        return Ok(Some(None));
    }
    let value = item(reader, rules)?;
    if reader.take_stripped() {
        return Ok(Some(None));
    }
    Ok(value.map(Some))
}

/// Writes an `Option` whose value `item` writes: `null`, or the value. See [`read_option`].
#[inline]
pub fn write_option<T>(value: &Option<T>, out: &mut Vec<u8>, item: impl FnOnce(&T, &mut Vec<u8>)) {
    match value {
        Some(value) => item(value, out),
        None => out.extend_from_slice(b"null"),
    }
}

/// Writes a list whose items `item` writes, as a JSON array. See [`read_option`].
#[inline]
pub fn write_vec<T>(items: &[T], out: &mut Vec<u8>, mut item: impl FnMut(&T, &mut Vec<u8>)) {
    out.push(b'[');
    for (index, value) in items.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        item(value, out);
    }
    out.push(b']');
}

impl<T: ContractField> ContractField for Vec<T> {
    type __Check<I: ToolContract> = T::__Check<I>;

    fn __shape() -> Shape {
        Shape::Array(T::__shape)
    }

    fn __write_canonical(&self, out: &mut Vec<u8>) {
        write_vec(self, out, T::__write_canonical);
    }

    const __HOLDS_SOURCES: bool = T::__HOLDS_SOURCES;
    const __CLAIMS_TIER: bool = T::__CLAIMS_TIER;
}

impl<'de, T: ReadField<'de>> ReadField<'de> for Vec<T> {
    fn __read(reader: &mut Reader<'de, '_>, rules: &Rules) -> Result<Option<Self>, Stop> {
        read_vec(reader, rules, T::__read)
    }
}

/// Reads a list whose items `item` reads, under the list's `rules` (its item count). See
/// [`read_option`].
#[inline]
pub fn read_vec<'de, 'r, T>(
    reader: &mut Reader<'de, 'r>,
    rules: &Rules,
    mut item: impl FnMut(&mut Reader<'de, 'r>, &Rules) -> Result<Option<T>, Stop>,
) -> Result<Option<Vec<T>>, Stop> {
    // `stop!`, not `?`, as the derived readers use `__tri!`: no `Try` instance per item type
    // for a debug build to compile.
    macro_rules! stop {
        ($result:expr) => {
            match $result {
                Ok(value) => value,
                Err(stop) => return Err(stop),
            }
        };
    }
    let Some(mut array) = stop!(reader.begin_array()) else {
        return Ok(None);
    };
    let mut items = Vec::with_capacity(first_capacity(rules));
    let mut count = 0;
    let mut ok = true;
    while stop!(reader.next_item(&mut array)) {
        let mark = reader.enter_index(count);
        match stop!(item(reader, rules)) {
            _ if reader.take_stripped() => {}
            Some(value) if ok => items.push(value),
            Some(_) => {}
            None => ok = false,
        }
        reader.leave(mark);
        count += 1;
    }
    ok &= stop!(reader.check_items(count, rules));
    // Not `then_some`: a generic call, compiled again for each item type.
    Ok(if ok { Some(items) } else { None })
}

/// How many items an array's `Vec` starts with: a small start spares the first regrowths
/// without trusting a declared maximum. Apart from the generic reader, so it is compiled once.
fn first_capacity(rules: &Rules) -> usize {
    rules.max_items().map_or(4, |max| max.min(8) as usize)
}

/// An input field type that output fields may be `bound` to: `String`, `bool`, integers.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be `bound`",
    label = "`bound` needs a String, bool or integer field"
)]
pub trait BoundField {
    /// The value to compare.
    fn bound_value(&self) -> BoundValue<'_>;
}

macro_rules! bound_string {
    ($($ty:ty),*) => {$(
        impl BoundField for $ty {
            fn bound_value(&self) -> BoundValue<'_> {
                BoundValue::Str(self)
            }
        }
    )*};
}

bound_string!(String, &str, Cow<'_, str>);

impl BoundField for bool {
    fn bound_value(&self) -> BoundValue<'_> {
        BoundValue::Bool(*self)
    }
}
