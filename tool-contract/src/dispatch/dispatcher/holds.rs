//! What a dispatcher keeps of the tasks its work holds and of who waits: each held task, what
//! it waits on, and how its work learns the hold was lost; and a waiter, woken by the store.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use tokio::sync::Notify;

use crate::control::Watch;

/// How often a request waiting on a task or a decision reads the store although nobody told
/// it of a change: the store tells; this is for what it might not (another process on an
/// SQLite file, a listener reconnecting).
pub(crate) const SAFETY_POLL: Duration = Duration::from_secs(5);

/// How often a waiter reads the store when the store cannot tell it of a change
/// ([`ControlStore::changes`] is `None`).
pub(crate) const UNTOLD_POLL: Duration = Duration::from_millis(250);

/// What a held task waits on now, as the beat checks it when no one told its waiter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Awaits {
    /// Nothing: the work runs.
    Nothing,
    /// The client's answers (`tasks/update`): the task leaves `input_required`.
    Answers,
    /// A decision on this approval.
    Decision(String),
}

pub(super) struct Holding {
    pub(super) lost: Arc<Notify>,
    pub(super) awaits: Awaits,
}

/// The tasks this dispatcher's work holds, held together by its worker's lease.
#[derive(Default)]
pub(crate) struct Holds {
    held: Mutex<HashMap<String, Holding>>,
    /// The renewal of them all, started by the first hold.
    pub(super) beat: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Holds {
    pub(super) fn held(&self) -> MutexGuard<'_, HashMap<String, Holding>> {
        self.held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Drop for Holds {
    fn drop(&mut self) {
        if let Some(beat) = self
            .beat
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
        {
            beat.abort();
        }
    }
}

/// A task this dispatcher's work holds ([`Dispatcher::holding`]): held by its worker's lease,
/// and looked at each beat, until dropped.
pub(crate) struct HeldTask {
    pub(super) holds: Weak<Holds>,
    pub(super) task_id: String,
    pub(super) lost: Arc<Notify>,
}

impl HeldTask {
    /// Returns once the hold is lost: another replica took the task over, or it ended or
    /// went away.
    pub(crate) async fn lost(&self) {
        self.lost.notified().await;
    }
}

/// What a held task waits on, said until dropped ([`Dispatcher::task_awaits`]).
pub(crate) struct Awaiting {
    pub(super) holds: Weak<Holds>,
    pub(super) task_id: String,
}

impl Awaiting {
    pub(super) fn set(holds: &Holds, task_id: &str, awaits: Awaits) {
        if let Some(holding) = holds.held().get_mut(task_id) {
            holding.awaits = awaits;
        }
    }
}

impl Drop for Awaiting {
    fn drop(&mut self) {
        if let Some(holds) = self.holds.upgrade() {
            Self::set(&holds, &self.task_id, Awaits::Nothing);
        }
    }
}

impl Drop for HeldTask {
    fn drop(&mut self) {
        if let Some(holds) = self.holds.upgrade() {
            holds.held().remove(&self.task_id);
        }
    }
}

/// What a waiter waits with: the store's word on what it watches, or, from a store that
/// cannot tell, a short poll.
pub(crate) struct Waiter {
    pub(super) watch: Option<Watch>,
    pub(super) poll: Option<Duration>,
}

impl Waiter {
    /// Returns once what it watches may have changed: it was told so, or its poll came.
    pub(crate) async fn next(&self) {
        match (&self.watch, self.poll) {
            (Some(watch), Some(poll)) => {
                let changed = std::pin::pin!(watch.changed());
                let polled = std::pin::pin!(tokio::time::sleep(poll));
                futures_util::future::select(changed, polled).await;
            }
            (Some(watch), None) => watch.changed().await,
            (None, poll) => tokio::time::sleep(poll.unwrap_or(UNTOLD_POLL)).await,
        }
    }
}
