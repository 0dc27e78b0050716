//! The server span of a `tools/call`, in the shape of the OpenTelemetry MCP conventions
//! (`open-telemetry/semantic-conventions-genai`, `docs/gen-ai/mcp.md`): named
//! `tools/call {gen_ai.tool.name}`, kind SERVER, with `error.type` the JSON-RPC code of a
//! protocol error or `tool_error` for a result with `isError`. With the `otel` feature its
//! parent is the trace context the client sent in `_meta` (`traceparent`, `tracestate`,
//! `baggage`; SEP-414), read by the application's global OpenTelemetry propagator. The
//! caller is `enduser.pseudo.id`: a prefix of its keyed principal reference, never its name.

use rmcp::ErrorData;
use rmcp::model::{CallToolRequestParams, CallToolResponse, JsonObject};
use rmcp::service::{RequestContext, RoleServer};
use tracing::Span;
use tracing::field::Empty;

use crate::contract::{Registry, ToolSpec};
use crate::dispatch::UNREGISTERED_TOOL;

/// The span one `tools/call` is served in.
pub(super) fn tools_call(
    registry: &Registry,
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> Span {
    let tool = registry
        .get(&request.name)
        .map_or(UNREGISTERED_TOOL, ToolSpec::name);
    // Inside the macro, the fields are written only for a span something listens to.
    let span = tracing::info_span!(
        "tools/call",
        otel.name = %format_args!("tools/call {tool}"),
        otel.kind = "server",
        otel.status_code = Empty,
        mcp.method.name = "tools/call",
        gen_ai.tool.name = tool,
        gen_ai.operation.name = "execute_tool",
        jsonrpc.request.id = %context.id,
        mcp.protocol.version = context
            .protocol_version()
            .map(tracing::field::display),
        "error.type" = Empty,
        rpc.response.status_code = Empty,
        enduser.pseudo.id = Empty,
    );
    parent_from(&span, &context.meta.0.0);
    span
}

/// Records who called: the first 12 digits of the caller's keyed principal reference, a
/// pseudonym that groups one caller's calls (and finds their audits) without naming anyone.
pub(super) fn record_caller(span: &Span, principal_ref: &str) {
    span.record(
        "enduser.pseudo.id",
        principal_ref.get(..12).unwrap_or(principal_ref),
    );
}

/// Records how the call was answered: a protocol error's code, or `tool_error`.
pub(super) fn record_answer(span: &Span, answer: &Result<CallToolResponse, ErrorData>) {
    match answer {
        Err(error) => {
            let code = error.code.0.to_string();
            span.record("error.type", code.as_str());
            span.record("rpc.response.status_code", code.as_str());
            span.record("otel.status_code", "error");
        }
        Ok(CallToolResponse::Complete(result)) if result.is_error == Some(true) => {
            span.record("error.type", "tool_error");
            span.record("otel.status_code", "error");
        }
        Ok(_) => {}
    }
}

#[cfg(feature = "otel")]
fn parent_from(span: &Span, meta: &JsonObject) {
    use opentelemetry::propagation::Extractor;
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    /// The request's `_meta` as a carrier of string-valued trace context.
    struct Meta<'a>(&'a JsonObject);

    impl Extractor for Meta<'_> {
        fn get(&self, key: &str) -> Option<&str> {
            self.0.get(key).and_then(serde_json::Value::as_str)
        }

        fn keys(&self) -> Vec<&str> {
            self.0.keys().map(String::as_str).collect()
        }
    }

    let parent = opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.extract(&Meta(meta))
    });
    // Without an OpenTelemetry layer there is no trace to join: the span stays a tracing one.
    let _ = span.set_parent(parent);
}

#[cfg(not(feature = "otel"))]
fn parent_from(_span: &Span, _meta: &JsonObject) {}
