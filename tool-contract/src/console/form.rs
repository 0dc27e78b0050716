//! The form an approver changes a request with: one field per argument, built from the
//! tool's input schema, and the fields read back into arguments by that schema. What the
//! fields say is only a proposal: the contract checks the arguments before anything is
//! signed.

use serde_json::{Map, Value, json};

use crate::json::visible::escape_hidden;

/// The prefix of an edit field's name in the posted form, so that no argument's name can
/// be taken for the form's own members (`decision`).
const FIELD_PREFIX: &str = "edit.";

/// The prefix of a field whose text is the argument's JSON: objects, arrays, unions, and
/// text shown escaped.
const JSON_FIELD_PREFIX: &str = "edit-json.";

/// The argument a posted field's name is of, and whether its text is JSON.
fn field_of(name: &str) -> Option<(&str, bool)> {
    name.strip_prefix(JSON_FIELD_PREFIX)
        .map(|argument| (argument, true))
        .or_else(|| {
            name.strip_prefix(FIELD_PREFIX)
                .map(|argument| (argument, false))
        })
}

/// How one argument is written in the form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Integer,
    Number,
    Boolean,
    Choice,
    /// Anything else (objects, arrays, unions): its JSON, in a text area.
    Json,
}

impl Kind {
    fn of(schema: &Value) -> Kind {
        if schema.get("enum").is_some() {
            return Kind::Choice;
        }
        match schema.get("type").and_then(Value::as_str) {
            Some("string") => Kind::Text,
            Some("integer") => Kind::Integer,
            Some("number") => Kind::Number,
            Some("boolean") => Kind::Boolean,
            _ => Kind::Json,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Text => "text",
            Kind::Integer => "integer",
            Kind::Number => "number",
            Kind::Boolean => "boolean",
            Kind::Choice => "choice",
            Kind::Json => "json",
        }
    }
}

/// The arguments' properties of an input schema, in the schema's order, and which are
/// required.
fn properties(schema: &Value) -> (Vec<(&String, &Value)>, Vec<&str>) {
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|members| members.iter().collect())
        .unwrap_or_default();
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    (properties, required)
}

/// The fields of the edit form for a tool of `schema`, each filled with its value in
/// `arguments`: what the template draws.
pub(super) fn fields(schema: &Value, arguments: &Value) -> Vec<Value> {
    let (properties, required) = properties(schema);
    properties
        .into_iter()
        .map(|(name, property)| {
            let mut kind = Kind::of(property);
            let current = arguments.get(name);
            let value = match (kind, current) {
                (_, None) => String::new(),
                // Text that hides or reorders characters is shown as its JSON, escaped, as the
                // preview shows it: it reads back to the same text.
                (Kind::Text, Some(Value::String(text))) if escape_hidden(text) != *text => {
                    kind = Kind::Json;
                    escape_hidden(&Value::String(text.clone()).to_string())
                }
                (Kind::Text | Kind::Choice, Some(Value::String(text))) => text.clone(),
                (_, Some(other)) => escape_hidden(&other.to_string()),
            };
            let choices: Vec<String> = property
                .get("enum")
                .and_then(Value::as_array)
                .map(|values| {
                    values
                        .iter()
                        .map(|value| match value {
                            Value::String(text) => text.clone(),
                            other => other.to_string(),
                        })
                        .collect()
                })
                .unwrap_or_default();
            let prefix = if kind == Kind::Json {
                JSON_FIELD_PREFIX
            } else {
                FIELD_PREFIX
            };
            json!({
                "name": format!("{prefix}{name}"),
                "id": format!("edit-{name}"),
                "label": name,
                "kind": kind.name(),
                "description": property.get("description"),
                "value": value,
                "checked": current == Some(&Value::Bool(true)),
                "choices": choices,
                "required": required.contains(&name.as_str()),
                "minimum": property.get("minimum"),
                "maximum": property.get("maximum"),
                "max_length": property.get("maxLength"),
                "pattern": property.get("pattern"),
            })
        })
        .collect()
}

/// The arguments the posted fields say, read by `schema`: text as it is, numbers and JSON
/// parsed, a box ticked or not, an optional field left empty left out. `None` when no field
/// was posted (no edit).
///
/// # Errors
///
/// A sentence naming the field that does not read as its kind.
pub(super) fn arguments(
    schema: &Value,
    posted: &Map<String, Value>,
) -> Result<Option<Value>, String> {
    if !posted.keys().any(|name| field_of(name).is_some()) {
        return Ok(None);
    }
    let (properties, required) = properties(schema);
    if let Some(unknown) = posted
        .keys()
        .filter_map(|name| field_of(name))
        .map(|(argument, _)| argument)
        .find(|argument| {
            !properties
                .iter()
                .any(|(known, _)| known.as_str() == *argument)
        })
    {
        return Err(format!("{unknown} is not an argument of this tool"));
    }
    let mut arguments = Map::new();
    for (name, property) in properties {
        let as_json = posted.get(&format!("{JSON_FIELD_PREFIX}{name}"));
        let kind = if as_json.is_some() {
            Kind::Json
        } else {
            Kind::of(property)
        };
        let given = as_json.or_else(|| posted.get(&format!("{FIELD_PREFIX}{name}")));
        let text = match given {
            Some(Value::String(text)) => text.as_str(),
            Some(Value::Bool(ticked)) if kind == Kind::Boolean => {
                arguments.insert(name.clone(), Value::Bool(*ticked));
                continue;
            }
            Some(_) => return Err(format!("{name} is not a form field's text")),
            None if kind == Kind::Boolean => {
                // A box not ticked is not posted.
                arguments.insert(name.clone(), Value::Bool(false));
                continue;
            }
            None => "",
        };
        // An optional argument left empty is left out: the form cannot tell an empty text
        // from none, and a member the request did not have is not made up.
        if text.is_empty() && !required.contains(&name.as_str()) {
            continue;
        }
        let value = match kind {
            Kind::Text => Value::String(text.to_owned()),
            Kind::Choice => choice(property, text),
            Kind::Boolean => Value::Bool(matches!(text, "on" | "true")),
            Kind::Integer | Kind::Number | Kind::Json => {
                let value: Value = crate::json::depth::from_slice(text.trim().as_bytes())
                    .map_err(|_| format!("{name} does not read as {}", kind.name()))?;
                if kind != Kind::Json && !value.is_number() {
                    return Err(format!("{name} is not a number"));
                }
                value
            }
        };
        arguments.insert(name.clone(), value);
    }
    Ok(Some(Value::Object(arguments)))
}

/// The enum value whose text is `text`: a string, or the number or other value it spells.
fn choice(property: &Value, text: &str) -> Value {
    property
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|values| {
            values.iter().find(|value| match value {
                Value::String(own) => own == text,
                other => serde_json::to_string(other).is_ok_and(|spelled| spelled == text),
            })
        })
        .cloned()
        .unwrap_or_else(|| Value::String(text.to_owned()))
}

/// The members in which `after` differs from `before`, each with both values as JSON text:
/// what an approver sees of an edit.
pub(super) fn diff(before: &Value, after: &Value) -> Vec<Value> {
    let empty = Map::new();
    let before = before.as_object().unwrap_or(&empty);
    let after = after.as_object().unwrap_or(&empty);
    let mut names: Vec<&String> = before.keys().chain(after.keys()).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .filter(|name| before.get(*name) != after.get(*name))
        .map(|name| {
            let text =
                |value: Option<&Value>| value.map_or_else(|| "(none)".to_owned(), Value::to_string);
            json!({
                "name": name,
                "before": text(before.get(name)),
                "after": text(after.get(name)),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "order_ref": {"type": "string", "maxLength": 32},
                "amount_cents": {"type": "integer", "minimum": 1},
                "urgent": {"type": "boolean"},
                "channel": {"enum": ["email", "sms"]},
                "note": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "limit": {"type": "integer"}
            },
            "required": ["order_ref", "amount_cents", "urgent", "channel", "tags"]
        })
    }

    fn posted(fields: Value) -> Map<String, Value> {
        fields.as_object().unwrap().clone()
    }

    #[test]
    fn each_field_is_read_back_as_its_kind() {
        let read = arguments(
            &schema(),
            &posted(json!({
                "decision": "approve",
                "edit.order_ref": "ORDER-1001",
                "edit.amount_cents": "4500",
                "edit.urgent": "on",
                "edit.channel": "sms",
                "edit.note": "",
                "edit-json.tags": "[\"a\"]",
                "edit.limit": ""
            })),
        );
        assert_eq!(
            read,
            Ok(Some(json!({
                "order_ref": "ORDER-1001",
                "amount_cents": 4500,
                "urgent": true,
                "channel": "sms",
                "tags": ["a"]
            })))
        );
    }

    #[test]
    fn no_field_posted_is_no_edit_and_a_box_not_posted_is_false() {
        assert_eq!(
            arguments(&schema(), &posted(json!({"decision": "approve"}))),
            Ok(None)
        );
        let read = arguments(
            &schema(),
            &posted(json!({"edit.order_ref": "A", "edit.amount_cents": "1", "edit.channel": "email", "edit-json.tags": "[]"})),
        )
        .unwrap()
        .unwrap();
        assert_eq!(read["urgent"], false);
    }

    #[test]
    fn a_field_that_does_not_read_as_its_kind_or_is_unknown_is_named() {
        let bad_number = arguments(
            &schema(),
            &posted(json!({"edit.amount_cents": "forty", "edit-json.tags": "[]"})),
        );
        assert_eq!(
            bad_number,
            Err("amount_cents does not read as integer".to_owned())
        );
        let text_as_number = arguments(&schema(), &posted(json!({"edit.amount_cents": "\"5\""})));
        assert_eq!(
            text_as_number,
            Err("amount_cents is not a number".to_owned())
        );
        let unknown = arguments(&schema(), &posted(json!({"edit.admin": "yes"})));
        assert_eq!(
            unknown,
            Err("admin is not an argument of this tool".to_owned())
        );
    }

    #[test]
    fn the_form_is_filled_with_the_arguments() {
        let drawn = fields(
            &schema(),
            &json!({"order_ref": "ORDER-1", "amount_cents": 4500, "urgent": true, "channel": "sms", "tags": ["x"]}),
        );
        let field = |name: &str| {
            drawn
                .iter()
                .find(|field| field["label"] == name)
                .unwrap()
                .clone()
        };
        assert_eq!(field("order_ref")["value"], "ORDER-1");
        assert_eq!(field("order_ref")["kind"], "text");
        assert_eq!(field("amount_cents")["value"], "4500");
        assert_eq!(field("urgent")["checked"], true);
        assert_eq!(field("channel")["choices"], json!(["email", "sms"]));
        assert_eq!(field("tags")["kind"], "json");
        assert_eq!(field("tags")["value"], "[\"x\"]");
        assert_eq!(field("note")["required"], false);
    }

    #[test]
    fn text_with_a_hidden_character_is_shown_escaped_and_reads_back_the_same() {
        let arguments = json!({"order_ref": "invoice\u{202e}fdp.exe", "amount_cents": 1});
        let drawn = fields(&schema(), &arguments);
        let field = drawn
            .iter()
            .find(|field| field["label"] == "order_ref")
            .unwrap();
        assert_eq!(field["kind"], "json");
        assert_eq!(field["value"], "\"invoice\\u202efdp.exe\"");
        let read = arguments_of(&schema(), &field["value"]);
        assert_eq!(read["order_ref"], arguments["order_ref"]);
    }

    /// The arguments read back from a form whose `order_ref` field says `order_ref`.
    fn arguments_of(schema: &Value, order_ref: &Value) -> Value {
        let posted = posted(json!({
            "edit-json.order_ref": order_ref,
            "edit.amount_cents": "1",
            "edit.channel": "sms",
            "edit-json.tags": "[]"
        }));
        arguments(schema, &posted).unwrap().unwrap()
    }

    #[test]
    fn the_diff_names_the_members_changed() {
        let changed = diff(
            &json!({"amount_cents": 5000, "reason": "damaged"}),
            &json!({"amount_cents": 4500, "reason": "damaged"}),
        );
        assert_eq!(
            changed,
            vec![json!({"name": "amount_cents", "before": "5000", "after": "4500"})]
        );
    }
}
