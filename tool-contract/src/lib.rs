//! Declare each LLM tool's contract in Rust types; read what tools return exactly.
//!
//! (Full docs follow.)

mod contract;
mod registry;
mod schema;
mod spec;
mod validate;
mod violation;

#[doc(hidden)]
pub mod __private;

pub use contract::{ToolContract, ToolOutput};
pub use registry::{Registry, RegistryBuilder, RegistryError};
pub use spec::{
    Approval, Effect, EnumShape, FieldSpec, Format, FreeFormLimits, Limits, ObjectShape, Pattern,
    Reconcile, Revisions, Rules, Shape, ToolSpec,
};
pub use tool_contract_derive::{ToolContract, ToolOutput};
pub use validate::field::{BoundField, ContractField};
pub use validate::forbidden::{FORBIDDEN_KEY_SUFFIXES, FORBIDDEN_KEYS, ForbiddenKeys};
pub use validate::number::MAX_SAFE_INTEGER;
pub use violation::{JsonType, MAX_VIOLATIONS, Violation, ViolationKind, Violations};
