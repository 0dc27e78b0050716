//! Each provider API's `tools` array, written from the registry's contracts.
//!
//! The shapes are those of `../shared/PROVIDERS.md` and its fixtures (`openai-responses-call`,
//! `anthropic-messages-result`, `gemini-generate-result`, `gemini-interactions-result`):
//!
//! | API | one tool | arguments | output |
//! | --- | --- | --- | --- |
//! | OpenAI Responses | `{"type":"function","name","description","parameters","strict":true}` | `parameters` | – |
//! | Anthropic Messages | `{"name","description","input_schema"}` | `input_schema` | – |
//! | Gemini `generateContent` | one `{"functionDeclarations":[…]}` of `{"name","description","parametersJsonSchema"}` | `parametersJsonSchema` | – |
//! | Gemini Interactions | `{"type":"function","name","description","parameters"}` | `parameters` | – |
//!
//! A declaration holds what the model uses to choose a tool and write its arguments: the name,
//! the description and the arguments' schema. Gemini's `FunctionDeclaration` also has an
//! optional `responseJsonSchema` ("describes the output from this function", Vertex AI
//! reference, `FunctionDeclaration`); it is left out. Gemini places declarations in the
//! model's context on every request, and the output's schema (the whole model result, with its
//! error part, about 4 KB a tool) would be paid for on every turn to describe what the model
//! reads anyway when the result arrives, already checked against the contract here. An
//! application that wants it can add [`ToolSpec::model_result_schema`]. Tool names need no check
//! here: the derive refuses at compile time a name that does not fit every provider
//! (`^[A-Za-z_][A-Za-z0-9_-]{0,63}$`, PROVIDERS.md section 6).
//!
//! Each API decodes arguments under a subset of JSON Schema. A keyword an API takes is kept;
//! an assertion it does not take, and that the contract checks anyway when the arguments
//! arrive (a string's length, say), is left out of the schema and said in the description, so
//! the model still reads it and nothing unchecked gets through; any other keyword is a
//! [`DeclarationError`] naming the API, the tool, the keyword and where it is.

use serde_json::{Map, Value, json};

use crate::contract::{Registry, ToolSpec};
use crate::vocabulary::call::Api;

/// Why a contract cannot be declared to an API.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeclarationError {
    /// The tool's schema has a keyword (or lacks one) that the API cannot take.
    #[error("{api} cannot take the schema of `{tool}`: {keyword} at {path}")]
    Keyword {
        /// The API.
        api: Api,
        /// The tool.
        tool: &'static str,
        /// The keyword, or what is missing (`type` on a value of any type).
        keyword: String,
        /// Where, as a JSON pointer into the tool's schema.
        path: String,
    },
    /// The API is not a model provider's: MCP lists its tools itself (`tools/list`), and a rig
    /// agent declares the tools `rig::RigTools` gives it.
    #[error("{0} has no tools declaration to write")]
    NotAProviderApi(Api),
}

/// The `tools` array of `api`'s request for every tool in `registry`, in registry order.
///
/// ```
/// use tool_contract::{ToolContract, ToolOutput, registry};
/// use tool_contract::providers::{Api, tool_declarations};
///
/// #[derive(serde::Deserialize, ToolContract)]
/// #[tool_contract(output = Echoed, effect = read_only, source_label = "echo", producer_revision = "echo-v1")]
/// /// Repeats a word.
/// struct Echo {
///     #[tool_contract(max_len = 32)]
///     word: String,
/// }
/// #[derive(serde::Serialize, ToolOutput)]
/// struct Echoed { word: String }
///
/// let tools = tool_declarations(&registry![Echo], Api::OpenAiResponses)?;
/// assert_eq!(tools[0]["type"], "function");
/// assert_eq!(tools[0]["strict"], true);
/// // OpenAI's strict decoding takes no string lengths: said, and checked on arrival.
/// let word = &tools[0]["parameters"]["properties"]["word"];
/// assert!(word.get("maxLength").is_none());
/// assert!(word["description"].as_str().unwrap().contains("maxLength: 32"));
/// # Ok::<(), tool_contract::providers::DeclarationError>(())
/// ```
///
/// # Errors
///
/// [`DeclarationError::Keyword`] for the first schema the API cannot take, and
/// [`DeclarationError::NotAProviderApi`] for [`Api::McpToolsCall`] and [`Api::RigToolCall`].
pub fn tool_declarations(registry: &Registry, api: Api) -> Result<Value, DeclarationError> {
    let declare = |spec: &'static ToolSpec| -> Result<Value, DeclarationError> {
        let profile = Profile::of(api).ok_or(DeclarationError::NotAProviderApi(api))?;
        let arguments = profile.fit(spec, spec.input_schema().clone())?;
        let (name, description) = (spec.name(), spec.description());
        Ok(match api {
            Api::OpenAiResponses => json!({
                "type": "function",
                "name": name,
                "description": description,
                "parameters": arguments,
                "strict": true,
            }),
            Api::AnthropicMessages => json!({
                "name": name,
                "description": description,
                "input_schema": arguments,
            }),
            Api::GeminiGenerateContent => json!({
                "name": name,
                "description": description,
                "parametersJsonSchema": arguments,
            }),
            _ => json!({
                "type": "function",
                "name": name,
                "description": description,
                "parameters": arguments,
            }),
        })
    };
    let tools = registry
        .tools()
        .map(declare)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(match api {
        // One tool holding every function (PROVIDERS.md, `gemini-generate-result.json`).
        Api::GeminiGenerateContent => json!([{ "functionDeclarations": tools }]),
        _ => Value::Array(tools),
    })
}

/// The subset of JSON Schema an API decodes arguments under.
struct Profile {
    api: Api,
    /// Keywords taken as they are.
    takes: &'static [&'static str],
    /// Assertions not taken, that the contract checks on arrival: said in the description.
    says: &'static [&'static str],
    /// The `format` values taken; another is said in the description. `None`: any.
    formats: Option<&'static [&'static str]>,
    /// Whether every schema must say what it is (a type, a choice or a constant): strict
    /// decoding has no "any value".
    typed: bool,
    /// Whether `const` is written as a one-value `enum`, for an API without `const`.
    const_as_enum: bool,
}

/// What the schemas of this crate use, and their applicators, beside annotations.
const JSON_SCHEMA: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "anyOf",
    "oneOf",
    "description",
    "title",
    "pattern",
    "format",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
    "$ref",
    "$defs",
];

impl Profile {
    fn of(api: Api) -> Option<Profile> {
        Some(match api {
            // OpenAI, "Structured model outputs", Supported schemas (2026-08): strings take
            // `pattern` and these formats only; numbers their bounds and `multipleOf`;
            // arrays `minItems`/`maxItems`; `anyOf` but not `oneOf`; every object closed and
            // every property required (which this crate's schemas already are).
            Api::OpenAiResponses => Profile {
                api,
                takes: &[
                    "type",
                    "properties",
                    "required",
                    "additionalProperties",
                    "items",
                    "enum",
                    "const",
                    "anyOf",
                    "description",
                    "title",
                    "pattern",
                    "format",
                    "minimum",
                    "maximum",
                    "exclusiveMinimum",
                    "exclusiveMaximum",
                    "multipleOf",
                    "minItems",
                    "maxItems",
                    "$ref",
                    "$defs",
                ],
                says: &["minLength", "maxLength"],
                formats: Some(&[
                    "date-time",
                    "time",
                    "date",
                    "duration",
                    "email",
                    "hostname",
                    "ipv4",
                    "ipv6",
                    "uuid",
                ]),
                typed: true,
                const_as_enum: false,
            },
            // Anthropic Messages, `input_schema`: a JSON Schema object, not decoded strictly
            // unless `strict` is set, which these declarations do not set.
            Api::AnthropicMessages => Profile {
                api,
                takes: JSON_SCHEMA,
                says: &[],
                formats: None,
                typed: false,
                const_as_enum: false,
            },
            // Gemini, "Structured output", JSON Schema support (the subset
            // `parametersJsonSchema` takes): no string lengths or
            // patterns, no exclusive bounds or `multipleOf`, no `const`; formats date-time,
            // date and time.
            Api::GeminiGenerateContent | Api::GeminiInteractions => Profile {
                api,
                takes: &[
                    "type",
                    "properties",
                    "required",
                    "additionalProperties",
                    "items",
                    "prefixItems",
                    "enum",
                    "anyOf",
                    "oneOf",
                    "description",
                    "title",
                    "format",
                    "minimum",
                    "maximum",
                    "minItems",
                    "maxItems",
                    "$ref",
                    "$defs",
                    "$id",
                    "$anchor",
                    "propertyOrdering",
                ],
                says: &[
                    "minLength",
                    "maxLength",
                    "pattern",
                    "exclusiveMinimum",
                    "exclusiveMaximum",
                    "multipleOf",
                ],
                formats: Some(&["date-time", "date", "time"]),
                typed: false,
                const_as_enum: true,
            },
            _ => return None,
        })
    }

    /// `schema` as this API takes it, or the first keyword it cannot take.
    fn fit(&self, spec: &'static ToolSpec, mut schema: Value) -> Result<Value, DeclarationError> {
        self.fit_at(&mut schema, &mut String::new())
            .map_err(|(keyword, path)| DeclarationError::Keyword {
                api: self.api,
                tool: spec.name(),
                keyword,
                path: if path.is_empty() { "/".into() } else { path },
            })?;
        Ok(schema)
    }

    fn fit_at(&self, schema: &mut Value, path: &mut String) -> Result<(), (String, String)> {
        let Value::Object(map) = schema else {
            // `true`/`false` schemas, and values under keywords that hold no schema.
            return Ok(());
        };
        if self.typed
            && !["type", "anyOf", "enum", "const", "$ref"]
                .iter()
                .any(|k| map.contains_key(*k))
        {
            return Err(("a value of any type (no `type`)".into(), path.clone()));
        }
        let mut said = Vec::new();
        // By name, not as the map holds them: serde_json's `preserve_order` (which any crate
        // in a build may turn on) would otherwise change the description's words.
        let mut keys: Vec<String> = map.keys().cloned().collect();
        keys.sort_unstable();
        for key in keys {
            if key == "const" && self.const_as_enum {
                let value = map.remove("const").unwrap_or(Value::Null);
                map.insert("enum".into(), json!([value]));
                continue;
            }
            if key == "format"
                && let (Some(formats), Some(format)) = (self.formats, map["format"].as_str())
                && !formats.contains(&format)
            {
                said.push(format!("format: {format}"));
                map.remove("format");
                continue;
            }
            if self.says.contains(&key.as_str()) {
                let value = map.remove(&key).unwrap_or(Value::Null);
                said.push(format!("{key}: {value}"));
                continue;
            }
            if !self.takes.contains(&key.as_str()) {
                return Err((format!("`{key}`"), format!("{path}/{key}")));
            }
        }
        self.fit_children(map, path)?;
        if !said.is_empty() {
            let note = format!("({})", said.join(", "));
            let description = match map.get("description").and_then(Value::as_str) {
                Some(description) => format!("{description} {note}"),
                None => note,
            };
            map.insert("description".into(), Value::String(description));
        }
        Ok(())
    }

    /// The subschemas under `map`'s applicators.
    fn fit_children(
        &self,
        map: &mut Map<String, Value>,
        path: &mut String,
    ) -> Result<(), (String, String)> {
        for (key, value) in map.iter_mut() {
            let depth = path.len();
            match (key.as_str(), value) {
                ("properties" | "$defs", Value::Object(members)) => {
                    for (name, member) in members.iter_mut() {
                        path.push_str(&format!("/{key}/{}", pointer_token(name)));
                        self.fit_at(member, path)?;
                        path.truncate(depth);
                    }
                }
                ("items" | "additionalProperties", member @ Value::Object(_)) => {
                    path.push_str(&format!("/{key}"));
                    self.fit_at(member, path)?;
                    path.truncate(depth);
                }
                ("anyOf" | "oneOf" | "prefixItems", Value::Array(members)) => {
                    for (index, member) in members.iter_mut().enumerate() {
                        path.push_str(&format!("/{key}/{index}"));
                        self.fit_at(member, path)?;
                        path.truncate(depth);
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// A member name as a JSON pointer token (RFC 6901, section 3).
fn pointer_token(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fit(api: Api, schema: Value) -> Result<Value, (String, String)> {
        let mut schema = schema;
        Profile::of(api)
            .unwrap()
            .fit_at(&mut schema, &mut String::new())
            .map(|()| schema)
    }

    #[test]
    fn openai_takes_no_value_of_any_type() {
        let schema = json!({ "type": "object", "properties": { "extra": {} } });
        let (keyword, path) = fit(Api::OpenAiResponses, schema).unwrap_err();
        assert!(keyword.contains("any type"), "{keyword}");
        assert_eq!(path, "/properties/extra");
    }

    #[test]
    fn a_keyword_no_api_profile_names_is_refused_where_it_is() {
        let schema =
            json!({ "type": "object", "properties": { "a/b": { "type": "string", "not": {} } } });
        for api in [
            Api::OpenAiResponses,
            Api::AnthropicMessages,
            Api::GeminiGenerateContent,
        ] {
            let (keyword, path) = fit(api, schema.clone()).unwrap_err();
            assert_eq!(
                (keyword.as_str(), path.as_str()),
                ("`not`", "/properties/a~1b/not")
            );
        }
    }

    #[test]
    fn openai_refuses_one_of_which_gemini_takes() {
        let schema = json!({ "type": ["string", "null"], "oneOf": [{ "type": "string" }, { "type": "null" }] });
        assert_eq!(
            fit(Api::OpenAiResponses, schema.clone()).unwrap_err().0,
            "`oneOf`"
        );
        assert!(fit(Api::GeminiGenerateContent, schema).is_ok());
    }

    #[test]
    fn gemini_reads_a_constant_as_a_one_value_choice() {
        let fitted = fit(Api::GeminiInteractions, json!({ "const": "succeeded" })).unwrap();
        assert_eq!(fitted, json!({ "enum": ["succeeded"] }));
    }

    #[test]
    fn an_assertion_an_api_does_not_take_is_said_in_the_description() {
        let schema = json!({ "type": "string", "description": "An order.", "pattern": "^O-", "maxLength": 9 });
        let gemini = fit(Api::GeminiGenerateContent, schema.clone()).unwrap();
        assert_eq!(
            gemini,
            json!({ "type": "string", "description": "An order. (maxLength: 9, pattern: \"^O-\")" })
        );
        let openai = fit(Api::OpenAiResponses, schema.clone()).unwrap();
        assert_eq!(openai["pattern"], "^O-");
        assert_eq!(openai["description"], "An order. (maxLength: 9)");
        assert_eq!(fit(Api::AnthropicMessages, schema.clone()).unwrap(), schema);
    }

    #[test]
    fn a_format_an_api_does_not_take_is_said_in_the_description() {
        let schema = json!({ "type": "string", "format": "uri" });
        let openai = fit(Api::OpenAiResponses, schema).unwrap();
        assert_eq!(
            openai,
            json!({ "type": "string", "description": "(format: uri)" })
        );
    }
}
