//! The JSON Schema of a tool's model results: the envelope's own, from its declaration, with
//! the tool's output as `data` and one catalog entry exactly as `error`.

use serde_json::{Value, json};

use super::catalog::{CATALOG, ErrorCode, Recovery};
use super::execution::Status;
use super::model::{Envelope, MODEL_RESULT_SCHEMA_VERSION};
use crate::contract::ContractField;
use crate::contract::rules::Rules;
use crate::contract::schema::shape_schema;
use crate::contract::spec::ToolSpec;
use crate::vocabulary::name::TOOL_NAME_PATTERN;

impl ToolSpec {
    /// The JSON Schema (draft 2020-12) of every [`ModelResult`](crate::ModelResult) this
    /// tool can produce: the `tool-model-result-v2` envelope, with `data` the
    /// [output schema](Self::output_schema) on success, and otherwise `error` an error of the
    /// [catalog](crate::results::CATALOG): its codes, and the members each recovery needs.
    /// It is what an MCP server lists as the tool's `outputSchema`, since its
    /// `structuredContent` is the model result. The output and the error part each appear
    /// once; which message goes with which code is left to
    /// [verification](crate::Binder::verify), which checks it.
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
    /// assert_eq!(success["status"]["const"], "succeeded");
    /// assert_eq!(success["data"], *Echo::spec().output_schema());
    /// assert_eq!(schema["properties"]["schema_version"]["const"], "tool-model-result-v2");
    /// ```
    #[must_use]
    pub fn model_result_schema(&self) -> Value {
        model_result_schema(self.output_schema())
    }
}

/// The schema of every model result of a tool whose output schema is `output`: the envelope's
/// declared members (closed, without the descriptions its Rust docs give), then two
/// alternatives: on success `data` is the output and `error` null; otherwise `data` is null
/// and `error` the [error schema](error_schema). The output appears once, the error part once.
fn model_result_schema(output: &Value) -> Value {
    // The output's definitions move to the root, where its `$ref`s resolve.
    let mut output = output.clone();
    let definitions = output
        .as_object_mut()
        .and_then(|output| output.remove("$defs"));
    let mut envelope = shape_schema(<Envelope as ContractField>::__shape(), &Rules::NONE);
    strip_descriptions(&mut envelope);
    let properties = &mut envelope["properties"];
    properties["schema_version"] = json!({ "const": MODEL_RESULT_SCHEMA_VERSION });
    // Each alternative says what `status`, `data` and `error` are; here they are only named,
    // so that the closed envelope admits them.
    properties["status"] = json!({});
    properties["data"] = json!({});
    properties["error"] = json!({});
    envelope["oneOf"] = json!([
        {
            "properties": {
                "status": { "const": Status::Succeeded },
                "data": output,
                "error": { "type": "null" },
            },
        },
        {
            "properties": {
                "status": { "enum": [Status::Failed, Status::Unknown] },
                "data": { "type": "null" },
                "error": error_schema(),
            },
        },
    ]);
    if let Some(definitions) = definitions {
        envelope["$defs"] = definitions;
    }
    envelope
}

/// Every model error, in one schema: the catalog's codes as an enum, a violation's members
/// closed (so that no value can ride in one), and the two rules a client acts on: a wait
/// exactly where the recovery is `retry_after`, a `next_tool` exactly where it is `call_tool`.
/// Which category, message, recovery, paths and hints go with which code is the catalog's,
/// which verification checks: spelling every code out here weighed 16 KB in every tool's
/// schema.
fn error_schema() -> Value {
    let longest_wait = CATALOG
        .iter()
        .filter_map(|entry| entry.retry_after.map(|wait| wait.max_ms))
        .max();
    json!({
        "type": "object",
        "properties": {
            "code": { "enum": ErrorCode::WIRE_NAMES },
            // What follows from the code is the catalog's, named here and checked by
            // verification: listing it again would only weigh.
            "category": { "type": "string" },
            "message": { "type": "string" },
            "recovery": { "type": "string" },
            // Its type is the first rule's: an integer exactly where the recovery waits.
            "retry_after_ms": { "minimum": 1, "maximum": longest_wait },
            "paths": { "type": "array", "items": { "type": "string" } },
            "violations": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "path": { "type": "string" },
                        "constraint": { "type": "string" },
                        "expected": {},
                    },
                    "required": ["path", "constraint"],
                    "additionalProperties": false,
                },
            },
            "next_tool": { "type": "string", "pattern": TOOL_NAME_PATTERN },
            "alternate_source": { "type": "boolean" },
        },
        "required": ["code", "category", "message", "recovery", "retry_after_ms", "paths"],
        "additionalProperties": false,
        "allOf": [
            exactly_when(
                json!({ "recovery": { "const": Recovery::RetryAfter } }),
                json!({ "properties": { "retry_after_ms": { "type": "integer" } } }),
                json!({ "properties": { "retry_after_ms": { "type": "null" } } }),
            ),
            exactly_when(
                json!({ "recovery": { "const": Recovery::CallTool } }),
                json!({ "required": ["next_tool"] }),
                json!({ "not": { "required": ["next_tool"] } }),
            ),
        ],
    })
}

/// `then` where the members match `condition`, `otherwise` elsewhere.
fn exactly_when(condition: Value, then: Value, otherwise: Value) -> Value {
    json!({ "if": { "properties": condition }, "then": then, "else": otherwise })
}

/// Removes every `description` keyword of a schema (not members that happen to be named so),
/// and `type` beside an `enum`, which says it already.
fn strip_descriptions(schema: &mut Value) {
    let Value::Object(keywords) = schema else {
        return;
    };
    keywords.remove("description");
    if keywords.contains_key("enum") {
        keywords.remove("type");
    }
    for (keyword, value) in keywords.iter_mut() {
        match (keyword.as_str(), value) {
            ("properties", Value::Object(members)) => {
                members.values_mut().for_each(strip_descriptions)
            }
            ("items", item) => strip_descriptions(item),
            _ => {}
        }
    }
}
