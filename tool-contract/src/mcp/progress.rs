//! What a handler tells its client while it runs, sent in order and before the call's
//! answer: progress reports as `notifications/progress`, when the request asked for them
//! with a `progressToken`, and log messages as `notifications/message`, when the session set
//! a log level they reach (the handshake revisions' logging utility).

// rmcp marks its logging types deprecated, since SEP-2577 deprecates logging on 2026-07-28;
// the handshake revisions, which have it, are the only ones it is served on.
#![allow(deprecated)]

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::Peer;
use rmcp::model::ProgressToken;
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam};
use rmcp::service::{RequestContext, RoleServer};
use tokio::sync::mpsc;

use crate::dispatch::{LogLevel, LogSink, Progress, ProgressSink};

/// The least level of log message a session's client listens for, once it set one with
/// `logging/setLevel`; shared by the requests of one session.
#[derive(Debug, Default)]
pub(super) struct SessionLogLevel(Mutex<Option<LogLevel>>);

impl SessionLogLevel {
    pub(super) fn set(&self, level: LogLevel) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(level);
    }

    fn get(&self) -> Option<LogLevel> {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// MCP's name of `level` (the same eight levels).
pub(super) fn log_level_of(level: LoggingLevel) -> LogLevel {
    match level {
        LoggingLevel::Debug => LogLevel::Debug,
        LoggingLevel::Info => LogLevel::Info,
        LoggingLevel::Notice => LogLevel::Notice,
        LoggingLevel::Warning => LogLevel::Warning,
        LoggingLevel::Error => LogLevel::Error,
        LoggingLevel::Critical => LogLevel::Critical,
        LoggingLevel::Alert => LogLevel::Alert,
        LoggingLevel::Emergency => LogLevel::Emergency,
    }
}

fn logging_level(level: LogLevel) -> LoggingLevel {
    match level {
        LogLevel::Debug => LoggingLevel::Debug,
        LogLevel::Info => LoggingLevel::Info,
        LogLevel::Notice => LoggingLevel::Notice,
        LogLevel::Warning => LoggingLevel::Warning,
        LogLevel::Error => LoggingLevel::Error,
        LogLevel::Critical => LoggingLevel::Critical,
        LogLevel::Alert => LoggingLevel::Alert,
        // `LogLevel` is non-exhaustive to its users, never here.
        LogLevel::Emergency => LoggingLevel::Emergency,
    }
}

/// One thing a handler told its client.
enum Told {
    Progress(Progress),
    Log(LogLevel, String),
}

/// Where a request's reports go, and what sends them on.
pub(super) struct Listening {
    token: Option<ProgressToken>,
    /// The tool, named as the logger of its messages.
    tool: String,
    told: mpsc::UnboundedReceiver<Told>,
}

/// The sinks of `request_context`'s progress (if it asked for it) and of the log messages of
/// `tool` (if the session listens at some level), and what sends them on; `None` when no one
/// listens.
pub(super) fn listen(
    request_context: &RequestContext<RoleServer>,
    log_level: Option<&Arc<SessionLogLevel>>,
    tool: &str,
) -> Option<(Option<ProgressSink>, Option<LogSink>, Listening)> {
    let token = request_context.meta.get_progress_token();
    let least = log_level.filter(|level| level.get().is_some()).cloned();
    if token.is_none() && least.is_none() {
        return None;
    }
    let (sender, told) = mpsc::unbounded_channel();
    // The receiver is gone once the answer went: a late report has no one to reach.
    let progress = token.is_some().then(|| {
        let sender = sender.clone();
        ProgressSink::new(move |progress| {
            let _ = sender.send(Told::Progress(progress));
        })
    });
    let log = least.map(|least| {
        LogSink::new(move |level, message| {
            // The level is read as each message is logged: a client may change it mid-call.
            if least.get().is_some_and(|least| level >= least) {
                let _ = sender.send(Told::Log(level, message));
            }
        })
    });
    let listening = Listening {
        token,
        tool: tool.to_owned(),
        told,
    };
    Some((progress, log, listening))
}

/// Runs `work`, sending each report made meanwhile to `peer`, and every one left once it
/// ends, before its output is returned.
pub(super) async fn while_sending<F: Future>(
    listening: Option<Listening>,
    peer: &Peer<RoleServer>,
    work: F,
) -> F::Output {
    let Some(Listening {
        token,
        tool,
        mut told,
    }) = listening
    else {
        return work.await;
    };
    let send = async |told: Told| {
        // A client that went away misses a report; the work goes on.
        let _ = match told {
            Told::Progress(progress) => {
                let Some(token) = token.clone() else {
                    return;
                };
                let mut param = ProgressNotificationParam::new(token, progress.done);
                param.total = progress.total;
                param.message = progress.message;
                peer.notify_progress(param).await
            }
            Told::Log(level, message) => {
                let mut param = LoggingMessageNotificationParam::new(
                    logging_level(level),
                    serde_json::Value::String(message),
                );
                param.logger = Some(tool.clone());
                peer.notify_logging_message(param).await
            }
        };
    };
    let mut work = std::pin::pin!(work);
    loop {
        tokio::select! {
            output = &mut work => {
                while let Ok(told) = told.try_recv() {
                    send(told).await;
                }
                return output;
            }
            Some(told) = told.recv() => send(told).await,
        }
    }
}
