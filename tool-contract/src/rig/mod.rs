//! A dispatcher's registry as the tools of a [rig](https://docs.rs/rig-core/0.44) agent.
//!
//! The `rig` feature (rig-core 0.44, which needs Rust 1.95): [`RigTools`] turns every contract
//! of a [`Dispatcher`]'s registry into one rig-core [`DynamicTool`], for
//! `AgentBuilder::dynamic_tools` (rig-agent) or any rig tool server. Its definition is the
//! contract's name, description and input schema; a call from the agent's loop runs through
//! the dispatcher as any provider's call does (exact arguments, gates, authorization,
//! approvals, the idempotency ledger, budgets, output validation, the audit), for the
//! principal the tools were built for; and the tool's output is the verified model result's
//! canonical JSON, exactly the text the provider adapters send. A result that did not succeed
//! (`APPROVAL_REQUIRED` with its preview, `INVALID_ARGUMENTS`, `OUTCOME_UNKNOWN`, …) is a tool
//! error whose model output is that same JSON, so the model reads the recovery as any model
//! does and rig's own records see a failure with its catalog code. A write that waits for a
//! person also leaves a [`PendingApprovalNotice`] (its approval id and preview) in the call's
//! host-only result context, which rig's recorders keep and the model never reads.
//!
//! A write's logical operation is named as the dispatcher names every call's
//! ([`Dispatcher::context`]): by the tool's operation-key rule, or by its exact arguments. So
//! a write that waits for approval runs once the approval is in, when the agent calls it again
//! with the same arguments, and a repeat after that replays (`local_replay`) without running
//! it again.
//!
//! rig-core parses a call's arguments into a `serde_json::Value` before any tool sees them
//! (`DynamicTool`'s callback takes the value), so what the dispatcher checks is that value
//! written back as JSON: a member the model repeated is already one member, and a number
//! outside `f64` already rounded, when it arrives here. Everything else about the arguments
//! is checked exactly.
//!
//! ```
//! use std::sync::Arc;
//! use tool_contract::prelude::*;
//! use tool_contract::rig::RigTools;
//!
//! /// Read one order by its reference.
//! #[derive(serde::Deserialize, ToolContract)]
//! #[tool_contract(output = Order, effect = read_only, source_label = "orders",
//!                 producer_revision = "orders-v2")]
//! struct GetOrder { #[tool_contract(max_len = 32)] order_ref: String }
//!
//! #[derive(serde::Serialize, ToolOutput)]
//! struct Order { #[tool_output(bound = order_ref)] order_ref: String, paid: bool }
//!
//! async fn get_order(_: Arc<()>, input: GetOrder, _: HandlerContext) -> Result<Order, ToolFailure> {
//!     Ok(Order { order_ref: input.order_ref, paid: true })
//! }
//!
//! let dispatcher = Dispatcher::builder(registry![GetOrder], AuditKeys::new(SecretKey::from([7; 32])))
//!     .handler(typed(&Arc::new(()), get_order))
//!     .audit_sink(Arc::new(MemoryAuditLog::new(SecretKey::from([9; 32]))))
//!     .build()?;
//! let tools = RigTools::new(Arc::new(dispatcher), Principal::new("acme", "agent:orders"))
//!     .tools()?;
//! assert_eq!(tools[0].name().as_str(), "get_order");
//! assert_eq!(tools[0].definition().parameters["additionalProperties"], false);
//! // With rig-agent: `AgentBuilder::new(model).dynamic_tools(tools).build()`.
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rand::SeedableRng;
use rand::rngs::{SmallRng, SysRng};
use rig_core::message::ToolName;
use rig_core::tool::{
    ContextValue, DynamicTool, ToolContext, ToolErrorKind, ToolExecutionError, ToolOutput,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::contract::ToolSpec;
use crate::control::{PendingApproval, Preview};
use crate::dispatch::{Dispatcher, Task};
use crate::results::{ErrorCode, Status};
use crate::vocabulary::{Adapter, Correlation, Principal, ToolCall};

/// Why a registry cannot be given to a rig agent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RigToolsError {
    /// The registry names the adapters it accepts, and [`Adapter::RIG`] is not among them:
    /// no result could be written for a rig call.
    #[error(
        "the registry does not accept rig's calls: accept {} with `RegistryBuilder::adapter`",
        Adapter::RIG.revision
    )]
    AdapterNotAccepted,
    /// rig refused a tool's name.
    #[error("rig refused the tool name {0:?}")]
    ToolName(String),
}

/// What a call that waits for approval leaves in rig's host-only result context
/// (`ToolContext::result`), under the key `tool-contract/pending_approval`: what the person
/// approving is shown. It never reaches the model, which reads `APPROVAL_REQUIRED`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingApprovalNotice {
    /// The approval to decide ([`Dispatcher::approve_pending`] and the other ways).
    pub approval_id: String,
    /// Exactly what would run.
    pub preview: Preview,
    /// The SHA-256 of the preview's canonical JSON, which an approval names.
    pub preview_sha256: String,
    /// How many approvals the rule still asks for.
    pub approvals_still_needed: u32,
}

impl PendingApprovalNotice {
    fn of(pending: &PendingApproval) -> Self {
        PendingApprovalNotice {
            approval_id: pending.approval_id.clone(),
            preview: pending.preview.clone(),
            preview_sha256: pending.preview_sha256.clone(),
            approvals_still_needed: pending.approvals_still_needed(),
        }
    }
}

impl ContextValue for PendingApprovalNotice {
    const KEY: &'static str = "tool-contract/pending_approval";
}

/// A dispatcher's tools, for a rig agent acting for one principal.
///
/// Build one per principal (per agent, or per user an agent acts for): the principal is
/// fixed when the tools are built, never taken from the model.
#[derive(Debug, Clone)]
pub struct RigTools {
    dispatcher: Arc<Dispatcher>,
    principal: Principal,
    task: Arc<Task>,
}

/// What every tool of one [`RigTools::tools`] calls with.
#[derive(Debug)]
struct Caller {
    dispatcher: Arc<Dispatcher>,
    principal: Principal,
    task: Arc<Task>,
    /// rig gives a tool no call id of its own.
    call_ids: CallIds,
}

impl RigTools {
    /// The tools of `dispatcher`'s registry, each call made for `principal`, under no budget.
    #[must_use]
    pub fn new(dispatcher: Arc<Dispatcher>, principal: Principal) -> Self {
        RigTools {
            dispatcher,
            principal,
            task: Arc::new(Task::unlimited()),
        }
    }

    /// The same tools, every call counted against `task` (its budget and deadline), which
    /// the application keeps to read what remains.
    #[must_use]
    pub fn with_task(mut self, task: Arc<Task>) -> Self {
        self.task = task;
        self
    }

    /// The principal every call is made for.
    #[must_use]
    pub fn principal(&self) -> &Principal {
        &self.principal
    }

    /// One rig tool per contract, in registry order: name, description and input schema
    /// from the contract; every call through the dispatcher.
    ///
    /// # Errors
    ///
    /// [`RigToolsError::AdapterNotAccepted`] when the registry does not accept
    /// [`Adapter::RIG`]; [`RigToolsError::ToolName`] if rig refuses a name.
    pub fn tools(&self) -> Result<Vec<DynamicTool>, RigToolsError> {
        let registry = self.dispatcher.registry();
        if !registry.accepts_adapter(Adapter::RIG.api, Adapter::RIG.revision) {
            return Err(RigToolsError::AdapterNotAccepted);
        }
        let caller = Arc::new(Caller {
            dispatcher: Arc::clone(&self.dispatcher),
            principal: self.principal.clone(),
            task: Arc::clone(&self.task),
            call_ids: CallIds::new(),
        });
        registry.tools().map(|spec| tool(&caller, spec)).collect()
    }
}

/// The rig tool of `spec`, calling through `caller`.
fn tool(caller: &Arc<Caller>, spec: &'static ToolSpec) -> Result<DynamicTool, RigToolsError> {
    let name =
        ToolName::new(spec.name()).map_err(|_| RigToolsError::ToolName(spec.name().to_owned()))?;
    let caller = Arc::clone(caller);
    let tool_name = spec.name();
    Ok(DynamicTool::new_with_context(
        name,
        spec.description(),
        spec.input_schema().clone(),
        move |context: &mut ToolContext, arguments| {
            let caller = Arc::clone(&caller);
            Box::pin(async move { caller.call(tool_name, &arguments, context).await })
        },
    ))
}

impl Caller {
    /// One call from rig's loop, through the whole pipeline; the verified model result as
    /// the tool's output, or as the model output of its error.
    async fn call(
        &self,
        name: &str,
        arguments: &Value,
        host: &mut ToolContext,
    ) -> Result<ToolOutput, ToolExecutionError> {
        let call = ToolCall {
            api: Adapter::RIG.api,
            adapter_revision: Adapter::RIG.revision.to_owned(),
            response_id: None,
            call_id: self.call_ids.next(),
            correlation: Correlation::Id,
            name: name.to_owned(),
            arguments: arguments_json(arguments),
        };
        let context = self.dispatcher.context(call);
        let dispatch = self
            .dispatcher
            .dispatch(&self.principal, &context, &self.task)
            .await;
        if let Some(pending) = &dispatch.pending_approval {
            // A notice that cannot be written leaves the host to `pending_approvals()`; the
            // model's answer is the same either way.
            let _ = host.insert_result(PendingApprovalNotice::of(pending));
        }
        let binder = self.dispatcher.binder();
        let verified = binder
            .verify(&self.principal, &context, &dispatch.result)
            .map_err(|error| {
                // Nothing unverified reaches the model: rig's default feedback stands instead.
                ToolExecutionError::other(format!("the result did not verify: {error}"))
                    .with_retryable(false)
            })?;
        let model_json = ToolOutput::text(verified.model_json_str());
        let model = verified.model();
        if model.status() == Status::Succeeded {
            return Ok(model_json);
        }
        let (kind, code, message) = match model.error() {
            Some(error) => (
                error_kind(error.code()),
                error.code().as_str(),
                error.message(),
            ),
            None => (ToolErrorKind::Other, "UNKNOWN", "the outcome is not known"),
        };
        // The recovery is the model's to follow, from the result it reads; rig is told not to
        // retry on its own, so every attempt stays a call the pipeline counts.
        Err(ToolExecutionError::new(kind, message)
            .with_code(code)
            .with_retryable(false)
            .with_model_output(model_json))
    }
}

/// rig's argument value as the JSON text a provider would have sent.
fn arguments_json(arguments: &Value) -> Vec<u8> {
    // rig hands `null` for a call without arguments; the contract then says what is missing.
    serde_json::to_vec(arguments).unwrap_or_else(|_| b"null".to_vec())
}

/// The kind rig's records give a failure with this catalog code.
fn error_kind(code: ErrorCode) -> ToolErrorKind {
    match code {
        ErrorCode::UnknownTool => ToolErrorKind::NotFound,
        ErrorCode::InvalidArguments => ToolErrorKind::InvalidArgs,
        ErrorCode::RateLimit => ToolErrorKind::RateLimited,
        ErrorCode::TimeoutBeforeExecute => ToolErrorKind::Timeout,
        ErrorCode::Cancelled => ToolErrorKind::Cancelled,
        ErrorCode::SourceUnreachable => ToolErrorKind::Network,
        _ => ToolErrorKind::Other,
    }
}

/// Call ids unique to one tool set: a random prefix and a counter.
#[derive(Debug)]
struct CallIds {
    prefix: u64,
    next: AtomicU64,
}

impl CallIds {
    fn new() -> Self {
        let prefix = SmallRng::try_from_rng(&mut SysRng)
            .map(|mut rng| rand::Rng::next_u64(&mut rng))
            .unwrap_or_else(|_| {
                let nanos = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |since| since.as_nanos());
                // Truncated on purpose: any 64 bits of the clock serve as a prefix.
                #[allow(clippy::cast_possible_truncation)]
                let nanos = nanos as u64;
                nanos ^ u64::from(std::process::id())
            });
        CallIds {
            prefix,
            next: AtomicU64::new(1),
        }
    }

    fn next(&self) -> String {
        let number = self.next.fetch_add(1, Ordering::Relaxed);
        format!("rig-{:016x}-{number}", self.prefix)
    }
}
