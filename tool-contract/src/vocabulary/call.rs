//! The trusted facts about one call: which provider and API asked, through which adapter, for
//! which tool; who asked; and the ids the application gave the operation.

use serde::{Deserialize, Serialize};

use crate::json::names::wire_names;

wire_names! {
    /// A model provider.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[non_exhaustive]
    pub enum Provider {
        /// OpenAI.
        OpenAi = "openai",
        /// Anthropic.
        Anthropic = "anthropic",
        /// Google (Gemini).
        Google = "google",
        /// A Model Context Protocol client: the model behind it, if any, is not known to the
        /// server.
        McpClient = "mcp_client",
        /// A rig agent (`rig-core`): the model behind its loop is not known to the tools.
        RigAgent = "rig_agent",
    }
}

wire_names! {
    /// A provider API family an adapter speaks.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[non_exhaustive]
    pub enum Api {
        /// OpenAI Responses (`POST /v1/responses`).
        OpenAiResponses = "openai_responses",
        /// Anthropic Messages (`POST /v1/messages`).
        AnthropicMessages = "anthropic_messages",
        /// Gemini `generateContent` / `streamGenerateContent`.
        GeminiGenerateContent = "gemini_generate_content",
        /// Gemini Interactions (`POST /v1beta/interactions`).
        GeminiInteractions = "gemini_interactions",
        /// An MCP `tools/call` request (served by `mcp::McpServer`, feature `mcp`).
        McpToolsCall = "mcp_tools_call",
        /// A tool call from a rig agent's loop (`rig::RigTools`, feature `rig`).
        RigToolCall = "rig_tool_call",
    }
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
            Api::RigToolCall => Provider::RigAgent,
        }
    }
}

/// An adapter: the API it speaks and the revision of its reading and writing rules.
///
/// A registry lists the adapters it accepts
/// ([`RegistryBuilder::adapter`](crate::contract::RegistryBuilder::adapter)); results are
/// written only for calls read by one of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Adapter {
    /// The API.
    pub api: Api,
    /// The revision, named after the wire shapes it follows.
    pub revision: &'static str,
}

impl Adapter {
    /// OpenAI Responses: `function_call` items in, `function_call_output` items out.
    pub const OPENAI_RESPONSES: Adapter = Adapter {
        api: Api::OpenAiResponses,
        revision: "openai-responses/2026-08",
    };

    /// Anthropic Messages: `tool_use` blocks in, `tool_result` blocks out.
    pub const ANTHROPIC_MESSAGES: Adapter = Adapter {
        api: Api::AnthropicMessages,
        revision: "anthropic-messages/2026-08",
    };

    /// Gemini `generateContent`: `functionCall` parts in, `functionResponse` parts out.
    pub const GEMINI_GENERATE_CONTENT: Adapter = Adapter {
        api: Api::GeminiGenerateContent,
        revision: "gemini-generate-content/2026-08",
    };

    /// Gemini Interactions: `function_call` steps in, `function_result` steps out.
    pub const GEMINI_INTERACTIONS: Adapter = Adapter {
        api: Api::GeminiInteractions,
        revision: "gemini-interactions/2026-08",
    };

    /// MCP `tools/call`, protocol revisions 2024-11-05 to 2026-07-28 (feature `mcp` serves it).
    pub const MCP: Adapter = Adapter {
        api: Api::McpToolsCall,
        revision: "mcp/2025-11-25",
    };

    /// A rig agent's tool call: arguments as rig-core 0.44 hands a `DynamicTool` them (a
    /// parsed `serde_json::Value`), the model result as the tool's text output (feature `rig`).
    pub const RIG: Adapter = Adapter {
        api: Api::RigToolCall,
        revision: "rig-core/0.44",
    };
}

/// Every adapter this crate ships: the four provider APIs, MCP `tools/call` and rig's tools.
pub const ADAPTERS: [Adapter; 6] = [
    Adapter::OPENAI_RESPONSES,
    Adapter::ANTHROPIC_MESSAGES,
    Adapter::GEMINI_GENERATE_CONTENT,
    Adapter::GEMINI_INTERACTIONS,
    Adapter::MCP,
    Adapter::RIG,
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

/// Who asked: from the application's own authentication, never from the model.
///
/// It enters the audit only as a keyed [`principal_ref`](crate::AuditKeys::principal_ref)
/// and never reaches the model.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Principal {
    /// The tenant (organisation, workspace).
    pub tenant: String,
    /// The person or service within it.
    pub subject: String,
}

impl Principal {
    /// A principal.
    #[must_use]
    pub fn new(tenant: impl Into<String>, subject: impl Into<String>) -> Self {
        Principal {
            tenant: tenant.into(),
            subject: subject.into(),
        }
    }
}

/// One call as the dispatcher knows it: the provider's request, plus the ids the application
/// assigned to the logical operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallContext {
    /// The call as the provider adapter read it.
    pub call: ToolCall,
    /// The application's id of the logical operation this call serves.
    pub operation_id: String,
    /// The key every retry of the operation reuses; `None` for calls that are not retried
    /// under a key.
    pub idempotency_key: Option<String>,
}

impl CallContext {
    /// The context of `call`, for operation `operation_id`, with no idempotency key.
    ///
    /// A dispatcher names each call's operation as its contract says
    /// (`Dispatcher::context`, which `Dispatcher::dispatch_turn` uses for every call of a
    /// turn): build a context by hand only to bind a result outside a dispatcher.
    #[must_use]
    pub fn new(call: ToolCall, operation_id: impl Into<String>) -> Self {
        CallContext {
            call,
            operation_id: operation_id.into(),
            idempotency_key: None,
        }
    }

    /// The same context with an idempotency key.
    #[must_use]
    pub fn with_idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.idempotency_key = Some(key.into());
        self
    }
}
