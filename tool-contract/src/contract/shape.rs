//! The JSON shapes of a contract's types: objects, enums, and the fields they hold.

use super::rules::Rules;

/// The JSON shape of a field's type.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Shape {
    /// A string.
    String,
    /// `true` or `false`.
    Boolean,
    /// An integer within `min..=max` (the Rust type's range narrowed to ±(2^53−1)).
    Integer {
        /// The least value.
        min: i64,
        /// The greatest value.
        max: i64,
    },
    /// A finite double.
    Number,
    /// An RFC 3339 date-time string.
    DateTime,
    /// Any JSON value, within its field's [`FreeFormLimits`](crate::vocabulary::FreeFormLimits).
    FreeForm,
    /// The inner shape, or `null`.
    Nullable(fn() -> Shape),
    /// An array of the inner shape.
    Array(fn() -> Shape),
    /// An object with exactly the declared fields.
    Object(&'static ObjectShape),
    /// One of a finite set of strings.
    Enum(&'static EnumShape),
}

/// An object type: a contract's arguments or a `ToolOutput` struct.
#[derive(Debug)]
pub struct ObjectShape {
    name: &'static str,
    description: Option<&'static str>,
    fields: &'static [FieldSpec],
}

impl ObjectShape {
    #[doc(hidden)]
    #[must_use]
    pub const fn new(
        name: &'static str,
        description: Option<&'static str>,
        fields: &'static [FieldSpec],
    ) -> Self {
        ObjectShape {
            name,
            description,
            fields,
        }
    }

    /// The Rust type's name.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The type's doc comment, if it has one.
    #[must_use]
    pub const fn description(&self) -> Option<&'static str> {
        self.description
    }

    /// The fields, in declaration order.
    #[must_use]
    pub const fn fields(&self) -> &'static [FieldSpec] {
        self.fields
    }

    /// The field whose JSON key is `name`.
    #[must_use]
    pub fn field(&self, name: &str) -> Option<&'static FieldSpec> {
        self.fields.iter().find(|field| field.name() == name)
    }
}

/// A unit-only enum output: a finite set of strings.
#[derive(Debug)]
pub struct EnumShape {
    name: &'static str,
    description: Option<&'static str>,
    values: &'static [&'static str],
}

impl EnumShape {
    #[doc(hidden)]
    #[must_use]
    pub const fn new(
        name: &'static str,
        description: Option<&'static str>,
        values: &'static [&'static str],
    ) -> Self {
        EnumShape {
            name,
            description,
            values,
        }
    }

    /// The Rust type's name.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The type's doc comment, if it has one.
    #[must_use]
    pub const fn description(&self) -> Option<&'static str> {
        self.description
    }

    /// The allowed strings, with serde renames applied.
    #[must_use]
    pub const fn values(&self) -> &'static [&'static str] {
        self.values
    }
}

/// One field of an argument or output object.
#[derive(Debug)]
pub struct FieldSpec {
    name: &'static str,
    rust_name: &'static str,
    description: Option<&'static str>,
    shape: fn() -> Shape,
    rules: Rules,
    bound: Option<&'static str>,
}

impl FieldSpec {
    #[doc(hidden)]
    #[must_use]
    pub const fn new(
        name: &'static str,
        rust_name: &'static str,
        description: Option<&'static str>,
        shape: fn() -> Shape,
        rules: Rules,
        bound: Option<&'static str>,
    ) -> Self {
        FieldSpec {
            name,
            rust_name,
            description,
            shape,
            rules,
            bound,
        }
    }

    /// The JSON key, with serde renames applied.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The Rust field's name.
    #[must_use]
    pub const fn rust_name(&self) -> &'static str {
        self.rust_name
    }

    /// The field's doc comment, if it has one.
    #[must_use]
    pub const fn description(&self) -> Option<&'static str> {
        self.description
    }

    /// The JSON shape of the field's type.
    #[must_use]
    pub fn shape(&self) -> Shape {
        (self.shape)()
    }

    /// The declared constraints.
    #[must_use]
    pub const fn rules(&self) -> &Rules {
        &self.rules
    }

    /// The input field this output field must equal, if it is `bound`.
    #[must_use]
    pub const fn bound(&self) -> Option<&'static str> {
        self.bound
    }
}
