//! `bound` output fields: the kinds of value they join, and the compile-time check that each
//! names an input field of the same kind.

use super::const_check::str_eq;

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

/// The compile-time check of the `bound`s inside one field type, at any depth, against the
/// input of a contract: evaluating `CHECK` fails at the `bound` that names no input field, or
/// one of another kind, so that the error stands at that `bound`. Each field type names its
/// check as [`ContractField::__Check`](super::traits::ContractField).
pub trait BoundCheck {
    /// `()`, or a compile error at the first wrong `bound`.
    const CHECK: ();
}

/// The check of a type that holds no `bound`.
#[derive(Debug)]
pub struct NoBounds;

impl BoundCheck for NoBounds {
    const CHECK: () = ();
}

/// One field of a contract's input, as `bound` sees it.
#[derive(Debug, Clone, Copy)]
pub struct InputFieldDecl {
    /// The Rust field name.
    pub name: &'static str,
    /// Its kind, if it can be bound.
    pub kind: Option<BoundKind>,
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
