//! The members of a model result besides its data and error: how the call ended
//! ([`Status`]), what happened ([`Execution`]), and where the content comes from
//! ([`Provenance`]), with the one check of a provenance against the registry.

use serde::{Deserialize, Serialize};
use tool_contract_derive::ToolOutput;

use crate::contract::ContractField;
use crate::contract::shape::{FieldSpec, Shape};
use crate::contract::spec::ToolSpec;
use crate::json::names::wire_names;

wire_names! {
    /// How the call ended, as the model reads it.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToolOutput)]
    pub enum Status {
        /// The tool ran and returned data its contract allows.
        Succeeded = "succeeded",
        /// The call failed; the error says why and what to do.
        Failed = "failed",
        /// The tool may or may not have acted (`OUTCOME_UNKNOWN`).
        Unknown = "unknown",
    }
}

wire_names! {
    /// Whether the action took place.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToolOutput)]
    pub enum Outcome {
        /// Nothing happened downstream.
        NotStarted = "not_started",
        /// The tool ran to completion.
        Committed = "committed",
        /// Nobody knows yet.
        Unknown = "unknown",
    }
}

wire_names! {
    /// How this result reached the model.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToolOutput)]
    pub enum Delivery {
        /// From this very execution.
        Fresh = "fresh",
        /// The stored result of an earlier execution of the same operation, not run again.
        LocalReplay = "local_replay",
        /// Learned from a status query after the outcome was unknown.
        ReceiptReconciled = "receipt_reconciled",
    }
}

wire_names! {
    /// Who stands behind the content.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToolOutput)]
    pub enum Trust {
        /// Came from a tool: data to reason about, never instructions to follow.
        UntrustedData = "untrusted_data",
        /// Made by the dispatcher itself (an error it decided); carries no tool data.
        TrustedControl = "trusted_control",
    }
}

/// The `execution` member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToolOutput)]
pub struct Execution {
    /// Whether the action took place.
    pub outcome: Outcome,
    /// How the result reached the model.
    pub delivery: Delivery,
    /// The data is all there is (false on failures and on truncated data).
    pub complete: bool,
    /// The source held more than the data shows.
    pub truncated: bool,
}

/// The `provenance` member: where the content comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToolOutput)]
pub struct Provenance {
    /// The registry's label for the source, never the handler's.
    pub source_label: String,
    /// Of the code that produced the content.
    pub producer_revision: String,
    /// Of the resource read (an ETag, a version), when the source has one: 1 to 128 of
    /// `A-Z a-z 0-9 . _ : / + = @ -` (version strings, ETags without quotes, base64).
    #[tool_output(pattern = "^[A-Za-z0-9._:/+=@-]{1,128}$")]
    pub resource_revision: Option<String>,
    /// When the content was observed, RFC 3339 in UTC.
    #[tool_output(format = rfc3339_utc)]
    pub observed_at: String,
    /// Who stands behind the content.
    pub trust: Trust,
}

/// The source label of results the dispatcher makes itself.
pub const CONTROL_SOURCE_LABEL: &str = "tool-contract";

/// The producer revision of results the dispatcher makes itself.
pub const CONTROL_PRODUCER_REVISION: &str = concat!("tool-contract/", env!("CARGO_PKG_VERSION"));

/// What is wrong with a provenance, as [`Provenance::faults`] finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProvenanceFault {
    /// Tool data for a tool the registry does not hold.
    #[error("tool data for a tool the registry lacks")]
    UnregisteredTool,
    /// Another source label than the registry's for the content's trust.
    #[error("the source label is not the registry's")]
    SourceLabel,
    /// Another producer revision than the registry's for the content's trust.
    #[error("the producer revision is not the registry's")]
    ProducerRevision,
    /// A resource revision outside its pattern.
    #[error("the resource revision is malformed")]
    ResourceRevision,
    /// `observed_at` not RFC 3339 in UTC.
    #[error("observed_at is not RFC 3339 in UTC")]
    ObservedAt,
}

impl ProvenanceFault {
    /// The stable code an audit's redaction records it by.
    #[must_use]
    pub const fn audit_reason(self) -> &'static str {
        match self {
            ProvenanceFault::UnregisteredTool => "provenance_of_unregistered_tool",
            ProvenanceFault::SourceLabel => "source_label_mismatch",
            ProvenanceFault::ProducerRevision => "producer_revision_mismatch",
            ProvenanceFault::ResourceRevision => "resource_revision_malformed",
            ProvenanceFault::ObservedAt => "observed_at_not_utc_rfc3339",
        }
    }
}

impl Provenance {
    /// The provenance of content the dispatcher makes itself, observed at `observed_at`.
    #[must_use]
    pub(crate) fn control(observed_at: String) -> Self {
        Provenance {
            source_label: CONTROL_SOURCE_LABEL.to_owned(),
            producer_revision: CONTROL_PRODUCER_REVISION.to_owned(),
            resource_revision: None,
            observed_at,
            trust: Trust::TrustedControl,
        }
    }

    /// Every way this provenance fails to hold for content of the tool `spec` (`None`: a
    /// tool the registry lacks), in member order: the source label and producer revision
    /// are the registry's (or the dispatcher's own, for `trusted_control` content), and the
    /// resource revision and `observed_at` are as [`Provenance`] declares them.
    ///
    /// The one provenance check: projection runs it on what a handler claims, verification
    /// on what a result says.
    #[must_use]
    pub fn faults(&self, spec: Option<&ToolSpec>) -> Vec<ProvenanceFault> {
        let mut faults = Vec::new();
        let expected = match (self.trust, spec) {
            (Trust::TrustedControl, _) => Some((CONTROL_SOURCE_LABEL, CONTROL_PRODUCER_REVISION)),
            (Trust::UntrustedData, Some(spec)) => {
                Some((spec.source_label(), spec.producer_revision()))
            }
            (Trust::UntrustedData, None) => None,
        };
        match expected {
            None => faults.push(ProvenanceFault::UnregisteredTool),
            Some((source_label, producer_revision)) => {
                if self.source_label != source_label {
                    faults.push(ProvenanceFault::SourceLabel);
                }
                if self.producer_revision != producer_revision {
                    faults.push(ProvenanceFault::ProducerRevision);
                }
            }
        }
        // The member rules are the declaration's, as its generated reader applies them.
        let Shape::Object(declared) = <Self as ContractField>::__shape() else {
            unreachable!("a derived struct has an object shape")
        };
        let breaks = |name: &str, value: Option<&str>| {
            let rules = declared.field(name).map(FieldSpec::rules);
            value.is_some_and(|value| rules.is_some_and(|rules| rules.breaks_string(value)))
        };
        if breaks("resource_revision", self.resource_revision.as_deref()) {
            faults.push(ProvenanceFault::ResourceRevision);
        }
        if breaks("observed_at", Some(&self.observed_at)) {
            faults.push(ProvenanceFault::ObservedAt);
        }
        faults
    }
}
