//! The dispatcher's spans in the shape of the OpenTelemetry GenAI conventions.
//!
//! Sources: `open-telemetry/semantic-conventions-genai`, `docs/gen-ai/execute-tool.md` (span
//! `execute_tool {gen_ai.tool.name}`, kind INTERNAL) and `docs/gen-ai/gen-ai-security.md`
//! (span `run_guardrail {gen_ai.guardrail.component.name}`); `error.type` is low-cardinality,
//! here the catalog code. The span name is set through `otel.name`, the kind through
//! `otel.kind` and the status through `otel.status_code`, the fields `tracing-opentelemetry`
//! reads.
//!
//! Nothing of the arguments, the output or the audit half goes into a span. With
//! [`DispatcherBuilder::trace_model_results`](super::DispatcherBuilder::trace_model_results) a
//! successful call's model result (what the model reads anyway) is recorded as
//! `gen_ai.tool.call.result`, and only that.

use tracing::Span;
use tracing::field::Empty;

use crate::contract::ToolSpec;
use crate::results::{ModelResult, Status};
use crate::vocabulary::CallContext;

/// The tool name of a span whose call names no registered tool: the model may name anything,
/// and only a registered name is a trace attribute of bounded cardinality.
pub const UNREGISTERED_TOOL: &str = "(unregistered)";

/// The `execute_tool` span of one call.
///
/// `request_id` and `operation_sha256` are made only for a span something listens to: the
/// macro writes its fields inside that branch, so a call nobody traces pays for neither.
pub(super) fn execute_tool(
    spec: Option<&'static ToolSpec>,
    context: &CallContext,
    request_id: impl FnOnce() -> String,
    operation_sha256: impl FnOnce() -> String,
) -> Span {
    let tool = spec.map_or(UNREGISTERED_TOOL, ToolSpec::name);
    let description = spec.map(ToolSpec::description);
    tracing::info_span!(
        "execute_tool",
        otel.name = %format_args!("execute_tool {tool}"),
        otel.kind = "internal",
        otel.status_code = Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = tool,
        gen_ai.tool.call.id = %context.call.call_id,
        "gen_ai.tool.type" = "function",
        gen_ai.tool.description = description,
        "error.type" = Empty,
        gen_ai.tool.call.result = Empty,
        request_id = request_id().as_str(),
        // The operation id may carry the client's words (MCP's `_meta`): its digest only.
        operation_sha256 = operation_sha256().as_str(),
    )
}

/// Records how the call ended on its `execute_tool` span: `error.type` and an error status
/// unless it succeeded, and the model result when the application opted in.
pub(super) fn record_outcome(span: &Span, model: &ModelResult, model_json: Option<&str>) {
    if model.status() == Status::Succeeded {
        if let Some(json) = model_json {
            span.record("gen_ai.tool.call.result", json);
        }
        return;
    }
    let code = model
        .error()
        .map_or("_OTHER", |error| error.code().as_str());
    span.record("error.type", code);
    span.record("otel.status_code", "error");
}

/// A check the dispatcher runs as a guardrail, by its component name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Guardrail {
    /// The arguments against the contract, exactly.
    Arguments,
    /// The application's gates, in order.
    Gates,
    /// The application's authorizer.
    Authorization,
    /// A person's approval of a write.
    Approval,
    /// The tool's output against the contract, before the model sees it.
    Output,
}

impl Guardrail {
    fn component(self) -> &'static str {
        match self {
            Guardrail::Arguments => "argument_validation",
            Guardrail::Gates => "gates",
            Guardrail::Authorization => "authorization",
            Guardrail::Approval => "approval",
            Guardrail::Output => "output_validation",
        }
    }

    fn target(self) -> &'static str {
        match self {
            Guardrail::Output => "output",
            _ => "input",
        }
    }

    /// The guardrail's span, a child of the current one; its verdict is recorded with
    /// [`verdict`].
    pub(super) fn span(self, context: &CallContext) -> Span {
        let component = self.component();
        tracing::info_span!(
            "run_guardrail",
            otel.name = %format_args!("run_guardrail {component}"),
            otel.kind = "internal",
            gen_ai.operation.name = "run_guardrail",
            gen_ai.guardrail.component.name = component,
            "gen_ai.guardrail.target.type" = self.target(),
            gen_ai.guardrail.target.subtype = "tool_call",
            gen_ai.guardrail.target.id = %context.call.call_id,
            "gen_ai.guardrail.verdict.type" = Empty,
        )
    }
}

/// What a guardrail decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    /// The call goes on.
    Allow,
    /// The call stops here.
    Deny,
    /// A person decides.
    Escalate,
}

/// Records `verdict` on a guardrail's span.
pub(super) fn verdict(span: &Span, verdict: Verdict) {
    let name = match verdict {
        Verdict::Allow => "allow",
        Verdict::Deny => "deny",
        Verdict::Escalate => "escalate",
    };
    span.record("gen_ai.guardrail.verdict.type", name);
}

impl Guardrail {
    /// Runs `check` in this guardrail's span: allow when it passes, deny when it stops the
    /// call.
    pub(super) fn check<T, E>(
        self,
        context: &CallContext,
        check: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        let span = self.span(context);
        let checked = span.in_scope(check);
        verdict(
            &span,
            if checked.is_ok() {
                Verdict::Allow
            } else {
                Verdict::Deny
            },
        );
        checked
    }
}
