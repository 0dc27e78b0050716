//! The closed sets the attributes choose from, each as an enum: its spellings in the DSL, and
//! the runtime value it expands to (`ToTokens` writes the `::tool_contract::__private` path).

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};

/// Writes `::tool_contract::__private::<runtime_type>::<variant>`.
fn runtime_path(tokens: &mut TokenStream, runtime_type: TokenStream, variant: TokenStream) {
    tokens.extend(quote!(::tool_contract::__private::#runtime_type::#variant));
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    Pure,
    ReadOnly,
    IdempotentWrite,
    NonIdempotentWrite,
}

impl Effect {
    pub const CHOICES: &[(&str, Effect)] = &[
        ("pure", Effect::Pure),
        ("read_only", Effect::ReadOnly),
        ("idempotent_write", Effect::IdempotentWrite),
        ("non_idempotent_write", Effect::NonIdempotentWrite),
    ];

    pub fn is_write(self) -> bool {
        matches!(self, Effect::IdempotentWrite | Effect::NonIdempotentWrite)
    }
}

impl ToTokens for Effect {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let variant = match self {
            Effect::Pure => quote!(Pure),
            Effect::ReadOnly => quote!(ReadOnly),
            Effect::IdempotentWrite => quote!(IdempotentWrite),
            Effect::NonIdempotentWrite => quote!(NonIdempotentWrite),
        };
        runtime_path(tokens, quote!(Effect), variant);
    }
}

#[derive(Clone, Copy)]
pub enum Approval {
    ByCaller,
    ByAnother,
    NotRequired,
}

impl Approval {
    pub const CHOICES: &[(&str, Approval)] = &[
        ("by_caller", Approval::ByCaller),
        ("by_another", Approval::ByAnother),
        ("not_required", Approval::NotRequired),
    ];

    /// The spelling that said approval was needed without saying by whom: refused, with the
    /// choices that say it.
    pub const RETIRED: &str = "required";
}

impl ToTokens for Approval {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let variant = match self {
            Approval::ByCaller => quote!(ByCaller),
            Approval::ByAnother => quote!(ByAnother),
            Approval::NotRequired => quote!(NotRequired),
        };
        runtime_path(tokens, quote!(Approval), variant);
    }
}

pub enum Reconcile {
    Manual,
    Tool(syn::Path),
}

/// What makes two calls of a write the same operation (`operation = ...`).
pub enum Operation {
    /// `operation = [member_id, isbn]`: these input fields, as written.
    Fields(Vec<syn::Ident>),
    /// `operation = per_call`: one operation per model call.
    PerCall,
    /// `operation = key_rule`: the application's rule, `DispatcherBuilder::operation_key`.
    KeyRule,
    /// `operation = same_arguments`: identical arguments are one operation.
    SameArguments,
}

impl Operation {
    /// The named choices (the field list is written in brackets).
    pub const CHOICES: &[&str] = &["per_call", "key_rule", "same_arguments"];
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Rfc3339,
    Rfc3339Utc,
    HttpsUrl,
}

impl Format {
    pub const CHOICES: &[(&str, Format)] = &[
        ("rfc3339", Format::Rfc3339),
        ("rfc3339_utc", Format::Rfc3339Utc),
        ("https_url", Format::HttpsUrl),
    ];
}

impl ToTokens for Format {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let variant = match self {
            Format::Rfc3339 => quote!(Rfc3339),
            Format::Rfc3339Utc => quote!(Rfc3339Utc),
            Format::HttpsUrl => quote!(HttpsUrl),
        };
        runtime_path(tokens, quote!(Format), variant);
    }
}

#[derive(Clone, Copy)]
pub enum SourceTier {
    Official,
    AuthoritativeDatabase,
    WebSearch,
    Community,
}

impl SourceTier {
    pub const CHOICES: &[(&str, SourceTier)] = &[
        ("official", SourceTier::Official),
        ("authoritative_database", SourceTier::AuthoritativeDatabase),
        ("web_search", SourceTier::WebSearch),
        ("community", SourceTier::Community),
    ];
}

impl ToTokens for SourceTier {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let variant = match self {
            SourceTier::Official => quote!(Official),
            SourceTier::AuthoritativeDatabase => quote!(AuthoritativeDatabase),
            SourceTier::WebSearch => quote!(WebSearch),
            SourceTier::Community => quote!(Community),
        };
        runtime_path(tokens, quote!(SourceTier), variant);
    }
}

/// The synthetic-data detectors the runtime ships, each a `Detector` constant there.
#[derive(Clone, Copy)]
pub enum BuiltinDetector {
    PlaceholderEmail,
    PlaceholderPhone,
    LoremIpsum,
}

impl BuiltinDetector {
    pub const CHOICES: &[(&str, BuiltinDetector)] = &[
        ("placeholder_email", BuiltinDetector::PlaceholderEmail),
        ("placeholder_phone", BuiltinDetector::PlaceholderPhone),
        ("lorem_ipsum", BuiltinDetector::LoremIpsum),
    ];
}

impl ToTokens for BuiltinDetector {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let constant = match self {
            BuiltinDetector::PlaceholderEmail => quote!(PLACEHOLDER_EMAIL),
            BuiltinDetector::PlaceholderPhone => quote!(PLACEHOLDER_PHONE),
            BuiltinDetector::LoremIpsum => quote!(LOREM_IPSUM),
        };
        runtime_path(tokens, quote!(Detector), constant);
    }
}

/// What `reject_synthetic(...)` or `strip_synthetic(...)` declares on a field.
pub struct Synthetic {
    pub strip: bool,
    pub detectors: Vec<Detector>,
}

pub enum Detector {
    Builtin(BuiltinDetector),
    /// `with = path`: a `fn(&str) -> bool` of the user's.
    Custom(syn::Path),
}

/// The kind of value a `bound` compares: the runtime's `BoundKind`.
#[derive(Clone, Copy)]
pub enum BoundKind {
    Str,
    Int,
    Bool,
}

impl ToTokens for BoundKind {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let variant = match self {
            BoundKind::Str => quote!(Str),
            BoundKind::Int => quote!(Int),
            BoundKind::Bool => quote!(Bool),
        };
        runtime_path(tokens, quote!(BoundKind), variant);
    }
}
