//! On a user error: the errors, plus a stub impl so that code using the type compiles and the
//! user sees only the real mistakes (as thiserror's fallback does).

use proc_macro2::TokenStream;
use quote::quote;
use syn::DeriveInput;

pub fn contract(
    input: &DeriveInput,
    output: Option<&syn::Type>,
    errors: syn::Error,
) -> TokenStream {
    let errors = errors.into_compile_error();
    // A stub for a generic type would itself fail for want of its parameters.
    if !input.generics.params.is_empty() {
        return errors;
    }
    let ident = &input.ident;
    let output = output.map_or_else(
        || quote!(::tool_contract::__private::InvalidOutput),
        |ty| quote!(#ty),
    );
    quote! {
        #errors
        #[allow(unused_qualifications)]
        impl ::tool_contract::__private::ToolContract for #ident {
            type Output = #output;
            const NAME: &'static str = "";
            const EFFECT: ::tool_contract::__private::Effect = ::tool_contract::__private::Effect::Pure;
            fn spec() -> &'static ::tool_contract::__private::ToolSpec {
                ::core::unreachable!("the contract did not compile")
            }
            const __ARGUMENT_LIMITS: ::tool_contract::__private::Limits = ::tool_contract::__private::Limits::DEFAULT;
            const __INPUT_FIELDS: &'static [::tool_contract::__private::InputFieldDecl] = &[];
            fn __read_arguments(
                _: &mut ::tool_contract::__private::Reader<'_>,
            ) -> ::core::result::Result<::core::option::Option<Self>, ::tool_contract::__private::Stop> {
                ::core::unreachable!("the contract did not compile")
            }
            fn __bound_value(
                &self,
                _: &str,
            ) -> ::core::option::Option<::tool_contract::__private::BoundValue<'_>> {
                ::core::option::Option::None
            }
        }
    }
}

pub fn output(input: &DeriveInput, errors: syn::Error) -> TokenStream {
    let errors = errors.into_compile_error();
    if !input.generics.params.is_empty() {
        return errors;
    }
    let ident = &input.ident;
    quote! {
        #errors
        #[allow(unused_qualifications)]
        impl ::tool_contract::__private::ContractField for #ident {
            fn __read(
                _: &mut ::tool_contract::__private::Reader<'_>,
                _: &::tool_contract::__private::Rules,
            ) -> ::core::result::Result<::core::option::Option<Self>, ::tool_contract::__private::Stop> {
                ::core::unreachable!("the output type did not compile")
            }
            fn __shape() -> ::tool_contract::__private::Shape {
                ::tool_contract::__private::Shape::FreeForm
            }
            type __Check<__I: ::tool_contract::__private::ToolContract> =
                ::tool_contract::__private::NoBounds;

            fn __write_canonical(&self, _: &mut ::std::vec::Vec<u8>) {
                ::core::unreachable!("the output type did not compile")
            }
            // As if it held sources and declared none: no second error from a check of it.
            const __HOLDS_SOURCES: bool = true;
        }
        impl ::tool_contract::__private::ToolOutput for #ident {
            const LIMITS: ::tool_contract::__private::Limits = ::tool_contract::__private::Limits::DEFAULT;
        }
    }
}
