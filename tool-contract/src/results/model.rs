//! `ModelResult`: what the model may see of one tool call (`tool-model-result-v2`).
//!
//! The envelope is declared once, as the derived [`Envelope`]: its serde form, its canonical
//! writer (the bytes the model is sent and `result_sha256` covers), its reader and the
//! skeleton of its JSON Schema all come from that declaration, so none can drift from another.

use std::sync::Arc;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use super::error::ModelError;
use super::execution::{Delivery, Execution, Outcome, Provenance, Status, Trust};
use crate::contract::reader::{self, NoBoundInputs, Reader, Stop};
use crate::contract::rules::Rules;
use crate::contract::shape::Shape;
use crate::contract::traits::ToolOutput;
use crate::contract::{ContractField, ReadField};
use crate::json::depth;
use crate::json::encoding::infallible;
use crate::vocabulary::forbidden::ForbiddenKeys;
use crate::vocabulary::violation::Violations;

/// The `schema_version` of every [`ModelResult`].
pub const MODEL_RESULT_SCHEMA_VERSION: &str = "tool-model-result-v2";

/// The `schema_version` member: one value, [`MODEL_RESULT_SCHEMA_VERSION`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, tool_contract_derive::ToolOutput)]
pub(crate) enum SchemaVersion {
    #[serde(rename = "tool-model-result-v2")]
    V2,
}

/// The wire form of a model result, member for member.
#[derive(Debug, Clone, PartialEq, Serialize, tool_contract_derive::ToolOutput)]
#[tool_output(max_bytes = 1073741824, max_depth = 256)]
pub(crate) struct Envelope {
    schema_version: SchemaVersion,
    status: Status,
    data: Option<Data>,
    error: Option<ModelError>,
    execution: Execution,
    provenance: Provenance,
}

/// A tool's data: its RFC 8785 canonical JSON text, written once, hashed and sent as it is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Data(String);

impl Serialize for Data {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let raw: &RawValue =
            depth::from_slice(self.0.as_bytes()).map_err(serde::ser::Error::custom)?;
        raw.serialize(serializer)
    }
}

impl ContractField for Data {
    type __Check<I: crate::contract::ToolContract> = crate::contract::bound::NoBounds;

    fn __shape() -> Shape {
        // The tool's output: the model result's schema puts the contract's own there.
        Shape::FreeForm
    }

    fn __write_canonical(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.0.as_bytes());
    }
}

impl<'de> ReadField<'de> for Data {
    fn __read(reader: &mut Reader<'de, '_>, _rules: &Rules) -> Result<Option<Self>, Stop> {
        Ok(reader.read_canonical()?.map(Data))
    }
}

/// What the model may see of one tool call: `tool-model-result-v2`.
///
/// Consistent by construction, and refused when read otherwise: `succeeded` has data, no
/// error and outcome `committed`; `failed` has any other error, no data, and its code's
/// outcome; `unknown` has `OUTCOME_UNKNOWN` or `OUTCOME_UNCONFIRMED`, no data, outcome
/// `unknown`; `trusted_control` never carries data; truncated data is never complete.
///
/// It holds no tenant, subject, principal, operation id, receipt, idempotency key or digest:
/// those live in the [`ProtectedAudit`](crate::results::ProtectedAudit) beside it. Results are
/// made by a [`Binder`](crate::Binder), and read back with [`ModelResult::from_json`] (or
/// serde_json, which reads the same way).
///
/// ```
/// use tool_contract::{ModelResult, Status};
///
/// let text = r#"{"schema_version":"tool-model-result-v2","status":"failed","data":null,
///   "error":{"code":"NOT_FOUND","category":"not_found","message":"The requested resource was not found.",
///            "recovery":"none","retry_after_ms":null,"paths":[],"alternate_source":false},
///   "execution":{"outcome":"not_started","delivery":"fresh","complete":false,"truncated":false},
///   "provenance":{"source_label":"orders","producer_revision":"orders-v2","resource_revision":null,
///                 "observed_at":"2026-08-22T10:00:00Z","trust":"untrusted_data"}}"#;
/// let result: ModelResult = serde_json::from_str(text)?;
/// assert_eq!(result.status(), Status::Failed);
///
/// // "failed" with data is refused: the halves of a result are consistent by construction.
/// let inconsistent = text.replace(r#""data":null"#, r#""data":{}"#);
/// assert!(serde_json::from_str::<ModelResult>(&inconsistent).is_err());
/// # Ok::<(), serde_json::Error>(())
/// ```
///
/// Immutable once made, and shared by its clones: cloning one (a result kept, replayed or
/// answered twice) copies no text.
#[derive(Debug, Clone)]
pub struct ModelResult(Arc<Envelope>);

impl PartialEq for ModelResult {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0 == other.0
    }
}

impl Serialize for ModelResult {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

/// Why bytes are not a model result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelResultError {
    /// Not the envelope: malformed JSON, a member missing, unknown or of the wrong type.
    #[error("not a tool-model-result-v2: {0}")]
    Unreadable(#[source] Violations),
    /// The envelope, with members that contradict each other.
    #[error("an inconsistent model result: {0}")]
    Inconsistent(#[from] Inconsistency),
}

/// How the members of a model result contradict each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Inconsistency {
    /// `succeeded` without data, or with an error.
    #[error("a succeeded result has data and no error")]
    SuccessShape,
    /// `failed` or `unknown` without an error, or with data.
    #[error("a failed or unknown result has an error and no data")]
    FailureShape,
    /// `succeeded` with another outcome than `committed`.
    #[error("a succeeded result has outcome committed")]
    SuccessOutcome,
    /// Data vouched for as `trusted_control`.
    #[error("a trusted_control result carries no data")]
    TrustedData,
    /// Data both complete and truncated, or neither.
    #[error("data is complete exactly when it is not truncated")]
    Completeness,
    /// `unknown` with a code of known outcome, or the other way round.
    #[error("status unknown goes with an unknown-outcome code, and only with it")]
    UnknownStatus,
    /// An outcome other than the error code's.
    #[error("the outcome is not the error code's")]
    ErrorOutcome,
    /// A failure marked complete or truncated.
    #[error("a failed result is neither complete nor truncated")]
    FailureCompleteness,
}

impl ModelResult {
    /// A success whose data is `data_json`, which must be canonical JSON (a contract output's
    /// `to_canonical_json`).
    pub(crate) fn succeeded(
        data_json: String,
        delivery: Delivery,
        truncated: bool,
        provenance: Provenance,
    ) -> Self {
        debug_assert_eq!(provenance.trust, Trust::UntrustedData);
        ModelResult(Arc::new(Envelope {
            schema_version: SchemaVersion::V2,
            status: Status::Succeeded,
            data: Some(Data(data_json)),
            error: None,
            execution: Execution {
                outcome: Outcome::Committed,
                delivery,
                complete: !truncated,
                truncated,
            },
            provenance,
        }))
    }

    /// A failure, or an unknown outcome, by `error`'s code.
    pub(crate) fn failed(error: ModelError, delivery: Delivery, provenance: Provenance) -> Self {
        let code = error.code();
        let status = if code.is_unknown_outcome() {
            Status::Unknown
        } else {
            Status::Failed
        };
        ModelResult(Arc::new(Envelope {
            schema_version: SchemaVersion::V2,
            status,
            data: None,
            error: Some(error),
            execution: Execution {
                outcome: code.entry().outcome,
                delivery,
                complete: false,
                truncated: false,
            },
            provenance,
        }))
    }

    /// The same result, as delivered another way (a stored result replayed, or one learned
    /// from a status query).
    pub(crate) fn delivered_as(mut self, delivery: Delivery) -> Self {
        Arc::make_mut(&mut self.0).execution.delivery = delivery;
        self
    }

    /// Reads a model result exactly (the envelope's own reader: every member, nothing else,
    /// real JSON types, no duplicate key), then checks that its members agree.
    ///
    /// # Errors
    ///
    /// [`ModelResultError`]: what is wrong.
    pub fn from_json(bytes: &[u8]) -> Result<Self, ModelResultError> {
        let (envelope, _stripped) = reader::read_document(
            bytes,
            Envelope::LIMITS,
            &ForbiddenKeys::DEFAULT,
            &NoBoundInputs,
            |reader| Envelope::__read(reader, &Rules::NONE),
        )
        .map_err(ModelResultError::Unreadable)?;
        envelope.check()?;
        Ok(ModelResult(Arc::new(envelope)))
    }

    /// How the call ended.
    #[must_use]
    pub fn status(&self) -> Status {
        self.0.status
    }

    /// The tool's data, on success, as a value (parsed from [`data_json`](Self::data_json)).
    #[must_use]
    pub fn data(&self) -> Option<Value> {
        self.data_json().map(|text| {
            infallible(
                depth::from_slice::<Value>(text.as_bytes()),
                "data is canonical JSON within its contract's depth",
            )
        })
    }

    /// The tool's data, on success, as its RFC 8785 canonical JSON text.
    #[must_use]
    pub fn data_json(&self) -> Option<&str> {
        self.0.data.as_ref().map(|data| data.0.as_str())
    }

    /// The error, on failure or unknown outcome.
    #[must_use]
    pub fn error(&self) -> Option<&ModelError> {
        self.0.error.as_ref()
    }

    /// The `execution` member.
    #[must_use]
    pub fn execution(&self) -> &Execution {
        &self.0.execution
    }

    /// The `provenance` member.
    #[must_use]
    pub fn provenance(&self) -> &Provenance {
        &self.0.provenance
    }

    /// The RFC 8785 canonical JSON of the result: the exact bytes the model is sent and
    /// `result_sha256` covers.
    #[must_use]
    pub fn to_canonical_json(&self) -> Vec<u8> {
        let data = self.data_json().map_or(0, str::len);
        let mut out = Vec::with_capacity(data + 512);
        self.0.__write_canonical(&mut out);
        out
    }
}

/// One line for a person reading a log: the status; for an error its code, the paths it
/// names, its recovery and how long to wait; then the delivery.
///
/// ```
/// use tool_contract::ModelResult;
///
/// let text = br#"{"schema_version":"tool-model-result-v2","status":"failed","data":null,
///     "error":{"code":"RATE_LIMIT","category":"transient",
///              "message":"The tool is rate limited. Nothing happened; call again after the wait.",
///              "recovery":"retry_after","retry_after_ms":45000,"paths":[]},
///     "execution":{"outcome":"not_started","delivery":"fresh","complete":false,"truncated":false},
///     "provenance":{"source_label":"tool-contract","producer_revision":"tool-contract-control-v1",
///                   "resource_revision":null,"observed_at":"2026-12-01T10:00:00Z","trust":"trusted_control"}}"#;
/// let result = ModelResult::from_json(text)?;
/// assert_eq!(
///     result.to_string(),
///     "failed, RATE_LIMIT, recovery retry_after after 45000 ms, delivery fresh"
/// );
/// # Ok::<(), tool_contract::results::ModelResultError>(())
/// ```
impl std::fmt::Display for ModelResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.status().as_str())?;
        if let Some(error) = self.error() {
            write!(f, ", {}", error.code().as_str())?;
            for (index, path) in error.paths().iter().enumerate() {
                f.write_str(if index == 0 { " at " } else { ", " })?;
                f.write_str(path)?;
            }
            write!(f, ", recovery {}", error.recovery().as_str())?;
            if let Some(ms) = error.retry_after_ms() {
                write!(f, " after {ms} ms")?;
            }
        }
        write!(f, ", delivery {}", self.execution().delivery.as_str())
    }
}

impl Envelope {
    /// Whether the members agree, as [`ModelResult`] says they must.
    fn check(&self) -> Result<(), Inconsistency> {
        let execution = &self.execution;
        match (self.status, &self.data, &self.error) {
            (Status::Succeeded, Some(_), None) => {
                if execution.outcome != Outcome::Committed {
                    return Err(Inconsistency::SuccessOutcome);
                }
                if self.provenance.trust == Trust::TrustedControl {
                    return Err(Inconsistency::TrustedData);
                }
                if execution.complete == execution.truncated {
                    return Err(Inconsistency::Completeness);
                }
            }
            (Status::Failed | Status::Unknown, None, Some(error)) => {
                let unknown = error.code().is_unknown_outcome();
                if unknown != (self.status == Status::Unknown) {
                    return Err(Inconsistency::UnknownStatus);
                }
                if execution.outcome != error.code().entry().outcome {
                    return Err(Inconsistency::ErrorOutcome);
                }
                if execution.complete || execution.truncated {
                    return Err(Inconsistency::FailureCompleteness);
                }
            }
            (Status::Succeeded, ..) => return Err(Inconsistency::SuccessShape),
            _ => return Err(Inconsistency::FailureShape),
        }
        Ok(())
    }
}

impl<'de> Deserialize<'de> for ModelResult {
    /// Reads the exact JSON text with [`ModelResult::from_json`], so it needs serde_json's
    /// deserializer (or its `Value`): other formats cannot hand over the text.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = Box::<RawValue>::deserialize(deserializer)?;
        ModelResult::from_json(text.get().as_bytes()).map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_version_is_written_as_the_constant_says() {
        let written = SchemaVersion::V2.to_canonical_json();
        assert_eq!(
            written,
            format!("\"{MODEL_RESULT_SCHEMA_VERSION}\"").as_bytes()
        );
    }
}
