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
