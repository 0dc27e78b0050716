//! A borrowed output's lifetime in generated code: the heads of its impls, and its field types
//! where the lifetime is not in scope (the statics and compile-time checks beside the impls),
//! read as `'static`, which every `ContractField` impl of a borrowed type covers.

use proc_macro2::{Group, Punct, Spacing, TokenStream, TokenTree};
use quote::{ToTokens, quote};
use syn::{Ident, Lifetime};

/// The heads of an output type's impls.
pub struct ImplHeads {
    /// After `impl`: `<'a>`, or nothing.
    pub generics: TokenStream,
    /// The type: `Name<'a>`, or `Name`.
    pub self_ty: TokenStream,
    /// After `impl` for `ReadField<'__de>`.
    pub read_generics: TokenStream,
}

/// A borrowed output is `Name<'a>`, read from a document borrowed for any `'__de` that
/// outlives `'a`; an owned one from a document borrowed for any `'__de` at all. (`'__de`: a
/// name no user's lifetime has, since theirs is in scope beside it.)
pub fn impl_heads(ident: &Ident, lifetime: Option<&Lifetime>) -> ImplHeads {
    match lifetime {
        Some(lifetime) => ImplHeads {
            generics: quote!(<#lifetime>),
            self_ty: quote!(#ident<#lifetime>),
            read_generics: quote!(<'__de: #lifetime, #lifetime>),
        },
        None => ImplHeads {
            generics: TokenStream::new(),
            self_ty: quote!(#ident),
            read_generics: quote!(<'__de>),
        },
    }
}

/// `ty` with every `lifetime` in it made `'static`; `ty` as it is without one.
pub fn outside_impl(ty: &syn::Type, lifetime: Option<&Lifetime>) -> TokenStream {
    match lifetime {
        Some(lifetime) => made_static(ty.to_token_stream(), lifetime),
        None => ty.to_token_stream(),
    }
}

fn made_static(tokens: TokenStream, lifetime: &Lifetime) -> TokenStream {
    let mut out = Vec::new();
    let mut tokens = tokens.into_iter().peekable();
    while let Some(token) = tokens.next() {
        match token {
            TokenTree::Punct(quote)
                if quote.as_char() == '\''
                    && matches!(tokens.peek(), Some(TokenTree::Ident(name)) if *name == lifetime.ident) =>
            {
                let name = tokens.next();
                let span = name.map_or_else(|| quote.span(), |name| name.span());
                let mut apostrophe = Punct::new('\'', Spacing::Joint);
                apostrophe.set_span(quote.span());
                out.push(TokenTree::Punct(apostrophe));
                out.push(TokenTree::Ident(Ident::new("static", span)));
            }
            TokenTree::Group(group) => {
                let mut inner =
                    Group::new(group.delimiter(), made_static(group.stream(), lifetime));
                inner.set_span(group.span());
                out.push(TokenTree::Group(inner));
            }
            other => out.push(other),
        }
    }
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ty` rewritten for `'a`, read back as a type and printed as syn prints types.
    fn rewritten(ty: syn::Type) -> String {
        let lifetime: Lifetime = syn::parse_quote!('a);
        let rewritten: syn::Type =
            syn::parse2(outside_impl(&ty, Some(&lifetime))).expect("still a type");
        rewritten.to_token_stream().to_string()
    }

    fn printed(ty: syn::Type) -> String {
        ty.to_token_stream().to_string()
    }

    #[test]
    fn the_structs_lifetime_becomes_static_and_others_stay() {
        assert_eq!(
            rewritten(syn::parse_quote!(Option<Vec<Cow<'a, str>>>)),
            printed(syn::parse_quote!(Option<Vec<Cow<'static, str>>>))
        );
        assert_eq!(
            rewritten(syn::parse_quote!(&'b str)),
            printed(syn::parse_quote!(&'b str))
        );
    }

    #[test]
    fn a_reference_to_the_lifetime_becomes_a_static_reference() {
        assert_eq!(
            rewritten(syn::parse_quote!(&'a str)),
            printed(syn::parse_quote!(&'static str))
        );
    }

    #[test]
    fn an_owned_type_is_left_as_it_is() {
        let ty: syn::Type = syn::parse_quote!(Vec<String>);
        assert_eq!(outside_impl(&ty, None).to_string(), printed(ty));
    }
}
