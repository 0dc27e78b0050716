//! JSON Schema (draft 2020-12) for a contract's arguments and output, from its spec.
//!
//! The input schema is the form OpenAI strict function tools ask for, which Anthropic's
//! `input_schema` and Gemini's `parameters` accept too: every object closed with
//! `"additionalProperties": false`, every property required, `Option<T>` as nullable.

use serde_json::{Map, Value, json};

use crate::catalog::{CATALOG, CatalogEntry, ErrorCode, Recovery};
use crate::evidence::GroundingSource;
use crate::result::MODEL_RESULT_SCHEMA_VERSION;
use crate::spec::{Format, ObjectShape, Rules, Shape};
use crate::validate::field::ContractField;
use crate::violation::MAX_VIOLATIONS;

/// The schema of a contract's arguments.
pub(crate) fn input_schema(arguments: &ObjectShape) -> Value {
    object_schema(arguments, false)
}

/// The schema of a value of `shape` under `rules`.
pub(crate) fn shape_schema(shape: Shape, rules: &Rules) -> Value {
    match shape {
        Shape::String => {
            let mut schema = Map::new();
            schema.insert("type".into(), json!("string"));
            string_rules(&mut schema, rules);
            Value::Object(schema)
        }
        Shape::DateTime => {
            let mut schema = Map::new();
            schema.insert("type".into(), json!("string"));
            schema.insert("format".into(), json!("date-time"));
            if rules.format() == Some(Format::Rfc3339Utc) {
                schema.insert("pattern".into(), json!("Z$"));
            }
            Value::Object(schema)
        }
        Shape::Boolean => json!({ "type": "boolean" }),
        Shape::Integer { min, max } => {
            let minimum = rules.minimum().map_or(min as f64, |m| m.max(min as f64));
            let maximum = rules.maximum().map_or(max as f64, |m| m.min(max as f64));
            json!({ "type": "integer", "minimum": number(minimum), "maximum": number(maximum) })
        }
        Shape::Number => {
            let mut schema = Map::new();
            schema.insert("type".into(), json!("number"));
            if let Some(minimum) = rules.minimum() {
                schema.insert("minimum".into(), number(minimum));
            }
            if let Some(maximum) = rules.maximum() {
                schema.insert("maximum".into(), number(maximum));
            }
            Value::Object(schema)
        }
        Shape::FreeForm => json!({}),
        Shape::Nullable(inner) => nullable(shape_schema(inner(), rules)),
        Shape::Array(item) => {
            let mut schema = Map::new();
            schema.insert("type".into(), json!("array"));
            schema.insert("items".into(), shape_schema(item(), rules));
            if rules.grounded() && is_grounding_source(item()) {
                schema.insert("minItems".into(), json!(1));
            }
            if let Some(max) = rules.max_items() {
                schema.insert("maxItems".into(), json!(max));
            }
            Value::Object(schema)
        }
        Shape::Object(object) => object_schema(object, true),
        Shape::Enum(shape) => {
            let mut schema = Map::new();
            if let Some(description) = shape.description() {
                schema.insert("description".into(), json!(description));
            }
            schema.insert("type".into(), json!("string"));
            schema.insert("enum".into(), json!(shape.values()));
            Value::Object(schema)
        }
    }
}

/// The schema of every model result (`tool-model-result-v2`) of a tool whose output schema is
/// `output`: on success `data` is the output and `error` null; otherwise `data` is null and
/// `error` one catalog entry exactly (its category, message and recovery fixed by its code).
pub(crate) fn model_result_schema(output: &Value) -> Value {
    let envelope = |status: Value, data: Value, error: Value| {
        json!({
            "type": "object",
            "properties": {
                "schema_version": { "const": MODEL_RESULT_SCHEMA_VERSION },
                "status": status,
                "data": data,
                "error": error,
                "execution": {
                    "type": "object",
                    "properties": {
                        "outcome": { "enum": ["not_started", "committed", "unknown"] },
                        "delivery": { "enum": ["fresh", "local_replay", "receipt_reconciled"] },
                        "complete": { "type": "boolean" },
                        "truncated": { "type": "boolean" },
                    },
                    "required": ["outcome", "delivery", "complete", "truncated"],
                    "additionalProperties": false,
                },
                "provenance": {
                    "type": "object",
                    "properties": {
                        "source_label": { "type": "string" },
                        "producer_revision": { "type": "string" },
                        "resource_revision": { "type": ["string", "null"] },
                        "observed_at": { "type": "string", "format": "date-time" },
                        "trust": { "enum": ["untrusted_data", "trusted_control"] },
                    },
                    "required": [
                        "source_label", "producer_revision", "resource_revision", "observed_at",
                        "trust",
                    ],
                    "additionalProperties": false,
                },
            },
            "required": ["schema_version", "status", "data", "error", "execution", "provenance"],
            "additionalProperties": false,
        })
    };
    let errors: Vec<Value> = CATALOG.iter().map(error_schema).collect();
    json!({
        "type": "object",
        "oneOf": [
            envelope(json!({ "const": "succeeded" }), output.clone(), json!({ "type": "null" })),
            envelope(
                json!({ "enum": ["failed", "unknown"] }),
                json!({ "type": "null" }),
                json!({ "oneOf": errors }),
            ),
        ],
    })
}

/// One catalog entry as a model error: what `ModelError::check` accepts, as a schema.
fn error_schema(entry: &CatalogEntry) -> Value {
    let retry_after_ms = match entry.retry_after {
        Some(wait) => json!({ "type": "integer", "minimum": 1, "maximum": wait.max_ms }),
        None => json!({ "type": "null" }),
    };
    let paths = if entry.code == ErrorCode::InvalidArguments {
        json!({ "type": "array", "items": { "type": "string" }, "maxItems": MAX_VIOLATIONS })
    } else {
        json!({ "type": "array", "maxItems": 0 })
    };
    let mut properties = Map::new();
    properties.insert("code".into(), json!({ "const": entry.code.as_str() }));
    properties.insert("category".into(), json!({ "const": entry.category }));
    properties.insert("message".into(), json!({ "const": entry.message }));
    properties.insert("recovery".into(), json!({ "const": entry.recovery }));
    properties.insert("retry_after_ms".into(), retry_after_ms);
    properties.insert("paths".into(), paths);
    let mut required = vec![
        "code",
        "category",
        "message",
        "recovery",
        "retry_after_ms",
        "paths",
    ];
    if entry.recovery == Recovery::CallTool {
        properties.insert(
            "next_tool".into(),
            json!({ "type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_-]{0,63}$" }),
        );
        required.push("next_tool");
    }
    if entry.code.tells_alternate_source() {
        properties.insert("alternate_source".into(), json!({ "type": "boolean" }));
        required.push("alternate_source");
    }
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// Whether `shape` is `GroundingSource`'s: a grounded list of them holds at least one.
fn is_grounding_source(shape: Shape) -> bool {
    let Shape::Object(sources) = <GroundingSource as ContractField>::__shape() else {
        return false;
    };
    matches!(shape, Shape::Object(object) if std::ptr::eq(object, sources))
}

fn object_schema(object: &ObjectShape, with_description: bool) -> Value {
    let mut properties = Map::new();
    for field in object.fields() {
        let mut schema = shape_schema(field.shape(), field.rules());
        if let (Some(description), Value::Object(map)) = (field.description(), &mut schema) {
            map.insert("description".into(), json!(description));
        }
        properties.insert(field.name().into(), schema);
    }
    let required: Vec<&str> = object.fields().iter().map(|field| field.name()).collect();
    let mut schema = Map::new();
    if let Some(description) = object.description().filter(|_| with_description) {
        schema.insert("description".into(), json!(description));
    }
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), Value::Object(properties));
    schema.insert("required".into(), json!(required));
    schema.insert("additionalProperties".into(), json!(false));
    Value::Object(schema)
}

fn string_rules(schema: &mut Map<String, Value>, rules: &Rules) {
    if let Some(min) = rules.min_len() {
        schema.insert("minLength".into(), json!(min));
    }
    if let Some(max) = rules.max_len() {
        schema.insert("maxLength".into(), json!(max));
    }
    if let Some(pattern) = rules.pattern() {
        schema.insert("pattern".into(), json!(pattern.source()));
    }
    match rules.format() {
        Some(Format::Rfc3339Utc) => {
            schema.insert("format".into(), json!("date-time"));
            schema.insert("pattern".into(), json!("Z$"));
        }
        Some(Format::Rfc3339) => {
            schema.insert("format".into(), json!("date-time"));
        }
        Some(Format::HttpsUrl) => {
            schema.insert("format".into(), json!("uri"));
            schema.insert("pattern".into(), json!("^https://"));
        }
        None => {}
    }
}

/// `schema` or `null`: a type list where the schema has a single type, `anyOf` otherwise.
fn nullable(schema: Value) -> Value {
    let Value::Object(mut map) = schema else {
        return schema;
    };
    match map.get("type").and_then(Value::as_str).map(str::to_owned) {
        Some(ty) if ty != "object" => {
            map.insert("type".into(), json!([ty, "null"]));
            if let Some(Value::Array(values)) = map.get_mut("enum") {
                values.push(Value::Null);
            }
            Value::Object(map)
        }
        _ if map.is_empty() => Value::Object(map),
        _ => json!({ "anyOf": [Value::Object(map), { "type": "null" }] }),
    }
}

/// A bound as JSON: an integer where it is one, so `minimum: 1` stays `1`.
fn number(value: f64) -> Value {
    const SAFE: f64 = 9_007_199_254_740_991.0;
    if value.fract() == 0.0 && value.abs() <= SAFE {
        // Whole and within ±(2^53 − 1): the conversion is exact.
        #[allow(clippy::cast_possible_truncation)]
        let whole = value as i64;
        json!(whole)
    } else {
        json!(value)
    }
}
