//! Serving a registry over the Model Context Protocol.
//!
//! The `mcp` feature: [`McpServer`] serves a [`Dispatcher`](crate::dispatch::Dispatcher)'s
//! registry to an MCP client (over stdio with `McpServer::serve_stdio`, or any `rmcp`
//! transport, since it is an `rmcp::ServerHandler`):
//!
//! - `tools/list` gives each tool its name, description, input schema, and as output schema
//!   [`ToolSpec::model_result_schema`](crate::ToolSpec::model_result_schema), with the
//!   effect as read-only and idempotent hints, and every write destructive unless its
//!   contract says `additive`;
//! - `tools/call` runs the whole pipeline and answers with the verified
//!   [`ModelResult`](crate::ModelResult) as `structuredContent` and its canonical JSON as a
//!   text block, `isError` unless it succeeded (or, with [`McpServer::with_content`], the
//!   blocks the application makes of a success's verified data: an image, a resource).
//!   Nothing of the audit half crosses the wire; it goes to the dispatcher's audit sink.
//! - A write that needs approval asks the person at the client, when the client declared form
//!   elicitation. On the handshake revisions (2024-11-05 to 2025-11-25) the server asks
//!   mid-call by `elicitation/create`. On 2026-07-28, which has no handshake and no
//!   server-to-client requests (`server/discover`, and each request's `_meta` naming its
//!   revision and capabilities), the call answers `resultType: "input_required"` with one
//!   confirmation form showing the preview and a sealed `requestState`; the client sends the
//!   same call again with the answer and the state, to this server or any replica sharing
//!   the store and the keys. The state is HMAC-sealed under a key derived from the
//!   dispatcher's audit keys (or [`McpServer::with_request_state_codec`]) and names the
//!   approval, principal, tool, request digest, preview digest and expiry; a state that was
//!   forged, has expired, was used already, or comes back for another principal, another
//!   tool or changed arguments is refused with a JSON-RPC `invalid_params` error whose
//!   `data.reason` is a [`StateRefusal`] code, and nothing is recorded. Either way, accept
//!   approves exactly the previewed request, decline rejects it (the model reads `BLOCKED`),
//!   cancel leaves it pending. An answer is recorded as an approval by the principal the
//!   server acts for (`mcp:{tenant}/{subject}`), never by the name the client gives itself:
//!   one principal supplies one approval to a rule, and a state it answered already is
//!   refused as replayed. A client without elicitation reads `APPROVAL_REQUIRED`, and
//!   the result's `_meta` carries the pending approval (id, preview, preview digest) for the
//!   host to show; an approval given out of band through
//!   [`Dispatcher::approve`](crate::dispatch::Dispatcher::approve) then lets a repeated call
//!   run.
//!
//! With [`McpServer::with_questions`], a tool asks the client for input before it runs
//! (SEP-2322: a form, a sampling request, the client's roots): on 2026-07-28 by
//! `input_required` results whose sealed `requestState` carries the answers so far, on the
//! handshake revisions mid-call, inside a task through `tasks/update`; the handler reads each
//! answer with [`HandlerContext::client_answer`](crate::dispatch::HandlerContext::client_answer).
//! A handler's [`report_progress`](crate::dispatch::HandlerContext::report_progress) reaches a
//! client that sent a `progressToken` as `notifications/progress`.
//!
//! With [`McpServer::with_tasks`], the calls of the tools it names are answered as tasks
//! (the 2026-07-28 tasks extension): kept in the control store before the answer names them,
//! polled with `tasks/get`, answered with `tasks/update` (a write waiting for approval is
//! `input_required`), cancelled with `tasks/cancel` while nothing of them has acted, by any
//! replica sharing the store and only for the principal that asked; a task whose replica
//! died goes on with [`McpServer::resume_tasks`]. A 2025-11-25 session is served the same
//! tasks in that revision's tasks utility (`params.task`, `tasks/result`, `tasks/list`,
//! `execution.taskSupport`) by the transports `serve_io`, `serve_stdio` and `serve_http` set
//! up. See [the guide's chapter](crate::guide::tasks).
//!
//! A write whose rule asks for approvals signed by passkeys
//! ([`DispatcherBuilder::signed_approvals_when`](crate::dispatch::DispatcherBuilder::signed_approvals_when)),
//! which no answer through the client can give, sends the person to the approvals console
//! ([`McpServer::with_approvals_console`]) when the client declared URL-mode elicitation: at
//! the handshake revisions by `elicitation/create` with `mode: "url"` and the page of that
//! approval, after which the call waits until the approval is decided there and then runs
//! (or answers as the decision says); on 2026-07-28 by `input_required` with that URL request
//! and a sealed state, whose retry runs once the signatures are in. What the client answers
//! to a URL request decides nothing.
//!
//! The logical operation of a call is what the contract's `operation` rule names: its
//! fields, the application's key, or its exact arguments, so that a client that repeats such
//! a write reaches the same ledger record (`local_replay`, or reconciliation of an unknown
//! outcome), never a second execution, whatever it names in `_meta`. An MCP request carries
//! no id of the model's call, so each call of an `operation = per_call` write is its own
//! operation (a 2026-07-28 call sent back with an approval's answer is the call that was asked
//! about); a client that retries one names its operation in
//! `_meta["tool-contract/operation_id"]`, which counts for `per_call` writes alone.
//!
//! Arguments are validated from the client's own bytes: the server reads the session through
//! [`McpServer::serve_io`] (or `serve_stdio`), which keeps each `tools/call`'s
//! `params.arguments` exactly as sent, before rmcp parses them into a map that would collapse
//! a repeated member or round `1e-400` to `0.0`. A call whose bytes were not kept (the
//! server run as a plain `rmcp::ServerHandler` on another transport, or a message that
//! repeats a member on the way to its arguments) is refused with an `invalid_request` error,
//! and nothing runs. A message longer than the registry's largest argument limit and 64 KiB
//! more is never read.
//!
//! With the `mcp-http` feature `McpServer::serve_http` serves the same over MCP's Streamable
//! HTTP transport, keeping each POST body's argument bytes the same way. Each `tools/call` is
//! served in a SERVER span `tools/call {name}` (with the `otel` feature parented from the
//! client's `_meta.traceparent`), around the dispatcher's `execute_tool` span.
//!
//! Calls are served only when the registry accepts [`ADAPTER`] (as every registry does until
//! it names others with
//! [`RegistryBuilder::adapter`](crate::contract::RegistryBuilder::adapter)), as the provider
//! writers require of theirs; otherwise `tools/call` is a protocol error and nothing runs.

use crate::vocabulary::Adapter;

mod approval;
#[cfg(feature = "mcp-auth")]
pub mod auth;
mod beside;
mod caller;
mod capture;
mod content;
#[cfg(feature = "mcp-http")]
mod http;
mod jsonrpc;
#[cfg(feature = "mcp-http")]
mod polling;
mod progress;
mod questions;
#[cfg(feature = "mcp-http")]
mod reply;
mod same;
mod server;
#[cfg(feature = "mcp-http")]
mod sessions;
mod task_options;
mod tasks;
mod telemetry;
mod utility;
mod utility_transport;

pub use approval::StateRefusal;
pub use questions::Asking;
pub use server::{McpServeError, McpServer, OPERATION_ID_META};
#[cfg(feature = "mcp-http")]
pub use sessions::SESSIONS_PER_PRINCIPAL;
pub use task_options::{OPEN_TASKS_PER_PRINCIPAL, TaskSupport};
pub use tasks::Resumed;

/// The `tracing` targets whose DEBUG and TRACE events carry messages as received, with every
/// argument in them (rmcp logs each request it receives; the HTTP stack its traffic). Filter
/// these to INFO on a layer that exports (the README's OpenTelemetry recipe does): the
/// crate's own spans and events never record an argument, but an exporter records every
/// event inside a span it exports.
pub const PAYLOAD_EVENT_TARGETS: [&str; 3] = ["rmcp", "hyper", "hyper_util"];

/// The adapter of MCP `tools/call` requests, protocol revisions 2024-11-05 to 2026-07-28 (the
/// arguments' shape, which its revision string names, has not changed since 2025-11-25).
pub const ADAPTER: Adapter = Adapter::MCP;

/// What the fuzz targets reach inside the server; compiled only under `cargo fuzz`
/// (`--cfg fuzzing`), never part of the API.
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod __fuzzing {
    use std::sync::Arc;

    use rmcp::model::NumberOrString;
    use serde_json::Value;

    use crate::mcp::capture::{Captured, Capturing};

    /// The arguments the server kept of a session's input.
    pub struct Kept(Arc<Captured>);

    impl Kept {
        /// The kept arguments of the request with this JSON-RPC id, taken out.
        pub fn take(&self, id: &Value) -> Option<Vec<u8>> {
            let id = match id {
                Value::Number(number) => NumberOrString::Number(number.as_i64()?),
                Value::String(text) => NumberOrString::String(Arc::from(text.as_str())),
                _ => return None,
            };
            self.0
                .take(&id)
                .map(crate::mcp::capture::Kept::into_arguments)
        }
    }

    /// Reads `session` through the server's capturing reader, `piece` bytes at a time (at
    /// least 1), as a transport would; returns what it passed on, and what it kept.
    pub fn capture(session: &[u8], piece: usize, max_line: usize) -> (Vec<u8>, Kept) {
        use std::pin::Pin;
        use std::task::{Context, Poll, Waker};
        use tokio::io::{AsyncRead, ReadBuf};

        let captured = Arc::new(Captured::default());
        let mut reader = Capturing::new(session, captured.clone(), max_line);
        let mut passed = Vec::with_capacity(session.len());
        let mut buffer = vec![0; piece.max(1)];
        let mut context = Context::from_waker(Waker::noop());
        loop {
            let mut read = ReadBuf::new(&mut buffer);
            match Pin::new(&mut reader).poll_read(&mut context, &mut read) {
                Poll::Ready(Ok(())) if !read.filled().is_empty() => {
                    passed.extend_from_slice(read.filled());
                }
                // A byte slice is always ready; empty means its end.
                _ => break,
            }
        }
        (passed, Kept(captured))
    }
}
