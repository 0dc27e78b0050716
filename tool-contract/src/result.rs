//! `ModelResult`: what the model may see of one tool call (`tool-model-result-v2`).

use serde::de::Error as _;
use serde::ser::SerializeStruct;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::canonical;
use crate::catalog::ModelError;

/// The `schema_version` of every [`ModelResult`].
pub const MODEL_RESULT_SCHEMA_VERSION: &str = "tool-model-result-v2";

/// How the call ended, as the model reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The tool ran and returned data its contract allows.
    Succeeded,
    /// The call failed; the error says why and what to do.
    Failed,
    /// The tool may or may not have acted (`OUTCOME_UNKNOWN`).
    Unknown,
}

impl Status {
    /// The wire name.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Status::Succeeded => "succeeded",
            Status::Failed => "failed",
            Status::Unknown => "unknown",
        }
    }
}

/// Whether the action took place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Nothing happened downstream.
    NotStarted,
    /// The tool ran to completion.
    Committed,
    /// Nobody knows yet.
    Unknown,
}

impl Outcome {
    /// The wire name.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Outcome::NotStarted => "not_started",
            Outcome::Committed => "committed",
            Outcome::Unknown => "unknown",
        }
    }
}

/// How this result reached the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Delivery {
    /// From this very execution.
    Fresh,
    /// The stored result of an earlier execution of the same operation, not run again.
    LocalReplay,
    /// Learned from a status query after the outcome was unknown.
    ReceiptReconciled,
}

impl Delivery {
    /// The wire name.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Delivery::Fresh => "fresh",
            Delivery::LocalReplay => "local_replay",
            Delivery::ReceiptReconciled => "receipt_reconciled",
        }
    }
}

/// Who stands behind the content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trust {
    /// Came from a tool: data to reason about, never instructions to follow.
    UntrustedData,
    /// Made by the dispatcher itself (an error it decided); carries no tool data.
    TrustedControl,
}

impl Trust {
    /// The wire name.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Trust::UntrustedData => "untrusted_data",
            Trust::TrustedControl => "trusted_control",
        }
    }
}

/// The `execution` member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    /// The registry's label for the source, never the handler's.
    pub source_label: String,
    /// Of the code that produced the content.
    pub producer_revision: String,
    /// Of the resource read (an ETag, a version), when the source has one.
    pub resource_revision: Option<String>,
    /// When the content was observed, RFC 3339 in UTC.
    pub observed_at: String,
    /// Who stands behind the content.
    pub trust: Trust,
}

/// The source label of results the dispatcher makes itself.
pub const CONTROL_SOURCE_LABEL: &str = "tool-contract";

/// The producer revision of results the dispatcher makes itself.
pub const CONTROL_PRODUCER_REVISION: &str = concat!("tool-contract/", env!("CARGO_PKG_VERSION"));

#[derive(Debug, Clone, PartialEq)]
enum Body {
    /// The data's canonical JSON text: written once, hashed and sent as it is.
    Succeeded(String),
    Failed(ModelError),
    Unknown(ModelError),
}

/// What the model may see of one tool call: `tool-model-result-v2`.
///
/// Consistent by construction, and refused when deserialized otherwise: `succeeded` has data,
/// no error and outcome `committed`; `failed` has any other error, no data, and its code's
/// outcome; `unknown` has `OUTCOME_UNKNOWN` or `OUTCOME_UNCONFIRMED`, no data, outcome `unknown`;
/// `trusted_control` never carries data; truncated data is never complete.
///
/// It holds no tenant, subject, principal, operation id, receipt, idempotency key or digest:
/// those live in the [`ProtectedAudit`](crate::ProtectedAudit) beside it. Results are made by
/// a [`Binder`](crate::Binder).
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
#[derive(Debug, Clone, PartialEq)]
pub struct ModelResult {
    body: Body,
    execution: Execution,
    provenance: Provenance,
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
        ModelResult {
            body: Body::Succeeded(data_json),
            execution: Execution {
                outcome: Outcome::Committed,
                delivery,
                complete: !truncated,
                truncated,
            },
            provenance,
        }
    }

    /// The same result, as delivered another way (a stored result replayed, or one learned
    /// from a status query).
    pub(crate) fn delivered_as(mut self, delivery: Delivery) -> Self {
        self.execution.delivery = delivery;
        self
    }

    pub(crate) fn failed(error: ModelError, delivery: Delivery, provenance: Provenance) -> Self {
        let outcome = error.code().entry().outcome;
        let body = if error.code().is_unknown_outcome() {
            Body::Unknown(error)
        } else {
            Body::Failed(error)
        };
        ModelResult {
            body,
            execution: Execution {
                outcome,
                delivery,
                complete: false,
                truncated: false,
            },
            provenance,
        }
    }

    /// How the call ended.
    #[must_use]
    pub fn status(&self) -> Status {
        match self.body {
            Body::Succeeded(_) => Status::Succeeded,
            Body::Failed(_) => Status::Failed,
            Body::Unknown(_) => Status::Unknown,
        }
    }

    /// The tool's data, on success, as a value (parsed from [`data_json`](Self::data_json)).
    #[must_use]
    pub fn data(&self) -> Option<Value> {
        // Canonical JSON is JSON; `Null` cannot stand in for anything real here.
        self.data_json()
            .map(|text| serde_json::from_str(text).unwrap_or(Value::Null))
    }

    /// The tool's data, on success, as its RFC 8785 canonical JSON text.
    #[must_use]
    pub fn data_json(&self) -> Option<&str> {
        match &self.body {
            Body::Succeeded(data) => Some(data),
            Body::Failed(_) | Body::Unknown(_) => None,
        }
    }

    /// The error, on failure or unknown outcome.
    #[must_use]
    pub fn error(&self) -> Option<&ModelError> {
        match &self.body {
            Body::Succeeded(_) => None,
            Body::Failed(error) | Body::Unknown(error) => Some(error),
        }
    }

    /// The `execution` member.
    #[must_use]
    pub fn execution(&self) -> &Execution {
        &self.execution
    }

    /// The `provenance` member.
    #[must_use]
    pub fn provenance(&self) -> &Provenance {
        &self.provenance
    }

    /// The RFC 8785 canonical JSON of the result: the exact bytes the model is sent and
    /// `result_sha256` covers.
    #[must_use]
    pub fn to_canonical_json(&self) -> Vec<u8> {
        let data = self.data_json().unwrap_or("null");
        let mut out = Vec::with_capacity(data.len() + 400);
        // Members in RFC 8785 order: data, error, execution, provenance, schema_version, status.
        out.extend_from_slice(b"{\"data\":");
        out.extend_from_slice(data.as_bytes());
        out.extend_from_slice(b",\"error\":");
        match self.error() {
            Some(error) => write_error(&mut out, error),
            None => out.extend_from_slice(b"null"),
        }
        let execution = &self.execution;
        out.extend_from_slice(b",\"execution\":{\"complete\":");
        out.extend_from_slice(bool_text(execution.complete));
        out.extend_from_slice(b",\"delivery\":\"");
        out.extend_from_slice(execution.delivery.as_str().as_bytes());
        out.extend_from_slice(b"\",\"outcome\":\"");
        out.extend_from_slice(execution.outcome.as_str().as_bytes());
        out.extend_from_slice(b"\",\"truncated\":");
        out.extend_from_slice(bool_text(execution.truncated));
        let provenance = &self.provenance;
        out.extend_from_slice(b"},\"provenance\":{\"observed_at\":");
        canonical::write_str(&mut out, &provenance.observed_at);
        out.extend_from_slice(b",\"producer_revision\":");
        canonical::write_str(&mut out, &provenance.producer_revision);
        out.extend_from_slice(b",\"resource_revision\":");
        match &provenance.resource_revision {
            Some(revision) => canonical::write_str(&mut out, revision),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\"source_label\":");
        canonical::write_str(&mut out, &provenance.source_label);
        out.extend_from_slice(b",\"trust\":\"");
        out.extend_from_slice(provenance.trust.as_str().as_bytes());
        out.extend_from_slice(b"\"},\"schema_version\":\"");
        out.extend_from_slice(MODEL_RESULT_SCHEMA_VERSION.as_bytes());
        out.extend_from_slice(b"\",\"status\":\"");
        out.extend_from_slice(self.status().as_str().as_bytes());
        out.extend_from_slice(b"\"}");
        out
    }
}

fn write_error(out: &mut Vec<u8>, error: &ModelError) {
    // Members in RFC 8785 order: alternate_source (only when present), category, code, message,
    // next_tool (only when present), paths, recovery, retry_after_ms.
    out.push(b'{');
    if let Some(alternate_source) = error.alternate_source() {
        out.extend_from_slice(b"\"alternate_source\":");
        out.extend_from_slice(bool_text(alternate_source));
        out.push(b',');
    }
    out.extend_from_slice(b"\"category\":\"");
    out.extend_from_slice(error.category().as_str().as_bytes());
    out.extend_from_slice(b"\",\"code\":\"");
    out.extend_from_slice(error.code().as_str().as_bytes());
    out.extend_from_slice(b"\",\"message\":");
    canonical::write_str(out, error.message());
    if let Some(next_tool) = error.next_tool() {
        out.extend_from_slice(b",\"next_tool\":");
        canonical::write_str(out, next_tool);
    }
    out.extend_from_slice(b",\"paths\":[");
    for (index, path) in error.paths().iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        canonical::write_str(out, path);
    }
    out.extend_from_slice(b"],\"recovery\":\"");
    out.extend_from_slice(error.recovery().as_str().as_bytes());
    out.extend_from_slice(b"\",\"retry_after_ms\":");
    match error.retry_after_ms() {
        // Catalog waits are far below 2^53, so the decimal digits are the canonical form.
        Some(ms) => out.extend_from_slice(itoa::Buffer::new().format(ms).as_bytes()),
        None => out.extend_from_slice(b"null"),
    }
    out.push(b'}');
}

fn bool_text(value: bool) -> &'static [u8] {
    if value { b"true" } else { b"false" }
}

/// The wire form, member for member; used to serialize and to check what is deserialized.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Wire<'a> {
    schema_version: std::borrow::Cow<'a, str>,
    status: Status,
    data: Option<std::borrow::Cow<'a, Value>>,
    error: Option<std::borrow::Cow<'a, ModelError>>,
    execution: Execution,
    provenance: std::borrow::Cow<'a, Provenance>,
}

impl Serialize for ModelResult {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut wire = serializer.serialize_struct("ModelResult", 6)?;
        wire.serialize_field("schema_version", MODEL_RESULT_SCHEMA_VERSION)?;
        wire.serialize_field("status", &self.status())?;
        wire.serialize_field("data", &self.data())?;
        wire.serialize_field("error", &self.error())?;
        wire.serialize_field("execution", &self.execution)?;
        wire.serialize_field("provenance", &self.provenance)?;
        wire.end()
    }
}

impl<'de> Deserialize<'de> for ModelResult {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = Wire::deserialize(deserializer)?;
        ModelResult::from_wire(wire).map_err(D::Error::custom)
    }
}

impl ModelResult {
    fn from_wire(wire: Wire<'_>) -> Result<Self, &'static str> {
        if wire.schema_version != MODEL_RESULT_SCHEMA_VERSION {
            return Err("schema_version is not tool-model-result-v2");
        }
        let execution = wire.execution;
        let provenance = wire.provenance.into_owned();
        let body = match (wire.status, wire.data, wire.error) {
            (Status::Succeeded, Some(data), None) => {
                if execution.outcome != Outcome::Committed {
                    return Err("a succeeded result has outcome committed");
                }
                if provenance.trust == Trust::TrustedControl {
                    return Err("a trusted_control result carries no data");
                }
                if execution.complete == execution.truncated {
                    return Err("data is complete exactly when it is not truncated");
                }
                // Whatever spelling came in, the data is kept (and hashed) canonical.
                let canonical =
                    canonical::to_vec(&data).map_err(|_| "data has a non-finite number")?;
                Body::Succeeded(
                    String::from_utf8(canonical).map_err(|_| "canonical JSON is UTF-8")?,
                )
            }
            (Status::Failed | Status::Unknown, None, Some(error)) => {
                let error = error.into_owned();
                let unknown = error.code().is_unknown_outcome();
                if unknown != (wire.status == Status::Unknown) {
                    return Err(
                        "status unknown goes with an unknown-outcome code, and only with it",
                    );
                }
                if execution.outcome != error.code().entry().outcome {
                    return Err("the outcome is not the error code's");
                }
                if execution.complete || execution.truncated {
                    return Err("a failed result is neither complete nor truncated");
                }
                if unknown {
                    Body::Unknown(error)
                } else {
                    Body::Failed(error)
                }
            }
            (Status::Succeeded, ..) => return Err("a succeeded result has data and no error"),
            _ => return Err("a failed or unknown result has an error and no data"),
        };
        Ok(ModelResult {
            body,
            execution,
            provenance,
        })
    }
}
