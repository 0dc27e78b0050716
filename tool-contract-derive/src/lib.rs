//! The derive macros of [`tool-contract`](https://docs.rs/tool-contract): an implementation
//! detail. Depend on `tool-contract`, which re-exports them and documents the attributes.

mod ast;
mod attr;
mod case;
mod check;
mod ctxt;
mod expand;
mod fallback;
mod forbidden;
mod lifetime;
mod model;
mod symbol;
mod ty;
mod value;

use proc_macro::TokenStream;
use syn::{DeriveInput, parse_macro_input};

/// Derives `tool_contract::ToolContract`; see the `tool-contract` crate docs.
#[proc_macro_derive(ToolContract, attributes(tool_contract))]
pub fn derive_tool_contract(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    derive_contract(&input).into()
}

/// Derives `tool_contract::ToolOutput`; see the `tool-contract` crate docs.
#[proc_macro_derive(ToolOutput, attributes(tool_output))]
pub fn derive_tool_output(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    derive_output(&input).into()
}

fn derive_contract(input: &DeriveInput) -> proc_macro2::TokenStream {
    let cx = ctxt::Ctxt::new();
    let contract = ast::Contract::from_ast(&cx, input);
    let checked = contract
        .as_ref()
        .and_then(|contract| check::check_contract(&cx, contract));
    match (cx.check(), checked) {
        (Ok(()), Some(checked)) => expand::contract(&checked),
        (result, _) => {
            // `check` gives no model only after reporting why; should that ever not hold, the
            // user still reads an error rather than an impl that is silently missing.
            let errors = result.err().unwrap_or_else(|| {
                syn::Error::new_spanned(
                    &input.ident,
                    "tool-contract-derive found no error yet could not check this contract; \
                     please report it",
                )
            });
            // An output that is no object would only add its own errors to the stub's.
            let output = contract
                .as_ref()
                .and_then(|c| c.attrs.output.as_ref())
                .filter(|ty| check::not_an_object_output(ty).is_none());
            // The name's own check still runs, so every mistake shows in one build.
            let name_check = contract
                .as_ref()
                .map(|c| expand::tool_name_check(&c.tool_name()))
                .unwrap_or_default();
            let mut tokens = fallback::contract(input, output, errors);
            tokens.extend(name_check);
            tokens
        }
    }
}

fn derive_output(input: &DeriveInput) -> proc_macro2::TokenStream {
    let cx = ctxt::Ctxt::new();
    let output = ast::Output::from_ast(&cx, input);
    if let Some(output) = &output {
        check::check_output(&cx, output);
    }
    match cx.check() {
        Ok(()) => output.as_ref().map(expand::output).unwrap_or_default(),
        Err(errors) => fallback::output(input, errors),
    }
}

#[cfg(test)]
mod tests {
    use proc_macro2::{Delimiter, TokenStream, TokenTree};

    /// The attributes (each as printed) of every `fn` named `name` in `tokens`, at any depth.
    fn attributes_of_fns(tokens: TokenStream, name: &str, found: &mut Vec<Vec<String>>) {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        for (at, tree) in trees.iter().enumerate() {
            match tree {
                TokenTree::Group(group) => attributes_of_fns(group.stream(), name, found),
                TokenTree::Ident(keyword) if keyword == "fn" => {
                    let named =
                        matches!(trees.get(at + 1), Some(TokenTree::Ident(ident)) if ident == name);
                    if !named {
                        continue;
                    }
                    let mut attributes = Vec::new();
                    let mut start = at;
                    while let [TokenTree::Punct(pound), TokenTree::Group(attribute)] =
                        &trees[start.saturating_sub(2)..start]
                    {
                        if pound.as_char() != '#' || attribute.delimiter() != Delimiter::Bracket {
                            break;
                        }
                        attributes.push(attribute.stream().to_string());
                        start -= 2;
                    }
                    found.push(attributes);
                }
                _ => {}
            }
        }
    }

    #[test]
    fn an_output_reader_is_inline_under_debug_assertions_only() {
        let input: syn::DeriveInput = syn::parse_quote! {
            struct OrderView {
                order_ref: String,
                total_cents: u64,
            }
        };
        let mut readers = Vec::new();
        attributes_of_fns(super::derive_output(&input), "__read", &mut readers);
        assert_eq!(
            readers,
            [["cfg_attr (debug_assertions , inline)".to_owned()]],
            "one reader, compiled where used in a debug build and out of line in an optimized one"
        );
    }
}
