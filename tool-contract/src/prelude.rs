//! The names a typical program needs, in one import: `use tool_contract::prelude::*;`.
//!
//! Contracts and the registry, the dispatcher and what a handler returns, the keys, the four
//! provider adapters with their tool declarations, and the result types. Everything else stays
//! under its layer's module.
//!
//! ```
//! use tool_contract::prelude::*;
//!
//! /// Read one order.
//! #[derive(serde::Deserialize, ToolContract)]
//! #[tool_contract(output = Order, effect = read_only, source_label = "orders",
//!                 producer_revision = "orders-v1")]
//! struct GetOrder {
//!     #[tool_contract(max_len = 32)]
//!     order_ref: String,
//! }
//!
//! #[derive(serde::Serialize, ToolOutput)]
//! struct Order {
//!     #[tool_output(max_len = 32)]
//!     order_ref: String,
//! }
//!
//! let registry = registry![GetOrder];
//! let tools = tool_declarations(&registry, Api::OpenAiResponses)?;
//! let dispatcher = Dispatcher::builder(registry, AuditKeys::new(SecretKey::from([7; 32])))
//!     .handler(|input: GetOrder, _: HandlerContext| async move {
//!         let output = format!(r#"{{"order_ref":"{}"}}"#, input.order_ref);
//!         Ok::<_, ToolFailure>(RawResult::new(output, RawProvenance::new("orders-v1", "2026-12-01T10:00:00Z")))
//!     })
//!     .audit_sink(std::sync::Arc::new(MemoryAuditLog::new(SecretKey::from([9; 32]))))
//!     .build()?;
//! # let _ = (tools, dispatcher, Principal::new("acme", "alice"), Task::unlimited());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub use crate::binder::{CallResult, FailureKind, RawProvenance, RawResult, ToolFailure};
pub use crate::contract::{Registry, ToolSpec};
pub use crate::control::{
    ApprovalError, Approved, JsonLinesAuditLog, MemoryAuditLog, MemoryStore, PendingApproval,
    RejectionReason,
};
pub use crate::dispatch::{
    Budget, Dispatch, DispatchedTurn, Dispatcher, DispatcherBuilder, HandlerContext, Task,
    ToolOptions, typed,
};
pub use crate::providers::{
    Answer, AnthropicMessages, Api, GeminiGenerateContent, GeminiInteractions, OpenAiResponses,
    ProviderApi, Turn, tool_declarations,
};
pub use crate::registry;
pub use crate::results::{AuditKeys, ErrorCode, ModelResult, SecretKey, Status};
pub use crate::vocabulary::{CallContext, Effect, Principal};
// The traits and their derives, both.
pub use crate::{ToolContract, ToolOutput};
