//! A log's writer thread: it takes every append waiting and hands them to the log as one
//! batch, so that no runtime thread waits on the disk and many callers cost one sync.

use std::future::Future;
use std::sync::mpsc;
use std::thread::{self, JoinHandle};

use tokio::sync::oneshot;

use super::AuditLogError;
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
pub(super) struct Append {
    pub(super) members: Members,
    pub(super) answer: oneshot::Sender<Result<(), AuditLogError>>,
}

impl Writer {
    /// Starts the thread that hands each batch of appends waiting (up to [`MOST_AT_ONCE`])
    /// to `write`, until the writer is stopped.
    pub(super) fn start(
        mut write: impl FnMut(Vec<Append>) + Send + 'static,
    ) -> Result<Self, AuditLogError> {
        let (appends, waiting) = mpsc::channel::<Append>();
        let thread = thread::Builder::new()
            .name("tool-contract-audit".to_owned())
            .spawn(move || {
                while let Ok(first) = waiting.recv() {
                    let mut batch = vec![first];
                    batch.extend(waiting.try_iter().take(MOST_AT_ONCE - 1));
                    write(batch);
                }
            })?;
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
