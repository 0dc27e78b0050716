//! Each step of a store, written once over the rows it reads and writes: a store supplies
//! [`Rows`] (its rows under one transaction) and runs these.

use std::future::Future;

use super::decide::{operation_over, unredeem};
use crate::control::seal::RowSeal;
use crate::control::state::WriteState;
use crate::control::{
    Advance, Advanced, Claim, ClaimDecision, Claimed, Lease, Record, Release, StoreError,
    decide_advance, decide_approval, decide_approve, decide_claim, decide_redeem, decide_reject,
};
use crate::control::{
    ApprovalAsk, ApprovalCheck, ApprovalEntry, ApprovalError, ApprovalLook, ApproveStep, Approved,
    RejectStep, unix_ms,
};
use crate::control::{
    Approver, DirectoryChange, DirectoryWrite, EnrollError, SignCount, SignCountCheck,
    decide_directory_write, decide_sign_count,
};
use crate::control::{
    Changed, StaleTasks, TaskChange, TaskCreation, TaskMove, TaskMoveError, TaskRow, TaskStatus,
    WorkerRenewal, decide_task_move,
};

/// What a record must still be for a fenced write to apply: its state and lease as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fence {
    pub(crate) state: WriteState,
    pub(crate) lease: Lease,
}

impl Fence {
    pub(crate) fn of(record: &Record) -> Self {
        Fence {
            state: record.state,
            lease: record.lease.clone(),
        }
    }
}

/// The rows of one store, inside one transaction (or under one lock).
pub(crate) trait Rows {
    /// Serializes every step on `key` until the transaction ends (a no-op where the whole
    /// store is locked).
    fn lock_key(&mut self, key: &str) -> impl Future<Output = Result<(), StoreError>> + Send;

    fn record(
        &mut self,
        key: &str,
    ) -> impl Future<Output = Result<Option<Record>, StoreError>> + Send;

    /// Writes `record`: a new row when `fence` is `None`, else over the row only if it is
    /// still in the fence's state under the fence's lease, checked in the same statement.
    /// Returns whether it was written.
    fn put_record(
        &mut self,
        record: &Record,
        fence: Option<&Fence>,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Deletes the row at `key` if it is still in the fence's state under its lease.
    fn delete_record(
        &mut self,
        key: &str,
        fence: &Fence,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// The approval entry at `key`, with the seal its row carries (`None`: it has none).
    fn approval(
        &mut self,
        key: &str,
    ) -> impl Future<Output = Result<Option<(ApprovalEntry, Option<String>)>, StoreError>> + Send;

    /// The ledger key of the approval `approval_id`, if one is stored.
    fn approval_key(
        &mut self,
        approval_id: &str,
    ) -> impl Future<Output = Result<Option<String>, StoreError>> + Send;

    /// Writes `entry` under `key` with its `seal`, in place of what is there.
    fn put_approval(
        &mut self,
        key: &str,
        entry: &ApprovalEntry,
        seal: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// The approver row of `approver_id`: its stored JSON and its seal.
    fn approver_row(
        &mut self,
        approver_id: &str,
    ) -> impl Future<Output = Result<Option<(String, Option<String>)>, StoreError>> + Send;

    /// Every approver row: its id, stored JSON and seal.
    fn approver_rows(
        &mut self,
    ) -> impl Future<Output = Result<Vec<(String, String, Option<String>)>, StoreError>> + Send;

    /// Writes the approver row of `approver_id`, in place of what is there.
    fn put_approver_row(
        &mut self,
        approver_id: &str,
        body: &str,
        seal: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// The task row `task_id`: its stored JSON and its seal.
    fn task_row(
        &mut self,
        task_id: &str,
    ) -> impl Future<Output = Result<Option<(String, Option<String>)>, StoreError>> + Send;

    /// Writes `task`'s row as `body` with its `seal`: a new row when `new` (nothing written
    /// over a row with its id), else in place of its row. Returns whether it was written.
    fn put_task_row(
        &mut self,
        task: &TaskRow,
        body: &str,
        seal: &str,
        new: bool,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// The lease row of `worker`: until when it runs, and its seal.
    fn worker_lease(
        &mut self,
        worker: &str,
    ) -> impl Future<Output = Result<Option<(u64, String)>, StoreError>> + Send;

    /// Writes `worker`'s lease row, in place of what is there.
    fn put_worker_lease(
        &mut self,
        worker: &str,
        until_ms: u64,
        seal: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// How many approvals `principal_ref` holds pending at `now_ms`, as the rows' columns
    /// say, besides the one at `except_key`.
    fn pending_approvals_of(
        &mut self,
        principal_ref: &str,
        except_key: &str,
        now_ms: u64,
    ) -> impl Future<Output = Result<usize, StoreError>> + Send;

    /// How many of `owner`'s tasks are open (neither ended nor expired) at `now_ms`, as the
    /// rows' columns say.
    fn open_tasks_of(
        &mut self,
        owner: &str,
        now_ms: u64,
    ) -> impl Future<Output = Result<usize, StoreError>> + Send;

    /// Has `change` told to every replica's waiters when this transaction commits (nothing
    /// if it rolls back). The default tells no one: the memory and SQLite stores, whose
    /// waiters share their process, tell them once the step returned.
    fn announce(
        &mut self,
        change: &Changed,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        let _ = change;
        std::future::ready(Ok(()))
    }
}

/// A task row read: its seal checked, its JSON read, its id its own.
fn opened_task(
    task_id: &str,
    body: &str,
    stored_seal: Option<&str>,
    seal: &RowSeal,
) -> Result<TaskRow, StoreError> {
    seal.open_task(task_id, body, stored_seal)?;
    let task: TaskRow = serde_json::from_str(body)
        .map_err(|error| StoreError::Corrupt(format!("task {task_id}: {error}")))?;
    if task.task_id != task_id {
        return Err(StoreError::Corrupt(format!(
            "the row of task {task_id} holds task {}",
            task.task_id
        )));
    }
    Ok(task)
}

/// Writes `task`'s row, sealed.
async fn write_task(
    rows: &mut impl Rows,
    task: &TaskRow,
    seal: &RowSeal,
    new: bool,
) -> Result<bool, StoreError> {
    let (body, sealed) = sealed_task(task, seal)?;
    rows.put_task_row(task, &body, &sealed, new).await
}

/// `task`'s row: its JSON and its seal.
pub(crate) fn sealed_task(task: &TaskRow, seal: &RowSeal) -> Result<(String, String), StoreError> {
    let body = serde_json::to_string(task)
        .map_err(|error| StoreError::Corrupt(format!("a task does not encode: {error}")))?;
    let sealed = seal.seal_task(&task.task_id, &body)?;
    Ok((body, sealed))
}

/// The lock every change of the task `task_id` takes.
pub(crate) fn task_lock(task_id: &str) -> String {
    format!("tool-contract/task\n{task_id}")
}

/// Creates `task` unless its owner holds `open_limit` open tasks, under the owner's lock.
pub(crate) async fn create_task_within(
    rows: &mut impl Rows,
    task: &TaskRow,
    open_limit: usize,
    seal: &RowSeal,
) -> Result<TaskCreation, StoreError> {
    rows.lock_key(&format!("tool-contract/tasks-of\n{}", task.owner))
        .await?;
    if rows.open_tasks_of(&task.owner, task.created_at_ms).await? >= open_limit {
        return Ok(TaskCreation::OwnerFull);
    }
    Ok(if write_task(rows, task, seal, true).await? {
        TaskCreation::Created
    } else {
        TaskCreation::IdTaken
    })
}

/// Creates `task`: `false` when a task with its id is stored already.
pub(crate) async fn create_task(
    rows: &mut impl Rows,
    task: &TaskRow,
    seal: &RowSeal,
) -> Result<bool, StoreError> {
    write_task(rows, task, seal, true).await
}

/// The task `task_id` if `owner` (when named) owns it and it has not expired at `now_ms`.
pub(crate) async fn read_task(
    rows: &mut impl Rows,
    task_id: &str,
    owner: Option<&str>,
    now_ms: u64,
    seal: &RowSeal,
) -> Result<Option<TaskRow>, StoreError> {
    let Some((body, stored_seal)) = rows.task_row(task_id).await? else {
        return Ok(None);
    };
    task_from_row(task_id, &body, stored_seal.as_deref(), owner, now_ms, seal)
}

/// Whether a task's work needs a worker: not ended, not expired, its hold lapsed by
/// `now_ms` (the hold's lease read with [`worker_holds_until`]).
fn task_is_stale(task: &TaskRow, now_ms: u64) -> bool {
    !task.status.is_terminal() && !task.expired(now_ms) && task.lease_until_ms <= now_ms
}

/// `task` with its hold's lease as long as its worker's own: the later of the two, the
/// worker's read from its lease row (until when, and its seal). A row that does not open
/// under `seal` holds nothing, and is reported.
fn worker_holds_until(mut task: TaskRow, lease: Option<&(u64, String)>, seal: &RowSeal) -> TaskRow {
    let (Some(worker), Some((until_ms, stored_seal))) = (task.worker.as_deref(), lease) else {
        return task;
    };
    match seal.open_worker(worker, *until_ms, Some(stored_seal)) {
        Ok(()) => task.lease_until_ms = task.lease_until_ms.max(*until_ms),
        Err(error) => {
            tracing::error!(stage = "store", worker, %error, "a worker's lease row does not open");
        }
    }
    task
}

/// The lease row of the worker holding `task`, when one is named.
async fn lease_of_worker(
    rows: &mut impl Rows,
    task: &TaskRow,
) -> Result<Option<(u64, String)>, StoreError> {
    match &task.worker {
        Some(worker) => rows.worker_lease(worker).await,
        None => Ok(None),
    }
}

/// The task a row holds (its `body` and `stored_seal`, checked with `seal`), if `owner`
/// (when named) owns it and it has not expired.
pub(crate) fn task_from_row(
    task_id: &str,
    body: &str,
    stored_seal: Option<&str>,
    owner: Option<&str>,
    now_ms: u64,
    seal: &RowSeal,
) -> Result<Option<TaskRow>, StoreError> {
    let task = opened_task(task_id, body, stored_seal, seal)?;
    let visible = owner.is_none_or(|owner| owner == task.owner) && !task.expired(now_ms);
    Ok(visible.then_some(task))
}

/// A task's row as a stale scan reads it: its id, body and seal, and its worker's lease row
/// (until when, and its seal) when there is one.
pub(crate) type StaleRow = (String, String, Option<String>, Option<(u64, String)>);

/// The stale tasks among `found` rows, each opened with `seal`: one that does not open is
/// listed as unreadable, and the others still taken.
pub(crate) fn stale_tasks_of(
    found: impl IntoIterator<Item = StaleRow>,
    now_ms: u64,
    seal: &RowSeal,
) -> StaleTasks {
    let mut stale = StaleTasks::default();
    for (task_id, body, stored_seal, lease) in found {
        let opened = task_from_row(&task_id, &body, stored_seal.as_deref(), None, now_ms, seal);
        let held =
            opened.map(|task| task.map(|task| worker_holds_until(task, lease.as_ref(), seal)));
        match held {
            Ok(Some(task)) if task_is_stale(&task, now_ms) => stale.tasks.push(task),
            Ok(_) => {}
            Err(error) => stale.unreadable.push((task_id, error)),
        }
    }
    stale
}

/// Moves a task as [`decide_task_move`] decides, under the task's lock.
pub(crate) async fn move_task(
    rows: &mut impl Rows,
    step: &TaskMove,
) -> Result<Result<TaskRow, TaskMoveError>, StoreError> {
    rows.lock_key(&task_lock(&step.task_id)).await?;
    let found = read_task(
        rows,
        &step.task_id,
        step.owner.as_deref(),
        step.now_ms,
        &step.seal,
    )
    .await?;
    let Some(mut task) = found else {
        return Ok(Err(TaskMoveError::NotFound));
    };
    let taking_over = matches!(&step.change, TaskChange::Hold { worker, .. }
        if task.worker.as_deref() != Some(worker.as_str()) && task.lease_until_ms <= step.now_ms);
    if taking_over {
        let lease = lease_of_worker(rows, &task).await?;
        task = worker_holds_until(task, lease.as_ref(), &step.seal);
    }
    match decide_task_move(&task, step) {
        Ok(next) => {
            if !write_task(rows, &next, &step.seal, false).await? {
                return Err(StoreError::LostRace);
            }
            if announced(step) {
                rows.announce(&Changed::Task(step.task_id.clone())).await?;
            }
            Ok(Ok(next))
        }
        Err(refusal) => Ok(Err(refusal)),
    }
}

/// Whether a task's move is told to its waiters: anything but a renewed hold, which changes
/// nothing anyone waits for.
pub(crate) fn announced(step: &TaskMove) -> bool {
    !matches!(step.change, TaskChange::Hold { .. })
}

/// A worker's lease renewed, and where each task its work holds stands: its status while its
/// row (opened) names the worker and it is open, else `None`.
pub(crate) async fn renew_worker(
    rows: &mut impl Rows,
    renewal: &WorkerRenewal,
) -> Result<Vec<Option<TaskStatus>>, StoreError> {
    let sealed = renewal
        .seal
        .seal_worker(&renewal.worker, renewal.until_ms)?;
    rows.put_worker_lease(&renewal.worker, renewal.until_ms, &sealed)
        .await?;
    let mut held = Vec::with_capacity(renewal.task_ids.len());
    for task_id in &renewal.task_ids {
        let Some((body, stored_seal)) = rows.task_row(task_id).await? else {
            held.push(None);
            continue;
        };
        let opened = task_from_row(
            task_id,
            &body,
            stored_seal.as_deref(),
            None,
            renewal.now_ms,
            &renewal.seal,
        );
        let task = opened.unwrap_or_else(|error| {
            // One row that does not open is that task's loss, not every other's.
            tracing::error!(stage = "store", %task_id, %error, "a held task's row does not open");
            None
        });
        held.push(task.and_then(|task| {
            let open = !task.status.is_terminal();
            (open && task.worker.as_deref() == Some(renewal.worker.as_str())).then_some(task.status)
        }));
    }
    Ok(held)
}

/// What every directory write locks: enrolling checks a credential id against every
/// approver's, so directory writes never interleave.
const DIRECTORY_LOCK: &str = "tool-contract/approver-directory";

/// An approver row read: its seal checked, its JSON read, its id its own.
fn opened_approver(
    approver_id: &str,
    body: &str,
    stored_seal: Option<&str>,
    seal: &RowSeal,
) -> Result<Approver, StoreError> {
    seal.open_approver(approver_id, body, stored_seal)?;
    let approver: Approver = crate::json::depth::from_slice(body.as_bytes())
        .map_err(|error| StoreError::Corrupt(format!("an approver row: {error}")))?;
    if approver.approver_id != approver_id {
        return Err(StoreError::Corrupt(format!(
            "the approver row of {approver_id:?} names another"
        )));
    }
    Ok(approver)
}

pub(crate) async fn read_approver(
    rows: &mut impl Rows,
    approver_id: &str,
    seal: &RowSeal,
) -> Result<Option<Approver>, StoreError> {
    let Some((body, stored_seal)) = rows.approver_row(approver_id).await? else {
        return Ok(None);
    };
    opened_approver(approver_id, &body, stored_seal.as_deref(), seal).map(Some)
}

async fn write_approver(
    rows: &mut impl Rows,
    approver: &Approver,
    seal: &RowSeal,
) -> Result<(), StoreError> {
    let body = serde_json::to_string(approver)
        .map_err(|error| StoreError::Corrupt(format!("an approver does not encode: {error}")))?;
    let sealed = seal.seal_approver(&approver.approver_id, &body)?;
    rows.put_approver_row(&approver.approver_id, &body, &sealed)
        .await
}

/// Every approver, each row's seal checked, by id.
pub(crate) async fn approvers(
    rows: &mut impl Rows,
    seal: &RowSeal,
) -> Result<Vec<Approver>, StoreError> {
    let mut approvers = rows
        .approver_rows()
        .await?
        .into_iter()
        .map(|(id, body, stored_seal)| opened_approver(&id, &body, stored_seal.as_deref(), seal))
        .collect::<Result<Vec<_>, _>>()?;
    approvers.sort_by(|a, b| a.approver_id.cmp(&b.approver_id));
    Ok(approvers)
}

pub(crate) async fn write_directory(
    rows: &mut impl Rows,
    write: &DirectoryWrite,
) -> Result<Result<Approver, EnrollError>, StoreError> {
    rows.lock_key(DIRECTORY_LOCK).await?;
    let existing = read_approver(rows, write.change.approver_id(), &write.seal).await?;
    let taken = match &write.change {
        DirectoryChange::Enroll { credential, .. } => approvers(rows, &write.seal)
            .await?
            .iter()
            .any(|approver| approver.credential(&credential.credential_id).is_some()),
        _ => false,
    };
    match decide_directory_write(existing.as_ref(), &write.change, taken) {
        Ok(approver) => {
            write_approver(rows, &approver, &write.seal).await?;
            Ok(Ok(approver))
        }
        Err(error) => Ok(Err(error)),
    }
}

pub(crate) async fn sign_count(
    rows: &mut impl Rows,
    count: &SignCount,
) -> Result<SignCountCheck, StoreError> {
    rows.lock_key(DIRECTORY_LOCK).await?;
    let existing = read_approver(rows, &count.approver_id, &count.seal).await?;
    let (write, answer) = decide_sign_count(existing.as_ref(), count);
    if let Some(approver) = write {
        write_approver(rows, &approver, &count.seal).await?;
    }
    Ok(answer)
}

/// The approval `approval_id` if it is still pending at `now_ms`, its seal checked.
pub(crate) async fn pending_approval(
    rows: &mut impl Rows,
    approval_id: &str,
    now_ms: u64,
    seal: &RowSeal,
) -> Result<Option<crate::control::PendingApproval>, StoreError> {
    let Some(key) = rows.approval_key(approval_id).await? else {
        return Ok(None);
    };
    Ok(match opened_approval(rows, &key, seal).await? {
        Some(ApprovalEntry::Pending {
            pending,
            expires_at_ms,
        }) if pending.approval_id == approval_id && expires_at_ms > now_ms => Some(pending),
        _ => None,
    })
}

/// Which of `approval_ids` are still pending at `now_ms`, each read as
/// [`pending_approval`] reads it.
pub(crate) async fn still_pending(
    rows: &mut impl Rows,
    approval_ids: &[String],
    now_ms: u64,
    seal: &RowSeal,
) -> Result<Vec<String>, StoreError> {
    let mut pending = Vec::new();
    for approval_id in approval_ids {
        if pending_approval(rows, approval_id, now_ms, seal)
            .await?
            .is_some()
        {
            pending.push(approval_id.clone());
        }
    }
    Ok(pending)
}

/// The approval entry at `key`, its seal checked: a row that does not open fails the step.
async fn opened_approval(
    rows: &mut impl Rows,
    key: &str,
    seal: &RowSeal,
) -> Result<Option<ApprovalEntry>, StoreError> {
    let Some((entry, stored_seal)) = rows.approval(key).await? else {
        return Ok(None);
    };
    seal.open(key, &entry, stored_seal.as_deref())?;
    Ok(Some(entry))
}

/// Writes `entry` under `key`, sealed.
async fn put_sealed(
    rows: &mut impl Rows,
    key: &str,
    entry: &ApprovalEntry,
    seal: &RowSeal,
) -> Result<(), StoreError> {
    let sealed = seal.seal(key, entry)?;
    rows.put_approval(key, entry, &sealed).await
}

fn written(applied: bool) -> Result<(), StoreError> {
    if applied {
        Ok(())
    } else {
        Err(StoreError::LostRace)
    }
}

pub(crate) async fn claim(rows: &mut impl Rows, claim: &Claim) -> Result<Claimed, StoreError> {
    rows.lock_key(&claim.key).await?;
    // A store whose one-statement claim takes no lock (PostgreSQL's `claim_if_absent`) can
    // insert the record between this step's read of an empty key and its insert, which then
    // writes nothing: the step reads the record that won and decides again, once.
    let mut empty_key_taken = false;
    loop {
        let existing = rows.record(&claim.key).await?;
        let fence = existing.as_ref().map(Fence::of);
        return match decide_claim(existing.as_ref(), claim) {
            ClaimDecision::Write(record) => {
                let redeemed = match &claim.redeem {
                    None => None,
                    Some(approval_id) => {
                        let entry = opened_approval(rows, &claim.key, &claim.seal).await?;
                        match decide_redeem(entry.as_ref(), approval_id, &claim.lease) {
                            Some(redeemed) => Some(redeemed),
                            None => return Ok(Claimed::GrantSpent),
                        }
                    }
                };
                if !rows.put_record(&record, fence.as_ref()).await? {
                    if fence.is_none() && !empty_key_taken {
                        empty_key_taken = true;
                        continue;
                    }
                    return Err(StoreError::LostRace);
                }
                if let Some(redeemed) = redeemed {
                    put_sealed(rows, &claim.key, &redeemed, &claim.seal).await?;
                }
                Ok(Claimed::Fresh)
            }
            ClaimDecision::WriteAndAnswer(record, answer) => {
                written(rows.put_record(&record, fence.as_ref()).await?)?;
                Ok(answer)
            }
            ClaimDecision::Answer(answer) => Ok(answer),
        };
    }
}

pub(crate) async fn advance(rows: &mut impl Rows, step: &Advance) -> Result<Advanced, StoreError> {
    rows.lock_key(&step.key).await?;
    let existing = rows.record(&step.key).await?;
    let decision = decide_advance(existing.as_ref(), step)?;
    if let (super::AdvanceDecision::Write(record), Some(existing)) = (&decision, &existing)
        && !rows.put_record(record, Some(&Fence::of(existing))).await?
    {
        // The fence caught a change the lock should have kept out: read it as it is.
        return Ok(Advanced::Stale(rows.record(&step.key).await?));
    }
    Ok(decision.into())
}

pub(crate) async fn release(rows: &mut impl Rows, release: &Release) -> Result<bool, StoreError> {
    rows.lock_key(&release.key).await?;
    let fence = Fence {
        state: WriteState::Executing,
        lease: release.lease.clone(),
    };
    if !rows.delete_record(&release.key, &fence).await? {
        return Ok(false);
    }
    if release.return_grant {
        let entry = opened_approval(rows, &release.key, &release.seal).await?;
        if let Some(restored) = unredeem(entry.as_ref(), &release.lease) {
            put_sealed(rows, &release.key, &restored, &release.seal).await?;
        }
    }
    Ok(true)
}

pub(crate) async fn check_approval(
    rows: &mut impl Rows,
    ask: &ApprovalAsk,
) -> Result<ApprovalCheck, StoreError> {
    rows.lock_key(&ask.ledger_key).await?;
    let existing = opened_approval(rows, &ask.ledger_key, &ask.seal).await?;
    let now_ms = unix_ms(ask.now);
    let claimed = rows
        .record(&ask.ledger_key)
        .await?
        .is_some_and(|record| !operation_over(&record, now_ms));
    let decision = decide_approval(existing.as_ref(), ask, claimed);
    if let Some(entry) = &decision.write {
        // Another pending approval of the principal's, where none of this key was: bounded.
        let adds_pending = matches!(entry, ApprovalEntry::Pending { .. })
            && !matches!(existing, Some(ApprovalEntry::Pending { .. }));
        if adds_pending
            && rows
                .pending_approvals_of(&ask.principal_ref, &ask.ledger_key, now_ms)
                .await?
                >= ask.pending_limit
        {
            return Ok(ApprovalCheck::CallerFull);
        }
        put_sealed(rows, &ask.ledger_key, entry, &ask.seal).await?;
    }
    Ok(decision.answer)
}

/// The look of a write that needs approval: the record at the ask's key and, when the
/// approval stage would write nothing, its answer. Only reads.
pub(crate) async fn look_for_approval(
    rows: &mut impl Rows,
    ask: &ApprovalAsk,
) -> Result<ApprovalLook, StoreError> {
    let record = rows.record(&ask.ledger_key).await?;
    let entry = opened_approval(rows, &ask.ledger_key, &ask.seal).await?;
    Ok(approval_look(record, entry.as_ref(), ask))
}

/// What a look that read `record` and the approval entry `entry` (its seal checked)
/// answers for `ask`.
pub(crate) fn approval_look(
    record: Option<Record>,
    entry: Option<&ApprovalEntry>,
    ask: &ApprovalAsk,
) -> ApprovalLook {
    let claimed = record
        .as_ref()
        .is_some_and(|record| !operation_over(record, unix_ms(ask.now)));
    let decision = decide_approval(entry, ask, claimed);
    ApprovalLook {
        record,
        check: decision.write.is_none().then_some(decision.answer),
    }
}

pub(crate) async fn approve(
    rows: &mut impl Rows,
    step: &ApproveStep,
) -> Result<Result<Approved, ApprovalError>, StoreError> {
    let Some(key) = rows.approval_key(&step.approval_id).await? else {
        return Ok(Err(ApprovalError::NotPending));
    };
    rows.lock_key(&key).await?;
    let existing = opened_approval(rows, &key, &step.seal).await?;
    let entry = match decide_approve(existing.as_ref(), step) {
        Ok(entry) => entry,
        Err(error) => return Ok(Err(error)),
    };
    put_sealed(rows, &key, &entry, &step.seal).await?;
    rows.announce(&Changed::Approval(step.approval_id.clone()))
        .await?;
    match entry {
        ApprovalEntry::Granted { grant, .. } => Ok(Ok(Approved::Granted(grant))),
        ApprovalEntry::Pending { pending, .. } => Ok(Ok(Approved::Awaiting(pending))),
        ApprovalEntry::Rejected { .. } => Err(StoreError::Corrupt(
            "an approval decided into a rejection".into(),
        )),
    }
}

pub(crate) async fn reject(
    rows: &mut impl Rows,
    step: &RejectStep,
) -> Result<Result<(), ApprovalError>, StoreError> {
    let Some(key) = rows.approval_key(&step.approval_id).await? else {
        return Ok(Err(ApprovalError::NotPending));
    };
    rows.lock_key(&key).await?;
    let existing = opened_approval(rows, &key, &step.seal).await?;
    match decide_reject(existing.as_ref(), step) {
        Ok(entry) => {
            put_sealed(rows, &key, &entry, &step.seal).await?;
            rows.announce(&Changed::Approval(step.approval_id.clone()))
                .await?;
            Ok(Ok(()))
        }
        Err(error) => Ok(Err(error)),
    }
}

/// Each pending approval of `entries` (with its row's ledger key and seal) that is still
/// pending at `now_ms`, its seal checked, oldest first.
pub(crate) fn opened_pending(
    entries: impl IntoIterator<Item = (String, ApprovalEntry, Option<String>)>,
    now_ms: u64,
    seal: &RowSeal,
) -> Result<Vec<crate::control::PendingApproval>, StoreError> {
    let mut pending = Vec::new();
    for (key, entry, stored_seal) in entries {
        seal.open(&key, &entry, stored_seal.as_deref())?;
        if let ApprovalEntry::Pending {
            pending: one,
            expires_at_ms,
        } = entry
            && expires_at_ms > now_ms
        {
            pending.push((expires_at_ms, one));
        }
    }
    pending.sort_by(|a, b| (a.0, &a.1.approval_id).cmp(&(b.0, &b.1.approval_id)));
    Ok(pending.into_iter().map(|(_, pending)| pending).collect())
}
