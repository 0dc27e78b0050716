//! Issue 4, point 3: writes as an explicit state machine.

use proptest::prelude::*;
use tool_contract::control::{IllegalTransition, WriteEvent, WriteState};

const EVENTS: [WriteEvent; 12] = [
    WriteEvent::RequestApproval,
    WriteEvent::Approve,
    WriteEvent::Reject,
    WriteEvent::Execute,
    WriteEvent::RequestCancel,
    WriteEvent::ConfirmCancelled,
    WriteEvent::Commit,
    WriteEvent::ConfirmNothingHappened,
    WriteEvent::LoseTrack,
    WriteEvent::ReconcileFound,
    WriteEvent::ReconcileAbsent,
    WriteEvent::ActedAfterSettled,
];

fn walk(from: WriteState, events: &[WriteEvent]) -> Result<WriteState, IllegalTransition> {
    events
        .iter()
        .try_fold(from, |state, event| state.next(*event))
}

#[test]
fn the_approved_path_ends_in_succeeded() {
    use WriteEvent::*;
    assert_eq!(
        walk(
            WriteState::Draft,
            &[RequestApproval, Approve, Execute, Commit]
        ),
        Ok(WriteState::Succeeded)
    );
}

#[test]
fn a_write_without_approval_goes_from_draft_to_executing() {
    assert_eq!(
        WriteState::Draft.next(WriteEvent::Execute),
        Ok(WriteState::Executing)
    );
}

#[test]
fn a_pending_write_cannot_execute_before_approval() {
    assert_eq!(
        WriteState::PendingApproval.next(WriteEvent::Execute),
        Err(IllegalTransition {
            from: WriteState::PendingApproval,
            event: WriteEvent::Execute
        })
    );
}

#[test]
fn a_pending_write_may_be_rejected() {
    assert_eq!(
        WriteState::PendingApproval.next(WriteEvent::Reject),
        Ok(WriteState::Rejected)
    );
}

#[test]
fn failed_means_the_remote_confirmed_nothing_happened() {
    assert_eq!(
        WriteState::Executing.next(WriteEvent::ConfirmNothingHappened),
        Ok(WriteState::Failed)
    );
}

#[test]
fn cancelled_only_after_a_request_and_the_handlers_confirmation() {
    use WriteEvent::*;
    assert!(WriteState::Executing.next(ConfirmCancelled).is_err());
    assert_eq!(
        walk(WriteState::Executing, &[RequestCancel]),
        Ok(WriteState::CancelRequested)
    );
    assert_eq!(
        walk(WriteState::Executing, &[RequestCancel, ConfirmCancelled]),
        Ok(WriteState::Cancelled)
    );
    // A write asked to cancel may still have committed, or be lost.
    assert_eq!(
        walk(WriteState::Executing, &[RequestCancel, Commit]),
        Ok(WriteState::Succeeded)
    );
    assert_eq!(
        walk(WriteState::Executing, &[RequestCancel, LoseTrack]),
        Ok(WriteState::Unknown)
    );
}

#[test]
fn unknown_is_left_only_by_reconciliation() {
    for event in EVENTS {
        let next = WriteState::Unknown.next(event);
        match event {
            WriteEvent::ReconcileFound => assert_eq!(next, Ok(WriteState::Succeeded)),
            WriteEvent::ReconcileAbsent => assert_eq!(next, Ok(WriteState::Failed)),
            _ => assert!(next.is_err(), "{event:?}"),
        }
    }
}

#[test]
fn terminal_states_take_no_event_but_a_late_act_after_never_happened() {
    for state in WriteState::ALL
        .into_iter()
        .filter(|state| state.is_terminal())
    {
        for event in EVENTS {
            let settled_as_nothing = matches!(state, WriteState::Failed | WriteState::Cancelled);
            if settled_as_nothing && event == WriteEvent::ActedAfterSettled {
                assert_eq!(state.next(event), Ok(WriteState::Disputed));
            } else {
                assert_eq!(
                    state.next(event),
                    Err(IllegalTransition { from: state, event })
                );
            }
        }
    }
}

#[test]
fn a_dispute_is_left_only_by_a_settlement() {
    for event in EVENTS {
        let next = WriteState::Disputed.next(event);
        match event {
            WriteEvent::ReconcileFound => assert_eq!(next, Ok(WriteState::Succeeded)),
            WriteEvent::ReconcileAbsent => assert_eq!(next, Ok(WriteState::Failed)),
            _ => assert!(next.is_err(), "{event:?}"),
        }
    }
}

#[test]
fn states_round_trip_through_their_names() {
    for state in WriteState::ALL {
        assert_eq!(state.as_str().parse::<WriteState>(), Ok(state));
        assert_eq!(serde_json::to_value(state).unwrap(), state.as_str());
    }
    assert!("exploded".parse::<WriteState>().is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1_000))]

    #[test]
    fn any_event_sequence_keeps_the_invariants(events in proptest::collection::vec(0..EVENTS.len(), 0..24)) {
        let mut state = WriteState::Draft;
        let mut executed = 0;
        for event in events.iter().map(|index| EVENTS[*index]) {
            match state.next(event) {
                Ok(next) => {
                    // Terminal states are absorbing, but for a late act after "never happened".
                    prop_assert!(!state.is_terminal() || event == WriteEvent::ActedAfterSettled);
                    // Nothing leaves unknown but reconciliation.
                    if state == WriteState::Unknown {
                        prop_assert!(matches!(event, WriteEvent::ReconcileFound | WriteEvent::ReconcileAbsent));
                    }
                    if next == WriteState::Executing {
                        executed += 1;
                    }
                    state = next;
                }
                Err(refused) => prop_assert_eq!(refused.from, state),
            }
        }
        // One write executes at most once, whatever happens to it.
        prop_assert!(executed <= 1);
    }
}
