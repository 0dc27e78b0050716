//! The decisions every store makes, written once: what a step writes and answers, given the
//! rows it read. Pure functions: a store reads rows, calls one of these, writes what it says.

use crate::control::approver::{ApproverIdentity, same_approver};
use crate::control::state::{WriteEvent, WriteState};
use crate::control::{Advance, Advanced, Claim, Claimed, Lease, Record, StoreError};
use crate::control::{
    ApprovalAsk, ApprovalCheck, ApprovalEntry, ApprovalError, ApprovalGrant, ApproveStep,
    GivenApproval, Invalidity, PendingApproval, RejectStep, SignedDecisionRefusal, unix_ms,
};
use crate::results::ApprovalBasis;

/// What a store does with a claim, given the record it holds at that key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimDecision {
    /// Write this record (insert, or replace an expired one) and answer `Fresh`.
    Write(Record),
    /// Write this record (the lease ran out: now `unknown`) and answer with the claim given.
    WriteAndAnswer(Record, Claimed),
    /// Change nothing; answer this.
    Answer(Claimed),
}

/// The one decision every store makes for a claim.
///
/// - no record, or a finished one past its retention: a new `executing` record → `Fresh`;
/// - in flight with its lease over (the owner crashed or vanished): now `unknown`, whoever
///   asks → `Unknown` for the same request, `Conflict` for another;
/// - a record of another request digest → `Conflict`, whatever its state;
/// - finished (`succeeded`, `failed`, `cancelled`, `rejected`) or `disputed` → `Replay`;
/// - a finished record past its retention whose lease generation is not below the claim's
///   (the claim's fencing token would not be above the last execution's) → `InFlight`;
/// - in flight with its lease running → `InFlight`;
/// - `unknown` → `Unknown`.
///
/// A claim that redeems a grant is decided by this first, then by [`decide_redeem`].
#[must_use]
pub fn decide_claim(existing: Option<&Record>, claim: &Claim) -> ClaimDecision {
    let fresh = || Record {
        key: claim.key.clone(),
        request_sha256: claim.request_sha256.clone(),
        tool: claim.tool.clone(),
        // A claim hands the write to its handler: `draft` (or `approved`) then `execute`.
        state: WriteState::along(&[WriteEvent::Execute]),
        lease: claim.lease.clone(),
        lease_until_ms: claim.now_ms.saturating_add(claim.lease_ms),
        expires_at_ms: claim.now_ms.saturating_add(claim.retention_ms),
        result: None,
        call: claim.call.clone(),
        kept: claim.kept,
    };
    let Some(record) = existing else {
        return ClaimDecision::Write(fresh());
    };
    if record.state.is_terminal() && record.expires_at_ms <= claim.now_ms {
        if claim.lease.generation <= record.lease.generation {
            // The lease generation is the operation's fencing token: a new execution's must
            // be above the last one's. The claimant reads the record and asks again.
            return ClaimDecision::Answer(Claimed::InFlight(record.clone()));
        }
        return ClaimDecision::Write(fresh());
    }
    let same_request = record.request_sha256 == claim.request_sha256 && record.tool == claim.tool;
    // A lapsed lease is settled first, whoever asks: the record must not claim to be running.
    if record.state.is_in_flight() && record.lease_until_ms <= claim.now_ms {
        let mut lost = record.clone();
        lost.state = match record.state.next(WriteEvent::LoseTrack) {
            Ok(state) => state,
            Err(_) => WriteState::Unknown,
        };
        let answer = if same_request {
            Claimed::Unknown(lost.clone())
        } else {
            Claimed::Conflict(lost.clone())
        };
        return ClaimDecision::WriteAndAnswer(lost, answer);
    }
    if !same_request {
        return ClaimDecision::Answer(Claimed::Conflict(record.clone()));
    }
    match record.state {
        // A disputed write's answer is its dispute, stored like a finished one's.
        state if state.is_terminal() || state == WriteState::Disputed => {
            ClaimDecision::Answer(Claimed::Replay(record.clone()))
        }
        state if state.is_in_flight() => ClaimDecision::Answer(Claimed::InFlight(record.clone())),
        _ => ClaimDecision::Answer(Claimed::Unknown(record.clone())),
    }
}

/// What a store does with an advance, given the record it holds at that key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdvanceDecision {
    /// Write this record and answer [`Advanced::Applied`].
    Write(Record),
    /// Change nothing and answer [`Advanced::Stale`] with the record as it stands.
    Stale(Option<Record>),
}

/// The one decision every store makes for an advance: the record moves only if it is still
/// in `step.from` and, while in flight, still held by `step.lease` (owner and generation). A
/// record that finishes lets go of its call.
///
/// # Errors
///
/// [`StoreError::Illegal`] when the event has no move from that state.
pub fn decide_advance(
    existing: Option<&Record>,
    step: &Advance,
) -> Result<AdvanceDecision, StoreError> {
    let Some(record) = existing else {
        return Ok(AdvanceDecision::Stale(None));
    };
    let lease_holds = !record.state.is_in_flight() || record.lease == step.lease;
    if record.state != step.from || !lease_holds {
        return Ok(AdvanceDecision::Stale(Some(record.clone())));
    }
    let mut next = record.clone();
    next.state = record.state.next(step.event)?;
    if step.result.is_some() {
        next.result.clone_from(&step.result);
    }
    if next.state.is_terminal() {
        // Only a reconcile pass reads the call, and a finished write needs none: a record
        // kept for good keeps its key, result and times, not the caller's arguments.
        next.call = None;
    }
    next.expires_at_ms = step.now_ms.saturating_add(step.retention_ms);
    Ok(AdvanceDecision::Write(next))
}

impl From<AdvanceDecision> for Advanced {
    fn from(decision: AdvanceDecision) -> Self {
        match decision {
            AdvanceDecision::Write(record) => Advanced::Applied(record),
            AdvanceDecision::Stale(record) => Advanced::Stale(record),
        }
    }
}

/// What a store does at the approval stage: the entry to write, if any, and the answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalDecision {
    /// The entry to write under the ask's ledger key.
    pub write: Option<ApprovalEntry>,
    /// What the stage answers.
    pub answer: ApprovalCheck,
}

/// The one decision every store makes at the approval stage, given the entry it holds at
/// the ask's ledger key:
///
/// - rejected → `Rejected`, and it stays so;
/// - pending for this very request → `Required` with that pending approval (the same id,
///   whichever replica asks);
/// - pending for another request (changed before anyone approved) or nothing → a new
///   pending approval, `Required`;
/// - granted and covering this request, not redeemed → `Proceed`;
/// - granted, not redeemed, unexpired, for other arguments (or another tool) → `GrantStands`
///   with why: the grant is left for the call it covers, which then runs on it once;
/// - granted but expired → a new pending approval, `Invalid`;
/// - granted and redeemed by an execution whose record still stands (`claimed`) →
///   `Proceed`: the claim answers from that record (in flight, replay, unknown), and nobody is
///   asked to approve a write already running or done;
/// - granted and redeemed, its record gone (released after an attempt, or purged) → spent: a
///   new pending approval, `Required`.
#[must_use]
pub fn decide_approval(
    existing: Option<&ApprovalEntry>,
    ask: &ApprovalAsk,
    claimed: bool,
) -> ApprovalDecision {
    let answer = |answer| ApprovalDecision {
        write: None,
        answer,
    };
    let invalidity = match existing {
        Some(ApprovalEntry::Rejected { reason, .. }) => {
            return answer(ApprovalCheck::Rejected(*reason));
        }
        Some(ApprovalEntry::Pending { pending, .. })
            if pending.request_sha256 == ask.request_sha256 =>
        {
            return answer(ApprovalCheck::Required(pending.clone()));
        }
        None | Some(ApprovalEntry::Pending { .. }) => None,
        Some(ApprovalEntry::Granted {
            grant,
            redeemed_by: Some(_),
        }) if claimed => return answer(ApprovalCheck::Proceed(grant.clone())),
        Some(ApprovalEntry::Granted {
            redeemed_by: Some(_),
            ..
        }) => None,
        Some(ApprovalEntry::Granted {
            grant,
            redeemed_by: None,
        }) => match grant_covers(grant, ask) {
            Ok(()) => return answer(ApprovalCheck::Proceed(grant.clone())),
            // A grant stands until it is used or expires: a call it does not cover is refused
            // and leaves it.
            Err(invalidity @ (Invalidity::RequestChanged | Invalidity::Moved)) => {
                return answer(ApprovalCheck::GrantStands(invalidity));
            }
            Err(invalidity) => Some(invalidity),
        },
    };
    let fresh = ask.fresh.clone();
    let write = ApprovalEntry::Pending {
        pending: fresh.clone(),
        expires_at_ms: unix_ms(ask.now).saturating_add(ask.retention_ms),
    };
    ApprovalDecision {
        write: Some(write),
        answer: match invalidity {
            Some(invalidity) => ApprovalCheck::Invalid(fresh, invalidity),
            None => ApprovalCheck::Required(fresh),
        },
    }
}

/// The one decision every store makes for an approval, given the entry it holds under the
/// approval's ledger key: the entry to write. Approvals lapsed by now no longer count; one by
/// a person who already approved counts once, however their name is spelled
/// ([`ApproverIdentity`]); the grant forms when as many different people
/// as the pending approval requires (raised to what `step`'s arguments need, for an approval
/// with edits) have approved the same preview (and the same edits), and lapses with the first
/// of their approvals. It names the approval rules of the preview and those `step` adds for
/// its edits.
///
/// # Errors
///
/// [`ApprovalError::NotPending`] unless that entry is the pending approval `step` names;
/// [`ApprovalError::PreviewMismatch`] when the person saw another preview;
/// [`ApprovalError::Expired`] when the expiry is not after now;
/// [`ApprovalError::EditsDiffer`] when another approver approved other edits (or none);
/// [`ApprovalError::NoApprover`] when the approver's name is empty once normalized;
/// [`ApprovalError::SignatureRequired`] when the pending approval (or the edit) needs signed
/// approvals and this one is not signed;
/// [`ApprovalError::CallerCannotApprove`] when the contract asks someone other than the caller
/// and this approval is the caller's;
/// [`SignedDecisionRefusal::UntiedApprover`](crate::control::SignedDecisionRefusal::UntiedApprover)
/// when this approval and one given before cannot be told apart from the caller's.
pub fn decide_approve(
    existing: Option<&ApprovalEntry>,
    step: &ApproveStep,
) -> Result<ApprovalEntry, ApprovalError> {
    let Some(ApprovalEntry::Pending {
        pending,
        expires_at_ms,
    }) = existing
    else {
        return Err(ApprovalError::NotPending);
    };
    if pending.approval_id != step.approval_id {
        return Err(ApprovalError::NotPending);
    }
    if ApproverIdentity::of(&step.approver).is_none() {
        return Err(ApprovalError::NoApprover);
    }
    if pending.preview_sha256 != step.preview_sha256 {
        return Err(ApprovalError::PreviewMismatch);
    }
    if step.expires_at <= step.now {
        return Err(ApprovalError::Expired);
    }
    let mut pending = pending.clone();
    pending.approvals_required = pending.approvals_required.max(step.approvals_required);
    pending.signatures_required |= step.signatures_required;
    if pending.signatures_required && !step.basis.is_signed() {
        return Err(ApprovalError::SignatureRequired);
    }
    pending
        .approvals
        .retain(|given| given.expires_at > step.now);
    let this = Person::of(&pending, step.person_ref.as_deref(), &step.basis);
    if pending.by_another && this == Person::Caller {
        return Err(ApprovalError::CallerCannotApprove);
    }
    // Two approvals are two people only when the store can tell: one whose person is unknown
    // (an enrolled approver without a subject) may be the caller, so it never joins one of
    // the caller's. Decided here, in the step that records it, so two arriving at once
    // cannot both pass.
    let before = pending
        .approvals
        .iter()
        .map(|given| Person::of(&pending, given.person_ref.as_deref(), &given.basis));
    let mut same_person = false;
    for person in before {
        match (&this, &person) {
            (Person::Unknown, Person::Caller) | (Person::Caller, Person::Unknown) => {
                return Err(ApprovalError::Refused(
                    SignedDecisionRefusal::UntiedApprover,
                ));
            }
            (Person::Known(a), Person::Known(b)) if a == b => same_person = true,
            (Person::Caller, Person::Caller) => same_person = true,
            _ => {}
        }
    }
    if pending
        .approvals
        .iter()
        .any(|given| given.edited_arguments != step.edited_arguments)
    {
        return Err(ApprovalError::EditsDiffer);
    }
    let counted = same_person
        || pending
            .approvals
            .iter()
            .any(|given| same_approver(&given.approver, &step.approver));
    if !counted {
        pending.approvals.push(GivenApproval {
            approver: step.approver.clone(),
            approved_at: step.now,
            expires_at: step.expires_at,
            edited_arguments: step.edited_arguments.clone(),
            basis: step.basis.clone(),
            person_ref: step.person_ref.clone(),
        });
    }
    if pending.approvals_still_needed() > 0 {
        return Ok(ApprovalEntry::Pending {
            pending,
            expires_at_ms: *expires_at_ms,
        });
    }
    let expires_at = pending
        .approvals
        .iter()
        .map(|given| given.expires_at)
        .min()
        .unwrap_or(step.expires_at);
    let mut required_by = pending.preview.required_by;
    for rule in &step.required_by {
        if !required_by.contains(rule) {
            required_by.push(rule.clone());
        }
    }
    let grant = ApprovalGrant {
        earlier_run: pending.preview.earlier_run,
        required_by,
        approval_id: pending.approval_id,
        request_sha256: pending.request_sha256,
        preview_sha256: pending.preview_sha256,
        tool: pending.preview.tool,
        principal_ref: pending.principal_ref,
        operation_id: pending.operation_id,
        approvals_required: pending.approvals_required,
        signatures_required: pending.signatures_required,
        approvals: pending.approvals,
        expires_at,
        ledger_key: pending.ledger_key,
        edited_arguments: step.edited_arguments.clone(),
    };
    Ok(ApprovalEntry::Granted {
        grant,
        redeemed_by: None,
    })
}

/// Who gave an approval, as far as the store can tell.
#[derive(Debug, PartialEq, Eq)]
enum Person<'a> {
    /// The principal who asked: an answer at their client, or an approver named as them.
    Caller,
    /// Someone else, by their person reference.
    Known(&'a str),
    /// An enrolled approver whose subject the directory does not say.
    Unknown,
}

impl<'a> Person<'a> {
    fn of(pending: &PendingApproval, person_ref: Option<&'a str>, basis: &ApprovalBasis) -> Self {
        // An answer at the client is the caller's, whatever a row from before person
        // references says.
        if matches!(basis, ApprovalBasis::Client) {
            return Person::Caller;
        }
        match person_ref {
            Some(person) if person == pending.caller_person_ref => Person::Caller,
            Some(person) => Person::Known(person),
            None => Person::Unknown,
        }
    }
}

/// The one decision every store makes for a rejection: the entry to write.
///
/// # Errors
///
/// [`ApprovalError::NotPending`] unless that entry is the pending approval `step` names.
pub fn decide_reject(
    existing: Option<&ApprovalEntry>,
    step: &RejectStep,
) -> Result<ApprovalEntry, ApprovalError> {
    match existing {
        Some(ApprovalEntry::Pending { pending, .. }) if pending.approval_id == step.approval_id => {
            Ok(ApprovalEntry::Rejected {
                approval_id: step.approval_id.clone(),
                reason: step.reason,
                expires_at_ms: unix_ms(step.now).saturating_add(step.retention_ms),
            })
        }
        _ => Err(ApprovalError::NotPending),
    }
}

/// The one decision every store makes when a fresh claim redeems the grant of
/// `approval_id`: the entry to write (the grant, redeemed by `lease`), or `None` when the
/// grant is spent, gone or another (the claim then writes nothing).
#[must_use]
pub fn decide_redeem(
    existing: Option<&ApprovalEntry>,
    approval_id: &str,
    lease: &Lease,
) -> Option<ApprovalEntry> {
    match existing {
        Some(ApprovalEntry::Granted {
            grant,
            redeemed_by: None,
        }) if grant.approval_id == approval_id => Some(ApprovalEntry::Granted {
            grant: grant.clone(),
            redeemed_by: Some(lease.clone()),
        }),
        _ => None,
    }
}

/// The grant `lease` redeemed, given back: the execution released its key without sending
/// anything, so the approval still stands for the next call.
pub(crate) fn unredeem(existing: Option<&ApprovalEntry>, lease: &Lease) -> Option<ApprovalEntry> {
    match existing {
        Some(ApprovalEntry::Granted {
            grant,
            redeemed_by: Some(by),
        }) if by == lease => Some(ApprovalEntry::Granted {
            grant: grant.clone(),
            redeemed_by: None,
        }),
        _ => None,
    }
}

/// Whether `entry` lapsed by `now` (what a purge removes).
pub(crate) fn approval_expired(entry: &ApprovalEntry, now_ms: u64) -> bool {
    entry.expires_at_ms() <= now_ms
}

/// Whether `record` is finished and past its retention or window: its operation is over, and
/// a claim now starts a new one.
pub(crate) fn operation_over(record: &Record, now_ms: u64) -> bool {
    record.state.is_terminal() && record.expires_at_ms <= now_ms
}

/// Whether `record`'s operation is over and the record is not kept past it (what a purge
/// removes).
pub(crate) fn record_expired(record: &Record, now_ms: u64) -> bool {
    operation_over(record, now_ms) && !record.kept
}

/// Whether `record` is finished and its window ended by `window_ended_by_ms` (what an
/// operator's purge of operations removes, kept or not).
pub(crate) fn window_ended(record: &Record, window_ended_by_ms: u64) -> bool {
    record.state.is_terminal() && record.expires_at_ms <= window_ended_by_ms
}

pub(crate) fn grant_covers(grant: &ApprovalGrant, asked: &ApprovalAsk) -> Result<(), Invalidity> {
    // A lapsed grant covers nothing and is replaced, whatever it was for.
    if grant.expires_at <= asked.now {
        return Err(Invalidity::Expired);
    }
    if grant.tool != asked.tool
        || grant.principal_ref != asked.principal_ref
        || grant.operation_id != asked.operation_id
        || grant.ledger_key != asked.ledger_key
    {
        return Err(Invalidity::Moved);
    }
    if grant.request_sha256 != asked.request_sha256 {
        return Err(Invalidity::RequestChanged);
    }
    Ok(())
}

/// Whether a reconcile pass settles `record` at `now_ms`: in flight with its lease over, or
/// `unknown`.
pub(crate) fn is_stale(record: &Record, now_ms: u64) -> bool {
    (record.state.is_in_flight() && record.lease_until_ms <= now_ms)
        || record.state == WriteState::Unknown
}
