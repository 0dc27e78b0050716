//! A typed view of the derive input, borrowing from syn: what `check` and `expand` read.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::{Data, DeriveInput, Fields, Ident};

use crate::attr::{self, ContractAttrs, FieldAttrs, Limits, SerdeAttrs, SerdePlace};
use crate::case::snake_case;
use crate::ctxt::Ctxt;
use crate::symbol::Namespace;
use crate::ty::FieldType;

/// A struct that derives `ToolContract`: the tool's arguments.
pub struct Contract<'a> {
    pub original: &'a DeriveInput,
    pub attrs: ContractAttrs,
    pub doc: Option<String>,
    pub fields: Vec<Field<'a>>,
}

/// A type that derives `ToolOutput`.
pub struct Output<'a> {
    pub original: &'a DeriveInput,
    pub limits: Limits,
    /// `#[tool_output(grounded)]` on the type: the tokens that said it.
    pub grounded: Option<TokenStream>,
    pub doc: Option<String>,
    pub data: OutputData<'a>,
    /// The one lifetime of a struct that borrows from the document it is read from.
    pub lifetime: Option<&'a syn::Lifetime>,
}

pub enum OutputData<'a> {
    Struct(Vec<Field<'a>>),
    Enum(Vec<Variant<'a>>),
}

/// A named field, with its JSON key after serde's renames.
pub struct Field<'a> {
    pub original: &'a syn::Field,
    pub ident: &'a Ident,
    pub key: String,
    /// The tokens that decide the key: the `rename` literal, or the field's name.
    pub key_tokens: TokenStream,
    pub ty: FieldType<'a>,
    pub rules: FieldAttrs,
    pub serde: SerdeAttrs,
    pub doc: Option<String>,
}

/// The tool's name, and where it came from (for the error when a provider would refuse it).
pub struct ToolName {
    pub value: String,
    /// Whether `name = "..."` gave it (else it is the struct's name in snake_case).
    pub explicit: bool,
    /// The tokens that chose it: the literal, or the struct's name.
    pub tokens: TokenStream,
}

/// A unit variant, with its JSON string after serde's renames.
pub struct Variant<'a> {
    pub ident: &'a Ident,
    pub value: String,
    pub value_tokens: TokenStream,
}

impl<'a> Contract<'a> {
    /// The tool name, explicit or the struct's name in snake_case. Whether it fits every
    /// provider is checked where the runtime's own rule can run: a `const` check.
    pub fn tool_name(&self) -> ToolName {
        match &self.attrs.name {
            Some(lit) => ToolName {
                value: lit.value(),
                explicit: true,
                tokens: lit.to_token_stream(),
            },
            None => ToolName {
                value: snake_case(&self.original.ident.to_string()),
                explicit: false,
                tokens: self.original.ident.to_token_stream(),
            },
        }
    }

    pub fn from_ast(cx: &Ctxt, input: &'a DeriveInput) -> Option<Self> {
        let attrs = ContractAttrs::from_ast(cx, &input.attrs);
        let serde = attr::serde_attrs(cx, SerdePlace::Container, &input.attrs);
        let fields = named_struct_fields(cx, input, Namespace::Contract)?;
        let fields = fields_from_ast(cx, Namespace::Contract, fields, &serde, false);
        Some(Contract {
            original: input,
            attrs,
            doc: attr::doc_comment(&input.attrs),
            fields,
        })
    }
}

impl<'a> Output<'a> {
    pub fn from_ast(cx: &Ctxt, input: &'a DeriveInput) -> Option<Self> {
        let attrs = attr::output_container(cx, &input.attrs);
        let serde = attr::serde_attrs(cx, SerdePlace::Container, &input.attrs);
        let lifetime = match &input.data {
            Data::Struct(_) => borrowed_lifetime(cx, input),
            _ => {
                reject_generics(cx, input, Namespace::Output);
                None
            }
        };
        let data = match &input.data {
            Data::Struct(_) => {
                let fields = named_struct_fields(cx, input, Namespace::Output)?;
                // Typed as borrowing whenever it declares a lifetime, so that a refused
                // parameter list is one error, not one more per `&'a str` field.
                let borrows = input.generics.lifetimes().next().is_some();
                OutputData::Struct(fields_from_ast(
                    cx,
                    Namespace::Output,
                    fields,
                    &serde,
                    borrows,
                ))
            }
            Data::Enum(data) => {
                let mut variants = Vec::new();
                for variant in &data.variants {
                    let variant_serde = attr::serde_attrs(cx, SerdePlace::Variant, &variant.attrs);
                    if !matches!(variant.fields, Fields::Unit) {
                        cx.error_spanned_by(
                            variant,
                            "an output enum must be unit-only (a finite set of strings); \
                             put data in a struct that derives `ToolOutput`",
                        );
                        continue;
                    }
                    let (value, value_tokens) = match (&variant_serde.rename, serde.rename_all) {
                        (Some(rename), _) => (rename.value(), rename.to_token_stream()),
                        (None, Some(rule)) => (
                            rule.apply_to_variant(&variant.ident.unraw().to_string()),
                            variant.ident.to_token_stream(),
                        ),
                        (None, None) => (
                            variant.ident.unraw().to_string(),
                            variant.ident.to_token_stream(),
                        ),
                    };
                    variants.push(Variant {
                        ident: &variant.ident,
                        value,
                        value_tokens,
                    });
                }
                if data.variants.is_empty() {
                    cx.error_spanned_by(
                        &input.ident,
                        "an output enum needs at least one variant: it is the set of values allowed",
                    );
                }
                OutputData::Enum(variants)
            }
            Data::Union(_) => {
                cx.error_spanned_by(
                    &input.ident,
                    "`ToolOutput` cannot be derived for a union; use a struct or a unit-only enum",
                );
                return None;
            }
        };
        Some(Output {
            original: input,
            limits: attrs.limits,
            grounded: attrs.grounded,
            doc: attr::doc_summary(&input.attrs),
            data,
            lifetime,
        })
    }
}

/// The lifetime of an output struct that borrows strings from its document: one lifetime
/// parameter and nothing else generic. Anything more is refused, since a contract has one
/// exact shape.
fn borrowed_lifetime<'a>(cx: &Ctxt, input: &'a DeriveInput) -> Option<&'a syn::Lifetime> {
    let generics = &input.generics;
    let mut lifetimes = generics.lifetimes();
    let only_one_lifetime = generics.params.len() == 1 && generics.where_clause.is_none();
    match lifetimes.next() {
        Some(param) if only_one_lifetime && param.bounds.is_empty() => Some(&param.lifetime),
        Some(_)
            if generics.type_params().next().is_none()
                && generics.const_params().next().is_none() =>
        {
            cx.error_spanned_by(
                generics,
                "a borrowed output has one lifetime, the document's, and no bounds or where \
                 clause: `struct View<'a>`",
            );
            None
        }
        _ => {
            reject_generics(cx, input, Namespace::Output);
            None
        }
    }
}

fn reject_generics(cx: &Ctxt, input: &DeriveInput, namespace: Namespace) {
    let derive = namespace.derive();
    if !input.generics.params.is_empty() {
        cx.error_spanned_by(
            &input.generics,
            format!(
                "`{derive}` cannot be derived for a generic type: a contract has one exact shape; \
                 declare a concrete type"
            ),
        );
    }
}

fn named_struct_fields<'a>(
    cx: &Ctxt,
    input: &'a DeriveInput,
    namespace: Namespace,
) -> Option<&'a syn::FieldsNamed> {
    // An output's generics are checked before the struct is looked at.
    if namespace == Namespace::Contract {
        reject_generics(cx, input, namespace);
    }
    let derive = namespace.derive();
    match &input.data {
        Data::Struct(data) => match &data.fields {
            Fields::Named(fields) => Some(fields),
            Fields::Unnamed(_) | Fields::Unit => {
                cx.error_spanned_by(
                    &input.ident,
                    format!(
                        "`{derive}` needs a struct with named fields: each field is a JSON key"
                    ),
                );
                None
            }
        },
        _ => {
            cx.error_spanned_by(
                &input.ident,
                format!("`{derive}` needs a struct with named fields"),
            );
            None
        }
    }
}

fn fields_from_ast<'a>(
    cx: &Ctxt,
    namespace: Namespace,
    fields: &'a syn::FieldsNamed,
    container: &SerdeAttrs,
    borrows: bool,
) -> Vec<Field<'a>> {
    fields
        .named
        .iter()
        .filter_map(|field| {
            let ident = field.ident.as_ref()?;
            if let Some((eq, _)) = &field.default {
                cx.error_spanned_by(
                    eq,
                    "field default values are not supported: every field must be present",
                );
            }
            let serde = attr::serde_attrs(cx, SerdePlace::Field, &field.attrs);
            let (key, key_tokens) = match (&serde.rename, container.rename_all) {
                (Some(rename), _) => (rename.value(), rename.to_token_stream()),
                (None, Some(rule)) => (
                    rule.apply_to_field(&ident.unraw().to_string()),
                    ident.to_token_stream(),
                ),
                (None, None) => (ident.unraw().to_string(), ident.to_token_stream()),
            };
            Some(Field {
                original: field,
                ident,
                key,
                key_tokens,
                ty: FieldType::of(&field.ty, borrows),
                rules: FieldAttrs::from_ast(cx, namespace, &field.attrs),
                serde,
                doc: attr::doc_summary(&field.attrs),
            })
        })
        .collect()
}
