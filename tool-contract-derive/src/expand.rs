//! Checked input → the impls, the validators and the spec. Reports no user errors: everything
//! it could trip on was refused by `check`, or is left to a `const` check whose message is ours.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;

use crate::ast::{Field, Output, OutputData, ToolName, Variant};
use crate::attr::Limits;
use crate::lifetime;
use crate::model::{CheckedContract, CheckedOperation};
use crate::ty::{FieldType, Wrapper, is_sources_list, named_type, wrappers};
use crate::value::{Detector, Reconcile};

pub fn contract(contract: &CheckedContract) -> TokenStream {
    let ident = contract.ident;
    let output_ty = contract.output;
    let name = &contract.name.value;
    let name_check = tool_name_check(&contract.name);
    let description = contract.description;
    let effect = contract.effect;
    let approval = option_tokens(contract.approval);
    let (reconcile, reconcile_check) = match contract.reconcile {
        Some(Reconcile::Manual) => (
            quote!(__private::Some(__private::Reconcile::Manual)),
            TokenStream::new(),
        ),
        Some(Reconcile::Tool(path)) => {
            let shown = path.to_token_stream().to_string().replace(' ', "");
            let message = format!(
                "`reconcile = {shown}` must name a read_only contract: the status query that \
                 finds out whether the write happened"
            );
            let check = quote_spanned! {path.span()=>
                const _: () = if !<#path as __private::ToolContract>::EFFECT
                    .can_reconcile()
                {
                    ::core::panic!(#message)
                };
            };
            let reconcile = quote! {
                __private::Some(__private::Reconcile::Tool(
                    <#path as __private::ToolContract>::NAME,
                ))
            };
            let reconciled_by = quote! {
                #[automatically_derived]
                impl __private::ReconciledBy for #ident {
                    type StatusTool = #path;
                }
            };
            (reconcile, quote!(#check #reconciled_by))
        }
        None => (quote!(__private::None), TokenStream::new()),
    };
    // The defaults: the tool's name, and the declaring crate's name and version (read where
    // the contract is compiled, so a release of the tool's crate is a new revision).
    let source_label = match contract.source_label {
        Some(label) => label.to_token_stream(),
        None => name.to_token_stream(),
    };
    let producer_revision = match contract.producer_revision {
        Some(revision) => revision.to_token_stream(),
        None => quote!(::core::concat!(
            ::core::env!("CARGO_PKG_NAME"),
            "@",
            ::core::env!("CARGO_PKG_VERSION")
        )),
    };
    let operation = match &contract.operation {
        None => quote!(__private::None),
        Some(CheckedOperation::PerCall) => quote!(__private::Some(__private::Operation::PerCall)),
        Some(CheckedOperation::KeyRule) => quote!(__private::Some(__private::Operation::KeyRule)),
        Some(CheckedOperation::SameArguments) => {
            quote!(__private::Some(__private::Operation::SameArguments))
        }
        Some(CheckedOperation::Fields(keys)) => {
            quote!(__private::Some(__private::Operation::Fields(&[#(#keys),*])))
        }
    };
    let additive = contract.additive;
    let operation_window = match contract.window {
        Some(seconds) => quote!(__private::Some(#seconds)),
        None => quote!(__private::None),
    };
    let revisions = &contract.revisions;
    let input_revision = option_tokens(revisions.input);
    let output_revision = option_tokens(revisions.output);
    let effect_revision = option_tokens(revisions.effect);
    let handler_revision = option_tokens(revisions.handler);
    let policy_revision = option_tokens(revisions.policy);
    let argument_limits = limits(contract.limits);
    let source_tier = option_tokens(contract.source_tier);
    // Sources are checked against the contract's tier; without one, they could claim only the
    // lowest, which is a mistake better caught here.
    let tier_check = contract.source_tier.is_none().then(|| {
        let message = format!(
            "the output of `{ident}` carries grounding sources, so the contract must declare \
             how far they are trusted: add `source_tier = official`, `authoritative_database`, \
             `web_search` or `community` to `#[tool_contract(...)]`"
        );
        quote_spanned! {output_ty.span()=>
            const _: () = if __private::output_claims_tier::<#ident>() {
                ::core::panic!(#message)
            };
        }
    });

    let statics = field_statics(contract.fields, None, None);
    let read_arguments = read_object(contract.fields, &quote!(false), None);
    let type_name = ident.to_string();

    let input_fields = contract.fields.iter().map(|field| {
        let name = field.ident.unraw().to_string();
        let kind = option_tokens(field.ty.bound_kind());
        quote!(__private::InputFieldDecl { name: #name, kind: #kind })
    });
    let bound_values = contract
        .fields
        .iter()
        .filter(|field| field.ty.bound_kind().is_some())
        .map(|field| {
            let name = field.ident.unraw().to_string();
            let member = field.ident;
            quote! {
                #name => __private::Some(
                    __private::BoundField::bound_value(&self.#member),
                ),
            }
        });

    let output_assoc = quote_spanned!(output_ty.span()=> type Output = #output_ty;);
    // Evaluated here, failing at the output's own `bound` (see `output_bound_check`).
    let bound_check = quote_spanned! {output_ty.span()=>
        const _: () = __private::check_output_bounds::<#ident>();
    };

    quote! {
        // The short paths below at a field's own span are that field's tokens to rustc, so
        // `unused_qualifications` would name them where the user imported the same names.
        #[allow(unused_qualifications)]
        const _: () = {
            // One short path for all the block's names (as serde's `_serde`): fewer tokens
            // for rustc to parse and resolve in every derived type.
            use ::tool_contract::__private;
            #statics
            static __ARGUMENTS: __private::ObjectShape =
                __private::ObjectShape::new(#type_name, __private::None, &__FIELDS);

            #[automatically_derived]
            #[allow(unused_qualifications)]
            impl __private::ToolContract for #ident {
                #output_assoc
                const NAME: &'static str = #name;
                const EFFECT: __private::Effect = #effect;

                // `#[inline]` here and on the other generated methods: compiled where a
                // contract is used, not in every crate that declares one (as serde's generic
                // impls are). The output reader is `#[inline]` only with debug assertions
                // (see there).
                #[inline]
                fn spec() -> &'static __private::ToolSpec {
                    static DECL: __private::ContractDecl =
                        __private::ContractDecl {
                            name: #name,
                            description: #description,
                            effect: #effect,
                            approval: #approval,
                            reconcile: #reconcile,
                            operation: #operation,
                            operation_window_secs: #operation_window,
                            additive: #additive,
                            source_label: #source_label,
                            source_tier: #source_tier,
                            producer_revision: #producer_revision,
                            input_revision: #input_revision,
                            output_revision: #output_revision,
                            effect_revision: #effect_revision,
                            handler_revision: #handler_revision,
                            policy_revision: #policy_revision,
                            arguments: &__ARGUMENTS,
                            argument_limits: #argument_limits,
                            output: __private::output_shape::<#ident>,
                            output_limits: __private::output_limits::<#ident>(),
                        };
                    static SPEC: __private::OnceLock<__private::ToolSpec> =
                        __private::OnceLock::new();
                    SPEC.get_or_init(|| __private::build_spec(&DECL))
                }

                const __ARGUMENT_LIMITS: __private::Limits = #argument_limits;

                const __SOURCE_TIER: __private::Option<__private::SourceTier> =
                    #source_tier;

                const __INPUT_FIELDS: &'static [__private::InputFieldDecl] =
                    &[#(#input_fields),*];

                #[inline]
                fn __read_arguments(
                    reader: &mut __private::Reader<'_, '_>,
                ) -> __private::Result<
                    __private::Option<Self>,
                    __private::Stop,
                > {
                    #read_arguments
                }

                #[inline]
                fn __bound_value(
                    &self,
                    field: &str,
                ) -> __private::Option<__private::BoundValue<'_>> {
                    match field {
                        #(#bound_values)*
                        _ => __private::None,
                    }
                }
            }

            #name_check
            #bound_check
            #reconcile_check
            #tier_check
        };
    }
}

pub fn output(output: &Output) -> TokenStream {
    let ident = &output.original.ident;
    let lifetime = output.lifetime;
    let lifetime::ImplHeads {
        generics: impl_generics,
        self_ty,
        read_generics,
    } = lifetime::impl_heads(ident, lifetime);
    // Only a type that owns its data can be a contract's output.
    let owned = lifetime.is_none().then(|| {
        quote! {
            #[automatically_derived]
            impl __private::OwnedOutput for #ident {}
        }
    });
    let type_name = ident.to_string();
    let description = option_tokens(output.doc.as_deref());
    let output_limits = limits(&output.limits);
    let (statics, read, shape, bounds, write) = match &output.data {
        OutputData::Struct(fields) => {
            let sources = fields
                .iter()
                .position(|field| is_sources_list(&field.original.ty));
            // The sources field must hold sources when the type is grounded: a static rule.
            let grounded_sources = sources.filter(|_| output.grounded.is_some());
            let mut statics = field_statics(fields, grounded_sources, lifetime);
            statics.extend(grounding_checks(&type_name, fields, sources, lifetime));
            let read = read_object(fields, &quote!(_rules.grounded()), sources);
            let shape = quote! {
                static __SHAPE: __private::ObjectShape =
                    __private::ObjectShape::new(#type_name, #description, &__FIELDS);
            };
            let bounds = source_consts(fields, sources.is_some());
            let write = write_object(fields);
            (statics, read, shape, bounds, write)
        }
        OutputData::Enum(variants) => {
            let values = variants.iter().map(|variant| &variant.value);
            let count = variants.len();
            let statics = quote! {
                static __VALUES: [&str; #count] = [#(#values),*];
            };
            let shape = quote! {
                static __SHAPE: __private::EnumShape =
                    __private::EnumShape::new(#type_name, #description, &__VALUES);
            };
            let read = read_enum(variants);
            let write = write_enum(variants);
            (statics, read, shape, TokenStream::new(), write)
        }
    };
    let shape_variant = match &output.data {
        OutputData::Struct(_) => quote!(Object),
        OutputData::Enum(_) => quote!(Enum),
    };
    // A struct's check is a type of its own, generic over the contract whose input it is
    // checked against; an enum holds no `bound`.
    let (bound_check_type, bound_check) = match &output.data {
        OutputData::Struct(fields) => {
            let checks = output_bound_check(&type_name, fields, lifetime);
            let check_type = quote! {
                #[doc(hidden)]
                pub struct __Bounds<__I>(::core::marker::PhantomData<__I>);

                #[automatically_derived]
                impl<__I: __private::ToolContract>
                    __private::BoundCheck for __Bounds<__I>
                {
                    const CHECK: () = {
                        #checks
                    };
                }
            };
            (check_type, quote!(__Bounds<__I>))
        }
        OutputData::Enum(_) => (TokenStream::new(), quote!(__private::NoBounds)),
    };

    quote! {
        // The short paths below at a field's own span are that field's tokens to rustc, so
        // `unused_qualifications` would name them where the user imported the same names.
        #[allow(unused_qualifications)]
        const _: () = {
            // One short path for all the block's names (as serde's `_serde`): fewer tokens
            // for rustc to parse and resolve in every derived type.
            use ::tool_contract::__private;
            #statics
            #shape

            #[automatically_derived]
            #[allow(unused_qualifications)]
            impl #read_generics __private::ReadField<'__de> for #self_ty {
                // With debug assertions (a debug build) `#[inline]` only defers the
                // reader's machine code to where it is used, as the other methods'; in an
                // optimized build it would have the reader inlined into its callers, which
                // cost the validator 4% more instructions, so there it stays out of line.
                #[cfg_attr(debug_assertions, inline)]
                fn __read(
                    reader: &mut __private::Reader<'__de, '_>,
                    _rules: &__private::Rules,
                ) -> __private::Result<
                    __private::Option<Self>,
                    __private::Stop,
                > {
                    #read
                }
            }

            #[automatically_derived]
            #[allow(unused_qualifications)]
            impl #impl_generics __private::ContractField for #self_ty {
                #[inline]
                fn __shape() -> __private::Shape {
                    __private::Shape::#shape_variant(&__SHAPE)
                }

                #[inline]
                fn __write_canonical(&self, out: &mut ::std::vec::Vec<u8>) {
                    #write
                }

                type __Check<__I: __private::ToolContract> = #bound_check;

                #bounds
            }

            #[automatically_derived]
            impl #impl_generics __private::ToolOutput for #self_ty {
                const LIMITS: __private::Limits = #output_limits;
            }

            #owned

            #bound_check_type
        };
    }
}

/// The `Pattern` and synthetic-rule statics and the `__FIELDS` spec array of an object's
/// fields; `grounded_sources` is the sources field of a grounded type.
///
/// `lifetime` is a borrowed output's: the statics name its field types with it as `'static`.
fn field_statics(
    fields: &[Field],
    grounded_sources: Option<usize>,
    lifetime: Option<&syn::Lifetime>,
) -> TokenStream {
    let mut patterns = TokenStream::new();
    let specs = fields
        .iter()
        .enumerate()
        .map(|(index, field)| {
            let mut rules = quote!(__private::Rules::NONE);
            let rule_fields = &field.rules;
            if let Some(min_len) = &rule_fields.min_len {
                let n = min_len.value;
                rules.extend(quote!(.with_min_len(#n)));
            }
            if let Some(max_len) = &rule_fields.max_len {
                let n = max_len.value;
                rules.extend(quote!(.with_max_len(#n)));
            }
            if let Some(pattern) = &rule_fields.pattern {
                let static_name = format_ident!("__PATTERN_{index}");
                patterns.extend(quote! {
                    static #static_name: __private::Pattern = __private::Pattern::new(#pattern);
                });
                rules.extend(quote!(.with_pattern(&#static_name)));
            }
            if let Some(format) = &rule_fields.format {
                let format = format.value;
                rules.extend(quote!(.with_format(#format)));
            }
            if let Some(max_items) = &rule_fields.max_items {
                let n = max_items.value;
                rules.extend(quote!(.with_max_items(#n)));
            }
            if let Some(minimum) = &rule_fields.minimum {
                let n = minimum.value;
                rules.extend(quote!(.with_minimum(#n)));
            }
            if let Some(maximum) = &rule_fields.maximum {
                let n = maximum.value;
                rules.extend(quote!(.with_maximum(#n)));
            }
            if let Some(free_form) = &rule_fields.free_form {
                let max_depth = free_form.value.max_depth;
                let max_bytes = free_form.value.max_bytes;
                rules.extend(quote! {
                    .with_free_form(__private::FreeFormLimits {
                        max_depth: #max_depth,
                        max_bytes: #max_bytes,
                    })
                });
            }
            if rule_fields.grounded.is_some() || grounded_sources == Some(index) {
                rules.extend(quote!(.with_grounded()));
            }
            if let Some(synthetic) = &rule_fields.synthetic {
                let detectors_name = format_ident!("__SYNTHETIC_DETECTORS_{index}");
                let rule_name = format_ident!("__SYNTHETIC_{index}");
                let detectors: Vec<TokenStream> = synthetic
                    .value
                    .detectors
                    .iter()
                    .map(|detector| match detector {
                        Detector::Builtin(detector) => detector.to_token_stream(),
                        Detector::Custom(path) => {
                            let name = path.to_token_stream().to_string().replace(' ', "");
                            quote_spanned!(path.span()=> __private::Detector::new(#name, #path))
                        }
                    })
                    .collect();
                let count = detectors.len();
                let action = if synthetic.value.strip {
                    quote!(Strip)
                } else {
                    quote!(Reject)
                };
                patterns.extend(quote! {
                    static #detectors_name: [__private::Detector; #count] = [#(#detectors),*];
                    static #rule_name: __private::SyntheticRule =
                        __private::SyntheticRule::new(
                            __private::SyntheticAction::#action,
                            &#detectors_name,
                        );
                });
                rules.extend(quote!(.with_synthetic(&#rule_name)));
            }
            let key = &field.key;
            let rust_name = field.ident.unraw().to_string();
            let description = option_tokens(field.doc.as_deref());
            let shape = field_shape(field, lifetime);
            let bound = option_tokens(field.rules.bound.as_ref().map(|b| b.unraw().to_string()));
            quote! {
                __private::FieldSpec::new(#key, #rust_name, #description, #shape, #rules, #bound)
            }
        })
        .collect::<Vec<_>>();
    let count = fields.len();
    quote! {
        #patterns
        static __FIELDS: [__private::FieldSpec; #count] = [#(#specs),*];
    }
}

/// Whether a field's reading, writing and shape are composed from its named type's, in the
/// runtime's `Option` and `Vec` helpers: a field of a derived type under `Option`s and `Vec`s
/// (`Option<Vec<Book>>`). Then the compiler is asked about `Book` alone, at every use, so a
/// `Book` that does not derive `ToolOutput` is one error naming it; the code is the same the
/// `Option` and `Vec` impls run.
fn composed(field: &Field) -> Option<Vec<Wrapper>> {
    let layers = wrappers(&field.original.ty);
    let nested = matches!(field.ty.innermost(), FieldType::Nested);
    (nested && !layers.is_empty()).then_some(layers)
}

/// The field's shape, a `fn() -> Shape`, its lifetime read as `'static` (beside the impls).
fn field_shape(field: &Field, lifetime: Option<&syn::Lifetime>) -> TokenStream {
    let ty = &field.original.ty;
    let named = named_type(ty);
    let static_named = lifetime::outside_impl(named, lifetime);
    let Some(layers) = composed(field) else {
        let static_ty = lifetime::outside_impl(ty, lifetime);
        return quote_spanned!(ty.span()=> <#static_ty as __private::Field<'_, #static_named>>::__shape);
    };
    let mut shape = quote_spanned!(named.span()=> <#static_named as __private::Field<'_, #static_named>>::__shape);
    for layer in layers.iter().rev() {
        let variant = match layer {
            Wrapper::Option => quote_spanned!(named.span()=> Nullable),
            Wrapper::Vec => quote_spanned!(named.span()=> Array),
        };
        shape = quote_spanned!(named.span()=> || __private::Shape::#variant(#shape));
    }
    shape
}

/// A call reading the field's value under `rules`: `Result<Option<T>, Stop>`.
fn field_read(field: &Field, rules: &TokenStream) -> TokenStream {
    let ty = &field.original.ty;
    let named = named_type(ty);
    let Some(layers) = composed(field) else {
        return quote_spanned! {ty.span()=>
            <#ty as __private::Field<'_, #named>>::__read(reader, #rules)
        };
    };
    let mut item = quote_spanned!(named.span()=> <#named as __private::Field<'_, #named>>::__read);
    for (depth, layer) in layers.iter().enumerate().rev() {
        let read = match layer {
            Wrapper::Option => quote_spanned!(named.span()=> __private::read_option),
            Wrapper::Vec => quote_spanned!(named.span()=> __private::read_vec),
        };
        item = if depth == 0 {
            quote_spanned!(named.span()=> #read(reader, #rules, #item))
        } else {
            quote_spanned!(named.span()=> |reader, rules| #read(reader, rules, #item))
        };
    }
    item
}

/// A statement writing the field's `value` (a reference) as canonical JSON to `out`.
fn field_write(field: &Field, value: &TokenStream) -> TokenStream {
    let ty = &field.original.ty;
    let named = named_type(ty);
    let Some(layers) = composed(field) else {
        return quote_spanned! {ty.span()=>
            <#ty as __private::Field<'_, #named>>::__write_canonical(#value, out);
        };
    };
    let mut item =
        quote_spanned!(named.span()=> <#named as __private::Field<'_, #named>>::__write_canonical);
    for (depth, layer) in layers.iter().enumerate().rev() {
        let write = match layer {
            Wrapper::Option => quote_spanned!(named.span()=> __private::write_option),
            Wrapper::Vec => quote_spanned!(named.span()=> __private::write_vec),
        };
        item = if depth == 0 {
            quote_spanned!(named.span()=> #write(#value, out, #item);)
        } else {
            quote_spanned!(named.span()=> |value, out| #write(value, out, #item))
        };
    }
    item
}

/// Reads an object of exactly `fields`, reporting unknown, duplicate and missing keys.
///
/// The key matching is the runtime's (`Reader::next_field`), written once for every type:
/// what is emitted here per type is the key tables and one arm per field, so that rustc
/// checks and compiles little per derived type.
///
/// `sources` is the field holding the object's sources; it must be non-empty when its rules
/// say `grounded`, or when `parent_grounded` (an expression: the rules the object is read
/// under) does.
fn read_object(
    fields: &[Field],
    parent_grounded: &TokenStream,
    sources: Option<usize>,
) -> TokenStream {
    let slots: Vec<_> = (0..fields.len())
        .map(|i| format_ident!("__field_{i}"))
        .collect();
    let reads = fields
        .iter()
        .zip(&slots)
        .enumerate()
        .map(|(index, (field, slot))| {
            let bound = field.rules.bound.as_ref().map(|input_field| {
                let input_field = input_field.unraw().to_string();
                quote! {
                    if let __private::Some(value) = &value {
                        __private::__tri!(reader.check_bound(
                            #input_field,
                            __private::BoundField::bound_value(value),
                        ));
                    }
                }
            });
            let grounded = (sources == Some(index)).then(|| {
                // No let-chain: the code lands in the user's crate, whatever its edition.
                quote! {
                    if let __private::Some(sources) = &value {
                        if sources.is_empty()
                            && (__FIELDS[#index].rules().grounded() || #parent_grounded)
                        {
                            __private::__tri!(reader.missing_sources());
                        }
                    }
                }
            });
            // The runtime's `next_field` puts the key on the path, so a report points at it.
            let call = field_read(field, &quote!(__FIELDS[#index].rules()));
            let read = quote!(__private::__tri!(#call));
            if bound.is_none() && grounded.is_none() {
                return quote!(#index => #slot = #read,);
            }
            quote! {
                #index => {
                    let value = #read;
                    #bound
                    #grounded
                    #slot = value;
                }
            }
        });
    // Each key with its colon as its canonical JSON string (`"key":`), with its field and
    // itself, in the declared order and in the canonical one: the two orders producers write
    // keys in.
    let quoted = |(index, field): (usize, &Field)| {
        let key = &field.key;
        let key_colon = bytes_literal(&format!("{}:", json_string(key)));
        quote!((#key_colon, #index, #key))
    };
    let declared_order = fields.iter().enumerate().map(quoted);
    let mut sorted: Vec<(usize, &Field)> = fields.iter().enumerate().collect();
    sorted.sort_by(|(_, a), (_, b)| a.key.encode_utf16().cmp(b.key.encode_utf16()));
    let canonical_order = sorted.into_iter().map(quoted);
    let count = fields.len();
    let members: Vec<_> = fields.iter().map(|field| field.ident).collect();
    let values: Vec<_> = (0..fields.len())
        .map(|i| format_ident!("__value_{i}"))
        .collect();
    quote! {
        static __KEYS: __private::FieldKeys =
            __private::FieldKeys::new(
                &[#(#declared_order),*],
                &[#(#canonical_order),*],
            );
        let __private::Some(mut __fields) =
            __private::__tri!(reader.begin_fields(&__KEYS))
        else {
            return __private::Ok(__private::None);
        };
        // Each field's value, `None` until it is read and valid: `__seen` says which were read.
        #(let mut #slots = __private::None;)*
        let mut __seen = [false; #count];
        while let __private::Some(__index) =
            __private::__tri!(reader.next_field(&mut __fields, &mut __seen))
        {
            match __index {
                #(#reads)*
                _ => {}
            }
        }
        __private::__tri!(reader.missing_fields(&__KEYS, &__seen));
        __private::Ok(match (#(#slots,)*) {
            (#(__private::Some(#values),)*) => {
                __private::Some(Self { #(#members: #values),* })
            }
            #[allow(unreachable_patterns)]
            _ => __private::None,
        })
    }
}

/// `text` as a canonical JSON string (RFC 8785 section 3.2.2.2), quotes included.
fn json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn read_enum(variants: &[Variant]) -> TokenStream {
    let arms = variants.iter().map(|variant| {
        let value = &variant.value;
        let ident = variant.ident;
        quote!(#value => __private::Some(Self::#ident),)
    });
    quote! {
        let __private::Some(value) = __private::__tri!(reader.read_string())
        else {
            return __private::Ok(__private::None);
        };
        __private::Ok(match &*value {
            #(#arms)*
            _ => {
                __private::__tri!(reader.not_in_enum(&__VALUES));
                __private::None
            }
        })
    }
}

/// `__write_canonical` of a struct: its members in RFC 8785 order (names by UTF-16 code
/// units, sorted here at compile time), each value by its own type's writer. What comes
/// between two values (`,"key":`, with the brace before the first) is one literal, escaped
/// here at compile time.
fn write_object(fields: &[Field]) -> TokenStream {
    let mut sorted: Vec<&Field> = fields.iter().collect();
    sorted.sort_by(|a, b| a.key.encode_utf16().cmp(b.key.encode_utf16()));
    let members = sorted.iter().enumerate().map(|(index, field)| {
        let ident = field.ident;
        let before = if index == 0 { "{" } else { "," };
        let key = bytes_literal(&format!("{before}{}:", json_string(&field.key)));
        // At the field's type, like the read: an unsupported type is one error there.
        let write = field_write(field, &quote!(&self.#ident));
        quote! {
            out.extend_from_slice(#key);
            #write
        }
    });
    let close = if fields.is_empty() {
        quote!(out.extend_from_slice(b"{}");)
    } else {
        quote!(out.push(b'}');)
    };
    quote! {
        #(#members)*
        #close
    }
}

/// `__write_canonical` of a unit enum: its JSON string.
fn write_enum(variants: &[Variant]) -> TokenStream {
    let arms = variants.iter().map(|variant| {
        let ident = variant.ident;
        let write = write_json_string(&variant.value, "");
        quote!(Self::#ident => { #write })
    });
    quote! {
        match self {
            #(#arms)*
        }
    }
}

/// Code that writes `text` as a canonical JSON string followed by `suffix`: one literal,
/// escaped here at compile time.
fn write_json_string(text: &str, suffix: &str) -> TokenStream {
    let literal = bytes_literal(&format!("{}{suffix}", json_string(text)));
    quote!(out.extend_from_slice(#literal);)
}

fn bytes_literal(text: &str) -> syn::LitByteStr {
    syn::LitByteStr::new(text.as_bytes(), Span::call_site())
}

/// The body of `CheckBounds::CHECK` for an output struct: each of its own `bound`s checked
/// against the input fields of the contract `__I`, the check spanned at the `bound` itself so
/// that a wrong one is reported there; then its fields' types' checks.
fn output_bound_check(
    type_name: &str,
    fields: &[Field],
    lifetime: Option<&syn::Lifetime>,
) -> TokenStream {
    let own = fields.iter().filter_map(|field| {
        let bound = field.rules.bound.as_ref()?;
        let input_field = bound.unraw().to_string();
        let kind = field.ty.bound_kind()?;
        let at = format!(
            "`#[tool_output(bound = {input_field})]` on `{type_name}::{}`",
            field.ident.unraw()
        );
        let missing = format!("{at} names no field of the tool's input");
        let mismatch = format!(
            "{at} joins fields of different types: the input field `{input_field}` must have the \
             same kind (String, bool or integer)"
        );
        Some(quote_spanned! {bound.span()=>
            if let __private::Some(message) = __private::bound_error(
                &[__private::BoundDecl {
                    input_field: #input_field,
                    kind: #kind,
                    missing: #missing,
                    mismatch: #mismatch,
                }],
                <__I as __private::ToolContract>::__INPUT_FIELDS,
            ) {
                ::core::panic!("{}", message)
            }
        })
    });
    let nested = fields.iter().map(|field| {
        let ty = &field.original.ty;
        // The type under the `Option`s and `Vec`s, whose check theirs is.
        let named = named_type(ty);
        let static_named = lifetime::outside_impl(named, lifetime);
        quote_spanned! {named.span()=>
            let () = <<#static_named as __private::Field<'_, #static_named>>::__Check<__I>
                as __private::BoundCheck>::CHECK;
        }
    });
    quote!(#(#own)* #(#nested)*)
}

/// `__HOLDS_SOURCES` (the type has a sources field) and `__CLAIMS_TIER` (a source tier is
/// somewhere inside).
fn source_consts(fields: &[Field], holds_sources: bool) -> TokenStream {
    let claims = fields.iter().map(|field| {
        let named = named_type(&field.original.ty);
        quote_spanned!(named.span()=> <#named as __private::Field<'_, #named>>::__CLAIMS_TIER)
    });
    quote! {
        const __HOLDS_SOURCES: bool = #holds_sources;
        const __CLAIMS_TIER: bool = false #(|| #claims)*;
    }
}

/// Compile-time checks of grounding: the sources field is the crate's `GroundingSource`
/// list, and a field declared `grounded` holds entities that carry sources.
fn grounding_checks(
    type_name: &str,
    fields: &[Field],
    sources: Option<usize>,
    lifetime: Option<&syn::Lifetime>,
) -> TokenStream {
    let mut checks = TokenStream::new();
    if let Some(field) = sources.map(|index| &fields[index]) {
        let ty = &field.original.ty;
        checks.extend(quote_spanned! {ty.span()=>
            #[allow(dead_code)]
            fn __sources_are_grounding_sources(
                sources: #ty,
            ) -> ::std::vec::Vec<__private::GroundingSource> {
                sources
            }
        });
    }
    for (index, field) in fields.iter().enumerate() {
        let Some(grounded) = &field.rules.grounded else {
            continue;
        };
        if sources == Some(index) || is_sources_list(&field.original.ty) {
            continue;
        }
        let ty = &field.original.ty;
        let static_ty = lifetime::outside_impl(ty, lifetime);
        let named = lifetime::outside_impl(named_type(ty), lifetime);
        let message = format!(
            "`#[tool_output(grounded)]` on `{type_name}::{}`: its type holds no \
             `Vec<GroundingSource>` field, so it cannot carry sources; add one to the type, \
             or drop `grounded`",
            field.ident.unraw()
        );
        let span = grounded
            .clone()
            .into_iter()
            .next()
            .map_or_else(|| ty.span(), |token| token.span());
        checks.extend(quote_spanned! {span=>
            const _: () = if !<#static_ty as __private::Field<'_, #named>>::__HOLDS_SOURCES {
                ::core::panic!(#message)
            };
        });
    }
    checks
}

/// A compile-time refusal of a tool name some provider would refuse, by the runtime's own rule
/// (`vocabulary::is_tool_name`), at the tokens that chose the name.
pub fn tool_name_check(name: &ToolName) -> TokenStream {
    let rule = "a tool name must match `^[A-Za-z_][A-Za-z0-9_-]{0,63}$` to fit every provider";
    let value = &name.value;
    let message = if name.explicit {
        rule.to_owned()
    } else {
        format!("the default name `{value}` does not fit: {rule}; set `name = \"...\"`")
    };
    let span = name
        .tokens
        .clone()
        .into_iter()
        .next()
        .map_or_else(Span::call_site, |token| token.span());
    quote_spanned! {span=>
        const _: () = if !::tool_contract::__private::is_tool_name(#value) {
            ::core::panic!("{}", #message)
        };
    }
}

fn limits(limits: &Limits) -> TokenStream {
    let max_bytes = match limits.max_bytes.as_ref().map(|n| n.value) {
        Some(n) => quote!(#n),
        None => quote!(__private::Limits::DEFAULT.max_bytes),
    };
    let max_depth = match limits.max_depth.as_ref().map(|n| n.value) {
        Some(n) => quote!(#n),
        None => quote!(__private::Limits::DEFAULT.max_depth),
    };
    quote!(__private::Limits { max_bytes: #max_bytes, max_depth: #max_depth })
}

fn option_tokens(value: Option<impl ToTokens>) -> TokenStream {
    match value {
        Some(value) => quote!(__private::Some(#value)),
        None => quote!(__private::None),
    }
}
