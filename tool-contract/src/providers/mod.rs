//! Provider adapters: the first and the last hop of a call.
//!
//! Each adapter reads the provider's tool-call requests (a whole response, or a stream fed
//! event by event) into [`ToolCall`]s, and writes the next turn's result items from
//! verified results only, correlated by call id, never by position. [`tool_declarations`]
//! writes each API's `tools` array from the registry. Wire shapes are those of
//! the providers' SDK types as of 2026-08 (see each module).
//!
//! | module | API |
//! | --- | --- |
//! | [`openai`] | OpenAI Responses |
//! | [`anthropic`] | Anthropic Messages |
//! | [`gemini`] | Gemini `generateContent` |
//! | [`interactions`] | Gemini Interactions |

pub mod anthropic;
mod api;
mod declarations;
mod emit;
pub mod gemini;
pub mod interactions;
pub mod openai;
mod provider_api;
mod wire;

pub use anthropic::AnthropicMessages;
pub use api::{ProviderApi, StreamAssembler};
pub use declarations::{DeclarationError, tool_declarations};
pub use emit::{Answer, EmitError};

pub use gemini::GeminiGenerateContent;
pub use interactions::GeminiInteractions;
pub use openai::OpenAiResponses;
pub use provider_api::provider_api;
use std::sync::Arc;

pub use crate::vocabulary::call::{ADAPTERS, Adapter, Api, Correlation, Provider, ToolCall};

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
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// Not JSON, or JSON that does not read as the provider's types; serde_json's error is
    /// the source.
    #[error("the {api} payload does not read as the API's JSON")]
    Unreadable {
        /// The API.
        api: Api,
        /// Why it does not read.
        #[source]
        source: Arc<serde_json::Error>,
    },
    /// JSON of another shape than the provider's.
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
