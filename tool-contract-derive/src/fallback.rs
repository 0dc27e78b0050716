//! On a user error: the errors, plus a stub impl so that code using the type compiles and the
//! user sees only the real mistakes (as thiserror's fallback does).

use proc_macro2::TokenStream;
use quote::quote;
use syn::DeriveInput;

use crate::lifetime;

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
                _: &mut ::tool_contract::__private::Reader<'_, '_>,
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
    let generics = &input.generics;
    // A borrowed output's stub has its one lifetime; any other generic type gets none.
    let lifetime = match generics.lifetimes().next() {
        Some(param) if generics.params.len() == 1 && param.bounds.is_empty() => {
            Some(&param.lifetime)
        }
        _ if generics.params.is_empty() => None,
        _ => return errors,
    };
    let ident = &input.ident;
    let owned = lifetime
        .is_none()
        .then(|| quote!(impl ::tool_contract::__private::OwnedOutput for #ident {}));
    let lifetime::ImplHeads {
        generics: impl_generics,
        self_ty,
        read_generics,
    } = lifetime::impl_heads(ident, lifetime);
    quote! {
        #errors
        #[allow(unused_qualifications)]
        impl #read_generics ::tool_contract::__private::ReadField<'__de> for #self_ty {
            fn __read(
                _: &mut ::tool_contract::__private::Reader<'__de, '_>,
                _: &::tool_contract::__private::Rules,
            ) -> ::core::result::Result<::core::option::Option<Self>, ::tool_contract::__private::Stop> {
                ::core::unreachable!("the output type did not compile")
            }
        }
        #[allow(unused_qualifications)]
        impl #impl_generics ::tool_contract::__private::ContractField for #self_ty {
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
        impl #impl_generics ::tool_contract::__private::ToolOutput for #self_ty {
            const LIMITS: ::tool_contract::__private::Limits = ::tool_contract::__private::Limits::DEFAULT;
        }
        #owned
    }
}
