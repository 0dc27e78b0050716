//! What the application decides per tool and per call: how a tool runs, and who may call it.

use std::time::Duration;

use crate::contract::ToolSpec;
use crate::dispatch::retry::RetryPolicy;
use crate::vocabulary::Principal;

/// How the dispatcher runs one tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolOptions {
    /// How long one attempt may run.
    pub timeout: Duration,
    /// How transient failures are retried (within what the effect allows).
    pub retry: RetryPolicy,
    /// What one attempt costs against the task's `cost_units`.
    pub cost_units: u64,
}

impl ToolOptions {
    /// 30 s per attempt, [`RetryPolicy::DEFAULT`], one cost unit.
    pub const DEFAULT: ToolOptions = ToolOptions {
        timeout: Duration::from_secs(30),
        retry: RetryPolicy::DEFAULT,
        cost_units: 1,
    };
}

impl Default for ToolOptions {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Decides whether a principal may use a tool with these arguments. A refusal reads to the
/// model exactly like `NOT_FOUND`, so nobody can probe for what exists.
///
/// Any `Fn(&Principal, &ToolSpec, &serde_json::Value) -> bool` is one.
pub trait Authorizer: Send + Sync {
    /// Whether the call may go on.
    fn authorize(
        &self,
        principal: &Principal,
        spec: &ToolSpec,
        arguments: &serde_json::Value,
    ) -> bool;
}

impl<F> Authorizer for F
where
    F: Fn(&Principal, &ToolSpec, &serde_json::Value) -> bool + Send + Sync,
{
    fn authorize(
        &self,
        principal: &Principal,
        spec: &ToolSpec,
        arguments: &serde_json::Value,
    ) -> bool {
        self(principal, spec, arguments)
    }
}
