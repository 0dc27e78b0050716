//! The file log's writer: a thread of its own that takes every append waiting, writes them,
//! syncs once for all of them, and only then answers each. No runtime thread waits on the
//! disk, and many callers cost one sync.

use std::future::Future;
use std::sync::{Arc, mpsc};
use std::thread::{self, JoinHandle};

use tokio::sync::oneshot;

use super::AuditLogError;
use super::file::{Active, Before, Shared};
use super::record::Members;

/// The most appends one sync covers: a bound on how long the first of them waits.
const MOST_AT_ONCE: usize = 512;

/// The thread that writes a log's appends, and where to send them.
#[derive(Debug)]
pub(super) struct Writer {
    appends: mpsc::Sender<Append>,
    thread: JoinHandle<()>,
}

/// One record to append, and where to say it is durable.
#[derive(Debug)]
struct Append {
    members: Members,
    answer: oneshot::Sender<Result<(), AuditLogError>>,
}

impl Writer {
    /// Starts the thread that writes `shared`'s appends.
    pub(super) fn start(shared: Arc<Shared>) -> Result<Self, AuditLogError> {
        let (appends, waiting) = mpsc::channel();
        let thread = thread::Builder::new()
            .name("tool-contract-audit".to_owned())
            .spawn(move || write_while_open(&shared, &waiting))?;
        Ok(Writer { appends, thread })
    }

    /// Sends the record of `members` to the writer; the future answers once it is synced
    /// (or could not be written).
    pub(super) fn append(
        &self,
        members: Members,
    ) -> impl Future<Output = Result<(), AuditLogError>> + Send + 'static {
        let (answer, answered) = oneshot::channel();
        let sent = self.appends.send(Append { members, answer }).is_ok();
        async move {
            if !sent {
                return Err(AuditLogError::WriterStopped);
            }
            answered.await.unwrap_or(Err(AuditLogError::WriterStopped))
        }
    }

    /// Lets the thread write what was sent, and waits for it to end.
    pub(super) fn stop(self) {
        drop(self.appends);
        let _ = self.thread.join();
    }
}

/// Until the log is dropped: takes every append waiting (up to [`MOST_AT_ONCE`]) and
/// writes them as one.
fn write_while_open(shared: &Shared, waiting: &mpsc::Receiver<Append>) {
    while let Ok(first) = waiting.recv() {
        let mut batch = vec![first];
        batch.extend(waiting.try_iter().take(MOST_AT_ONCE - 1));
        let mut active = shared.active();
        write_batch(shared, &mut active, batch);
    }
}

/// Writes `batch` in order, syncs once, seals the head, and answers each append. A record
/// that would take the segment past its limit first has those before it synced and
/// answered, and the segment rotated.
fn write_batch(shared: &Shared, active: &mut Active, batch: Vec<Append>) {
    if let Err(error) = shared.follow_outside_changes(active) {
        for append in batch {
            let _ = append.answer.send(Err(error.again()));
        }
        return;
    }
    let mut written = Vec::with_capacity(batch.len());
    let mut before = Before::of(active);
    for Append { members, answer } in batch {
        let (mut line, mut next) = shared.line_for(active, &members);
        if Shared::past_limit(active, &line) {
            settle(shared, active, &before, &mut written);
            if let Err(error) = shared.rotate_locked(active) {
                let _ = answer.send(Err(error));
                before = Before::of(active);
                continue;
            }
            before = Before::of(active);
            (line, next) = shared.line_for(active, &members);
        }
        if let Err(error) = shared.write_line(active, line, next) {
            before.restore(active);
            for waiting in written.drain(..) {
                let _ = waiting.send(Err(error.again()));
            }
            let _ = answer.send(Err(error));
        } else {
            written.push(answer);
        }
    }
    settle(shared, active, &before, &mut written);
}

/// Syncs what `written` waits on and seals the head after it, then answers each: `Ok` once
/// the records are durable; an error if the sync failed (the records cut off again) or the
/// seal did (the records stay: they are durable, but the checkpoint or tree head is not).
fn settle(
    shared: &Shared,
    active: &mut Active,
    before: &Before,
    written: &mut Vec<oneshot::Sender<Result<(), AuditLogError>>>,
) {
    if written.is_empty() {
        return;
    }
    let settled = shared
        .sync(active, before)
        .and_then(|()| shared.seal(active));
    for waiting in written.drain(..) {
        let _ = waiting.send(settled.as_ref().map_err(AuditLogError::again).copied());
    }
}
