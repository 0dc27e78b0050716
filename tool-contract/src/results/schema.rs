//! The JSON Schema of a tool's model results: the envelope's own, from its declaration, with
//! the tool's output as `data` and one catalog entry exactly as `error`.

use serde_json::{Map, Value, json};

use super::catalog::{CATALOG, CatalogEntry, ErrorCode};
use super::error::ModelError;
use super::model::{Envelope, MODEL_RESULT_SCHEMA_VERSION};
use crate::contract::ContractField;
use crate::contract::rules::Rules;
use crate::contract::schema::shape_schema;
use crate::contract::spec::ToolSpec;
use crate::json::encoding::infallible;
use crate::vocabulary::name::TOOL_NAME_PATTERN;
use crate::vocabulary::violation::MAX_VIOLATIONS;

impl ToolSpec {
    /// The JSON Schema (draft 2020-12) of every [`ModelResult`](crate::ModelResult) this
    /// tool can produce: the `tool-model-result-v2` envelope, with `data` the
    /// [output schema](Self::output_schema) on success, and otherwise `error` one entry of
    /// the [catalog](crate::results::CATALOG) exactly. It is what an MCP server lists as the
    /// tool's `outputSchema`, since its `structuredContent` is the model result.
    ///
    /// ```
    /// # use tool_contract::{ToolContract, ToolOutput};
    /// # /// Echo a word.
    /// # #[derive(serde::Deserialize, ToolContract)]
    /// # #[tool_contract(output = Echoed, effect = pure, source_label = "echo", producer_revision = "1")]
    /// # struct Echo { word: String }
    /// # #[derive(serde::Serialize, ToolOutput)]
    /// # struct Echoed { word: String }
    /// let schema = Echo::spec().model_result_schema();
    /// let success = &schema["oneOf"][0]["properties"];
    /// assert_eq!(success["data"], *Echo::spec().output_schema());
    /// assert_eq!(success["schema_version"]["const"], "tool-model-result-v2");
    /// ```
    #[must_use]
    pub fn model_result_schema(&self) -> Value {
        model_result_schema(self.output_schema())
    }
}

/// The schema of every model result of a tool whose output schema is `output`: the envelope's
/// declared schema (its members, `execution`, `provenance`, closed), in two alternatives: on
/// success `data` is the output and `error` null; otherwise `data` is null and `error` one
/// catalog entry exactly.
fn model_result_schema(output: &Value) -> Value {
    let envelope = shape_schema(<Envelope as ContractField>::__shape(), &Rules::NONE);
    let alternative = |status: Value, data: Value, error: Value| {
        let mut alternative = envelope.clone();
        let properties = &mut alternative["properties"];
        properties["schema_version"] = json!({ "const": MODEL_RESULT_SCHEMA_VERSION });
        properties["status"] = status;
        properties["data"] = data;
        properties["error"] = error;
        alternative
    };
    let errors: Vec<Value> = CATALOG.iter().map(error_schema).collect();
    json!({
        "type": "object",
        "oneOf": [
            alternative(json!({ "const": "succeeded" }), output.clone(), json!({ "type": "null" })),
            alternative(
                json!({ "enum": ["failed", "unknown"] }),
                json!({ "type": "null" }),
                json!({ "oneOf": errors }),
            ),
        ],
    })
}

/// One catalog entry as a model error: what [`ModelError::check`] accepts, as a schema. The
/// members are those of the entry's error as serde writes it; the fixed ones are constants.
fn error_schema(entry: &CatalogEntry) -> Value {
    let representative = infallible(
        serde_json::to_value(ModelError::representative(entry.code)),
        "a model error serializes to an object",
    );
    let Value::Object(members) = representative else {
        return json!(false);
    };
    let mut properties = Map::new();
    for (name, value) in &members {
        let schema = match name.as_str() {
            "retry_after_ms" => match entry.retry_after {
                Some(wait) => json!({ "type": "integer", "minimum": 1, "maximum": wait.max_ms }),
                None => json!({ "type": "null" }),
            },
            "paths" if entry.code == ErrorCode::InvalidArguments => json!({
                "type": "array", "items": { "type": "string" }, "maxItems": MAX_VIOLATIONS,
            }),
            "paths" => json!({ "type": "array", "maxItems": 0 }),
            "next_tool" => json!({ "type": "string", "pattern": TOOL_NAME_PATTERN }),
            "alternate_source" => json!({ "type": "boolean" }),
            // The code, its category, message and recovery: fixed by the catalog.
            _ => json!({ "const": value }),
        };
        properties.insert(name.clone(), schema);
    }
    let required: Vec<&String> = members.keys().collect();
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}
