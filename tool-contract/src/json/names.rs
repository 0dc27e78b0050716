//! Closed sets of names on the wire: one declaration gives an enum its serde names, its
//! `as_str` and its `Display`, so the three can never disagree.

/// Declares a unit-only enum whose variants each name their wire string once:
/// `Succeeded = "succeeded"`. The enum gets `#[serde(rename = …)]` on every variant (so it
/// must derive `Serialize` or `Deserialize`), a `const fn as_str`, and `Display`.
macro_rules! wire_names {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $(
                $(#[$variant_meta:meta])*
                $variant:ident = $wire:literal
            ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis enum $name {
            $(
                $(#[$variant_meta])*
                #[serde(rename = $wire)]
                $variant,
            )+
        }

        impl $name {
            /// Every variant's wire name, in the order they are declared.
            pub const WIRE_NAMES: &'static [&'static str] = &[$($wire),+];

            /// The wire name: the string serde writes, e.g. in JSON.
            #[must_use]
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $wire,)+
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, formatter: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                formatter.write_str(self.as_str())
            }
        }
    };
}

pub(crate) use wire_names;
