//! What a Rust field type means in JSON, read from its syntax.

use syn::{GenericArgument, PathArguments, Type};

use crate::value::BoundKind;

/// The JSON meaning of a field's type.
pub enum FieldType<'a> {
    String,
    Bool,
    Int,
    Float,
    DateTime,
    Json,
    Option(Box<FieldType<'a>>),
    Vec(Box<FieldType<'a>>),
    /// Any other named type: it must implement `ContractField` (a derived output type).
    Nested,
    /// A type no contract can hold, with the way out.
    Unsupported(&'a Type, &'static str),
}

impl<'a> FieldType<'a> {
    /// The meaning of `ty` in a type that `borrows` (an output struct with a lifetime), where
    /// `&str` and `Cow<str>` are strings too.
    pub fn of(ty: &'a Type, borrows: bool) -> Self {
        let path = match ty {
            Type::Path(path) if path.qself.is_none() => &path.path,
            Type::Group(group) => return FieldType::of(&group.elem, borrows),
            Type::Paren(paren) => return FieldType::of(&paren.elem, borrows),
            Type::Reference(reference)
                if borrows && reference.mutability.is_none() && is_str(&reference.elem) =>
            {
                return FieldType::String;
            }
            Type::Reference(_) if borrows => {
                return FieldType::Unsupported(ty, "a borrowed output borrows `&str` only");
            }
            Type::Reference(_) => {
                return FieldType::Unsupported(
                    ty,
                    "use an owned type such as `String` (an output struct with a lifetime, \
                     `struct View<'a>`, may borrow `&'a str`)",
                );
            }
            Type::Tuple(_) | Type::Array(_) | Type::Slice(_) => {
                return FieldType::Unsupported(
                    ty,
                    "use `Vec<T>` for a list, or a struct that derives `ToolOutput` for a record",
                );
            }
            _ => return FieldType::Unsupported(ty, "use a named type"),
        };
        let Some(last) = path.segments.last() else {
            return FieldType::Nested;
        };
        let name = last.ident.to_string();
        let argument = single_type_argument(&last.arguments);
        match (name.as_str(), argument) {
            ("String", None) => FieldType::String,
            ("bool", None) => FieldType::Bool,
            ("i8" | "i16" | "i32" | "i64" | "u8" | "u16" | "u32" | "u64", None) => FieldType::Int,
            ("f64", None) => FieldType::Float,
            ("OffsetDateTime", None) => FieldType::DateTime,
            ("Value", None) if is_serde_json_value(path) => FieldType::Json,
            ("Option", Some(inner)) => FieldType::Option(Box::new(FieldType::of(inner, borrows))),
            ("Vec", Some(inner)) => FieldType::Vec(Box::new(FieldType::of(inner, borrows))),
            ("Cow", Some(inner)) if borrows && is_str(inner) => FieldType::String,
            ("f32", _) => FieldType::Unsupported(ty, "use `f64`"),
            ("usize" | "isize", _) => {
                FieldType::Unsupported(ty, "its width depends on the platform; use `u64` or `i64`")
            }
            ("i128" | "u128", _) => FieldType::Unsupported(
                ty,
                "JSON integers are exact only within ±(2^53 − 1); use `i64` or `u64`",
            ),
            ("char" | "str", _) => {
                FieldType::Unsupported(ty, "use `String` (with `max_len = 1` for one character)")
            }
            ("HashMap" | "BTreeMap" | "IndexMap", _) => FieldType::Unsupported(
                ty,
                "a map has open keys; declare a struct that derives `ToolOutput`, or use \
                 `serde_json::Value` with `free_form(...)`",
            ),
            ("HashSet" | "BTreeSet" | "VecDeque" | "LinkedList", _) => {
                FieldType::Unsupported(ty, "use `Vec<T>`")
            }
            ("Box" | "Rc" | "Arc" | "Cow", _) => {
                FieldType::Unsupported(ty, "use the inner type directly")
            }
            _ => FieldType::Nested,
        }
    }

    /// The type under every `Option` and `Vec`: what string and number rules apply to.
    pub fn innermost(&self) -> &FieldType<'a> {
        match self {
            FieldType::Option(inner) | FieldType::Vec(inner) => inner.innermost(),
            other => other,
        }
    }

    /// Whether a `Vec` is among the layers, for `max_items`.
    pub fn has_vec(&self) -> bool {
        match self {
            FieldType::Vec(_) => true,
            FieldType::Option(inner) => inner.has_vec(),
            _ => false,
        }
    }

    /// The first unsupported type inside, with its remedy.
    pub fn unsupported(&self) -> Option<(&'a Type, &'static str)> {
        match self {
            FieldType::Unsupported(ty, why) => Some((ty, why)),
            FieldType::Option(inner) | FieldType::Vec(inner) => inner.unsupported(),
            _ => None,
        }
    }

    /// The kind a `bound` compares, for a type that can be bound at all.
    pub fn bound_kind(&self) -> Option<BoundKind> {
        match self {
            FieldType::String => Some(BoundKind::Str),
            FieldType::Int => Some(BoundKind::Int),
            FieldType::Bool => Some(BoundKind::Bool),
            _ => None,
        }
    }
}

/// Whether `ty` is written `Vec<GroundingSource>` (any path to it): the field that holds a
/// grounded entity's sources. Expansion asserts it is the crate's type.
pub fn is_sources_list(ty: &Type) -> bool {
    let Type::Path(path) = ty else {
        return false;
    };
    let Some(last) = path.path.segments.last() else {
        return false;
    };
    last.ident == "Vec"
        && matches!(
            single_type_argument(&last.arguments),
            Some(Type::Path(inner))
                if inner.path.segments.last().is_some_and(|s| s.ident == "GroundingSource")
        )
}

/// Whether `ty` is written `str`.
fn is_str(ty: &Type) -> bool {
    matches!(ty, Type::Path(path) if path.qself.is_none() && path.path.is_ident("str"))
}

/// A layer a field's type wraps its named type in.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Wrapper {
    Option,
    Vec,
}

/// The `Option`s and `Vec`s around the type a field names, outermost first: `[Option, Vec]`
/// for `Option<Vec<Book>>`.
pub fn wrappers(ty: &Type) -> Vec<Wrapper> {
    let mut layers = Vec::new();
    let mut at = ty;
    loop {
        let inner = match at {
            Type::Group(group) => &*group.elem,
            Type::Paren(paren) => &*paren.elem,
            Type::Path(path) if path.qself.is_none() => {
                let Some(last) = path.path.segments.last() else {
                    return layers;
                };
                let Some(inner) = single_type_argument(&last.arguments) else {
                    return layers;
                };
                match last.ident.to_string().as_str() {
                    "Option" => layers.push(Wrapper::Option),
                    "Vec" => layers.push(Wrapper::Vec),
                    _ => return layers,
                }
                inner
            }
            _ => return layers,
        };
        at = inner;
    }
}

/// The type a field names under its `Option`s and `Vec`s: `Book` in `Option<Vec<Book>>`. The
/// one that must derive `ToolOutput` when it is no built-in field type.
pub fn named_type(ty: &Type) -> &Type {
    match ty {
        Type::Group(group) => named_type(&group.elem),
        Type::Paren(paren) => named_type(&paren.elem),
        Type::Path(path) if path.qself.is_none() => {
            let Some(last) = path.path.segments.last() else {
                return ty;
            };
            match single_type_argument(&last.arguments) {
                Some(inner) if last.ident == "Option" || last.ident == "Vec" => named_type(inner),
                _ => ty,
            }
        }
        _ => ty,
    }
}

fn single_type_argument(arguments: &PathArguments) -> Option<&Type> {
    let PathArguments::AngleBracketed(arguments) = arguments else {
        return None;
    };
    let mut types = arguments.args.iter().filter_map(|argument| match argument {
        GenericArgument::Type(ty) => Some(ty),
        _ => None,
    });
    let first = types.next()?;
    types.next().is_none().then_some(first)
}

/// `Value`, `serde_json::Value` or `::serde_json::Value`: a type named `Value` elsewhere is a
/// user's own type.
fn is_serde_json_value(path: &syn::Path) -> bool {
    let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    matches!(
        segments
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .as_slice(),
        ["Value"] | ["serde_json", "Value"]
    )
}
