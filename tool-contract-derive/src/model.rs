//! What `check` hands `expand`: a contract whose required keys are all present and typed, so
//! expansion reads it without asking again whether anything is there.

use syn::{Ident, LitStr};

use crate::ast::{Field, ToolName};
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
    /// Declared, or the tool's name.
    pub source_label: Option<&'a LitStr>,
    /// Declared, or the declaring crate's `name@version`.
    pub producer_revision: Option<&'a LitStr>,
    pub approval: Option<Approval>,
    pub operation: Option<CheckedOperation>,
    /// `within`: how long, in seconds, an operation stays one; `None`: for good (or the rule
    /// keeps the ledger's retention).
    pub window: Option<u64>,
    pub reconcile: Option<&'a Reconcile>,
    pub source_tier: Option<SourceTier>,
    /// `additive`: the write only adds to what it changes.
    pub additive: bool,
    pub revisions: Revisions<'a>,
    pub limits: &'a Limits,
    pub fields: &'a [Field<'a>],
}

/// What makes two calls of a write the same operation, with each named field as its JSON key.
pub enum CheckedOperation {
    Fields(Vec<String>),
    PerCall,
    KeyRule,
    SameArguments,
}

/// The revisions a contract may pin; each left out is the digest of what it names.
pub struct Revisions<'a> {
    pub input: Option<&'a LitStr>,
    pub output: Option<&'a LitStr>,
    pub effect: Option<&'a LitStr>,
    pub handler: Option<&'a LitStr>,
    pub policy: Option<&'a LitStr>,
}
