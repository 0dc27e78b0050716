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
            let output = contract.as_ref().and_then(|c| c.attrs.output.as_ref());
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
