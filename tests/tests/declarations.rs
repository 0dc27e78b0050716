//! Each provider API's `tools` array from the registry: the fixtures' shapes
//! (`vectors/providers/`, copied from `../shared/fixtures/providers/`), PROVIDERS.md's name
//! rules, and the schema keywords each API takes.

use std::collections::BTreeSet;

use serde_json::Value;
use tool_contract::providers::{Api, DeclarationError, tool_declarations};
use tool_contract::{ToolContract, ToolOutput, registry};
use tool_contract_tests::tracker;

fn fixture_tools(file: &str) -> Vec<Value> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("vectors/providers")
        .join(file);
    let fixture: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    fixture["tools"].as_array().expect("a tools array").clone()
}

fn keys(value: &Value) -> BTreeSet<String> {
    value
        .as_object()
        .expect("an object")
        .keys()
        .cloned()
        .collect()
}

fn declared(api: Api) -> Vec<Value> {
    let tools = tool_declarations(&tracker::registry(), api).expect("declared");
    tools.as_array().expect("an array").clone()
}

/// Every declared tool has exactly the members of the fixture's first tool, and those of
/// `extra`.
fn assert_shape(declared: &[Value], fixture: &Value, extra: &[&str]) {
    let mut expected = keys(fixture);
    expected.extend(extra.iter().map(|key| (*key).to_owned()));
    assert_eq!(declared.len(), tracker::registry().len());
    for tool in declared {
        assert_eq!(keys(tool), expected, "{tool}");
    }
}

#[test]
fn openai_responses_declares_strict_function_tools_in_the_fixtures_shape() {
    let tools = declared(Api::OpenAiResponses);
    assert_shape(&tools, &fixture_tools("openai-responses-call.json")[0], &[]);
    for tool in &tools {
        assert_eq!(tool["type"], "function");
        assert_eq!(tool["strict"], true);
        assert_eq!(tool["parameters"]["additionalProperties"], false);
    }
}

#[test]
fn anthropic_messages_declares_name_description_and_input_schema() {
    let tools = declared(Api::AnthropicMessages);
    assert_shape(
        &tools,
        &fixture_tools("anthropic-messages-result.json")[0],
        &[],
    );
    let spec = tracker::registry().get("send_message").unwrap();
    let send = tools
        .iter()
        .find(|tool| tool["name"] == "send_message")
        .unwrap();
    assert_eq!(send["input_schema"], *spec.input_schema(), "taken as it is");
}

#[test]
fn gemini_generate_content_declares_one_tool_of_function_declarations_without_output_schemas() {
    let tools = tool_declarations(&tracker::registry(), Api::GeminiGenerateContent).unwrap();
    let fixture = &fixture_tools("gemini-generate-result.json")[0];
    assert_eq!(keys(&tools[0]), keys(fixture), "{tools}");
    let declarations = tools[0]["functionDeclarations"].as_array().unwrap();
    let fixture_declaration = &fixture["functionDeclarations"][0];
    // The output's schema is not a thing the model uses to call: it stays out of its context.
    assert_shape(declarations, fixture_declaration, &[]);
}

#[test]
fn gemini_interactions_declares_function_tools_with_parameters() {
    let tools = declared(Api::GeminiInteractions);
    assert_shape(
        &tools,
        &fixture_tools("gemini-interactions-result.json")[0],
        &[],
    );
}

#[test]
fn every_declared_name_fits_each_providers_own_rule() {
    // PROVIDERS.md, section 6.
    let openai = |name: &str| {
        name.len() <= 64
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-".contains(&b))
    };
    let anthropic = |name: &str| {
        (1..=128).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-".contains(&b))
    };
    let gemini = |name: &str| {
        name.len() <= 64
            && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_.:-".contains(&b))
    };
    for tool in declared(Api::OpenAiResponses) {
        assert!(openai(tool["name"].as_str().unwrap()), "{tool}");
    }
    for tool in declared(Api::AnthropicMessages) {
        assert!(anthropic(tool["name"].as_str().unwrap()), "{tool}");
    }
    let gemini_tools = tool_declarations(&tracker::registry(), Api::GeminiGenerateContent).unwrap();
    for tool in gemini_tools[0]["functionDeclarations"].as_array().unwrap() {
        assert!(gemini(tool["name"].as_str().unwrap()), "{tool}");
    }
    for tool in declared(Api::GeminiInteractions) {
        assert!(gemini(tool["name"].as_str().unwrap()), "{tool}");
    }
}

/// Where the assertions an API does not take went: out of the schema, into the description.
fn lengths_said(tools: &[Value], arguments: &str) -> usize {
    let mut said = 0;
    for tool in tools {
        let text = tool[arguments].to_string();
        assert!(!text.contains("\"maxLength\""), "{text}");
        said += text.matches("maxLength: ").count();
    }
    said
}

#[test]
fn string_lengths_openai_and_gemini_do_not_decode_are_said_in_the_description() {
    assert!(lengths_said(&declared(Api::OpenAiResponses), "parameters") > 0);
    assert!(lengths_said(&declared(Api::GeminiInteractions), "parameters") > 0);
    let anthropic = declared(Api::AnthropicMessages);
    assert!(
        anthropic
            .iter()
            .any(|tool| tool["input_schema"].to_string().contains("\"maxLength\""))
    );
}

/// A tool whose arguments hold a value of any type, which OpenAI's strict decoding has no
/// schema for.
#[allow(dead_code)] // Never run: only declared.
#[derive(serde::Deserialize, ToolContract)]
#[tool_contract(output = Stored, effect = read_only, source_label = "store",
                producer_revision = "store-1")]
struct StoreAnything {
    /// Anything at all.
    #[tool_contract(free_form(max_depth = 2, max_bytes = 256))]
    value: Value,
}

#[derive(serde::Serialize, ToolOutput)]
struct Stored {
    stored: bool,
}

#[test]
fn a_schema_an_api_cannot_take_is_an_error_naming_the_api_the_tool_and_the_keyword() {
    let error = tool_declarations(&registry![StoreAnything], Api::OpenAiResponses).unwrap_err();
    let DeclarationError::Keyword {
        api,
        tool,
        keyword,
        path,
    } = &error
    else {
        panic!("{error:?}");
    };
    assert_eq!(
        (*api, *tool, path.as_str()),
        (Api::OpenAiResponses, "store_anything", "/properties/value")
    );
    assert!(keyword.contains("type"), "{keyword}");
    let message = error.to_string();
    assert!(
        message.contains("openai_responses") && message.contains("store_anything"),
        "{message}"
    );
    // The other APIs take it.
    for api in [
        Api::AnthropicMessages,
        Api::GeminiGenerateContent,
        Api::GeminiInteractions,
    ] {
        assert!(
            tool_declarations(&registry![StoreAnything], api).is_ok(),
            "{api}"
        );
    }
}

#[test]
fn mcp_has_no_provider_declaration() {
    let error = tool_declarations(&tracker::registry(), Api::McpToolsCall).unwrap_err();
    assert_eq!(error, DeclarationError::NotAProviderApi(Api::McpToolsCall));
}

/// Look a word up in the dictionary.
///
/// Give the word as it is spelled; the answer says what it means.
///
/// # Examples
///
/// ```ignore
/// let meaning = look_up("tarn");
/// ```
#[derive(serde::Deserialize, ToolContract)]
#[tool_contract(output = Meaning, effect = read_only)]
#[allow(dead_code)] // Only its declaration is under test.
struct LookUp {
    /// The word, as it is spelled.
    ///
    /// Rustdoc's readers learn here how words are normalised.
    word: String,
}

/// What a word means.
///
/// Written by lexicographers; the reader never sees this paragraph.
#[derive(serde::Serialize, ToolOutput)]
struct Meaning {
    gloss: String,
}

#[test]
fn a_description_is_what_the_model_reads_of_the_doc_comment() {
    let spec = LookUp::spec();
    // The tool's: up to the first heading or code block.
    assert_eq!(
        spec.description(),
        "Look a word up in the dictionary.\n\nGive the word as it is spelled; the answer says what it means."
    );
    // A field's and an output type's: the first paragraph.
    assert_eq!(
        spec.input_schema()["properties"]["word"]["description"],
        "The word, as it is spelled."
    );
    assert_eq!(spec.output_schema()["description"], "What a word means.");
}
