//! A long call kept as a task in the control store: its row, its states and the moves the
//! store allows between them, decided here once for every store.
//!
//! The states are MCP's (2026-07-28 tasks extension, `io.modelcontextprotocol/tasks`, and the
//! 2025-11-25 tasks utility): `working`, `input_required`, then one of the terminal states
//! `completed`, `failed` or `cancelled`, which never change. A task belongs to the principal
//! that asked for it: any other reads it as absent.

use serde::{Deserialize, Serialize};

use super::error::StoreError;
use super::seal::RowSeal;

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// The call is under way.
    Working,
    /// The call waits for a person: an approval, or an answer.
    InputRequired,
    /// The call answered: [`TaskRow::outcome`] is its result.
    Completed,
    /// The call failed with a protocol error: [`TaskRow::outcome`] is the error.
    Failed,
    /// The call was cancelled before anything it does could have acted.
    Cancelled,
}

impl TaskStatus {
    /// Whether the task has ended: its state never changes again.
    #[must_use]
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }

    /// Its name on the wire and in the store.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::InputRequired => "input_required",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }
}

/// What [`ControlStore::create_task_within`](crate::control::ControlStore::create_task_within)
/// did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskCreation {
    /// The task is stored.
    Created,
    /// A task with its id is stored already: nothing was written.
    IdTaken,
    /// Its owner holds as many open tasks as the limit allows: nothing was written.
    OwnerFull,
}

/// What [`ControlStore::stale_tasks`](crate::control::ControlStore::stale_tasks) found: the
/// tasks a replica may take over, and the stale rows that did not open (a seal that does not
/// verify, a body that does not read), passed over so that one bad row never stops the others'
/// takeover.
#[derive(Debug, Clone, Default)]
pub struct StaleTasks {
    /// The tasks whose work needs a worker.
    pub tasks: Vec<TaskRow>,
    /// The ids of rows that did not open, each with why: for an operator to look at.
    pub unreadable: Vec<(String, StoreError)>,
}

/// One task as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskRow {
    /// Its id: 128 random bits and more, never chosen by a client.
    pub task_id: String,
    /// The principal it belongs to (`{tenant}/{subject}`); any other reads it as absent.
    pub owner: String,
    /// The tool it calls.
    pub tool: String,
    /// Where it stands.
    pub status: TaskStatus,
    /// What a person or model may read of where it stands.
    pub status_message: Option<String>,
    /// When it was created, in milliseconds since the Unix epoch.
    pub created_at_ms: u64,
    /// When it last changed.
    pub updated_at_ms: u64,
    /// How long after its creation it is kept; `None`: until it is purged by hand.
    pub ttl_ms: Option<u64>,
    /// How often a client should ask for it.
    pub poll_interval_ms: u64,
    /// Whether the work that may act has begun: from then on a cancellation no longer
    /// cancels it, and the task ends as the work does.
    pub began: bool,
    /// The call the task runs, as the server that created it wrote it (opaque to the store):
    /// what another replica needs to take the work over.
    pub call: Option<String>,
    /// The worker (one per dispatcher) whose work holds the task: while its lease runs, no
    /// other replica takes the task over.
    pub worker: Option<String>,
    /// Until when (ms since the Unix epoch) the hold the task was created or taken over with
    /// runs. Its worker's own lease, renewed for all its tasks at once
    /// ([`ControlStore::renew_worker`](crate::control::ControlStore::renew_worker)), holds it
    /// past that: another replica takes it over only once both lapsed.
    pub lease_until_ms: u64,
    /// What the work awaits while `input_required`, as the server that asked wrote it (the
    /// MCP server: the sealed state of the approval asked about), for whichever replica the
    /// answer reaches.
    pub awaiting: Option<String>,
    /// The result (`completed`), the error (`failed`) or the requests for input
    /// (`input_required`), as the exact JSON text every replica answers with.
    pub outcome: Option<String>,
}

impl TaskRow {
    /// When it expires, if it does: creation plus its TTL.
    #[must_use]
    pub fn expires_at_ms(&self) -> Option<u64> {
        self.ttl_ms
            .map(|ttl| self.created_at_ms.saturating_add(ttl))
    }

    /// Whether it has expired at `now_ms`: then it reads as absent, and is purged.
    #[must_use]
    pub fn expired(&self, now_ms: u64) -> bool {
        self.expires_at_ms().is_some_and(|at| at <= now_ms)
    }
}

/// A worker's lease renewed, and a look at the tasks its work holds: what
/// [`ControlStore::renew_worker`](crate::control::ControlStore::renew_worker) is handed once
/// per beat, however many tasks wait.
#[derive(Debug, Clone)]
pub struct WorkerRenewal {
    /// The worker (one per dispatcher).
    pub worker: String,
    /// Until when its lease runs, in milliseconds since the Unix epoch.
    pub until_ms: u64,
    /// The tasks its work holds.
    pub task_ids: Vec<String>,
    /// The time of the renewal, in milliseconds since the Unix epoch.
    pub now_ms: u64,
    /// What the lease's row is sealed with.
    pub seal: RowSeal,
}

/// A change to a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskChange {
    /// `worker` holds the task until `until_ms`: its own hold renewed, or a lapsed one taken
    /// over. Refused while another worker holds it (see [`TaskRow::lease_until_ms`]).
    Hold {
        /// The worker.
        worker: String,
        /// Until when.
        until_ms: u64,
    },
    /// The work that may act begins: refused once the task was cancelled, so that a
    /// cancelled task never acts.
    Begin,
    /// Work that cannot act (a read) begins: refused once the task was cancelled, and
    /// cancellable all the while it runs, since nothing of it acts.
    BeginReading,
    /// The work waits for a person, who is asked by `requests` (JSON): nothing of it acted
    /// (a write waiting for its approval has not run), so until it goes on the task may be
    /// cancelled.
    AwaitInput {
        /// The requests for input, as the wire carries them.
        requests: String,
        /// What the person is waiting on, in words.
        message: Option<String>,
        /// What the answer is recorded against (see [`TaskRow::awaiting`]).
        awaiting: Option<String>,
    },
    /// The person answered: the work goes on.
    Resume,
    /// The client answered some of what the task asked: `requests` (JSON) are still open,
    /// and the task keeps waiting; `None`, and the work goes on. `answers` is every answer so
    /// far, kept in [`TaskRow::awaiting`] for the work to read.
    Answer {
        /// The requests still open, as the wire carries them.
        requests: Option<String>,
        /// Every answer so far.
        answers: String,
    },
    /// The work answered with `result` (JSON).
    Complete {
        /// The result, as every replica answers it.
        result: String,
    },
    /// The work failed with `error` (a JSON-RPC error object).
    Fail {
        /// The error.
        error: String,
    },
    /// The client asked to cancel: granted only before the work began.
    Cancel,
}

/// A change the task's state does not allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TaskMoveError {
    /// No such task for this owner (or it expired).
    #[error("no such task")]
    NotFound,
    /// The task has ended; its state never changes again.
    #[error("the task has ended ({0:?})")]
    Ended(TaskStatus),
    /// The work began: it can no longer be cancelled, and ends as it does.
    #[error("the task's work has begun")]
    Began,
    /// The change does not apply in the task's state (answering a task that asks nothing,
    /// asking twice).
    #[error("the task is {0:?}")]
    NotAllowed(TaskStatus),
    /// Another worker holds the task: this one's work was taken over (its lease lapsed), and
    /// changes nothing more.
    #[error("another worker holds the task")]
    Held,
}

/// A task's change as a store applies it: the task, whose owner must be `owner` when one is
/// named (a client's request; the server's own work names none), the worker that must hold
/// it when one is named (the server's own work), the change, and the time.
#[derive(Debug, Clone)]
pub struct TaskMove {
    /// The task.
    pub task_id: String,
    /// The principal asking, or `None` for the server's own work.
    pub owner: Option<String>,
    /// The worker whose work this is, or `None` for a client's request.
    pub worker: Option<String>,
    /// The change.
    pub change: TaskChange,
    /// The time of the change, in milliseconds since the Unix epoch.
    pub now_ms: u64,
    /// What the task's row is sealed with, checked as it is read and written again.
    pub seal: RowSeal,
}

/// What `step` makes of `task`, or why it may not: the one decision every store applies
/// (under its lock, in the step that writes).
///
/// # Errors
///
/// [`TaskMoveError`]: the task ended, began (for a cancellation), is held by another worker,
/// or is not in a state the change applies to.
pub fn decide_task_move(task: &TaskRow, step: &TaskMove) -> Result<TaskRow, TaskMoveError> {
    let (change, now_ms) = (&step.change, step.now_ms);
    if task.status.is_terminal() {
        return Err(TaskMoveError::Ended(task.status));
    }
    let held_by_another =
        |worker: &str| task.worker.as_deref() != Some(worker) && task.lease_until_ms > now_ms;
    match (&step.worker, change) {
        (_, TaskChange::Hold { worker, .. }) if held_by_another(worker) => {
            return Err(TaskMoveError::Held);
        }
        (Some(worker), change)
            if !matches!(change, TaskChange::Hold { .. })
                && task.worker.as_deref() != Some(worker.as_str()) =>
        {
            return Err(TaskMoveError::Held);
        }
        _ => {}
    }
    let mut next = task.clone();
    next.updated_at_ms = now_ms.max(task.updated_at_ms);
    match change {
        TaskChange::Hold { worker, until_ms } => {
            next.worker = Some(worker.clone());
            next.lease_until_ms = *until_ms;
            // Holding is not a change a client sees.
            next.updated_at_ms = task.updated_at_ms;
        }
        TaskChange::Begin | TaskChange::BeginReading => {
            // Begun again by a replica that took the work over: the ledger answers for
            // what the first began.
            if task.status != TaskStatus::Working {
                return Err(TaskMoveError::NotAllowed(task.status));
            }
            next.began = *change == TaskChange::Begin;
        }
        TaskChange::AwaitInput {
            requests,
            message,
            awaiting,
        } => {
            if task.status != TaskStatus::Working {
                return Err(TaskMoveError::NotAllowed(task.status));
            }
            next.status = TaskStatus::InputRequired;
            next.status_message.clone_from(message);
            next.awaiting.clone_from(awaiting);
            next.outcome = Some(requests.clone());
            next.began = false;
        }
        TaskChange::Resume => {
            if task.status != TaskStatus::InputRequired {
                return Err(TaskMoveError::NotAllowed(task.status));
            }
            next.status = TaskStatus::Working;
            next.status_message = None;
            next.awaiting = None;
            next.outcome = None;
        }
        TaskChange::Answer { requests, answers } => {
            if task.status != TaskStatus::InputRequired {
                return Err(TaskMoveError::NotAllowed(task.status));
            }
            next.awaiting = Some(answers.clone());
            next.outcome.clone_from(requests);
            if requests.is_none() {
                next.status = TaskStatus::Working;
                next.status_message = None;
            }
        }
        TaskChange::Complete { result } => {
            next.status = TaskStatus::Completed;
            next.status_message = None;
            next.awaiting = None;
            next.outcome = Some(result.clone());
        }
        TaskChange::Fail { error } => {
            next.status = TaskStatus::Failed;
            next.status_message = None;
            next.awaiting = None;
            next.outcome = Some(error.clone());
        }
        TaskChange::Cancel => {
            if task.began {
                return Err(TaskMoveError::Began);
            }
            next.status = TaskStatus::Cancelled;
            next.status_message = Some("cancelled before anything acted".to_owned());
            next.awaiting = None;
            next.outcome = None;
        }
    }
    Ok(next)
}

/// A new task id: `task_` and 32 hex digits of the operating system's randomness (128
/// bits), or `None` when the system gives none (never a weaker id).
#[must_use]
pub fn new_task_id() -> Option<String> {
    let mut bytes = [0u8; 16];
    rand::TryRng::try_fill_bytes(&mut rand::rngs::SysRng, &mut bytes).ok()?;
    Some(format!("task_{}", hex::encode(bytes)))
}

/// Whether `text` is a task id as [`new_task_id`] draws one: anything else names no task, and
/// is answered so without asking a store (which may refuse its bytes, as PostgreSQL does NUL).
#[must_use]
pub fn is_task_id(text: &str) -> bool {
    text.strip_prefix("task_")
        .is_some_and(|hex| hex.len() == 32 && hex.bytes().all(|byte| byte.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_id_is_what_new_task_id_draws_and_nothing_else() {
        assert!(is_task_id(&new_task_id().unwrap()));
        for other in [
            "",
            "task_",
            "task_\u{0}0000000000000000000000000000000",
            "task_0000000000000000000000000000000g",
            "task_00000000000000000000000000000000\u{0}",
            "TASK_00000000000000000000000000000000",
        ] {
            assert!(!is_task_id(other), "{other:?}");
        }
    }

    fn working() -> TaskRow {
        TaskRow {
            task_id: new_task_id().unwrap(),
            owner: "acme/ana".to_owned(),
            tool: "export".to_owned(),
            status: TaskStatus::Working,
            status_message: None,
            created_at_ms: 1_000,
            updated_at_ms: 1_000,
            ttl_ms: Some(60_000),
            poll_interval_ms: 500,
            began: false,
            call: None,
            worker: Some("replica-a".to_owned()),
            lease_until_ms: 30_000,
            awaiting: None,
            outcome: None,
        }
    }

    /// `change` by replica A's work (or, for a cancellation, by the client) at `now_ms`.
    fn by_work(change: TaskChange, now_ms: u64) -> TaskMove {
        let worker = match change {
            TaskChange::Cancel => None,
            _ => Some("replica-a".to_owned()),
        };
        TaskMove {
            task_id: "t".to_owned(),
            owner: None,
            worker,
            change,
            now_ms,
            seal: seal(),
        }
    }

    fn seal() -> RowSeal {
        RowSeal::new(&crate::results::AuditKeys::new(
            crate::results::SecretKey::new([7; 32]).unwrap(),
        ))
    }

    fn moved(task: &TaskRow, change: TaskChange, now_ms: u64) -> Result<TaskRow, TaskMoveError> {
        decide_task_move(task, &by_work(change, now_ms))
    }

    fn done(change: TaskChange) -> TaskRow {
        moved(&working(), change, 2_000).unwrap()
    }

    #[test]
    fn a_terminal_task_never_changes() {
        let ended = [
            done(TaskChange::Complete {
                result: "{}".to_owned(),
            }),
            done(TaskChange::Fail {
                error: "{}".to_owned(),
            }),
            done(TaskChange::Cancel),
        ];
        let changes = [
            TaskChange::Begin,
            TaskChange::BeginReading,
            TaskChange::Resume,
            TaskChange::Cancel,
            TaskChange::Complete {
                result: "{}".to_owned(),
            },
            TaskChange::Fail {
                error: "{}".to_owned(),
            },
            TaskChange::AwaitInput {
                requests: "{}".to_owned(),
                message: None,
                awaiting: None,
            },
        ];
        for task in &ended {
            for change in &changes {
                assert_eq!(
                    moved(task, change.clone(), 3_000),
                    Err(TaskMoveError::Ended(task.status)),
                    "{change:?}"
                );
            }
        }
    }

    #[test]
    fn a_task_is_cancelled_only_before_its_work_began() {
        let began = done(TaskChange::Begin);
        assert!(began.began);
        assert_eq!(
            moved(&began, TaskChange::Cancel, 3_000),
            Err(TaskMoveError::Began)
        );
        let cancelled = done(TaskChange::Cancel);
        assert_eq!(cancelled.status, TaskStatus::Cancelled);
        // A cancelled task's work never begins.
        assert_eq!(
            moved(&cancelled, TaskChange::Begin, 3_000),
            Err(TaskMoveError::Ended(TaskStatus::Cancelled))
        );
    }

    #[test]
    fn a_read_is_cancelled_while_it_runs_and_never_begins_once_cancelled() {
        let reading = done(TaskChange::BeginReading);
        assert!(!reading.began, "a read acts on nothing");
        let cancelled = moved(&reading, TaskChange::Cancel, 3_000).unwrap();
        assert_eq!(cancelled.status, TaskStatus::Cancelled);
        assert_eq!(
            moved(&cancelled, TaskChange::BeginReading, 4_000),
            Err(TaskMoveError::Ended(TaskStatus::Cancelled))
        );
        // Its answer, arriving after, is refused: the task stays cancelled.
        let answered = TaskChange::Complete {
            result: "{}".to_owned(),
        };
        assert_eq!(
            moved(&cancelled, answered, 5_000),
            Err(TaskMoveError::Ended(TaskStatus::Cancelled))
        );
    }

    #[test]
    fn answers_keep_the_task_waiting_until_no_request_is_open() {
        let waiting = moved(
            &done(TaskChange::BeginReading),
            TaskChange::AwaitInput {
                requests: r#"{"a":{},"b":{}}"#.to_owned(),
                message: None,
                awaiting: Some("answers:{}".to_owned()),
            },
            3_000,
        )
        .unwrap();
        let partly = moved(
            &waiting,
            TaskChange::Answer {
                requests: Some(r#"{"b":{}}"#.to_owned()),
                answers: r#"answers:{"a":{}}"#.to_owned(),
            },
            4_000,
        )
        .unwrap();
        assert_eq!(partly.status, TaskStatus::InputRequired);
        assert_eq!(partly.outcome.as_deref(), Some(r#"{"b":{}}"#));
        let answered = moved(
            &partly,
            TaskChange::Answer {
                requests: None,
                answers: r#"answers:{"a":{},"b":{}}"#.to_owned(),
            },
            5_000,
        )
        .unwrap();
        assert_eq!(answered.status, TaskStatus::Working);
        assert_eq!(answered.outcome, None);
        assert_eq!(
            answered.awaiting.as_deref(),
            Some(r#"answers:{"a":{},"b":{}}"#),
            "kept for the work to read"
        );
        // Working asks nothing: an answer now is refused.
        let late = TaskChange::Answer {
            requests: None,
            answers: "answers:{}".to_owned(),
        };
        assert_eq!(
            moved(&answered, late, 6_000),
            Err(TaskMoveError::NotAllowed(TaskStatus::Working))
        );
    }

    #[test]
    fn input_is_asked_from_working_and_answered_back_to_it() {
        let began = done(TaskChange::Begin);
        let waiting = moved(
            &began,
            TaskChange::AwaitInput {
                requests: r#"{"approve":{}}"#.to_owned(),
                message: Some("two approvals".to_owned()),
                awaiting: Some("sealed".to_owned()),
            },
            3_000,
        )
        .unwrap();
        assert_eq!(waiting.status, TaskStatus::InputRequired);
        assert!(
            !waiting.began,
            "nothing acted while it waits: it may be cancelled"
        );
        assert_eq!(waiting.awaiting.as_deref(), Some("sealed"));
        assert_eq!(
            moved(
                &waiting,
                TaskChange::AwaitInput {
                    requests: "{}".to_owned(),
                    message: None,
                    awaiting: None,
                },
                3_000
            ),
            Err(TaskMoveError::NotAllowed(TaskStatus::InputRequired))
        );
        let resumed = moved(&waiting, TaskChange::Resume, 3_000).unwrap();
        assert_eq!(
            (resumed.status, resumed.outcome, resumed.awaiting),
            (TaskStatus::Working, None, None)
        );
        assert_eq!(
            moved(&working(), TaskChange::Resume, 3_000),
            Err(TaskMoveError::NotAllowed(TaskStatus::Working))
        );
    }

    #[test]
    fn a_task_is_taken_over_only_once_its_workers_lease_lapsed() {
        let task = working();
        let hold = |worker: &str, now_ms| TaskMove {
            task_id: "t".to_owned(),
            owner: None,
            worker: Some(worker.to_owned()),
            change: TaskChange::Hold {
                worker: worker.to_owned(),
                until_ms: now_ms + 30_000,
            },
            now_ms,
            seal: seal(),
        };
        assert_eq!(
            decide_task_move(&task, &hold("replica-b", 29_999)),
            Err(TaskMoveError::Held)
        );
        let renewed = decide_task_move(&task, &hold("replica-a", 29_999)).unwrap();
        assert_eq!(renewed.lease_until_ms, 59_999);
        let taken = decide_task_move(&task, &hold("replica-b", 30_000)).unwrap();
        assert_eq!(taken.worker.as_deref(), Some("replica-b"));
        // The worker whose lease was taken changes nothing more.
        assert_eq!(
            moved(&taken, TaskChange::Begin, 30_001),
            Err(TaskMoveError::Held)
        );
        assert_eq!(
            moved(
                &taken,
                TaskChange::Complete {
                    result: "{}".to_owned()
                },
                30_001
            ),
            Err(TaskMoveError::Held)
        );
    }

    #[test]
    fn a_task_expires_its_ttl_after_creation() {
        let task = working();
        assert!(!task.expired(60_999));
        assert!(task.expired(61_000));
        let kept = TaskRow {
            ttl_ms: None,
            ..working()
        };
        assert!(!kept.expired(u64::MAX));
    }

    #[test]
    fn task_ids_are_128_random_bits() {
        let (a, b) = (new_task_id().unwrap(), new_task_id().unwrap());
        assert_ne!(a, b);
        assert_eq!(a.len(), "task_".len() + 32);
    }
}
