//! What generated code calls, and nothing else. Not part of the semver API.

use sha2::{Digest, Sha256};

use crate::schema;
use crate::spec::{
    Approval, Effect, Limits, ObjectShape, Reconcile, Revisions, Rules, Shape, ToolSpec,
};
pub use crate::validate::reader::{BoundValue, Reader, Stop};
use crate::{ContractField, ToolContract, ToolOutput};
pub use std::sync::OnceLock;

/// The kinds of value a `bound` may join.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoundKind {
    /// `String`
    Str,
    /// Any integer type.
    Int,
    /// `bool`
    Bool,
}

impl BoundKind {
    const fn same(self, other: BoundKind) -> bool {
        self as u8 == other as u8
    }
}

/// One `#[tool_output(bound = input_field)]`, with the messages the compile-time check
/// shows (written by the derive, which knows where the declaration is).
#[derive(Debug, Clone, Copy)]
pub struct BoundDecl {
    /// The input field named.
    pub input_field: &'static str,
    /// The output field's kind.
    pub kind: BoundKind,
    /// Shown when the input has no such field.
    pub missing: &'static str,
    /// Shown when the input field has another kind.
    pub mismatch: &'static str,
}

/// One field of a contract's input, as `bound` sees it.
#[derive(Debug, Clone, Copy)]
pub struct InputFieldDecl {
    /// The Rust field name.
    pub name: &'static str,
    /// Its kind, if it can be bound.
    pub kind: Option<BoundKind>,
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The first `bound` that names no input field, or one of another kind, as its message.
#[must_use]
pub const fn bound_error(bounds: &[BoundDecl], inputs: &[InputFieldDecl]) -> Option<&'static str> {
    let mut b = 0;
    while b < bounds.len() {
        let bound = bounds[b];
        let mut found = None;
        let mut i = 0;
        while i < inputs.len() {
            if str_eq(inputs[i].name, bound.input_field) {
                found = Some(inputs[i]);
            }
            i += 1;
        }
        match found {
            None => return Some(bound.missing),
            Some(InputFieldDecl {
                kind: Some(kind), ..
            }) if kind.same(bound.kind) => {}
            Some(_) => return Some(bound.mismatch),
        }
        b += 1;
    }
    None
}

/// Concatenates the `bound` declarations of a type and of its fields' types.
#[must_use]
pub const fn concat_bounds<const N: usize>(parts: &[&[BoundDecl]]) -> [BoundDecl; N] {
    const EMPTY: BoundDecl = BoundDecl {
        input_field: "",
        kind: BoundKind::Str,
        missing: "",
        mismatch: "",
    };
    let mut all = [EMPTY; N];
    let mut n = 0;
    let mut p = 0;
    while p < parts.len() {
        let mut i = 0;
        while i < parts[p].len() {
            all[n] = parts[p][i];
            n += 1;
            i += 1;
        }
        p += 1;
    }
    all
}

/// The total length of `parts`, for [`concat_bounds`].
#[must_use]
pub const fn total_len(parts: &[&[BoundDecl]]) -> usize {
    let mut n = 0;
    let mut p = 0;
    while p < parts.len() {
        n += parts[p].len();
        p += 1;
    }
    n
}

/// The output shape of contract `C`.
#[must_use]
pub fn output_shape<C: ToolContract>() -> Shape {
    <C::Output as ContractField>::__shape()
}

/// The output limits of contract `C`.
#[must_use]
pub const fn output_limits<C: ToolContract>() -> Limits {
    <C::Output as ToolOutput>::LIMITS
}

/// The `bound` declarations of contract `C`'s output, at any depth.
#[must_use]
pub const fn output_bounds<C: ToolContract>() -> &'static [BoundDecl] {
    <C::Output as ContractField>::__BOUNDS
}

/// Whether contract `C`'s output holds a source tier anywhere (so it must declare its own).
#[must_use]
pub const fn output_claims_tier<C: ToolContract>() -> bool {
    <C::Output as ContractField>::__CLAIMS_TIER
}

/// Whether the default list forbids an output field named `key`.
#[must_use]
pub const fn is_forbidden_key(key: &str) -> bool {
    crate::validate::forbidden::is_forbidden_by_default(key)
}

/// A message built at compile time, for a `panic!` in a `const` check.
#[derive(Debug)]
pub struct ConstMessage {
    bytes: [u8; 256],
    len: usize,
}

impl ConstMessage {
    const fn new() -> Self {
        ConstMessage {
            bytes: [0; 256],
            len: 0,
        }
    }

    const fn push(mut self, text: &str) -> Self {
        let text = text.as_bytes();
        let mut i = 0;
        // Cut at a char boundary so the message stays UTF-8.
        let room = self.bytes.len() - self.len;
        let mut end = if text.len() < room { text.len() } else { room };
        while end > 0 && end < text.len() && (text[end] & 0xC0) == 0x80 {
            end -= 1;
        }
        while i < end {
            self.bytes[self.len] = text[i];
            self.len += 1;
            i += 1;
        }
        self
    }

    /// Whether there is anything to say.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The message.
    #[must_use]
    pub const fn as_str(&self) -> &str {
        match core::str::from_utf8(self.bytes.split_at(self.len).0) {
            Ok(text) => text,
            Err(_) => "",
        }
    }
}

/// The message for the first name `names` holds twice, or an empty one.
#[must_use]
pub const fn duplicate_tool_name(names: &[&str]) -> ConstMessage {
    let mut i = 0;
    while i < names.len() {
        let mut j = i + 1;
        while j < names.len() {
            if str_eq(names[i], names[j]) {
                return ConstMessage::new()
                    .push("two tools in this registry share the name `")
                    .push(names[i])
                    .push("`; give one of them `#[tool_contract(name = \"...\")]`");
            }
            j += 1;
        }
        i += 1;
    }
    ConstMessage::new()
}

/// A contract as the derive declares it; [`build_spec`] turns it into a [`ToolSpec`].
#[derive(Debug)]
pub struct ContractDecl {
    /// The tool's name.
    pub name: &'static str,
    /// The doc comment.
    pub description: &'static str,
    /// The effect.
    pub effect: Effect,
    /// Approval, for writes.
    pub approval: Option<Approval>,
    /// Reconciliation, for non-idempotent writes.
    pub reconcile: Option<Reconcile>,
    /// The source label.
    pub source_label: &'static str,
    /// The tier of the tool's sources, if declared.
    pub source_tier: Option<crate::evidence::SourceTier>,
    /// The producer revision.
    pub producer_revision: &'static str,
    /// Declared revisions; the missing ones are digests.
    pub input_revision: Option<&'static str>,
    /// See `input_revision`.
    pub output_revision: Option<&'static str>,
    /// See `input_revision`.
    pub effect_revision: Option<&'static str>,
    /// See `input_revision`.
    pub handler_revision: Option<&'static str>,
    /// See `input_revision`.
    pub policy_revision: Option<&'static str>,
    /// The arguments.
    pub arguments: &'static ObjectShape,
    /// Limits on the arguments.
    pub argument_limits: Limits,
    /// The output's shape.
    pub output: fn() -> Shape,
    /// Limits on the output.
    pub output_limits: Limits,
}

/// `sha256:` and the first 16 hex digits of the SHA-256 of `value`'s JSON encoding.
fn short_digest(value: &serde_json::Value) -> String {
    // RFC 8785, so the revision depends on the schema's meaning, not on how serde_json
    // happens to order or spell it. Schemas hold no non-finite number, so this cannot fail.
    let bytes = crate::canonical::to_vec(value).unwrap_or_default();
    let digest = Sha256::digest(&bytes);
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// Writes a string canonically (generated `__write_canonical`, for names that need escaping).
pub fn write_canonical_str(out: &mut Vec<u8>, value: &str) {
    crate::canonical::write_str(out, value);
}

/// Builds a tool's spec: schemas, and a digest for every revision not declared.
#[must_use]
pub fn build_spec(decl: &'static ContractDecl) -> ToolSpec {
    let input_schema = schema::input_schema(decl.arguments);
    let output_schema = schema::shape_schema((decl.output)(), &Rules::NONE);
    let mut effect_declaration = serde_json::json!({
        "effect": decl.effect,
        "approval": decl.approval,
        "reconcile": decl.reconcile,
    });
    // Only when declared, so that the revisions of contracts without one stay as they were.
    if let Some(tier) = decl.source_tier {
        effect_declaration["source_tier"] = serde_json::json!(tier);
    }
    let revision = |declared: Option<&str>, of: &serde_json::Value| {
        declared.map_or_else(|| short_digest(of), str::to_owned)
    };
    let revisions = Revisions {
        input: revision(decl.input_revision, &input_schema),
        output: revision(decl.output_revision, &output_schema),
        effect: revision(decl.effect_revision, &effect_declaration),
        producer: decl.producer_revision.to_owned(),
        handler: decl.handler_revision.map(str::to_owned),
        policy: decl.policy_revision.map(str::to_owned),
    };
    ToolSpec {
        name: decl.name,
        description: decl.description,
        effect: decl.effect,
        approval: decl.approval,
        reconcile: decl.reconcile,
        source_label: decl.source_label,
        source_tier: decl.source_tier,
        revisions,
        arguments: decl.arguments,
        argument_limits: decl.argument_limits,
        output: (decl.output)(),
        output_limits: decl.output_limits,
        input_schema,
        output_schema,
    }
}

/// Stands in for an output type the derive could not accept, so that a mistake in a contract
/// shows as that one error and not as errors everywhere the contract is used.
#[derive(Debug)]
pub enum InvalidOutput {}

impl serde::Serialize for InvalidOutput {
    fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
        match *self {}
    }
}

impl ContractField for InvalidOutput {
    fn __read(_: &mut Reader<'_>, _: &Rules) -> Result<Option<Self>, Stop> {
        Ok(None)
    }

    fn __shape() -> Shape {
        Shape::FreeForm
    }

    fn __write_canonical(&self, _: &mut Vec<u8>) {
        match *self {}
    }
}

impl ToolOutput for InvalidOutput {
    const LIMITS: Limits = Limits::DEFAULT;
}
