//! How far a handler's work has come, told to whoever listens for it (an MCP client that sent
//! a `progressToken`), and nothing when nobody does.

use std::fmt;
use std::sync::Arc;

/// One report of how far a handler's work has come.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Progress {
    /// How much is done; it grows with each report.
    pub done: f64,
    /// How much there is in all, when the handler knows.
    pub total: Option<f64>,
    /// What it is doing, in words.
    pub message: Option<String>,
}

impl Progress {
    /// `done` of `total`.
    #[must_use]
    pub fn of(done: f64, total: f64) -> Self {
        Progress {
            done,
            total: Some(total),
            message: None,
        }
    }

    /// The same report, saying what the work is doing.
    #[must_use]
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }
}

/// Where a call's progress goes: its caller's listener.
#[derive(Clone)]
pub(crate) struct ProgressSink(Arc<dyn Fn(Progress) + Send + Sync>);

impl ProgressSink {
    pub(crate) fn new(listener: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        ProgressSink(Arc::new(listener))
    }

    pub(crate) fn tell(&self, progress: Progress) {
        (self.0)(progress);
    }
}

impl fmt::Debug for ProgressSink {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("ProgressSink")
    }
}
