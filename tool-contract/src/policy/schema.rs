//! The Cedar schema a registry's contracts make: one action per tool, `context.input` typed
//! from the tool's arguments, the caller as the principal.
//!
//! One tree of [`CedarType`]s per tool is both what the schema's text is written from and what
//! each call's arguments are converted with, so the two cannot disagree.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};

use cedar_policy::{EntityTypeName, Schema};

use crate::contract::{ObjectShape, Registry, Shape};

use super::error::PolicyError;

/// The principal's entity type: the verified caller.
pub(super) const PRINCIPAL_TYPE: &str = "User";
/// The resource's entity type and its one entity's id: the server the tools are on.
pub(super) const RESOURCE_TYPE: &str = "McpServer";
pub(super) const RESOURCE_ID: &str = "server";
/// The action every tool's action is in.
pub(super) const CALL_TOOL: &str = "call_tool";

/// How a value of a contract's field reads in Cedar.
#[derive(Debug, Clone)]
pub(super) enum CedarType {
    String,
    Bool,
    Long,
    /// A finite double, as a `decimal` (four places after the point).
    Decimal,
    /// An RFC 3339 date-time, as a `datetime` (to the millisecond, in UTC).
    Datetime,
    /// A member of an enumerated entity type.
    Enum(EntityTypeName),
    Set(Box<CedarType>),
    Record(Vec<Attribute>),
}

/// One attribute of a record: a field Cedar can type.
#[derive(Debug, Clone)]
pub(super) struct Attribute {
    pub(super) key: &'static str,
    /// Whether the field is nullable: absent from the record when it is `null`.
    pub(super) optional: bool,
    pub(super) ty: CedarType,
}

/// What the schema holds of one tool.
#[derive(Debug)]
pub(super) struct ToolEntry {
    pub(super) name: &'static str,
    /// The record `context.input` holds.
    pub(super) input: CedarType,
    /// The enumerated entity types its input names: the type's name within the tool's
    /// `Input` namespace, and its values.
    enums: Vec<(String, &'static [&'static str])>,
}

/// The Cedar schema of a registry's tools, under one namespace.
///
/// What it declares, for a namespace `Desk`:
///
/// - `Desk::User`, the principal: the verified caller, with attributes `id` (its subject),
///   `tenant`, and `scopes` when the call came with an access token (MCP over HTTP as an OAuth
///   resource server): the scopes it grants;
/// - `Desk::McpServer`, the resource: the one entity `Desk::McpServer::"server"`;
/// - `Desk::Action::"call_tool"`, and for each tool an action of the tool's name in it, whose
///   context is `{ input: … }`: the tool's arguments, each field typed as below.
///
/// | contract field | Cedar |
/// | --- | --- |
/// | `String` | `String` |
/// | `bool` | `Bool` |
/// | an integer | `Long` |
/// | `f64`, `f32` | `decimal` (a value with more than four places after the point cannot be evaluated: the call is refused) |
/// | an RFC 3339 date-time | `datetime`, in UTC, to the millisecond |
/// | `Vec<T>` | `Set<T>` |
/// | a nested object | a record |
/// | `Option<T>` | an optional attribute, absent when `null` (policies test it with `has`) |
/// | a unit-only enum | an enumerated entity type, `Desk::<tool>::Input::<field>` (nested fields: the path of keys) |
/// | free-form JSON, `Vec<Option<T>>` | not in the schema: a policy that names it does not validate |
pub struct CedarSchema {
    namespace: String,
    text: String,
    pub(super) schema: Schema,
    pub(super) tools: Vec<ToolEntry>,
}

impl CedarSchema {
    /// The schema of `registry`'s tools under `namespace`.
    ///
    /// ```
    /// use tool_contract::policy::CedarSchema;
    /// use tool_contract::{ToolContract, ToolOutput};
    ///
    /// /// Look up an order.
    /// #[derive(serde::Deserialize, ToolContract)]
    /// #[tool_contract(output = Order, effect = read_only, source_label = "orders", producer_revision = "o-1")]
    /// struct GetOrder { #[tool_contract(max_len = 20)] order_id: String }
    ///
    /// #[derive(serde::Serialize, ToolOutput)]
    /// struct Order { total_cents: u32 }
    ///
    /// let schema = CedarSchema::of(&tool_contract::registry![GetOrder], "Desk")?;
    /// assert!(schema.as_cedar().contains(r#"action "get_order" in [Action::"call_tool"]"#));
    /// # Ok::<(), tool_contract::policy::PolicyError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// A [`PolicyError`] when `namespace` is not a Cedar name, or an enum field sits where its
    /// entity type cannot be named (a tool or field name that is not a Cedar identifier).
    pub fn of(registry: &Registry, namespace: &str) -> Result<Self, PolicyError> {
        if !namespace.split("::").all(is_identifier) {
            return Err(PolicyError::schema(format!(
                "the namespace {namespace:?} is not a Cedar name"
            )));
        }
        let tools = registry
            .tools()
            .map(|spec| ToolEntry::of(namespace, spec.name(), spec.arguments()))
            .collect::<Result<Vec<_>, _>>()?;
        let text = render(namespace, &tools);
        let schema = Schema::from_cedarschema_str(&text)
            .map_err(|error| {
                PolicyError::schema(format!("the generated schema does not parse: {error}"))
            })?
            .0;
        Ok(CedarSchema {
            namespace: namespace.to_owned(),
            text,
            schema,
            tools,
        })
    }

    /// The namespace every name of the schema is in.
    #[must_use]
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The schema in Cedar's own schema format, for people and for Cedar's tools.
    #[must_use]
    pub fn as_cedar(&self) -> &str {
        &self.text
    }
}

impl fmt::Display for CedarSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl fmt::Debug for CedarSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CedarSchema")
            .field("namespace", &self.namespace)
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

impl ToolEntry {
    fn of(
        namespace: &str,
        tool: &'static str,
        arguments: &'static ObjectShape,
    ) -> Result<Self, PolicyError> {
        let mut enums = Vec::new();
        let mut path = Vec::new();
        let input = record(namespace, tool, arguments, &mut path, &mut enums)?;
        Ok(ToolEntry {
            name: tool,
            input,
            enums,
        })
    }
}

/// The record of an object's fields that Cedar can type.
fn record(
    namespace: &str,
    tool: &'static str,
    object: &'static ObjectShape,
    path: &mut Vec<&'static str>,
    enums: &mut Vec<(String, &'static [&'static str])>,
) -> Result<CedarType, PolicyError> {
    let mut attributes = Vec::with_capacity(object.fields().len());
    for field in object.fields() {
        path.push(field.name());
        let (optional, shape) = match field.shape() {
            Shape::Nullable(inner) => (true, inner()),
            shape => (false, shape),
        };
        if let Some(ty) = cedar_type(namespace, tool, shape, path, enums)? {
            attributes.push(Attribute {
                key: field.name(),
                optional,
                ty,
            });
        }
        path.pop();
    }
    Ok(CedarType::Record(attributes))
}

/// The Cedar type of `shape`, or `None` where Cedar has none.
fn cedar_type(
    namespace: &str,
    tool: &'static str,
    shape: Shape,
    path: &mut Vec<&'static str>,
    enums: &mut Vec<(String, &'static [&'static str])>,
) -> Result<Option<CedarType>, PolicyError> {
    Ok(Some(match shape {
        Shape::String => CedarType::String,
        Shape::Boolean => CedarType::Bool,
        Shape::Integer { .. } => CedarType::Long,
        Shape::Number => CedarType::Decimal,
        Shape::DateTime => CedarType::Datetime,
        Shape::FreeForm | Shape::Nullable(_) => return Ok(None),
        Shape::Array(inner) => match cedar_type(namespace, tool, inner(), path, enums)? {
            Some(member) => CedarType::Set(Box::new(member)),
            None => return Ok(None),
        },
        Shape::Object(object) => record(namespace, tool, object, path, enums)?,
        Shape::Enum(shape) => {
            let within = path.join("::");
            if !is_identifier(tool) || !path.iter().all(|key| is_identifier(key)) {
                return Err(PolicyError::schema(format!(
                    "the enum field {:?} of {tool:?} cannot be named in Cedar: \
                     `{tool}::Input::{within}` is not a Cedar name",
                    path.join(".")
                )));
            }
            let name = format!("{namespace}::{tool}::Input::{within}");
            let name = name.parse::<EntityTypeName>().map_err(|error| {
                PolicyError::schema(format!("{name:?} is not a Cedar type name: {error}"))
            })?;
            if !enums.iter().any(|(declared, _)| *declared == within) {
                enums.push((within, shape.values()));
            }
            CedarType::Enum(name)
        }
    }))
}

/// Whether `name` is a Cedar identifier that is not a reserved word.
fn is_identifier(name: &str) -> bool {
    // Cedar's grammar: IDENT := ['_''a'-'z''A'-'Z']['_''a'-'z''A'-'Z''0'-'9']*, less its
    // reserved words (https://docs.cedarpolicy.com/policies/syntax-grammar.html).
    const RESERVED: [&str; 10] = [
        "true", "false", "if", "then", "else", "in", "is", "like", "has", "__cedar",
    ];
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|first| first == '_' || first.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
        && !RESERVED.contains(&name)
}

/// The schema's text: the namespace's entities and actions, then each tool's enums in a
/// namespace of their own.
fn render(namespace: &str, tools: &[ToolEntry]) -> String {
    let mut text = String::new();
    let _ = writeln!(text, "namespace {namespace} {{");
    let _ = writeln!(
        text,
        "  entity {PRINCIPAL_TYPE} = {{\n    \"id\": String,\n    \"tenant\": String,\n    \
         \"scopes\"?: Set<String>\n  }};\n"
    );
    let _ = writeln!(text, "  entity {RESOURCE_TYPE};\n");
    let _ = writeln!(text, "  action {};", quoted(CALL_TOOL));
    for tool in tools {
        let _ = write!(
            text,
            "\n  action {} in [Action::{}] appliesTo {{\n    principal: [{PRINCIPAL_TYPE}],\n    \
             resource: [{RESOURCE_TYPE}],\n    context: {{\n      \"input\": ",
            quoted(tool.name),
            quoted(CALL_TOOL),
        );
        write_type(&mut text, &tool.input, 3);
        text.push_str("\n    }\n  };\n");
    }
    text.push_str("}\n");
    let mut namespaces: BTreeMap<String, Vec<(&str, &[&str])>> = BTreeMap::new();
    for tool in tools {
        for (within, values) in &tool.enums {
            let (parent, name) = within.rsplit_once("::").unwrap_or(("", within));
            let mut inner = format!("{namespace}::{}::Input", tool.name);
            if !parent.is_empty() {
                inner.push_str("::");
                inner.push_str(parent);
            }
            namespaces.entry(inner).or_default().push((name, values));
        }
    }
    for (inner, entities) in namespaces {
        let _ = writeln!(text, "\nnamespace {inner} {{");
        for (name, values) in entities {
            let values: Vec<String> = values.iter().map(|value| quoted(value)).collect();
            let _ = writeln!(text, "  entity {name} enum [{}];", values.join(", "));
        }
        text.push_str("}\n");
    }
    text
}

fn write_type(text: &mut String, ty: &CedarType, depth: usize) {
    match ty {
        CedarType::String => text.push_str("String"),
        CedarType::Bool => text.push_str("Bool"),
        CedarType::Long => text.push_str("Long"),
        CedarType::Decimal => text.push_str("decimal"),
        CedarType::Datetime => text.push_str("datetime"),
        CedarType::Enum(name) => {
            let _ = write!(text, "{name}");
        }
        CedarType::Set(member) => {
            text.push_str("Set<");
            write_type(text, member, depth);
            text.push('>');
        }
        CedarType::Record(attributes) if attributes.is_empty() => text.push_str("{}"),
        CedarType::Record(attributes) => {
            text.push_str("{\n");
            for (index, attribute) in attributes.iter().enumerate() {
                let _ = write!(
                    text,
                    "{:indent$}{}{}: ",
                    "",
                    quoted(attribute.key),
                    if attribute.optional { "?" } else { "" },
                    indent = 2 * (depth + 1)
                );
                write_type(text, &attribute.ty, depth + 1);
                if index + 1 < attributes.len() {
                    text.push(',');
                }
                text.push('\n');
            }
            let _ = write!(text, "{:indent$}}}", "", indent = 2 * depth);
        }
    }
}

/// `value` as a Cedar string literal.
fn quoted(value: &str) -> String {
    // Cedar's string literals take the escapes Rust's `escape_default` writes (\n, \t, \\,
    // \", \' and \u{…}), so a key from a serde rename reads back as itself.
    format!("\"{}\"", value.escape_default())
}

#[cfg(test)]
mod tests {
    use super::is_identifier;

    #[test]
    fn identifiers_are_cedars_less_its_reserved_words() {
        assert!(is_identifier("get_order"));
        assert!(is_identifier("_x1"));
        assert!(!is_identifier("get-order"));
        assert!(!is_identifier("1x"));
        assert!(!is_identifier(""));
        assert!(!is_identifier("in"));
    }
}
