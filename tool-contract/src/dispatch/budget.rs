//! A task's budget: tool calls, model turns, cost units and a deadline, each checked before
//! the thing it would pay for.

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tokio::time::Instant;

use crate::json::names::wire_names;

/// What one task may spend. `None` is no limit: `Budget::default()` limits nothing, and the
/// `with_*` methods set each limit.
///
/// ```
/// use tool_contract::dispatch::{Budget, Task};
///
/// let task = Task::new(Budget::default().with_tool_calls(20).with_model_turns(8));
/// assert_eq!(task.budget().tool_calls, Some(20));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Budget {
    /// Handler attempts in all (every retry is one).
    pub tool_calls: Option<u32>,
    /// Model turns in all.
    pub model_turns: Option<u32>,
    /// Cost units in all (each tool's attempts cost what its options say).
    pub cost_units: Option<u64>,
    /// When the task must be done (tokio's clock, so paused-time tests can reach it).
    pub deadline: Option<Instant>,
}

impl Budget {
    /// This budget with `tool_calls` handler attempts in all.
    #[must_use]
    pub const fn with_tool_calls(mut self, tool_calls: u32) -> Self {
        self.tool_calls = Some(tool_calls);
        self
    }

    /// This budget with `model_turns` model turns in all.
    #[must_use]
    pub const fn with_model_turns(mut self, model_turns: u32) -> Self {
        self.model_turns = Some(model_turns);
        self
    }

    /// This budget with `cost_units` cost units in all.
    #[must_use]
    pub const fn with_cost_units(mut self, cost_units: u64) -> Self {
        self.cost_units = Some(cost_units);
        self
    }

    /// This budget with `deadline` (tokio's clock) for the whole task.
    #[must_use]
    pub const fn with_deadline(mut self, deadline: Instant) -> Self {
        self.deadline = Some(deadline);
        self
    }
}

wire_names! {
    /// Why the dispatcher stopped before a result it could deliver as the tool's own.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
    #[non_exhaustive]
    pub enum StopReason {
        /// The task's tool calls are spent.
        ToolCallsExhausted = "tool_calls_exhausted",
        /// The task's model turns are spent.
        ModelTurnsExhausted = "model_turns_exhausted",
        /// The task's cost units are spent.
        CostUnitsExhausted = "cost_units_exhausted",
        /// The task's deadline came (or the next wait would pass it).
        DeadlineReached = "deadline_reached",
        /// The tool's attempts are spent.
        AttemptsExhausted = "attempts_exhausted",
        /// The next wait would pass the call's total wait allowance.
        RetryWaitExhausted = "retry_wait_exhausted",
        /// The failure is not one this tool's effect may retry.
        NotRetryable = "not_retryable",
        /// A write may have happened: only reconciliation can go on.
        OutcomeUnknown = "outcome_unknown",
    }
}

/// What is left of a budget. `None` is no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Remaining {
    /// Tool calls left.
    pub tool_calls: Option<u32>,
    /// Model turns left.
    pub model_turns: Option<u32>,
    /// Cost units left.
    pub cost_units: Option<u64>,
    /// Time left before the deadline.
    pub time: Option<Duration>,
}

#[derive(Debug, Default)]
struct Spent {
    tool_calls: u32,
    model_turns: u32,
    cost_units: u64,
}

/// One agent task's budget and what it has spent; shared by every call of the task.
///
/// ```
/// use tool_contract::dispatch::{Budget, StopReason, Task};
///
/// let task = Task::new(Budget::default().with_model_turns(1));
/// assert!(task.begin_model_turn().is_ok());
/// assert_eq!(task.begin_model_turn(), Err(StopReason::ModelTurnsExhausted));
/// ```
#[derive(Debug)]
pub struct Task {
    budget: Budget,
    spent: Mutex<Spent>,
}

impl Task {
    /// A task with `budget`.
    #[must_use]
    pub fn new(budget: Budget) -> Self {
        Task {
            budget,
            spent: Mutex::new(Spent::default()),
        }
    }

    /// A task without limits.
    #[must_use]
    pub fn unlimited() -> Self {
        Self::new(Budget::default())
    }

    /// The budget.
    #[must_use]
    pub fn budget(&self) -> &Budget {
        &self.budget
    }

    fn spent(&self) -> MutexGuard<'_, Spent> {
        self.spent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Counts one model turn, if the budget has one left; call it before asking the model.
    ///
    /// # Errors
    ///
    /// [`StopReason::ModelTurnsExhausted`], or [`StopReason::DeadlineReached`] when the
    /// deadline has passed; nothing is counted then.
    pub fn begin_model_turn(&self) -> Result<(), StopReason> {
        self.check_deadline(Instant::now())?;
        let mut spent = self.spent();
        if self
            .budget
            .model_turns
            .is_some_and(|limit| spent.model_turns >= limit)
        {
            return Err(StopReason::ModelTurnsExhausted);
        }
        spent.model_turns += 1;
        Ok(())
    }

    /// Counts one tool attempt of `cost` units, if every limit allows it; nothing is counted
    /// otherwise.
    pub(crate) fn spend_tool_call(&self, cost: u64) -> Result<(), StopReason> {
        self.check_deadline(Instant::now())?;
        let mut spent = self.spent();
        if self
            .budget
            .tool_calls
            .is_some_and(|limit| spent.tool_calls >= limit)
        {
            return Err(StopReason::ToolCallsExhausted);
        }
        if self
            .budget
            .cost_units
            .is_some_and(|limit| spent.cost_units.saturating_add(cost) > limit)
        {
            return Err(StopReason::CostUnitsExhausted);
        }
        spent.tool_calls += 1;
        spent.cost_units = spent.cost_units.saturating_add(cost);
        Ok(())
    }

    fn check_deadline(&self, now: Instant) -> Result<(), StopReason> {
        match self.budget.deadline {
            Some(deadline) if now >= deadline => Err(StopReason::DeadlineReached),
            _ => Ok(()),
        }
    }

    /// Time left before the deadline, if there is one.
    #[must_use]
    pub fn time_left(&self) -> Option<Duration> {
        self.budget
            .deadline
            .map(|deadline| deadline.saturating_duration_since(Instant::now()))
    }

    /// What is left.
    #[must_use]
    pub fn remaining(&self) -> Remaining {
        let spent = self.spent();
        Remaining {
            tool_calls: self
                .budget
                .tool_calls
                .map(|limit| limit.saturating_sub(spent.tool_calls)),
            model_turns: self
                .budget
                .model_turns
                .map(|limit| limit.saturating_sub(spent.model_turns)),
            cost_units: self
                .budget
                .cost_units
                .map(|limit| limit.saturating_sub(spent.cost_units)),
            time: self.time_left(),
        }
    }
}
