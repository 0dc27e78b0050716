//! What generated code calls, and nothing else: re-exports only (and `__tri!`, exported at
//! the crate's root). Not part of the semver API; the derives and `registry!` name every path
//! through here, so this list is the whole boundary between expansions and the crate.

// The prelude's names, so that a generated block names them by its one short path.
pub use core::option::Option::{self, None, Some};
pub use core::result::Result::{self, Err, Ok};
pub use std::sync::OnceLock;

pub use crate::contract::bound::{
    BoundCheck, BoundDecl, BoundKind, InputFieldDecl, NoBounds, bound_error,
};
pub use crate::contract::build::{
    ContractDecl, build_spec, check_output_bounds, output_claims_tier, output_limits, output_shape,
};
pub use crate::contract::const_check::ConstMessage;
pub use crate::contract::fallback::InvalidOutput;
pub use crate::contract::field::{read_option, read_vec, write_option, write_vec};
pub use crate::contract::fields::FieldKeys;
pub use crate::contract::grounding::GroundingSource;
pub use crate::contract::reader::{BoundValue, Reader, Stop};
pub use crate::contract::registry::{Registry, duplicate_tool_name};
pub use crate::contract::rules::{Pattern, Rules};
pub use crate::contract::shape::{EnumShape, FieldSpec, ObjectShape, Shape};
pub use crate::contract::spec::ToolSpec;
pub use crate::contract::traits::{Field, ReconciledBy, ToolContract, ToolOutput};
pub use crate::contract::{BoundField, ContractField, OwnedOutput, ReadField};
pub use crate::json::format::Format;
pub use crate::vocabulary::effect::{Approval, Effect, Operation, Reconcile};
pub use crate::vocabulary::limits::{FreeFormLimits, Limits};
pub use crate::vocabulary::name::is_tool_name;
pub use crate::vocabulary::synthetic::{Detector, SyntheticAction, SyntheticRule};
pub use crate::vocabulary::tier::SourceTier;

/// `?` for the generated readers, without `Try`: `?` has rustc instantiate `Try::branch` and
/// `FromResidual` for every result type a reader returns or reads, and a debug build compile
/// each (as serde_json's `tri!`). The error type is the reader's `Stop` on both sides.
#[doc(hidden)]
#[macro_export]
macro_rules! __tri {
    ($result:expr) => {
        match $result {
            $crate::__private::Ok(value) => value,
            $crate::__private::Err(stop) => return $crate::__private::Err(stop),
        }
    };
}
pub use crate::__tri;
