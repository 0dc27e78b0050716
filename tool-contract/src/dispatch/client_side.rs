//! What a call's client gives its handler besides the input: where the handler's progress
//! reports and log messages go (an MCP client that sent a `progressToken`, or set a log
//! level), and the client's answers to what the tool asked it (MCP input responses).

use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

/// What the client gives a call's handler besides its input; nothing for a caller that is
/// not a client (a provider's turn).
#[derive(Debug, Clone, Default)]
pub(crate) struct ClientSide {
    /// Who listens for the handler's progress, if anyone does.
    pub(crate) progress: Option<ProgressSink>,
    /// Who listens for the handler's log messages, if anyone does.
    pub(crate) log: Option<LogSink>,
    /// The client's answers to the tool's questions, by the key each was asked under.
    pub(crate) answers: Arc<Map<String, Value>>,
}

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

/// How much a log message matters: the eight levels of the syslog protocol (RFC 5424,
/// section 6.2.1), which MCP's logging utility uses, least to most severe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum LogLevel {
    /// Detail for whoever debugs the tool.
    Debug,
    /// What the tool is doing.
    Info,
    /// Normal, but worth noting.
    Notice,
    /// Something may be wrong.
    Warning,
    /// Something failed.
    Error,
    /// A part of the tool failed.
    Critical,
    /// Someone must act at once.
    Alert,
    /// The tool cannot be used.
    Emergency,
}

impl LogLevel {
    /// The level's name as MCP and syslog write it (`"debug"` to `"emergency"`).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }
}

/// Where a call's log messages go: its caller's listener, which keeps those at the level it
/// listens at or above.
#[derive(Clone)]
pub(crate) struct LogSink(Arc<dyn Fn(LogLevel, String) + Send + Sync>);

impl LogSink {
    /// Only a transport that can tell its client makes one (the MCP server).
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn new(listener: impl Fn(LogLevel, String) + Send + Sync + 'static) -> Self {
        LogSink(Arc::new(listener))
    }

    pub(crate) fn tell(&self, level: LogLevel, message: String) {
        (self.0)(level, message);
    }
}

impl fmt::Debug for LogSink {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("LogSink")
    }
}

/// Where a call's progress goes: its caller's listener.
#[derive(Clone)]
pub(crate) struct ProgressSink(Arc<dyn Fn(Progress) + Send + Sync>);

impl ProgressSink {
    /// Only a transport that can tell its client makes one (the MCP server).
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
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
