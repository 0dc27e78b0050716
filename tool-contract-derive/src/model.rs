//! What `check` hands `expand`: a contract whose required keys are all present and typed, so
//! expansion reads it without asking again whether anything is there.

use proc_macro2::TokenStream;
use syn::{Ident, LitStr};

use crate::ast::Field;
use crate::attr::Limits;
use crate::value::{Approval, Effect, Reconcile, SourceTier};

/// A `ToolContract` that passed every check.
pub struct CheckedContract<'a> {
    pub ident: &'a Ident,
    pub name: ToolName,
    /// The struct's doc comment: the tool's description.
    pub description: &'a str,
    pub output: &'a syn::Type,
    pub effect: Effect,
    pub source_label: &'a LitStr,
    pub producer_revision: &'a LitStr,
    pub approval: Option<Approval>,
    pub reconcile: Option<&'a Reconcile>,
    pub source_tier: Option<SourceTier>,
    pub revisions: Revisions<'a>,
    pub limits: &'a Limits,
    pub fields: &'a [Field<'a>],
}

/// The revisions a contract may pin; each left out is the digest of what it names.
pub struct Revisions<'a> {
    pub input: Option<&'a LitStr>,
    pub output: Option<&'a LitStr>,
    pub effect: Option<&'a LitStr>,
    pub handler: Option<&'a LitStr>,
    pub policy: Option<&'a LitStr>,
}

/// The tool's name, and where it came from (for the error when a provider would refuse it).
pub struct ToolName {
    pub value: String,
    /// Whether `name = "..."` gave it (else it is the struct's name in snake_case).
    pub explicit: bool,
    /// The tokens that chose it: the literal, or the struct's name.
    pub tokens: TokenStream,
}
