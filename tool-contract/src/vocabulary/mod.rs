//! Vocabulary, the second layer: the plain data and closed sets every other layer speaks in.
//!
//! Effects and what they ask of writes, size and depth limits, the tool-name rule, source
//! tiers and synthetic-data detectors, the forbidden-key list, validation violations, and the
//! call types: which API asked ([`Api`], [`Provider`], [`Adapter`]), for which tool
//! ([`ToolCall`]), on whose behalf ([`Principal`]), for which operation ([`CallContext`]).
//! Nothing here does more than a `const fn` can; it imports only the JSON core.

pub(crate) mod call;
pub(crate) mod effect;
pub(crate) mod forbidden;
pub(crate) mod limits;
pub(crate) mod name;
#[cfg(any(feature = "mcp", feature = "console"))]
pub(crate) mod origin;
pub(crate) mod synthetic;
pub(crate) mod tier;
pub(crate) mod violation;

pub use call::{ADAPTERS, Adapter, Api, CallContext, Correlation, Principal, Provider, ToolCall};
pub use effect::{Approval, Effect, Operation, OperationWindow, Reconcile};
pub use forbidden::{FORBIDDEN_KEY_SUFFIXES, FORBIDDEN_KEYS, FORBIDDEN_LAST_WORDS, ForbiddenKeys};
pub use limits::{FreeFormLimits, Limits};
pub use name::{TOOL_NAME_PATTERN, is_tool_name};
pub use synthetic::{Detector, Stripped, SyntheticAction, SyntheticRule};
pub use tier::SourceTier;
pub use violation::{Constraint, JsonType, MAX_VIOLATIONS, Violation, ViolationKind, Violations};
