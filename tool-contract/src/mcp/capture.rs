//! The client's own bytes of each `tools/call`'s arguments, taken as the transport reads them.
//!
//! rmcp hands a handler its arguments parsed into a map: a repeated member collapsed to the
//! last, `1e-400` rounded to `0.0`. Validation must read what the client sent, so the
//! server reads the session's input through [`Capturing`], which passes every byte on to
//! rmcp unchanged and keeps, for each `tools/call` request, the exact text of its
//! `params.arguments`, by request id. A call whose bytes were not kept is refused.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, ready};

use rmcp::model::{NumberOrString, RequestId};
use rmcp::service::{RequestContext, RoleServer};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::io::{AsyncRead, ReadBuf};

/// Requests whose arguments are kept at once; past that the oldest is dropped (its call is
/// refused), so a client sending requests that never reach a handler cannot grow the store.
const KEPT: usize = 64;

/// The calls kept, by request id.
#[derive(Debug, Default)]
pub(super) struct Captured {
    requests: Mutex<VecDeque<Kept>>,
}

impl Captured {
    /// What was kept of request `id`, taken out of the store.
    pub(super) fn take(&self, id: &RequestId) -> Option<Kept> {
        let key = id_key(id);
        let mut requests = self.requests();
        let at = requests.iter().position(|kept| kept.key == key)?;
        requests.remove(at)
    }

    /// Whether the call kept as request `id` asks for a task (`params.task`).
    pub(super) fn asks_task(&self, id: &RequestId) -> bool {
        let key = id_key(id);
        self.requests()
            .iter()
            .any(|kept| kept.key == key && kept.task.is_some())
    }

    /// Keeps the arguments of `line`, if it is one `tools/call` request read exactly (no
    /// repeated member on the way to them).
    fn keep(&self, line: &[u8]) {
        let Some(kept) = Kept::of(line) else {
            return;
        };
        let mut requests = self.requests();
        requests.retain(|earlier| earlier.key != kept.key);
        if requests.len() == KEPT {
            requests.pop_front();
        }
        requests.push_back(kept);
    }

    fn requests(&self) -> std::sync::MutexGuard<'_, VecDeque<Kept>> {
        self.requests.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What a 2025-11-25 `tools/call` says in `params.task`: that the client asks for a task,
/// kept `ttl` milliseconds at most when it names one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TaskAsked {
    /// `{ "ttl": ms }`, `ttl` optional.
    Ttl(Option<u64>),
    /// Anything else: refused, and nothing runs.
    Malformed,
}

impl TaskAsked {
    fn of(raw: &RawValue) -> TaskAsked {
        #[derive(Deserialize)]
        struct Params {
            ttl: Option<u64>,
        }
        match serde_json::from_str::<Params>(raw.get()) {
            Ok(params) => TaskAsked::Ttl(params.ttl),
            Err(_) => TaskAsked::Malformed,
        }
    }
}

/// The arguments of one `tools/call` request, as its client wrote them, and its request id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Kept {
    /// The request id, as [`id_key`] writes it.
    key: String,
    /// The tool it calls (`params.name`).
    tool: String,
    /// The exact text of `params.arguments` (`{}` when there is none).
    arguments: Vec<u8>,
    /// `params.task`, which rmcp does not read: 2025-11-25's request for a task.
    task: Option<TaskAsked>,
}

impl Kept {
    /// The arguments of `message`, if it is one `tools/call` request read exactly (no
    /// repeated member on the way to them).
    pub(super) fn of(message: &[u8]) -> Option<Kept> {
        #[derive(Deserialize)]
        struct Message<'a> {
            #[serde(borrow)]
            method: Option<Cow<'a, str>>,
            id: Option<Value>,
            #[serde(borrow)]
            params: Option<Params<'a>>,
        }
        #[derive(Deserialize)]
        struct Params<'a> {
            #[serde(borrow)]
            name: Option<Cow<'a, str>>,
            #[serde(borrow)]
            arguments: Option<&'a RawValue>,
            #[serde(borrow)]
            task: Option<&'a RawValue>,
        }
        // JSON text is UTF-8 (RFC 8259, section 8.1) even in members serde skips unread.
        let message = std::str::from_utf8(message).ok()?;
        let message = serde_json::from_str::<Message<'_>>(message).ok()?;
        let (Some("tools/call"), Some(id), Some(params)) =
            (message.method.as_deref(), message.id, message.params)
        else {
            return None;
        };
        let key = match id {
            Value::Number(number) => number.to_string(),
            Value::String(text) => format!("\"{text}"),
            _ => return None,
        };
        // No arguments at all is the empty object, as MCP has it.
        let arguments = params
            .arguments
            .map_or_else(|| b"{}".to_vec(), |raw| raw.get().as_bytes().to_vec());
        let tool = params.name.map(Cow::into_owned).unwrap_or_default();
        Some(Kept {
            key,
            tool,
            arguments,
            task: params.task.map(TaskAsked::of),
        })
    }

    /// The tool the request calls.
    #[cfg_attr(not(feature = "mcp-auth"), allow(dead_code))]
    pub(super) fn tool(&self) -> &str {
        &self.tool
    }

    /// The arguments, exactly as sent.
    #[cfg_attr(not(feature = "mcp-auth"), allow(dead_code))]
    pub(super) fn arguments(&self) -> &[u8] {
        &self.arguments
    }

    /// `params.task`, if the request has one.
    pub(super) fn task(&self) -> Option<TaskAsked> {
        self.task
    }

    /// The arguments and `params.task`, if they are those of request `id`.
    #[cfg_attr(not(feature = "mcp-http"), allow(dead_code))]
    pub(super) fn of_request(&self, id: &RequestId) -> Option<Kept> {
        (self.key == id_key(id)).then(|| self.clone())
    }

    /// The arguments, exactly as sent, taken.
    pub(super) fn into_arguments(self) -> Vec<u8> {
        self.arguments
    }
}

/// A request id as one string: a number as written, a string after a `"` (so `1` and `"1"`
/// stay two ids).
fn id_key(id: &RequestId) -> String {
    match id {
        NumberOrString::Number(number) => number.to_string(),
        NumberOrString::String(text) => format!("\"{text}"),
    }
}

/// A reader that passes the session's input on unchanged and keeps each `tools/call`'s
/// arguments in [`Captured`], one line (one JSON-RPC message) at a time. A line longer than
/// `max_line` is not kept, as rmcp does not read it either.
pub(super) struct Capturing<R> {
    inner: R,
    captured: Arc<Captured>,
    line: Vec<u8>,
    max_line: usize,
    /// Inside a line past `max_line`, until its newline.
    discarding: bool,
}

impl<R> Capturing<R> {
    pub(super) fn new(inner: R, captured: Arc<Captured>, max_line: usize) -> Self {
        Capturing {
            inner,
            captured,
            line: Vec::new(),
            max_line,
            discarding: false,
        }
    }

    fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let newline = bytes.iter().position(|&byte| byte == b'\n');
            let (part, rest) = bytes.split_at(newline.map_or(bytes.len(), |at| at + 1));
            bytes = rest;
            if !self.discarding && self.line.len() + part.len() > self.max_line {
                self.line = Vec::new();
                self.discarding = true;
            }
            if !self.discarding {
                self.line.extend_from_slice(part);
            }
            if newline.is_some() {
                if !self.discarding {
                    self.captured.keep(&self.line);
                }
                self.line.clear();
                self.discarding = false;
            }
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Capturing<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        this.feed(&buf.filled()[before..]);
        Poll::Ready(Ok(()))
    }
}

/// The arguments the HTTP transport kept for this request, when it came over HTTP.
#[cfg(feature = "mcp-http")]
pub(super) fn kept_over_http(request_context: &RequestContext<RoleServer>) -> Option<Kept> {
    request_context
        .extensions
        .get::<http::request::Parts>()?
        .extensions
        .get::<Kept>()?
        .of_request(&request_context.id)
}

#[cfg(not(feature = "mcp-http"))]
pub(super) fn kept_over_http(_request_context: &RequestContext<RoleServer>) -> Option<Kept> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The arguments kept of request `id`, taken.
    fn arguments(store: &Captured, id: &RequestId) -> Option<Vec<u8>> {
        store.take(id).map(Kept::into_arguments)
    }

    fn captured(lines: &[&str], max_line: usize) -> Arc<Captured> {
        let captured = Arc::new(Captured::default());
        let mut reader = Capturing::new(tokio::io::empty(), captured.clone(), max_line);
        let text = lines.join("\n") + "\n";
        // Fed in pieces, as a transport reads.
        for chunk in text.as_bytes().chunks(7) {
            reader.feed(chunk);
        }
        captured
    }

    #[test]
    fn a_calls_arguments_are_kept_as_the_client_wrote_them() {
        let store = captured(
            &[
                r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"t","arguments":{"a":1,"a":2,"x":1e-400}}}"#,
                r#"{"jsonrpc":"2.0","id":"r-4","method":"tools/call","params":{"name":"t"}}"#,
                r#"{"jsonrpc":"2.0","id":5,"method":"tools/list"}"#,
            ],
            1 << 20,
        );
        assert_eq!(
            arguments(&store, &NumberOrString::Number(3)).unwrap(),
            br#"{"a":1,"a":2,"x":1e-400}"#
        );
        assert_eq!(
            arguments(&store, &NumberOrString::Number(3)),
            None,
            "taken once"
        );
        let named = NumberOrString::String(Arc::from("r-4"));
        assert_eq!(arguments(&store, &named).unwrap(), b"{}");
        assert_eq!(arguments(&store, &NumberOrString::Number(5)), None);
    }

    #[test]
    fn a_calls_params_task_is_kept_beside_its_arguments() {
        let store = captured(
            &[
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","task":{"ttl":60000}}}"#,
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","task":{}}}"#,
                r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"t","task":"soon"}}"#,
                r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"t"}}"#,
            ],
            1 << 20,
        );
        assert!(store.asks_task(&NumberOrString::Number(1)));
        assert!(!store.asks_task(&NumberOrString::Number(4)));
        let asked = |id| {
            store
                .take(&NumberOrString::Number(id))
                .and_then(|kept| kept.task())
        };
        assert_eq!(asked(1), Some(TaskAsked::Ttl(Some(60_000))));
        assert_eq!(asked(2), Some(TaskAsked::Ttl(None)));
        assert_eq!(asked(3), Some(TaskAsked::Malformed));
        assert_eq!(asked(4), None);
    }

    #[test]
    fn a_message_that_repeats_a_member_on_the_way_keeps_nothing() {
        let store = captured(
            &[
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":1},"arguments":{"a":2}}}"#,
            ],
            1 << 20,
        );
        assert_eq!(arguments(&store, &NumberOrString::Number(1)), None);
    }

    /// Found by the `mcp_arguments` fuzz target: bytes that are not UTF-8 inside a member
    /// serde skipped unread, and the line's arguments were kept.
    #[test]
    fn a_line_that_is_not_utf8_keeps_nothing() {
        let line = b"{\"jsonrpc\":\"\xc32.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"t\"}}\n";
        let store = Arc::new(Captured::default());
        let mut reader = Capturing::new(tokio::io::empty(), store.clone(), 1 << 20);
        reader.feed(line);
        assert_eq!(arguments(&store, &NumberOrString::Number(4)), None);
    }

    #[test]
    fn a_line_past_the_limit_keeps_nothing_and_the_next_is_read() {
        let long = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"t","arguments":{{"a":"{}"}}}}}}"#,
            "x".repeat(500)
        );
        let short = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","arguments":{}}}"#;
        let store = captured(&[&long, short], 200);
        assert_eq!(arguments(&store, &NumberOrString::Number(1)), None);
        assert_eq!(
            arguments(&store, &NumberOrString::Number(2)).unwrap(),
            b"{}"
        );
    }
}
