//! What the application decides per tool and per call: how a tool runs, and who may call it.

use std::time::Duration;

use crate::contract::ToolSpec;
use crate::dispatch::retry::RetryPolicy;
use crate::vocabulary::Principal;

/// How the dispatcher runs one tool: [`ToolOptions::DEFAULT`] (or `default()`), changed by
/// its `with_*` methods, so that a field added later breaks no one.
///
/// ```
/// use std::time::Duration;
/// use tool_contract::dispatch::{RetryPolicy, ToolOptions};
///
/// const SLOW: ToolOptions = ToolOptions::DEFAULT
///     .with_timeout(Duration::from_secs(120))
///     .with_retry(RetryPolicy::NEVER);
/// assert_eq!(SLOW.cost_units, 1);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
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

impl ToolOptions {
    /// These options with `timeout` per attempt.
    #[must_use]
    pub const fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// These options with `retry` as the retry policy.
    #[must_use]
    pub const fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// These options with `cost_units` per attempt.
    #[must_use]
    pub const fn with_cost_units(mut self, cost_units: u64) -> Self {
        self.cost_units = cost_units;
        self
    }
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
