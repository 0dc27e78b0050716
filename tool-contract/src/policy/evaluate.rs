//! Policies evaluated on a request by Cedar's own evaluator, each policy's condition built
//! once rather than on every request.
//!
//! Cedar's `Authorizer` rebuilds every policy's condition (its scope and its `when`s, joined)
//! on every request, and records each policy's outcome with its annotations: measured, that
//! was about a third of a decision. The conditions are the same for every call, so they are
//! built here when the dispatcher is, and each request is put to `cedar-policy-core`'s
//! `Evaluator`, the one the `Authorizer` runs. What is combined here is what a dispatcher needs
//! and no more: the policies that held, and those that failed (a call with any fails closed).

use cedar_policy::{Effect, Entities, PolicyId, PolicySet, Request};
use cedar_policy_core::ast::{Expr, Literal, SlotEnv, ValueKind};
use cedar_policy_core::evaluator::Evaluator;
use cedar_policy_core::extensions::Extensions;

/// A policy set's policies, each with its condition built.
pub(super) struct Conditions {
    policies: Vec<Condition>,
    /// Slots are refused at build (no templates), so every policy's are empty.
    no_slots: SlotEnv,
}

struct Condition {
    id: PolicyId,
    effect: Effect,
    condition: Expr,
}

/// What the policies made of one request.
#[derive(Debug, Default)]
pub(super) struct Outcome<'a> {
    /// The `permit`s whose condition held.
    pub(super) permits: Vec<&'a PolicyId>,
    /// The `forbid`s whose condition held.
    pub(super) forbids: Vec<&'a PolicyId>,
    /// The policies whose evaluation failed, each with Cedar's words.
    pub(super) failed: Vec<(&'a PolicyId, String)>,
}

impl Conditions {
    /// The conditions of `set`'s policies.
    pub(super) fn of(set: &PolicySet) -> Conditions {
        Conditions {
            policies: set
                .policies()
                .map(|policy| Condition {
                    id: policy.id().clone(),
                    effect: policy.effect(),
                    condition: AsRef::<cedar_policy_core::ast::Policy>::as_ref(policy).condition(),
                })
                .collect(),
            no_slots: SlotEnv::new(),
        }
    }

    /// Whether there are none.
    pub(super) fn is_empty(&self) -> bool {
        self.policies.is_empty()
    }

    /// Whether any is a `permit`.
    pub(super) fn any_permit(&self) -> bool {
        self.policies
            .iter()
            .any(|policy| policy.effect == Effect::Permit)
    }

    /// The ids of every policy.
    pub(super) fn ids(&self) -> impl Iterator<Item = &PolicyId> {
        self.policies.iter().map(|policy| &policy.id)
    }

    /// Each policy's condition evaluated on `request`, with `entities`.
    pub(super) fn evaluate(&self, request: &Request, entities: &Entities) -> Outcome<'_> {
        let evaluator = Evaluator::new(
            request.as_ref().clone(),
            entities.as_ref(),
            Extensions::all_available(),
        );
        let mut outcome = Outcome::default();
        for policy in &self.policies {
            let held = match evaluator.interpret(&policy.condition, &self.no_slots) {
                Ok(value) => match value.value_kind() {
                    ValueKind::Lit(Literal::Bool(held)) => *held,
                    // Validation types every condition boolean; were one not, it fails.
                    _ => {
                        let error = format!("the condition is {value}, not a boolean");
                        outcome.failed.push((&policy.id, error));
                        continue;
                    }
                },
                Err(error) => {
                    outcome.failed.push((&policy.id, error.to_string()));
                    continue;
                }
            };
            match (held, policy.effect) {
                (false, _) => {}
                (true, Effect::Permit) => outcome.permits.push(&policy.id),
                (true, Effect::Forbid) => outcome.forbids.push(&policy.id),
            }
        }
        outcome
    }
}
