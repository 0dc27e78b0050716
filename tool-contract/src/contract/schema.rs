//! JSON Schema (draft 2020-12) for a contract's arguments and output, from its spec.
//!
//! The input schema is the form OpenAI strict function tools ask for, which Anthropic's
//! `input_schema` and Gemini's `parameters` accept too: every object closed with
//! `"additionalProperties": false`, every property required, `Option<T>` as nullable.

use serde_json::{Map, Value, json};

use super::grounding::GroundingSource;
use super::rules::Rules;
use super::shape::{ObjectShape, Shape};
use super::traits::ContractField;
use crate::json::format::Format;

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
