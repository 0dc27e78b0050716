//! Contract model and validation, the third layer: what a contract is, and reading bytes
//! against it.
//!
//! The traits the derives implement ([`ToolContract`], [`ToolOutput`], [`ContractField`]), the
//! spec they build ([`ToolSpec`] with its [`Shape`]s, [`Rules`] and [`Revisions`]), the exact
//! reader generated validators drive, `bound` fields, grounding sources, the argument and
//! output schemas, and the [`Registry`] of tools. It imports the JSON core and the vocabulary.

pub(crate) mod bound;
pub(crate) mod build;
pub(crate) mod const_check;
pub(crate) mod fallback;
pub(crate) mod field;
pub(crate) mod fields;
pub(crate) mod grounding;
pub(crate) mod reader;
pub(crate) mod registry;
pub(crate) mod rules;
pub(crate) mod schema;
pub(crate) mod shape;
pub(crate) mod spec;
pub(crate) mod traits;

pub use field::BoundField;
pub use registry::{Registry, RegistryBuilder, RegistryError};
pub use rules::{Pattern, Rules};
pub use shape::{EnumShape, FieldSpec, ObjectShape, Shape};
pub use spec::{CONTRACT_DOMAIN, Revisions, ToolSpec, contract_sha256};
pub use traits::{
    ContractField, OwnedOutput, ReadField, ReconciledBy, ToolContract, ToolOutput, Validated,
};
