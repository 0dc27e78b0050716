//! The life of one write, as an explicit state machine whose illegal moves are refused.

use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::json::names::wire_names;

wire_names! {
    /// Where one write operation stands.
    ///
    /// ```text
    /// draft ─► pending_approval ─► approved ─► executing ─► succeeded
    ///   │            │                            │  ├───► failed     (the remote confirmed nothing happened)
    ///   │            └─► rejected                 │  └───► unknown ─► succeeded | failed (reconciled)
    ///   └──────────────(no approval needed)──────►│
    ///                                cancel_requested ─► cancelled (the handler confirmed it never ran)
    ///                                                ─► succeeded | failed | unknown
    /// failed | cancelled ─► disputed (an execution that may have acted ended after that)
    ///                       disputed ─► succeeded | failed (a person settles it)
    /// ```
    ///
    /// `succeeded`, `failed`, `rejected` and `cancelled` are terminal: nothing runs for the
    /// write any more. They are absorbing but for one move: an execution that may have acted
    /// (a success, a timeout after sending) that ends after its record was settled as never
    /// having happened (its lease lapsed, a status query found nothing) turns `failed` or
    /// `cancelled` into `disputed`, for a person, never left saying "never happened"; only a
    /// person settles a dispute. `unknown` is left only by reconciliation (a status query or a
    /// person), never by running the write again.
    ///
    /// ```
    /// use tool_contract::control::{WriteEvent, WriteState};
    ///
    /// let state = WriteState::Draft.next(WriteEvent::Execute)?;
    /// let state = state.next(WriteEvent::LoseTrack)?;
    /// assert_eq!(state, WriteState::Unknown);
    /// // An unknown write cannot be executed again, only reconciled.
    /// assert!(state.next(WriteEvent::Execute).is_err());
    /// assert_eq!(state.next(WriteEvent::ReconcileFound)?, WriteState::Succeeded);
    /// # Ok::<(), tool_contract::control::IllegalTransition>(())
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    pub enum WriteState {
        /// Validated, not yet submitted.
        Draft = "draft",
        /// Waiting for a person to approve the exact action.
        PendingApproval = "pending_approval",
        /// Approved; not yet running.
        Approved = "approved",
        /// Handed to the handler.
        Executing = "executing",
        /// Cancellation asked for while executing; the handler has not confirmed.
        CancelRequested = "cancel_requested",
        /// The remote confirmed the action.
        Succeeded = "succeeded",
        /// The remote confirmed nothing happened.
        Failed = "failed",
        /// The action may or may not have happened.
        Unknown = "unknown",
        /// The person said no.
        Rejected = "rejected",
        /// The handler confirmed it never acted.
        Cancelled = "cancelled",
        /// Settled as never having happened, then an execution that may have acted ended: what
        /// happened is in dispute, and a person decides.
        Disputed = "disputed",
    }
}

/// What happens to a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WriteEvent {
    /// Submit for approval.
    RequestApproval,
    /// A person approved the pending action.
    Approve,
    /// A person refused it.
    Reject,
    /// Hand it to the handler (from `approved`, or from `draft` when no approval is needed).
    Execute,
    /// Ask a running write to stop.
    RequestCancel,
    /// The handler confirms it never acted.
    ConfirmCancelled,
    /// The remote confirms the action.
    Commit,
    /// The remote confirms nothing happened.
    ConfirmNothingHappened,
    /// The outcome can no longer be learned from this execution (timeout after dispatch,
    /// crash, lost lease).
    LoseTrack,
    /// A status query found the action done.
    ReconcileFound,
    /// A status query found that the action never happened.
    ReconcileAbsent,
    /// An execution that may have acted ended after the write was settled as never having
    /// happened (its lease had lapsed).
    ActedAfterSettled,
}

/// A move the state machine does not have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a write in state {from} cannot take {event:?}")]
pub struct IllegalTransition {
    /// The state the write was in (unchanged).
    pub from: WriteState,
    /// What was attempted.
    pub event: WriteEvent,
}

impl WriteState {
    /// Every state, in declaration order.
    pub const ALL: [WriteState; 11] = [
        WriteState::Draft,
        WriteState::PendingApproval,
        WriteState::Approved,
        WriteState::Executing,
        WriteState::CancelRequested,
        WriteState::Succeeded,
        WriteState::Failed,
        WriteState::Unknown,
        WriteState::Rejected,
        WriteState::Cancelled,
        WriteState::Disputed,
    ];

    /// The state after `event`, or why there is none.
    ///
    /// # Errors
    ///
    /// [`IllegalTransition`] for every move not drawn in the type's diagram; a terminal state
    /// takes no event at all.
    pub const fn next(self, event: WriteEvent) -> Result<WriteState, IllegalTransition> {
        use WriteEvent as E;
        use WriteState as S;
        let next = match (self, event) {
            (S::Draft, E::RequestApproval) => S::PendingApproval,
            (S::Draft, E::Execute) | (S::Approved, E::Execute) => S::Executing,
            (S::PendingApproval, E::Approve) => S::Approved,
            (S::PendingApproval, E::Reject) => S::Rejected,
            (S::Executing, E::RequestCancel) => S::CancelRequested,
            (S::CancelRequested, E::ConfirmCancelled) => S::Cancelled,
            (S::Executing | S::CancelRequested, E::Commit) => S::Succeeded,
            (S::Executing | S::CancelRequested, E::ConfirmNothingHappened) => S::Failed,
            (S::Executing | S::CancelRequested, E::LoseTrack) => S::Unknown,
            (S::Unknown, E::ReconcileFound) => S::Succeeded,
            (S::Unknown, E::ReconcileAbsent) => S::Failed,
            (S::Failed | S::Cancelled, E::ActedAfterSettled) => S::Disputed,
            (S::Disputed, E::ReconcileFound) => S::Succeeded,
            (S::Disputed, E::ReconcileAbsent) => S::Failed,
            (from, event) => return Err(IllegalTransition { from, event }),
        };
        Ok(next)
    }

    /// The state a write reaches from [`Draft`](Self::Draft) through `events`, each taken by
    /// [`next`](Self::next): the dispatcher names every state it records or reports so, at
    /// compile time, so that none is set outside the diagram.
    ///
    /// ```
    /// use tool_contract::control::{IllegalTransition, WriteEvent, WriteState};
    ///
    /// const APPROVED: Result<WriteState, IllegalTransition> =
    ///     WriteState::reached(&[WriteEvent::RequestApproval, WriteEvent::Approve]);
    /// assert_eq!(APPROVED, Ok(WriteState::Approved));
    /// assert!(WriteState::reached(&[WriteEvent::Approve]).is_err());
    /// ```
    ///
    /// # Errors
    ///
    /// The first [`IllegalTransition`] on the way.
    pub const fn reached(events: &[WriteEvent]) -> Result<WriteState, IllegalTransition> {
        let mut state = WriteState::Draft;
        let mut index = 0;
        while index < events.len() {
            state = match state.next(events[index]) {
                Ok(next) => next,
                Err(illegal) => return Err(illegal),
            };
            index += 1;
        }
        Ok(state)
    }

    /// [`reached`](Self::reached), for a path known to be legal: evaluated in a `const`, an
    /// illegal path does not compile.
    pub(crate) const fn along(events: &[WriteEvent]) -> WriteState {
        match WriteState::reached(events) {
            Ok(state) => state,
            Err(_) => panic!("a path outside the write state diagram"),
        }
    }

    /// Whether nothing runs for the write any more (a `disputed` write waits for a person,
    /// and is never purged).
    #[must_use]
    pub const fn is_terminal(self) -> bool {
        matches!(
            self,
            WriteState::Succeeded
                | WriteState::Failed
                | WriteState::Rejected
                | WriteState::Cancelled
        )
    }

    /// Whether a handler may be running for it.
    #[must_use]
    pub const fn is_in_flight(self) -> bool {
        matches!(self, WriteState::Executing | WriteState::CancelRequested)
    }
}

/// A name that is no [`WriteState`]'s.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a write state")]
pub struct UnknownWriteState(pub String);

impl FromStr for WriteState {
    type Err = UnknownWriteState;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        WriteState::ALL
            .into_iter()
            .find(|state| state.as_str() == name)
            .ok_or_else(|| UnknownWriteState(name.to_owned()))
    }
}
