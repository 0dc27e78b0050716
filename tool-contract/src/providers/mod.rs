//! Provider adapters: the first and the last hop of a call.
//!
//! Each adapter reads the provider's tool-call requests (a whole response, or a stream fed
//! event by event) into [`ToolCall`]s, and writes the next turn's result items from
//! verified results only, correlated by call id, never by position. Wire shapes are those of
//! the providers' SDK types as of 2026-08 (see each module).
//!
//! | module | API |
//! | --- | --- |
//! | [`openai`] | OpenAI Responses |
//! | [`anthropic`] | Anthropic Messages |
//! | [`gemini`] | Gemini `generateContent` |
//! | [`interactions`] | Gemini Interactions |

pub mod anthropic;
mod emit;
pub mod gemini;
pub mod interactions;
pub mod openai;
mod wire;

use std::fmt;

use serde::{Deserialize, Serialize};

pub use emit::{Answer, EmitError};

/// A model provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Provider {
    /// OpenAI.
    #[serde(rename = "openai")]
    OpenAi,
    /// Anthropic.
    Anthropic,
    /// Google (Gemini).
    Google,
    /// A Model Context Protocol client: the model behind it, if any, is not known to the
    /// server.
    McpClient,
}

/// A provider API family an adapter speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Api {
    /// OpenAI Responses (`POST /v1/responses`).
    #[serde(rename = "openai_responses")]
    OpenAiResponses,
    /// Anthropic Messages (`POST /v1/messages`).
    AnthropicMessages,
    /// Gemini `generateContent` / `streamGenerateContent`.
    GeminiGenerateContent,
    /// Gemini Interactions (`POST /v1beta/interactions`).
    GeminiInteractions,
    /// An MCP `tools/call` request, served by [`crate::mcp`].
    McpToolsCall,
}

impl Api {
    /// The provider behind the API.
    #[must_use]
    pub const fn provider(self) -> Provider {
        match self {
            Api::OpenAiResponses => Provider::OpenAi,
            Api::AnthropicMessages => Provider::Anthropic,
            Api::GeminiGenerateContent | Api::GeminiInteractions => Provider::Google,
            Api::McpToolsCall => Provider::McpClient,
        }
    }

    /// The wire name.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Api::OpenAiResponses => "openai_responses",
            Api::AnthropicMessages => "anthropic_messages",
            Api::GeminiGenerateContent => "gemini_generate_content",
            Api::GeminiInteractions => "gemini_interactions",
            Api::McpToolsCall => "mcp_tools_call",
        }
    }
}

impl Provider {
    /// The wire name.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
            Provider::Google => "google",
            Provider::McpClient => "mcp_client",
        }
    }
}

impl fmt::Display for Api {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// An adapter: the API it speaks and the revision of its reading and writing rules.
///
/// A registry lists the adapters it accepts
/// ([`RegistryBuilder::adapter`](crate::RegistryBuilder::adapter)); results are written only
/// for calls read by one of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Adapter {
    /// The API.
    pub api: Api,
    /// The revision, named after the wire shapes it follows.
    pub revision: &'static str,
}

/// Every adapter this crate ships: the four provider APIs and MCP `tools/call`.
pub const ADAPTERS: [Adapter; 5] = [
    openai::ADAPTER,
    anthropic::ADAPTER,
    gemini::ADAPTER,
    interactions::ADAPTER,
    crate::mcp::ADAPTER,
];

/// How a call's result is matched to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Correlation {
    /// By the id the provider gave the call.
    Id,
    /// By name: a Gemini call without an id, in a turn where every name is unique.
    Name,
}

/// One tool call a model asked for, as an adapter read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    /// The API it came through.
    pub api: Api,
    /// The revision of the adapter that read it.
    pub adapter_revision: String,
    /// The provider's response, message or interaction id.
    pub response_id: Option<String>,
    /// The call id (with [`Correlation::Name`], the tool name).
    pub call_id: String,
    /// How its result is matched to it.
    pub correlation: Correlation,
    /// The tool name the model asked for.
    pub name: String,
    /// The arguments, as JSON text (not yet validated).
    pub arguments: Vec<u8>,
}

/// The tool calls of one model turn, in the order the model made them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    /// The API.
    pub api: Api,
    /// The provider's response, message or interaction id.
    pub response_id: Option<String>,
    /// The calls.
    pub calls: Vec<ToolCall>,
    /// Oddities the stream showed that did not stop it (e.g. a delta bound by position to a
    /// step it did not name), for the operator's log.
    pub anomalies: Vec<String>,
}

/// Why a provider response could not be read into calls. Nothing of such a turn may run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// Not JSON, or not the provider's shape.
    #[error("malformed {api} payload: {reason}")]
    Malformed {
        /// The API.
        api: Api,
        /// What is wrong.
        reason: String,
    },
    /// The response was cut short (max tokens, incomplete, failed): its calls may be partial.
    #[error("{api} response was cut short ({reason}); its calls are not run")]
    Incomplete {
        /// The API.
        api: Api,
        /// The provider's reason.
        reason: String,
    },
    /// Two calls of one turn share an id.
    #[error("{api} turn has the call id {call_id:?} twice")]
    DuplicateCallId {
        /// The API.
        api: Api,
        /// The id.
        call_id: String,
    },
    /// A Gemini call has no id and its name is not unique in the turn, so its result could
    /// only be matched by position, which is refused.
    #[error("{api} call {name:?} has no id and its name is not unique in the turn")]
    Uncorrelatable {
        /// The API.
        api: Api,
        /// The name.
        name: String,
    },
    /// The stream broke its protocol (an unknown item, a delta after its block stopped, a
    /// sequence number that went back, arguments that disagree).
    #[error("{api} stream protocol error: {reason}")]
    Protocol {
        /// The API.
        api: Api,
        /// What happened.
        reason: String,
    },
    /// The provider reported an error.
    #[error("{api} reported an error: {message}")]
    Reported {
        /// The API.
        api: Api,
        /// The provider's message.
        message: String,
    },
}

impl Turn {
    fn new(api: Api, response_id: Option<String>) -> Self {
        Turn {
            api,
            response_id,
            calls: Vec::new(),
            anomalies: Vec::new(),
        }
    }

    /// Adds a call read by `adapter`, refusing a repeated id.
    fn push(
        &mut self,
        adapter: Adapter,
        call_id: String,
        correlation: Correlation,
        name: String,
        arguments: Vec<u8>,
    ) -> Result<(), ProviderError> {
        if correlation == Correlation::Id && self.calls.iter().any(|call| call.call_id == call_id) {
            return Err(ProviderError::DuplicateCallId {
                api: adapter.api,
                call_id,
            });
        }
        self.calls.push(ToolCall {
            api: adapter.api,
            adapter_revision: adapter.revision.to_owned(),
            response_id: self.response_id.clone(),
            call_id,
            correlation,
            name,
            arguments,
        });
        Ok(())
    }
}
