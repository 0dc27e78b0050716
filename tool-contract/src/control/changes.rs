//! Who waits for what in a store: a waiter watches the approvals and tasks it waits on, and
//! the store, having written a decision or moved a task, wakes exactly their waiters, so that
//! waiting reads nothing until something happened.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use tokio::sync::Notify;

/// What changed in a control store, as its waiters are told: an approval decided (granted,
/// rejected, or one more approver given), or a task moved (anything but a renewed hold).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Changed {
    /// The approval with this id.
    Approval(String),
    /// The task with this id.
    Task(String),
}

impl Changed {
    /// The change as one line of text: what PostgreSQL's `NOTIFY` carries between replicas.
    #[must_use]
    pub fn to_payload(&self) -> String {
        match self {
            Changed::Approval(id) => format!("approval:{id}"),
            Changed::Task(id) => format!("task:{id}"),
        }
    }

    /// The change a [payload](Self::to_payload) names; `None` for any other text.
    #[must_use]
    pub fn from_payload(payload: &str) -> Option<Self> {
        if let Some(id) = payload.strip_prefix("approval:") {
            Some(Changed::Approval(id.to_owned()))
        } else {
            payload
                .strip_prefix("task:")
                .map(|id| Changed::Task(id.to_owned()))
        }
    }
}

/// Each key's watches: the watch's id, and how to wake it while it lives.
type Waiters = HashMap<Changed, Vec<(u64, Weak<Notify>)>>;

/// The waiters of one store (or of every replica's view of it), woken by what it changed.
///
/// A store that can tell its waiters returns its `Changes` from
/// [`ControlStore::changes`](crate::control::ControlStore::changes) and calls
/// [`changed`](Self::changed) for every approval it decides and every task it moves: the
/// memory and SQLite stores as they write (their waiters are in this process), PostgreSQL
/// as every replica's listener hears the `NOTIFY` its transaction sent on commit. A change
/// that may have been missed (a listener that reconnected) wakes every waiter
/// ([`changed_everything`](Self::changed_everything)): each looks again.
///
/// ```
/// use tool_contract::control::{Changed, Changes};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let changes = Changes::new();
/// let watch = changes.watch(&[Changed::Approval("ap-1".into())]);
/// changes.changed(&Changed::Approval("ap-2".into()));
/// assert!(!watch.has_changed());
/// changes.changed(&Changed::Approval("ap-1".into()));
/// watch.changed().await; // at once: the change came after the watch began
/// # });
/// ```
#[derive(Debug, Default)]
pub struct Changes {
    waiters: Mutex<Waiters>,
    next_watch: AtomicU64,
}

impl Changes {
    /// No one waiting yet.
    #[must_use]
    pub fn new() -> Arc<Self> {
        Arc::default()
    }

    fn waiters(&self) -> MutexGuard<'_, Waiters> {
        // Each write under the lock is one insert or removal: a panic leaves nothing half done.
        self.waiters
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Starts watching `keys`: a change to any of them from now on wakes the watch, even
    /// one that comes before the watch is awaited, so a waiter watches first, then reads
    /// the store, then waits.
    #[must_use]
    pub fn watch(self: &Arc<Self>, keys: &[Changed]) -> Watch {
        let id = self.next_watch.fetch_add(1, Ordering::Relaxed);
        let notify = Arc::new(Notify::new());
        let mut waiters = self.waiters();
        for key in keys {
            waiters
                .entry(key.clone())
                .or_default()
                .push((id, Arc::downgrade(&notify)));
        }
        drop(waiters);
        Watch {
            changes: Arc::clone(self),
            keys: keys.to_vec(),
            id,
            notify,
        }
    }

    /// Wakes every watch of `key`.
    pub fn changed(&self, key: &Changed) {
        let waiters = self.waiters();
        for (_, notify) in waiters.get(key).into_iter().flatten() {
            if let Some(notify) = notify.upgrade() {
                // A stored permit: a watch not yet awaited returns at once when it is.
                notify.notify_one();
            }
        }
    }

    /// Wakes every watch: what a store does when it may have missed a change.
    pub fn changed_everything(&self) {
        let waiters = self.waiters();
        for (_, notify) in waiters.values().flatten() {
            if let Some(notify) = notify.upgrade() {
                notify.notify_one();
            }
        }
    }

    /// How many watches are waiting now.
    #[must_use]
    pub fn watching(&self) -> usize {
        let waiters = self.waiters();
        let mut ids: Vec<u64> = waiters.values().flatten().map(|(id, _)| *id).collect();
        ids.sort_unstable();
        ids.dedup();
        ids.len()
    }

    fn unwatch(&self, keys: &[Changed], id: u64) {
        let mut waiters = self.waiters();
        for key in keys {
            if let Some(watches) = waiters.get_mut(key) {
                watches.retain(|(watch, _)| *watch != id);
                if watches.is_empty() {
                    waiters.remove(key);
                }
            }
        }
    }
}

/// A watch on some approvals and tasks ([`Changes::watch`]), ended when dropped.
#[derive(Debug)]
pub struct Watch {
    changes: Arc<Changes>,
    keys: Vec<Changed>,
    id: u64,
    notify: Arc<Notify>,
}

impl Watch {
    /// Returns once one of the watched keys changed since the watch began or since this
    /// last returned.
    pub async fn changed(&self) {
        self.notify.notified().await;
    }

    /// Whether a change is waiting to be taken by [`changed`](Self::changed) (without
    /// taking it).
    #[must_use]
    pub fn has_changed(&self) -> bool {
        use std::future::Future;
        use std::task::{Context, Poll, Waker};
        let notified = std::pin::pin!(self.notify.notified());
        let mut notified = notified;
        let mut context = Context::from_waker(Waker::noop());
        let ready = notified.as_mut().poll(&mut context) == Poll::Ready(());
        if ready {
            // Taken to look: given back.
            self.notify.notify_one();
        }
        ready
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.changes.unwatch(&self.keys, self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn approval(id: &str) -> Changed {
        Changed::Approval(id.to_owned())
    }

    #[test]
    fn a_payload_reads_back_as_the_change_it_names() {
        for change in [approval("ap-1"), Changed::Task("t:1".to_owned())] {
            assert_eq!(Changed::from_payload(&change.to_payload()), Some(change));
        }
        assert_eq!(Changed::from_payload("something else"), None);
    }

    #[test]
    fn a_change_before_the_wait_is_kept_for_it() {
        let changes = Changes::new();
        let watch = changes.watch(&[approval("a")]);
        changes.changed(&approval("a"));
        assert!(watch.has_changed());
        assert!(watch.has_changed(), "looking does not take it");
    }

    #[test]
    fn a_change_to_another_key_wakes_no_one() {
        let changes = Changes::new();
        let watch = changes.watch(&[approval("a"), Changed::Task("t".to_owned())]);
        changes.changed(&approval("b"));
        assert!(!watch.has_changed());
        changes.changed(&Changed::Task("t".to_owned()));
        assert!(watch.has_changed());
    }

    #[test]
    fn everything_changed_wakes_every_watch() {
        let changes = Changes::new();
        let watches = [
            changes.watch(&[approval("a")]),
            changes.watch(&[approval("b")]),
        ];
        changes.changed_everything();
        assert!(watches.iter().all(Watch::has_changed));
    }

    #[test]
    fn a_dropped_watch_leaves_nothing_behind() {
        let changes = Changes::new();
        let first = changes.watch(&[approval("a")]);
        let second = changes.watch(&[approval("a"), approval("b")]);
        assert_eq!(changes.watching(), 2);
        drop(first);
        assert_eq!(changes.watching(), 1);
        drop(second);
        assert_eq!(changes.watching(), 0);
        assert!(changes.waiters().is_empty());
    }
}
