//! What a tool does to the world, and what that asks of its writes: approval, reconciliation.

use serde::{Deserialize, Serialize};

use crate::json::names::wire_names;

wire_names! {
    /// What calling a tool does to the world. It decides retries, approvals and reconciliation.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    pub enum Effect {
        /// Computes from its arguments alone; touches nothing.
        Pure = "pure",
        /// Reads outside state; changes nothing.
        ReadOnly = "read_only",
        /// Changes state; repeating it with the same idempotency key changes nothing more.
        IdempotentWrite = "idempotent_write",
        /// Changes state; repeating it may do it twice.
        NonIdempotentWrite = "non_idempotent_write",
    }
}

impl Effect {
    /// Whether the effect changes state.
    #[must_use]
    pub const fn is_write(self) -> bool {
        matches!(self, Effect::IdempotentWrite | Effect::NonIdempotentWrite)
    }

    /// Whether a tool of this effect may be a write's status query (`reconcile = Tool`): only
    /// `read_only`. A `pure` tool computes from its arguments alone and cannot know what
    /// happened; a write would change what it is asked about. The derive checks it at compile
    /// time and the dispatcher builder again, both with this rule.
    #[must_use]
    pub const fn can_reconcile(self) -> bool {
        matches!(self, Effect::ReadOnly)
    }
}

/// Whether a write waits for a person before it runs, and whose word counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Approval {
    /// `approval = by_caller`: the person at the caller's client confirms the exact action
    /// first (MCP's confirmation form, or the host asking its own user). Anyone's approval
    /// counts, the caller's included.
    ByCaller,
    /// `approval = by_another`: someone other than the caller approves the exact action first
    /// (a supervisor through [`approve`](crate::dispatch::Dispatcher::approve), the approvals
    /// console, a passkey rule). The caller's own answer counts for nothing, on every path;
    /// the store decides it in the same atomic step that records the approval.
    ByAnother,
    /// The write runs without approval.
    NotRequired,
}

impl Approval {
    /// Whether a person must approve before the write runs.
    #[must_use]
    pub const fn is_required(self) -> bool {
        !matches!(self, Approval::NotRequired)
    }
}

/// How a `non_idempotent_write` whose outcome is unknown gets resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "tool")]
pub enum Reconcile {
    /// By calling this read-only status tool.
    Tool(&'static str),
    /// By a person.
    Manual,
}

/// What makes two calls of a write the same operation: the ledger runs an operation once,
/// and answers a repeat of it with the first result (`local_replay`). Every write declares one
/// (`#[tool_contract(operation = ...)]`), since each choice drops a real action somewhere:
/// borrow, return, borrow again is two borrows with the same arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "fields")]
#[non_exhaustive]
pub enum Operation {
    /// `operation = [member_id, isbn]`: these input fields (their JSON keys) name it; two
    /// calls with the same values there are one operation, whatever else they carry.
    Fields(&'static [&'static str]),
    /// `operation = per_call`: one operation per model call (its provider's call id); the
    /// model's retry of that call, or a re-dispatch of it, runs once.
    PerCall,
    /// `operation = key_rule`: the application's key from the typed input, given to
    /// `DispatcherBuilder::operation_key`.
    KeyRule,
    /// `operation = same_arguments`: identical arguments are one operation for as long as the
    /// ledger keeps the record, so a real action repeated with the same arguments is replayed,
    /// not run.
    SameArguments,
}

impl Operation {
    /// Whether the ledger keeps this rule's operations past its retention (for good, or for
    /// the contract's `within`): an operation named by its fields or by the application's key
    /// is a real action done once, which must not become a first time again when a record
    /// is purged.
    #[must_use]
    pub const fn is_kept(self) -> bool {
        matches!(self, Operation::Fields(_) | Operation::KeyRule)
    }
}

/// How long a write's operation stays one: a repeat within it is the same operation
/// (replayed, never run again); after it, a new one, whose approval names the earlier run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OperationWindow {
    /// For good: `operation = [fields]` or `key_rule` without `within`.
    ForGood,
    /// For this long after the operation's last change: `within = "30d"`.
    Within(std::time::Duration),
    /// For the ledger's retention (`DispatcherBuilder::retention`, 24 hours by default):
    /// `per_call` and `same_arguments`.
    Retention,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_read_only_tool_can_be_a_status_query() {
        let all = [
            Effect::Pure,
            Effect::ReadOnly,
            Effect::IdempotentWrite,
            Effect::NonIdempotentWrite,
        ];
        let reconcilers: Vec<Effect> = all.into_iter().filter(|e| e.can_reconcile()).collect();
        assert_eq!(reconcilers, [Effect::ReadOnly]);
    }
}
