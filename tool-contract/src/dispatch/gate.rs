//! Gates: the application's own checks that decide, before any handler runs, whether a call
//! proceeds.

use serde_json::Value;

use crate::contract::ToolSpec;
use crate::vocabulary::{CallContext, Principal};

/// What a gate sees: the call, already validated against its contract.
#[derive(Debug, Clone, Copy)]
pub struct GateCall<'a> {
    /// The tool's spec.
    pub spec: &'static ToolSpec,
    /// Who asked.
    pub principal: &'a Principal,
    /// The call and its operation.
    pub context: &'a CallContext,
    /// The validated arguments.
    pub arguments: &'a Value,
}

impl GateCall<'_> {
    /// The tool's name.
    #[must_use]
    pub fn tool(&self) -> &'static str {
        self.spec.name()
    }
}

/// A gate's decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateDecision {
    /// Go on to the next gate.
    Proceed,
    /// Refuse the call: the model reads `BLOCKED` (recovery `none`); `reason` goes to the
    /// audit only.
    Block {
        /// Why, for operators.
        reason: String,
    },
    /// Refuse the call until another tool has run: the model reads `PREREQUISITE_REQUIRED`
    /// with `next_tool` = `target` (recovery `call_tool`); `reason` goes to the audit only.
    Redirect {
        /// The registered tool to call first.
        target: &'static str,
        /// Why, for operators.
        reason: String,
    },
}

/// A check that runs before authorization, approval and the handler. Gates run in the order
/// they were added; the first decision other than [`GateDecision::Proceed`] wins.
///
/// Any `Fn(&GateCall<'_>) -> GateDecision` is a gate.
pub trait Gate: Send + Sync {
    /// Decides for one call.
    fn check(&self, call: &GateCall<'_>) -> GateDecision;
}

impl<F> Gate for F
where
    F: Fn(&GateCall<'_>) -> GateDecision + Send + Sync,
{
    fn check(&self, call: &GateCall<'_>) -> GateDecision {
        self(call)
    }
}

/// Redirects calls of `tool` whose list at `pointer` (a JSON Pointer into the arguments) is
/// missing or empty, to the tool that builds the list.
///
/// ```
/// use serde_json::json;
/// use tool_contract::dispatch::{Gate, GateDecision, RequireNonEmpty};
/// # use tool_contract::{CallContext, Principal, ToolContract, ToolOutput};
/// # use tool_contract::providers::{Api, Correlation, ToolCall};
/// # /// Find advisors at the candidate schools.
/// # #[derive(serde::Deserialize, ToolContract)]
/// # #[tool_contract(output = Advisors, effect = read_only, source_label = "advisors", producer_revision = "a-1")]
/// # struct DiscoverAdvisors { #[tool_contract(max_items = 20)] schools: Vec<String> }
/// # #[derive(serde::Serialize, ToolOutput)]
/// # struct Advisors { #[tool_output(max_items = 20)] names: Vec<String> }
/// # let call = ToolCall { api: Api::OpenAiResponses, adapter_revision: "r".into(), response_id: None,
/// #     call_id: "c".into(), correlation: Correlation::Id, name: "discover_advisors".into(), arguments: vec![] };
/// # let context = CallContext::new(call, "op");
/// # let principal = Principal::new("t", "s");
///
/// let gate = RequireNonEmpty::new("discover_advisors", "/schools", "list_candidate_schools");
/// let arguments = json!({ "schools": [] });
/// let call = tool_contract::dispatch::GateCall {
///     spec: DiscoverAdvisors::spec(), principal: &principal, context: &context, arguments: &arguments,
/// };
/// assert!(matches!(gate.check(&call), GateDecision::Redirect { target: "list_candidate_schools", .. }));
/// ```
#[derive(Debug, Clone)]
pub struct RequireNonEmpty {
    tool: &'static str,
    pointer: &'static str,
    redirect_to: &'static str,
}

impl RequireNonEmpty {
    /// The gate for `tool`'s list at `pointer`, redirecting to `redirect_to`.
    #[must_use]
    pub const fn new(tool: &'static str, pointer: &'static str, redirect_to: &'static str) -> Self {
        RequireNonEmpty {
            tool,
            pointer,
            redirect_to,
        }
    }
}

impl Gate for RequireNonEmpty {
    fn check(&self, call: &GateCall<'_>) -> GateDecision {
        if call.tool() != self.tool {
            return GateDecision::Proceed;
        }
        match call.arguments.pointer(self.pointer) {
            Some(Value::Array(items)) if !items.is_empty() => GateDecision::Proceed,
            _ => GateDecision::Redirect {
                target: self.redirect_to,
                reason: format!(
                    "{} needs a non-empty list at {}; {} builds it",
                    self.tool, self.pointer, self.redirect_to
                ),
            },
        }
    }
}
