//! The traits the derives implement: `ToolContract` for a tool's arguments, `ToolOutput` for
//! what it returns, `ContractField` for every type either may hold, and `ReadField` for
//! reading each of those from a document.

use serde::Serialize;
use serde_json::Value;

use super::bound::{BoundCheck, InputFieldDecl};
use super::reader::{self, BoundInputs, BoundValue, NoBoundInputs, Reader, Stop};
use super::rules::Rules;
use super::shape::Shape;
use super::spec::ToolSpec;
use crate::json::encoding::infallible;
use crate::vocabulary::effect::Effect;
use crate::vocabulary::forbidden::ForbiddenKeys;
use crate::vocabulary::limits::Limits;
use crate::vocabulary::synthetic::Stripped;
use crate::vocabulary::tier::SourceTier;
use crate::vocabulary::violation::Violations;

/// A tool's contract: its arguments (the implementing struct), its output type, its effect.
///
/// Derive it with `#[derive(serde::Deserialize, tool_contract::ToolContract)]`; the crate
/// docs show the attributes. The provided methods are the entry points for untrusted bytes.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tool contract",
    label = "expected a type that derives `ToolContract`",
    note = "add `#[derive(serde::Deserialize, tool_contract::ToolContract)]` to `{Self}`"
)]
pub trait ToolContract: Sized + 'static {
    /// What the tool returns: a type that owns its data, since the dispatcher keeps it past
    /// the bytes it was read from. A view that borrows from those bytes is read with
    /// [`validate_output_borrowed`](Self::validate_output_borrowed).
    type Output: OwnedOutput;

    /// The tool's name, as providers see it.
    const NAME: &'static str;

    /// What calling the tool does.
    const EFFECT: Effect;

    /// Everything the registry knows of the tool; built once, on first use.
    fn spec() -> &'static ToolSpec;

    /// Reads a model's arguments exactly: every field present, no unknown field, real JSON
    /// types, every declared rule, no duplicate key, within the size and depth limits.
    fn parse_arguments(bytes: &[u8]) -> Result<Self, Violations> {
        Self::parse_arguments_with(bytes, &ForbiddenKeys::DEFAULT)
    }

    /// [`parse_arguments`](Self::parse_arguments) with a registry's forbidden-key list.
    fn parse_arguments_with(bytes: &[u8], forbidden: &ForbiddenKeys) -> Result<Self, Violations> {
        reader::read_document(
            bytes,
            Self::__ARGUMENT_LIMITS,
            forbidden,
            &NoBoundInputs,
            Self::__read_arguments,
        )
        .map(|(arguments, _stripped)| arguments)
    }

    /// Reads a handler's untrusted output for this very call: exactly the output contract,
    /// and every `bound` field equal to this input's value.
    fn validate_output(&self, bytes: &[u8]) -> Result<Self::Output, Violations> {
        self.validate_output_with(bytes, &ForbiddenKeys::DEFAULT)
    }

    /// [`validate_output`](Self::validate_output) with a registry's forbidden-key list.
    fn validate_output_with(
        &self,
        bytes: &[u8],
        forbidden: &ForbiddenKeys,
    ) -> Result<Self::Output, Violations> {
        self.validate_output_audited(bytes, forbidden)
            .map(|validated| validated.output)
    }

    /// [`validate_output_with`](Self::validate_output_with), also telling which values the
    /// output's `strip_synthetic` detectors removed: what the audit must record.
    ///
    /// ```
    /// use tool_contract::{ToolContract, ToolOutput};
    ///
    /// /// Look up a person's contact address.
    /// #[derive(serde::Deserialize, ToolContract)]
    /// #[tool_contract(output = Contact, effect = read_only, source_label = "people",
    ///                 producer_revision = "people-1")]
    /// struct FindContact { #[tool_contract(max_len = 80)] name: String }
    ///
    /// #[derive(serde::Serialize, ToolOutput)]
    /// struct Contact {
    ///     #[tool_output(strip_synthetic(placeholder_email))]
    ///     email: Option<String>,
    /// }
    ///
    /// let call = FindContact { name: "Ada".into() };
    /// let validated = call.validate_output_audited(
    ///     br#"{"email":"ada@institution.edu"}"#,
    ///     &tool_contract::vocabulary::ForbiddenKeys::DEFAULT,
    /// )?;
    /// assert_eq!(validated.output.email, None);
    /// assert_eq!(validated.stripped[0].path, "/email");
    /// assert_eq!(validated.stripped[0].detector, "placeholder_email");
    /// # Ok::<(), tool_contract::Violations>(())
    /// ```
    fn validate_output_audited(
        &self,
        bytes: &[u8],
        forbidden: &ForbiddenKeys,
    ) -> Result<Validated<Self::Output>, Violations> {
        let bounds = InputOf(self);
        let (output, stripped) = reader::read_document(
            bytes,
            <Self::Output as ToolOutput>::LIMITS,
            forbidden,
            &bounds,
            |reader| <Self::Output as ReadField<'_>>::__read(reader, &Rules::NONE),
        )?;
        Ok(Validated { output, stripped })
    }

    /// [`validate_output_with`](Self::validate_output_with) into `V`, an output type that
    /// borrows its strings from `bytes` (`&'de str` and `Cow<'de, str>` fields) instead of
    /// copying them: no allocation for a string without escapes.
    ///
    /// `V` is read exactly as an output: its own fields and rules, the forbidden keys, its
    /// size and depth limits, and its `bound`s against this call's input (checked at compile
    /// time like the contract's own). It is usually the borrowed twin of
    /// [`Output`](Self::Output), the same fields with borrowed strings. A `&str` field cannot
    /// hold a string whose JSON spelling has escapes (there is nothing to borrow); such a
    /// value is a [`BorrowedEscapes`](crate::vocabulary::ViolationKind::BorrowedEscapes)
    /// violation, where a `Cow<str>` field takes a decoded copy.
    ///
    /// ```
    /// use std::borrow::Cow;
    /// use tool_contract::{ToolContract, ToolOutput};
    ///
    /// /// Look up a parcel.
    /// #[derive(serde::Deserialize, ToolContract)]
    /// #[tool_contract(output = Parcel, effect = read_only, source_label = "carrier",
    ///                 producer_revision = "carrier-1")]
    /// struct TrackParcel { #[tool_contract(max_len = 20)] parcel_ref: String }
    ///
    /// #[derive(serde::Serialize, ToolOutput)]
    /// struct Parcel { #[tool_output(bound = parcel_ref)] parcel_ref: String, status: String }
    ///
    /// /// The same output, borrowed from the bytes it is read from.
    /// #[derive(serde::Serialize, ToolOutput)]
    /// struct ParcelView<'a> {
    ///     #[tool_output(bound = parcel_ref)]
    ///     parcel_ref: &'a str,
    ///     status: Cow<'a, str>,
    /// }
    ///
    /// let call = TrackParcel { parcel_ref: "P-1".into() };
    /// let bytes = br#"{"parcel_ref":"P-1","status":"in \"transit\""}"#;
    /// let forbidden = &tool_contract::vocabulary::ForbiddenKeys::DEFAULT;
    /// let view: ParcelView<'_> = call.validate_output_borrowed(bytes, forbidden)?;
    /// assert_eq!(view.parcel_ref, "P-1");
    /// assert!(matches!(view.status, Cow::Owned(_)), "escapes are decoded into a copy");
    /// # Ok::<(), tool_contract::Violations>(())
    /// ```
    fn validate_output_borrowed<'de, V>(
        &self,
        bytes: &'de [u8],
        forbidden: &ForbiddenKeys,
    ) -> Result<V, Violations>
    where
        V: ToolOutput + ReadField<'de>,
    {
        // The `bound`s inside `V` against this contract's input, as the derive checks
        // `Output`'s: evaluated when this instance is compiled.
        let () = <V::__Check<Self> as BoundCheck>::CHECK;
        let bounds = InputOf(self);
        reader::read_document(bytes, V::LIMITS, forbidden, &bounds, |reader| {
            V::__read(reader, &Rules::NONE)
        })
        .map(|(view, _stripped)| view)
    }

    /// [`validate_output`](Self::validate_output) for a value already parsed.
    ///
    /// The value is encoded once and read like bytes, so the size limit applies to its
    /// encoding and every check is the same. A `Value` cannot hold duplicate keys (serde_json
    /// kept the last one when it parsed them), so prefer the bytes form for untrusted input.
    fn validate_output_value(&self, value: &Value) -> Result<Self::Output, Violations> {
        let bytes = infallible(serde_json::to_vec(value), "a `Value` always encodes");
        self.validate_output(&bytes)
    }

    #[doc(hidden)]
    const __ARGUMENT_LIMITS: Limits;

    /// The tier the contract declares for its sources (`source_tier = ...`).
    #[doc(hidden)]
    const __SOURCE_TIER: Option<SourceTier> = None;

    #[doc(hidden)]
    const __INPUT_FIELDS: &'static [InputFieldDecl];

    #[doc(hidden)]
    fn __read_arguments(reader: &mut Reader<'_, '_>) -> Result<Option<Self>, Stop>;

    #[doc(hidden)]
    fn __bound_value(&self, field: &str) -> Option<BoundValue<'_>>;
}

/// A write whose contract names its status query, `reconcile = StatusTool`: the derive
/// implements it, so the dispatcher can run that tool's handler when the write's outcome is
/// unknown.
#[diagnostic::on_unimplemented(
    message = "`{Self}` names no status tool",
    label = "its contract does not say `reconcile = StatusTool`",
    note = "a write with `reconcile = manual` is registered with `handler_with`, not `write_handler`"
)]
pub trait ReconciledBy: ToolContract {
    /// The read that finds out whether a write of `Self` happened: a [`ToolContract`]
    /// (unbounded here so that naming another type is reported once, by the derive's check).
    type StatusTool;
}

/// The input of the call whose output is being read, for `bound` fields.
struct InputOf<'a, C>(&'a C);

impl<C: ToolContract> BoundInputs for InputOf<'_, C> {
    fn bound_value(&self, field: &str) -> Option<BoundValue<'_>> {
        self.0.__bound_value(field)
    }

    // A contract that declares no tier lets its sources claim only the lowest.
    fn tier_ceiling(&self) -> Option<SourceTier> {
        Some(C::__SOURCE_TIER.unwrap_or(SourceTier::Community))
    }
}

/// A validated output, with the values its `strip_synthetic` detectors removed.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Validated<T> {
    /// The output, as the contract allows it.
    pub output: T,
    /// Each value removed, at its path in the handler's output.
    pub stripped: Vec<Stripped>,
}

/// A type a tool may return: a struct of exactly its fields, or a unit-only enum.
///
/// Derive it with `#[derive(serde::Serialize, tool_contract::ToolOutput)]`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tool output",
    label = "the output type must derive `ToolOutput`",
    note = "add `#[derive(serde::Serialize, tool_contract::ToolOutput)]` to `{Self}`"
)]
pub trait ToolOutput: ContractField + Serialize {
    /// Size and depth limits on the encoded output (`max_bytes`, `max_depth`).
    const LIMITS: Limits;

    /// The value as RFC 8785 canonical JSON, written in one pass from the typed value (member
    /// names were sorted at compile time): the same bytes as
    /// [`canonical::to_vec`](crate::json::canonical::to_vec) of its `serde_json::to_value`.
    ///
    /// ```
    /// use tool_contract::ToolOutput;
    ///
    /// #[derive(serde::Serialize, ToolOutput)]
    /// struct Reading { zone: String, celsius: f64, at_noon: bool }
    ///
    /// let reading = Reading { zone: "é-1".into(), celsius: 21.0, at_noon: true };
    /// assert_eq!(reading.to_canonical_json(), r#"{"at_noon":true,"celsius":21,"zone":"é-1"}"#.as_bytes());
    /// ```
    fn to_canonical_json(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(256);
        self.__write_canonical(&mut out);
        out
    }
}

/// A type that can be a field of a tool's arguments or output.
///
/// Implemented for `String`, `bool`, `i8`–`i64`, `u8`–`u64`, `f64`, `Option<T>`, `Vec<T>`,
/// `time::OffsetDateTime`, `serde_json::Value` (only with the `free_form` opt-in), every type
/// that derives [`ToolOutput`](crate::ToolOutput), and, in an output struct with a lifetime,
/// `&str` and `Cow<str>`. Reading is [`ReadField`]'s. Its methods are for generated code.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a field of a tool contract",
    label = "unsupported field type",
    note = "fields may be String, bool, i8..i64, u8..u64, f64, Option<T>, Vec<T>, \
            time::OffsetDateTime, serde_json::Value (with `free_form`), or a type that \
            derives `ToolOutput`"
)]
pub trait ContractField: Sized {
    #[doc(hidden)]
    fn __shape() -> Shape;

    /// Writes the value as RFC 8785 canonical JSON, exactly as `serde_json::to_value` and
    /// [`canonical::to_vec`](crate::json::canonical::to_vec) would, in one pass and with no `Value`.
    #[doc(hidden)]
    fn __write_canonical(&self, out: &mut Vec<u8>);

    /// The compile-time check of the `bound`s inside this type against the input of the
    /// contract `I` (see [`BoundCheck`]).
    #[doc(hidden)]
    type __Check<I: ToolContract>: BoundCheck;

    /// Whether the type is a struct with a `Vec<GroundingSource>` field, which `grounded`
    /// requires to be non-empty (through `Option` and `Vec`, of the type inside).
    #[doc(hidden)]
    const __HOLDS_SOURCES: bool = false;

    /// Whether a `SourceTier` (as in every `GroundingSource`) appears anywhere inside, so
    /// that the contract must declare the `source_tier` it is checked against.
    #[doc(hidden)]
    const __CLAIMS_TIER: bool = false;
}

/// [`ReadField`] (and so [`ContractField`]) under the one name generated code uses for every
/// field's type, `Named` being the type the field names under its `Option`s and `Vec`s: so
/// that a field of a type that is neither is one error, at the field, saying which type lacks
/// the derive. For generated code only.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`{Named}` cannot be a field of a tool contract: derive `ToolOutput` on `{Named}`",
    label = "`{Named}` does not derive `ToolOutput`",
    note = "add `#[derive(serde::Serialize, tool_contract::ToolOutput)]` to `{Named}`, a struct \
            with named fields or a unit-only enum; a type of another crate cannot derive it, \
            so hold its value in a type of yours (a `String` with a `pattern`, say)"
)]
pub trait Field<'de, Named>: Sized {
    #[doc(hidden)]
    fn __shape() -> Shape;
    #[doc(hidden)]
    fn __read(reader: &mut Reader<'de, '_>, rules: &Rules) -> Result<Option<Self>, Stop>;
    #[doc(hidden)]
    fn __write_canonical(&self, out: &mut Vec<u8>);
    #[doc(hidden)]
    type __Check<I: ToolContract>: BoundCheck;
    #[doc(hidden)]
    const __HOLDS_SOURCES: bool;
    #[doc(hidden)]
    const __CLAIMS_TIER: bool;
}

// Not recommended, so that rustc reports the field's own type and our words, not this impl's
// bound and every type that meets it.
#[diagnostic::do_not_recommend]
impl<'de, T: ReadField<'de>, Named> Field<'de, Named> for T {
    #[inline]
    fn __shape() -> Shape {
        <T as ContractField>::__shape()
    }

    #[inline]
    fn __read(reader: &mut Reader<'de, '_>, rules: &Rules) -> Result<Option<Self>, Stop> {
        <T as ReadField<'de>>::__read(reader, rules)
    }

    #[inline]
    fn __write_canonical(&self, out: &mut Vec<u8>) {
        <T as ContractField>::__write_canonical(self, out);
    }

    type __Check<I: ToolContract> = <T as ContractField>::__Check<I>;
    const __HOLDS_SOURCES: bool = <T as ContractField>::__HOLDS_SOURCES;
    const __CLAIMS_TIER: bool = <T as ContractField>::__CLAIMS_TIER;
}

/// A [`ToolOutput`] that owns its data: read from a document borrowed for any `'de`, so kept
/// past it. `#[derive(ToolOutput)]` implements it for every output type without a lifetime; a
/// contract's output must be one.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tool output that owns its data",
    label = "a contract's output must derive `ToolOutput`, with no lifetime",
    note = "add `#[derive(serde::Serialize, tool_contract::ToolOutput)]` to `{Self}`; a type that borrows is read with `validate_output_borrowed`"
)]
pub trait OwnedOutput: ToolOutput + for<'de> ReadField<'de> {}

/// A [`ContractField`] read from a document borrowed for `'de`: every owned field type for any
/// `'de` (`for<'de> ReadField<'de>`, as a contract's output must be), and `&'a str`,
/// `Cow<'a, str>` and the output types that hold them where `'de` outlives `'a`. Its method is
/// for generated code.
// In the words of `Field`'s, which generated code names: where rustc reports this trait
// instead (normalizing `Field`'s associated type), the two errors read as one.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a field of a tool contract: derive `ToolOutput` on `{Self}`",
    label = "`{Self}` does not derive `ToolOutput`",
    note = "add `#[derive(serde::Serialize, tool_contract::ToolOutput)]` to `{Self}`, a struct \
            with named fields or a unit-only enum; a type of another crate cannot derive it, \
            so hold its value in a type of yours (a `String` with a `pattern`, say)"
)]
pub trait ReadField<'de>: ContractField {
    /// Reads the value that comes next, under `rules`; `None` (after a report) if it breaks
    /// the contract.
    #[doc(hidden)]
    fn __read(reader: &mut Reader<'de, '_>, rules: &Rules) -> Result<Option<Self>, Stop>;
}
