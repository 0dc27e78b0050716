//! What this dispatcher's tasks cost while they wait: its worker's lease, which holds every
//! task its work holds, renewed once per third of a lease (one row written however many
//! wait), the approvals they wait on checked together in the same beat, and each waiter woken
//! by the store when what it waits on changed, rather than reading the store on a timer.

use std::collections::HashSet;
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::Notify;

use super::Dispatcher;
use super::holds::{Awaiting, Awaits, HeldTask, Holding, Holds, UNTOLD_POLL, Waiter};
use super::tasks::{TASK_LEASE, millis};
use crate::control::{Changed, Changes, ControlStore, RowSeal, TaskStatus, WorkerRenewal};

impl Dispatcher {
    /// Holds `task_id` for this dispatcher's work (its hold already taken) until the
    /// returned guard drops: by the worker's lease, renewed once per third of a
    /// [`TASK_LEASE`] for every task held here.
    pub(crate) fn holding(&self, task_id: &str) -> HeldTask {
        let lost = Arc::new(Notify::new());
        self.holds.held().insert(
            task_id.to_owned(),
            Holding {
                lost: Arc::clone(&lost),
                awaits: Awaits::Nothing,
            },
        );
        self.start_beat();
        HeldTask {
            holds: Arc::downgrade(&self.holds),
            task_id: task_id.to_owned(),
            lost,
        }
    }

    /// Says what the held task `task_id` waits on until the returned guard drops: what the
    /// beat looks at for its waiter when the store told it nothing.
    pub(crate) fn task_awaits(&self, task_id: &str, awaits: Awaits) -> Awaiting {
        Awaiting::set(&self.holds, task_id, awaits);
        Awaiting {
            holds: Arc::downgrade(&self.holds),
            task_id: task_id.to_owned(),
        }
    }

    /// A waiter on `keys`: woken by the store, and besides reading it every `poll` (`None`:
    /// never, what the beat covers); from a store that cannot tell, every
    /// [`UNTOLD_POLL`]. Watch before reading what is waited on, so no change falls between.
    pub(crate) fn waiter(&self, keys: &[Changed], poll: Option<Duration>) -> Waiter {
        match self.store.changes() {
            Some(changes) => Waiter {
                watch: Some(changes.watch(keys)),
                poll,
            },
            None => Waiter {
                watch: None,
                poll: Some(UNTOLD_POLL),
            },
        }
    }

    fn start_beat(&self) {
        let mut beat = self
            .holds
            .beat
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if beat.is_some() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let beating = Beat {
            holds: Arc::downgrade(&self.holds),
            store: Arc::clone(&self.store),
            changes: self.store.changes(),
            seal: self.row_seal.clone(),
            owner: self.owner.clone(),
            clock: self.clock,
        };
        *beat = Some(runtime.spawn(beating.run()));
    }
}

/// The renewal of one dispatcher's holds, and the look at what they wait on.
struct Beat {
    holds: Weak<Holds>,
    store: Arc<dyn ControlStore>,
    changes: Option<Arc<Changes>>,
    seal: RowSeal,
    owner: String,
    clock: fn() -> time::OffsetDateTime,
}

impl Beat {
    fn now_ms(&self) -> u64 {
        let millis = (self.clock)().unix_timestamp_nanos() / 1_000_000;
        u64::try_from(millis).unwrap_or(0)
    }

    async fn run(self) {
        loop {
            tokio::time::sleep(TASK_LEASE / 3).await;
            let Some(holds) = self.holds.upgrade() else {
                return;
            };
            self.once(&holds).await;
        }
    }

    /// One beat: the worker's lease renewed in one step, the loss of each task told to its
    /// work, and the waiters of what changed untold woken.
    async fn once(&self, holds: &Holds) {
        let held: Vec<(String, Awaits)> = holds
            .held()
            .iter()
            .map(|(task_id, holding)| (task_id.clone(), holding.awaits.clone()))
            .collect();
        if held.is_empty() {
            return;
        }
        let now_ms = self.now_ms();
        let renewal = WorkerRenewal {
            worker: self.owner.clone(),
            until_ms: now_ms.saturating_add(millis(TASK_LEASE)),
            task_ids: held.iter().map(|(task_id, _)| task_id.clone()).collect(),
            now_ms,
            seal: self.seal.clone(),
        };
        let standing = match self.store.renew_worker(&renewal).await {
            Ok(standing) => standing,
            Err(error) => {
                // Tried again at the next beat, with a third of the lease still to run.
                tracing::warn!(stage = "tasks", %error, "the worker's lease could not be renewed");
                return;
            }
        };
        let mut moved = Vec::new();
        {
            let held_now = holds.held();
            for ((task_id, awaits), standing) in held.iter().zip(standing) {
                match standing {
                    Some(status) => {
                        let answered =
                            *awaits != Awaits::Nothing && status != TaskStatus::InputRequired;
                        if answered {
                            moved.push(Changed::Task(task_id.clone()));
                        }
                    }
                    None => {
                        if let Some(holding) = held_now.get(task_id) {
                            holding.lost.notify_one();
                        }
                    }
                }
            }
        }
        let approvals: Vec<String> = held
            .iter()
            .filter_map(|(_, awaits)| match awaits {
                Awaits::Decision(approval_id) => Some(approval_id.clone()),
                _ => None,
            })
            .collect();
        if !approvals.is_empty() {
            match self
                .store
                .still_pending(&approvals, now_ms, &self.seal)
                .await
            {
                Ok(pending) => {
                    let pending: HashSet<String> = pending.into_iter().collect();
                    moved.extend(
                        approvals
                            .into_iter()
                            .filter(|approval_id| !pending.contains(approval_id))
                            .map(Changed::Approval),
                    );
                }
                Err(error) => {
                    tracing::warn!(stage = "tasks", %error, "the awaited approvals could not be read");
                }
            }
        }
        if let Some(changes) = &self.changes {
            for changed in &moved {
                changes.changed(changed);
            }
        }
    }
}
