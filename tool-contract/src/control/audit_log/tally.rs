//! What a log's calls came to, per tool and minute: the counts the console's overview shows,
//! made by one rule whether they are counted from the records as they are read or kept by a
//! log as it appends them.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::results::{Delivery, ErrorCode, ModelResult, ProtectedAudit, Status};

/// One tool's calls over some minutes, as the console's overview counts them.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ToolTally {
    /// Calls answered, by when each result was observed.
    pub calls: u64,
    /// Calls that ran on an approval they redeemed.
    pub granted: u64,
    /// Calls whose model was told an approver rejected them.
    pub rejected: u64,
    /// Unknown outcomes settled by a status query.
    pub reconciled: u64,
}

/// Per tool, by the tool's name: what [`AuditHistory::tally`](super::AuditHistory::tally)
/// answers.
pub type Tallies = BTreeMap<String, ToolTally>;

/// One call as a tally counts it: its tool, the minute its result was observed (whole
/// minutes since the Unix epoch), and what it adds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Counted {
    pub(crate) tool: String,
    pub(crate) minute: i64,
    pub(crate) tally: ToolTally,
}

impl Counted {
    /// What the call of `model` and `audit` adds, or `None` for a call no tool contract
    /// answered (refused before one was found) or one without a readable observation time.
    pub(crate) fn of(model: &ModelResult, audit: &ProtectedAudit) -> Option<Self> {
        let contract = audit.tool_contract.as_ref()?;
        let minute = minute_of(observed_at(model)?);
        let rejected = matches!(
            model.error().map(crate::results::ModelError::code),
            Some(
                ErrorCode::RejectedNotPermitted
                    | ErrorCode::RejectedWrongDetails
                    | ErrorCode::RejectedDuplicate
            )
        );
        let reconciled = model.execution().delivery == Delivery::ReceiptReconciled
            && model.status() != Status::Unknown;
        Some(Counted {
            tool: contract.tool.to_string(),
            minute,
            tally: ToolTally {
                calls: 1,
                granted: u64::from(audit.approval.is_some()),
                rejected: u64::from(rejected),
                reconciled: u64::from(reconciled),
            },
        })
    }
}

impl ToolTally {
    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &ToolTally) {
        self.calls += other.calls;
        self.granted += other.granted;
        self.rejected += other.rejected;
        self.reconciled += other.reconciled;
    }
}

/// When a call's result was observed, as its provenance says.
pub(crate) fn observed_at(model: &ModelResult) -> Option<OffsetDateTime> {
    OffsetDateTime::parse(&model.provenance().observed_at, &Rfc3339).ok()
}

/// The whole minutes since the Unix epoch at `at`, rounded down.
pub fn minute_of(at: OffsetDateTime) -> i64 {
    at.unix_timestamp().div_euclid(60)
}

/// The last day before `now`, to the minute: the 1,440 minutes ending with `now`'s.
///
/// ```
/// use tool_contract::control::{last_day_minutes, minute_of};
///
/// let now = time::OffsetDateTime::from_unix_timestamp(1_800_000_030).unwrap();
/// let day = last_day_minutes(now);
/// assert_eq!(*day.end(), minute_of(now));
/// assert_eq!(day.count(), 1_440);
/// ```
pub fn last_day_minutes(now: OffsetDateTime) -> RangeInclusive<i64> {
    let now = minute_of(now);
    now.saturating_sub(MINUTES_A_DAY - 1)..=now
}

/// The minutes of a day.
const MINUTES_A_DAY: i64 = 24 * 60;

/// Per tool, the calls among `calls` observed in `minutes`.
pub fn tally_calls<'a>(
    calls: impl IntoIterator<Item = &'a (ModelResult, ProtectedAudit)>,
    minutes: &RangeInclusive<i64>,
) -> Tallies {
    let mut tallies = Tallies::new();
    for (model, audit) in calls {
        if let Some(counted) = Counted::of(model, audit)
            && minutes.contains(&counted.minute)
        {
            tallies.entry(counted.tool).or_default().add(&counted.tally);
        }
    }
    tallies
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_day_minutes_are_the_1440_minutes_ending_with_nows() {
        let now = OffsetDateTime::from_unix_timestamp(1_800_000_030).unwrap();
        let day = last_day_minutes(now);
        assert_eq!(*day.end(), 30_000_000);
        assert_eq!(day.end() - day.start() + 1, 1_440);
    }

    #[test]
    fn the_last_day_of_the_earliest_time_is_had_without_overflow() {
        let earliest = time::PrimitiveDateTime::MIN.assume_utc();
        let day = last_day_minutes(earliest);
        assert_eq!(day.end() - day.start(), 1_439);
    }

    #[test]
    fn a_minute_before_the_epoch_rounds_down() {
        let at = OffsetDateTime::from_unix_timestamp(-1).unwrap();
        assert_eq!(minute_of(at), -1);
    }
}
