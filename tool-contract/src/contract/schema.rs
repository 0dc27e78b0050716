//! JSON Schema (draft 2020-12) for a contract's arguments and output, from its spec.
//!
//! The input schema is the form OpenAI strict function tools ask for, which Anthropic's
//! `input_schema` and Gemini's `parameters` accept too: every object closed with
//! `"additionalProperties": false`, every property required, `Option<T>` as nullable.
//!
//! The output schema writes an object type the output holds in more than one place once, under
//! `$defs`, each place a `$ref` to it: an `Address` for billing and for shipping is described
//! once.

use serde_json::{Map, Value, json};

use super::grounding::GroundingSource;
use super::rules::Rules;
use super::shape::{ObjectShape, Shape};
use super::traits::ContractField;
use crate::json::format::Format;
use crate::json::number::json_number;

/// The schema of a contract's arguments.
pub(crate) fn input_schema(arguments: &ObjectShape) -> Value {
    object_schema(arguments, false, &Definitions::default())
}

/// The schema of a contract's output: [`shape_schema`], with each object type it holds in
/// more than one place under `$defs`.
pub(crate) fn output_schema(output: Shape) -> Value {
    let mut references = Vec::new();
    // The root counts as one reference: a type that holds itself is then defined, not expanded.
    count_references(output, &mut references);
    let mut definitions = Definitions::default();
    for (object, count) in references {
        if count > 1 {
            let mut name = object.name().to_owned();
            while definitions.objects.iter().any(|(_, taken)| *taken == name) {
                name.push('_');
            }
            definitions.objects.push((object, name));
        }
    }
    let mut schema = schema_of(output, &Rules::NONE, &definitions);
    if let Value::Object(root) = &mut schema
        && !definitions.objects.is_empty()
    {
        let defined: Map<String, Value> = definitions
            .objects
            .iter()
            .map(|(object, name)| (name.clone(), object_schema(object, true, &definitions)))
            .collect();
        root.insert("$defs".into(), Value::Object(defined));
    }
    schema
}

/// The object types written once under `$defs`, each with its name there.
#[derive(Default)]
struct Definitions {
    objects: Vec<(&'static ObjectShape, String)>,
}

impl Definitions {
    fn reference(&self, object: &ObjectShape) -> Option<Value> {
        let (_, name) = self
            .objects
            .iter()
            .find(|(defined, _)| std::ptr::eq(*defined, object))?;
        Some(json!({ "$ref": format!("#/$defs/{name}") }))
    }
}

/// How many places of `shape`'s schema refer to each object type, each type's own fields
/// visited once.
fn count_references(shape: Shape, references: &mut Vec<(&'static ObjectShape, usize)>) {
    match shape {
        Shape::Nullable(inner) | Shape::Array(inner) => count_references(inner(), references),
        Shape::Object(object) => {
            if let Some((_, count)) = references
                .iter_mut()
                .find(|(seen, _)| std::ptr::eq(*seen, object))
            {
                *count += 1;
                return;
            }
            references.push((object, 1));
            for field in object.fields() {
                count_references(field.shape(), references);
            }
        }
        _ => {}
    }
}

/// The schema of a value of `shape` under `rules`.
pub(crate) fn shape_schema(shape: Shape, rules: &Rules) -> Value {
    schema_of(shape, rules, &Definitions::default())
}

fn schema_of(shape: Shape, rules: &Rules, definitions: &Definitions) -> Value {
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
            json!({ "type": "integer", "minimum": json_number(minimum), "maximum": json_number(maximum) })
        }
        Shape::Number => {
            let mut schema = Map::new();
            schema.insert("type".into(), json!("number"));
            if let Some(minimum) = rules.minimum() {
                schema.insert("minimum".into(), json_number(minimum));
            }
            if let Some(maximum) = rules.maximum() {
                schema.insert("maximum".into(), json_number(maximum));
            }
            Value::Object(schema)
        }
        Shape::FreeForm => json!({}),
        Shape::Nullable(inner) => nullable(schema_of(inner(), rules, definitions)),
        Shape::Array(item) => {
            let mut schema = Map::new();
            schema.insert("type".into(), json!("array"));
            schema.insert("items".into(), schema_of(item(), rules, definitions));
            if rules.grounded() && is_grounding_source(item()) {
                schema.insert("minItems".into(), json!(1));
            }
            if let Some(max) = rules.max_items() {
                schema.insert("maxItems".into(), json!(max));
            }
            Value::Object(schema)
        }
        Shape::Object(object) => definitions
            .reference(object)
            .unwrap_or_else(|| object_schema(object, true, definitions)),
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

fn object_schema(object: &ObjectShape, with_description: bool, definitions: &Definitions) -> Value {
    let mut properties = Map::new();
    for field in object.fields() {
        let mut schema = schema_of(field.shape(), field.rules(), definitions);
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
