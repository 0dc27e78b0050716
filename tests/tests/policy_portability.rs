//! The schema `CedarSchema::of` writes, beside the one cedar-for-agents' generator
//! (`cedar-policy-mcp-schema-generator`) makes from the same tools' `tools/list`: identical
//! but for the differences listed here and in the guide's Policies chapter, so that a policy
//! written for a gateway moves here with the least change.
//!
//! `vectors/cedar/` holds what the generator was given (`stub.cedarschema`, `tools.json`)
//! and what it made (`generated.cedarschema`); its README says how.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};
use tool_contract::policy::CedarSchema;

use crate::policies::QuoteRefund;

const VECTORS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/vectors/cedar");

fn registry() -> tool_contract::Registry {
    tool_contract::registry![QuoteRefund, tool_contract_tests::tracker::ReadDoc]
}

/// The registry's `tools/list` as the generator reads it: each tool's name, description and
/// input schema, as an MCP server lists them.
fn tools_list() -> Value {
    let tools: Vec<Value> = registry()
        .tools()
        .map(|spec| {
            json!({
                "name": spec.name(),
                "description": spec.description(),
                "inputSchema": spec.input_schema(),
            })
        })
        .collect();
    json!({ "result": { "tools": tools } })
}

#[test]
fn the_generators_input_is_the_registrys_tools_list() {
    let kept: Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{VECTORS}/tools.json")).unwrap())
            .unwrap();
    assert_eq!(
        kept,
        tools_list(),
        "tools.json is stale: write this there and run the generator again:\n{}",
        serde_json::to_string_pretty(&tools_list()).unwrap()
    );
}

/// Every type a schema declares, one line each: `Desk::User.tenant: String`,
/// `action quote_refund.input.lines[].sku: String`, `enum Desk::…::reason [damaged, late]`.
fn lines(schema: &str) -> BTreeSet<String> {
    let (fragment, _) = cedar_policy::SchemaFragment::from_cedarschema_str(schema).unwrap();
    let json = fragment.to_json_value().unwrap();
    let mut common = Map::new();
    for (namespace, body) in json.as_object().unwrap() {
        for (name, ty) in body["commonTypes"].as_object().into_iter().flatten() {
            common.insert(format!("{namespace}::{name}"), ty.clone());
        }
    }
    let mut lines = BTreeSet::new();
    for (namespace, body) in json.as_object().unwrap() {
        let reader = Reader {
            namespace,
            common: &common,
        };
        for (name, entity) in body["entityTypes"].as_object().into_iter().flatten() {
            let qualified = format!("{namespace}::{name}");
            if let Some(values) = entity["enum"].as_array() {
                let values: Vec<&str> = values.iter().filter_map(Value::as_str).collect();
                lines.insert(format!("enum {qualified} [{}]", values.join(", ")));
            } else if let Some(shape) = entity.get("shape") {
                reader.walk(&qualified, shape, &mut lines);
            } else {
                lines.insert(format!("entity {qualified}"));
            }
        }
        for (name, action) in body["actions"].as_object().into_iter().flatten() {
            let head = format!("action {name}");
            for parent in action["memberOf"].as_array().into_iter().flatten() {
                lines.insert(format!("{head} in {}", parent["id"].as_str().unwrap()));
            }
            let applies = &action["appliesTo"];
            for kind in ["principalTypes", "resourceTypes"] {
                for ty in applies[kind].as_array().into_iter().flatten() {
                    let ty = reader.qualify(ty.as_str().unwrap());
                    lines.insert(format!("{head} {kind} {ty}"));
                }
            }
            if let Some(context) = applies.get("context") {
                reader.walk(&head, context, &mut lines);
            }
        }
    }
    lines
}

/// Reads the types of one namespace of a schema in Cedar's JSON form.
struct Reader<'a> {
    namespace: &'a str,
    /// Every namespace's common types, by qualified name.
    common: &'a Map<String, Value>,
}

impl Reader<'_> {
    /// A type name as written, qualified by the namespace when it is not already.
    fn qualify(&self, name: &str) -> String {
        if name.contains("::") {
            name.to_owned()
        } else {
            format!("{}::{name}", self.namespace)
        }
    }

    /// The lines of the attributes of a record at `path`, or the one line of a leaf.
    fn walk(&self, path: &str, ty: &Value, lines: &mut BTreeSet<String>) {
        let ty = self.resolved(ty);
        match ty["type"].as_str() {
            Some("Record") => {
                for (key, attribute) in ty["attributes"].as_object().into_iter().flatten() {
                    let optional = if attribute["required"] == json!(false) {
                        "?"
                    } else {
                        ""
                    };
                    self.walk(&format!("{path}.{key}{optional}"), attribute, lines);
                }
            }
            Some("Set") => self.walk(&format!("{path}[]"), &ty["element"], lines),
            _ => {
                lines.insert(format!("{path}: {}", self.leaf(&ty)));
            }
        }
    }

    /// A common type's definition in place of its name.
    fn resolved(&self, ty: &Value) -> Value {
        if matches!(ty["type"].as_str(), Some("EntityOrCommon" | "CommonType")) {
            let name = self.qualify(ty["name"].as_str().unwrap());
            if let Some(defined) = self.common.get(&name) {
                return self.resolved(defined);
            }
        }
        ty.clone()
    }

    fn leaf(&self, ty: &Value) -> String {
        let name = ty["name"].as_str().unwrap_or_default();
        match ty["type"].as_str().unwrap() {
            "EntityOrCommon" => match name {
                "String" | "Long" => name.to_owned(),
                "Bool" | "Boolean" => "Boolean".to_owned(),
                "decimal" | "datetime" | "duration" | "ipaddr" => name.to_owned(),
                _ => format!("entity {}", self.qualify(name)),
            },
            "Entity" => format!("entity {}", self.qualify(name)),
            "Extension" => name.to_owned(),
            other => other.to_owned(),
        }
    }
}

#[test]
fn the_schema_is_the_generators_but_for_the_listed_differences() {
    let ours = lines(CedarSchema::of(&registry(), "Desk").unwrap().as_cedar());
    let generated = std::fs::read_to_string(format!("{VECTORS}/generated.cedarschema")).unwrap();
    let theirs = lines(&generated);
    assert!(
        ours.contains("action quote_refund.input.rate: decimal")
            && ours.contains("enum Desk::quote_refund::Input::reason [damaged, late]"),
        "{ours:#?}"
    );
    // The guide's Policies chapter lists these, each with what a policy says instead.
    let only_ours: Vec<&str> = ours.difference(&theirs).map(String::as_str).collect();
    assert_eq!(
        only_ours,
        [
            // An `Option`: an optional attribute, where the generator makes a union record.
            "action quote_refund.input.note?: String",
        ]
    );
    let only_theirs: Vec<&str> = theirs.difference(&ours).map(String::as_str).collect();
    assert_eq!(
        only_theirs,
        [
            // Free-form JSON: an opaque entity there, left out here.
            "action quote_refund.input.extra: entity Desk::Unknown",
            "action quote_refund.input.note.typeChoice0?: String",
            "action quote_refund.input.note.typeChoice1?: entity Desk::Null",
            "entity Desk::Null",
            "entity Desk::Unknown",
        ]
    );
}
