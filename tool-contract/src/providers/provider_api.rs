//! The provider API an [`Api`] names: the one place that knows every adapter this crate ships.

use super::api::ProviderApi;
use super::{anthropic, gemini, interactions, openai};
use crate::vocabulary::call::Api;

/// The provider API that `api` names, if this crate reads it (MCP calls are served by
/// `mcp::McpServer` and rig's by `rig::RigTools`, not read from a response).
#[must_use]
pub fn provider_api(api: Api) -> Option<&'static dyn ProviderApi> {
    match api {
        Api::OpenAiResponses => Some(&openai::OpenAiResponses),
        Api::AnthropicMessages => Some(&anthropic::AnthropicMessages),
        Api::GeminiGenerateContent => Some(&gemini::GeminiGenerateContent),
        Api::GeminiInteractions => Some(&interactions::GeminiInteractions),
        Api::McpToolsCall | Api::RigToolCall => None,
    }
}
