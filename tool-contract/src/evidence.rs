//! Evidence for facts: the sources a result carries, the synthetic values it must not, and
//! the choice between candidates that disagree. (A facade: the pieces live in their layers,
//! tiers and detectors in the vocabulary, sources in the contract model, arbitration in the
//! results.)
//!
//! - An output type declared `#[tool_output(grounded)]` holds a `Vec<`[`GroundingSource`]`>`
//!   that validation requires to be non-empty; a field declared `grounded` requires it of
//!   the value it holds. A source that was read and says there is nothing is a *result* with
//!   its evidence, never a failure; a source that could not be read is a *failure* with its
//!   kind ([`FailureKind`](crate::FailureKind)), never an empty result or made-up data.
//! - Each source has a [`SourceTier`]; a source in a tool's output may claim at most the tier
//!   its contract declares (`source_tier = official`).
//! - `#[tool_output(reject_synthetic(...))]` and `strip_synthetic(...)` run [`Detector`]s on a
//!   field's strings: a placeholder e-mail refuses the output, or is removed and recorded in
//!   the audit.
//! - [`arbitrate`] picks one value among [`Fact`]s from several tools, or returns the
//!   [`Conflict`] for a person.
//!
//! ```
//! use tool_contract::evidence::GroundingSource;
//! use tool_contract::{ToolContract, ToolOutput};
//!
//! /// List the schools a student may apply to.
//! #[derive(serde::Deserialize, ToolContract)]
//! #[tool_contract(output = Schools, effect = read_only, source_label = "accreditation register",
//!                 producer_revision = "schools-1", source_tier = authoritative_database)]
//! struct ListSchools { #[tool_contract(max_len = 80)] field: String }
//!
//! #[derive(Debug, serde::Serialize, ToolOutput)]
//! #[tool_output(grounded)]
//! struct Schools {
//!     #[tool_output(max_items = 50)]
//!     names: Vec<String>,
//!     sources: Vec<GroundingSource>,
//! }
//!
//! let call = ListSchools { field: "optics".into() };
//! // Nothing found, and the evidence that the register was read: a result.
//! let empty = call.validate_output(br#"{"names":[],"sources":[{"id":"reg","label":"Register",
//!     "tier":"authoritative_database","url":"https://register.example.org/optics",
//!     "snippet":"0 programmes match","confidence":1}]}"#)?;
//! assert!(empty.names.is_empty());
//!
//! // Nothing found and no evidence: refused.
//! let bare = call.validate_output(br#"{"names":[],"sources":[]}"#).unwrap_err();
//! assert_eq!(bare.as_slice()[0].kind().code(), "missing_sources");
//!
//! // A source claiming more trust than the contract declares: refused.
//! let raised = call.validate_output(br#"{"names":["X"],"sources":[{"id":"reg","label":"R",
//!     "tier":"official","url":null,"snippet":"X","confidence":1}]}"#).unwrap_err();
//! assert_eq!(raised.as_slice()[0].kind().code(), "tier_above_contract");
//! # Ok::<(), tool_contract::Violations>(())
//! ```

pub use crate::contract::grounding::GroundingSource;
pub use crate::results::arbitrate::{Arbitration, Conflict, Fact, Reason, Resolution, arbitrate};
pub use crate::vocabulary::synthetic::{Detector, Stripped, SyntheticAction, SyntheticRule};
pub use crate::vocabulary::tier::SourceTier;
