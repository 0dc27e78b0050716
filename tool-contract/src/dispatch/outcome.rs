//! What dispatching returns: one call's [`Dispatch`], and a model turn's [`DispatchedTurn`]
//! (each call's answer for the provider's next turn, beside its dispatch).

use crate::binder::CallResult;
use crate::control::{AuditLogError, PendingApproval, WriteState};
use crate::dispatch::budget::StopReason;
use crate::providers::Answer;

/// What one dispatch did: the call's result (model half and audit half), and what the
/// application needs to go on.
#[derive(Debug)]
#[non_exhaustive]
pub struct Dispatch {
    /// The result, sealed: send `result.model` on through a provider adapter.
    pub result: CallResult,
    /// For writes, where the operation stands after this dispatch.
    pub write_state: Option<WriteState>,
    /// For writes that wait for a person: what to show them and approve.
    pub pending_approval: Option<PendingApproval>,
    /// Handler attempts made by this dispatch.
    pub attempts: u32,
    /// Why the dispatcher stopped short, if it did.
    pub stop: Option<StopReason>,
    /// The audit sink's failure, if it failed (the result stands; the audit is missing).
    pub audit_error: Option<AuditLogError>,
    /// Whether the handler panicked (the panic was caught): the result is the catalog's
    /// answer for it, a read's failure or a write's unknown outcome. A transport that tells a
    /// failure of the server from a tool's reads it: an MCP task ends `failed`.
    pub handler_panicked: bool,
}

/// The answers to every call of one model turn, in call order, each beside its [`Dispatch`]:
/// [`answers`](Self::answers) is what a provider's
/// [`write_results`](crate::providers::ProviderApi::write_results) takes for the next turn.
///
/// Made by [`Dispatcher::dispatch_turn`](crate::dispatch::Dispatcher::dispatch_turn).
#[derive(Debug, Default)]
pub struct DispatchedTurn {
    answers: Vec<Answer>,
    dispatches: Vec<Dispatch>,
}

impl DispatchedTurn {
    pub(crate) fn with_capacity(calls: usize) -> Self {
        DispatchedTurn {
            answers: Vec::with_capacity(calls),
            dispatches: Vec::with_capacity(calls),
        }
    }

    pub(crate) fn push(&mut self, answer: Answer, dispatch: Dispatch) {
        self.answers.push(answer);
        self.dispatches.push(dispatch);
    }

    /// Each call's answer, in call order: the next turn's results, as
    /// [`write_results`](crate::providers::ProviderApi::write_results) takes them.
    #[must_use]
    pub fn answers(&self) -> &[Answer] {
        &self.answers
    }

    /// Each call's dispatch, in call order.
    #[must_use]
    pub fn dispatches(&self) -> &[Dispatch] {
        &self.dispatches
    }

    /// Each call's answer beside its dispatch, in call order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&Answer, &Dispatch)> {
        self.answers.iter().zip(&self.dispatches)
    }

    /// Whether a write of this turn waits for a person: hold the turn, and
    /// [`resume_turn`](crate::dispatch::Dispatcher::resume_turn) it once they decided.
    #[must_use]
    pub fn is_waiting(&self) -> bool {
        self.pending_approvals().next().is_some()
    }

    /// The writes of this turn that wait for a person, in call order.
    pub fn pending_approvals(&self) -> impl Iterator<Item = &PendingApproval> {
        self.dispatches
            .iter()
            .filter_map(|dispatch| dispatch.pending_approval.as_ref())
    }

    /// How many calls the turn had.
    #[must_use]
    pub fn len(&self) -> usize {
        self.answers.len()
    }

    /// Whether the turn had no calls.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.answers.is_empty()
    }

    /// The answers and the dispatches, each in call order.
    #[must_use]
    pub fn into_parts(self) -> (Vec<Answer>, Vec<Dispatch>) {
        (self.answers, self.dispatches)
    }
}

impl<'a> IntoIterator for &'a DispatchedTurn {
    type Item = (&'a Answer, &'a Dispatch);
    type IntoIter = std::iter::Zip<std::slice::Iter<'a, Answer>, std::slice::Iter<'a, Dispatch>>;

    fn into_iter(self) -> Self::IntoIter {
        self.answers.iter().zip(&self.dispatches)
    }
}
