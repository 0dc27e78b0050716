//! The dispatcher's and the MCP server's spans as an OpenTelemetry backend receives them
//! (through `tracing-opentelemetry`): GenAI names and attributes, guardrail children, the
//! client's trace joined from `_meta.traceparent`, and none of the planted secrets.
//!
//! Its own binary, with a global subscriber and propagator; each test reads only the spans of
//! its own call ids.

use std::sync::{Arc, Mutex, OnceLock};

use opentelemetry::trace::{SpanId, SpanKind, Status, TraceId, TracerProvider as _};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, RequestMetaObject};
use serde_json::{Value, json};
use tool_contract::control::MemoryStore;
use tool_contract::dispatch::{Dispatcher, HandlerContext, Task};
use tool_contract::mcp::McpServer;
use tool_contract::{FailureKind, Principal, RawProvenance, RawResult, ToolFailure};
use tool_contract_tests::tracker::{self, ReadDoc, Remote, alice, builder, context, keys};
use tracing_subscriber::Layer as _;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;

/// Every span the SDK exported, kept for the tests to read.
#[derive(Debug, Clone, Default)]
struct Kept(Arc<Mutex<Vec<SpanData>>>);

impl SpanExporter for Kept {
    fn export(&self, batch: Vec<SpanData>) -> impl Future<Output = OTelSdkResult> + Send {
        self.0.lock().unwrap().extend(batch);
        std::future::ready(Ok(()))
    }
}

/// The spans exported so far, once the process's subscriber and propagator are set.
fn exported() -> &'static Kept {
    static KEPT: OnceLock<Kept> = OnceLock::new();
    KEPT.get_or_init(|| {
        let kept = Kept::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(kept.clone())
            .build();
        // The README's recipe: the layer that exports keeps rmcp's and the HTTP stack's
        // DEBUG and TRACE events, which carry each request as received, out.
        let payloads_out = tool_contract::mcp::PAYLOAD_EVENT_TARGETS.iter().fold(
            Targets::new().with_default(LevelFilter::TRACE),
            |targets, target| targets.with_target(*target, LevelFilter::INFO),
        );
        let layer = tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("tests"))
            .with_filter(payloads_out);
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::set_global_default(subscriber).unwrap();
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        kept
    })
}

fn attribute(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|attribute| attribute.key.as_str() == key)
        .map(|attribute| attribute.value.as_str().into_owned())
}

/// The spans whose own or parent's `gen_ai.*.id` is `call_id`, oldest first.
fn spans_of(call_id: &str) -> Vec<SpanData> {
    let spans = exported().0.lock().unwrap().clone();
    spans
        .into_iter()
        .filter(|span| {
            attribute(span, "gen_ai.tool.call.id").as_deref() == Some(call_id)
                || attribute(span, "gen_ai.guardrail.target.id").as_deref() == Some(call_id)
        })
        .collect()
}

fn named<'a>(spans: &'a [SpanData], name: &str) -> &'a SpanData {
    spans
        .iter()
        .find(|span| span.name == name)
        .unwrap_or_else(|| panic!("no span {name} in {:?}", names(spans)))
}

fn names(spans: &[SpanData]) -> Vec<String> {
    spans.iter().map(|span| span.name.to_string()).collect()
}

const SECRETS: [&str; 4] = [
    "ARG-SECRET-1",
    "OUTPUT-SECRET-2",
    "RECEIPT-SECRET-3",
    "DETAIL-SECRET-4",
];

/// Every name and attribute value of `spans`, their events' too, as one text.
fn everything(spans: &[SpanData]) -> String {
    let mut text = String::new();
    for span in spans {
        text.push_str(&span.name);
        for attribute in &span.attributes {
            text.push_str(&format!(" {}={}", attribute.key, attribute.value));
        }
        for event in span.events.iter() {
            text.push_str(&format!(" event {}", event.name));
            for attribute in &event.attributes {
                text.push_str(&format!(" {}={}", attribute.key, attribute.value));
            }
        }
        text.push('\n');
    }
    text
}

/// A dispatcher whose `read_doc` echoes its argument into its output, and fails with a
/// receipt and a detail for a `doc_id` ending in `fail`.
fn planted(remote: &Arc<Remote>, trace_results: bool) -> Dispatcher {
    builder(remote)
        .handler_with(
            |input: ReadDoc, _: HandlerContext| async move {
                if input.doc_id.ends_with("fail") {
                    let mut failure =
                        ToolFailure::new(FailureKind::Failed, "DETAIL-SECRET-4 backend said no");
                    failure.downstream.receipt = Some("RECEIPT-SECRET-3".to_owned());
                    return Err(failure);
                }
                let output = json!({ "text": format!("OUTPUT-SECRET-2 {}", input.doc_id) });
                Ok(RawResult::new(
                    output.to_string(),
                    RawProvenance::new("docs-v1", "2026-08-22T10:00:00Z"),
                ))
            },
            tracker::OPTIONS,
        )
        .store(Arc::new(MemoryStore::new()))
        .trace_model_results(trace_results)
        .build()
        .unwrap()
}

#[tokio::test]
async fn each_call_is_an_execute_tool_span_with_the_genai_attributes_and_no_secret() {
    exported();
    let remote = Remote::new();
    let dispatcher = planted(&remote, false);
    let task = Task::unlimited();
    let call = |id: &str, tool: &str, arguments: Value| context(id, tool, arguments, id, id);
    for context in [
        call("otel-read", "read_doc", json!({ "doc_id": "ARG-SECRET-1" })),
        call(
            "otel-fail",
            "read_doc",
            json!({ "doc_id": "ARG-SECRET-1-fail" }),
        ),
        call(
            "otel-bad",
            "read_doc",
            json!({ "doc_id": 7, "ARG-SECRET-1": 1 }),
        ),
        call("otel-nowhere", "ARG-SECRET-1", json!({})),
        call(
            "otel-ask",
            "send_message",
            json!({ "to": "ARG-SECRET-1", "text": "hi" }),
        ),
    ] {
        dispatcher.dispatch(&alice(), &context, &task).await;
    }

    let read = spans_of("otel-read");
    let tool = named(&read, "execute_tool read_doc");
    assert_eq!(tool.span_kind, SpanKind::Internal);
    for (key, value) in [
        ("gen_ai.operation.name", "execute_tool"),
        ("gen_ai.tool.name", "read_doc"),
        ("gen_ai.tool.call.id", "otel-read"),
        ("gen_ai.tool.type", "function"),
        (
            "gen_ai.tool.description",
            "Read a document from the knowledge base.",
        ),
    ] {
        assert_eq!(attribute(tool, key).as_deref(), Some(value), "{key}");
    }
    assert_eq!(attribute(tool, "error.type"), None, "it succeeded");
    assert_eq!(
        attribute(tool, "gen_ai.tool.call.result"),
        None,
        "not opted in"
    );
    for guardrail in [
        "argument_validation",
        "gates",
        "authorization",
        "output_validation",
    ] {
        let span = named(&read, &format!("run_guardrail {guardrail}"));
        assert_eq!(
            span.parent_span_id,
            tool.span_context.span_id(),
            "{guardrail}"
        );
        assert_eq!(
            attribute(span, "gen_ai.guardrail.verdict.type").as_deref(),
            Some("allow"),
            "{guardrail}"
        );
    }
    let output = named(&read, "run_guardrail output_validation");
    assert_eq!(
        attribute(output, "gen_ai.guardrail.target.type").as_deref(),
        Some("output")
    );

    let failed = named(&spans_of("otel-fail"), "execute_tool read_doc").clone();
    assert_eq!(
        attribute(&failed, "error.type").as_deref(),
        Some("TOOL_ERROR")
    );
    assert!(matches!(failed.status, Status::Error { .. }));

    let bad = spans_of("otel-bad");
    let arguments = named(&bad, "run_guardrail argument_validation");
    assert_eq!(
        attribute(arguments, "gen_ai.guardrail.verdict.type").as_deref(),
        Some("deny")
    );
    let tool = named(&bad, "execute_tool read_doc");
    assert_eq!(
        attribute(tool, "error.type").as_deref(),
        Some("INVALID_ARGUMENTS")
    );

    let nowhere = named(&spans_of("otel-nowhere"), "execute_tool (unregistered)").clone();
    assert_eq!(
        attribute(&nowhere, "gen_ai.tool.name").as_deref(),
        Some("(unregistered)")
    );
    assert_eq!(
        attribute(&nowhere, "error.type").as_deref(),
        Some("UNKNOWN_TOOL")
    );

    let ask = spans_of("otel-ask");
    let approval = named(&ask, "run_guardrail approval");
    assert_eq!(
        attribute(approval, "gen_ai.guardrail.verdict.type").as_deref(),
        Some("escalate")
    );
    let tool = named(&ask, "execute_tool send_message");
    assert_eq!(
        attribute(tool, "error.type").as_deref(),
        Some("APPROVAL_REQUIRED")
    );

    let mut all = Vec::new();
    for id in [
        "otel-read",
        "otel-fail",
        "otel-bad",
        "otel-nowhere",
        "otel-ask",
    ] {
        all.extend(spans_of(id));
    }
    let text = everything(&all);
    for secret in SECRETS {
        assert!(!text.contains(secret), "{secret} reached a span:\n{text}");
    }
}

#[tokio::test]
async fn opted_in_a_successful_calls_model_result_is_recorded_and_nothing_else() {
    exported();
    let remote = Remote::new();
    let dispatcher = planted(&remote, true);
    let task = Task::unlimited();
    let read = context(
        "otel-opt-read",
        "read_doc",
        json!({ "doc_id": "ARG-SECRET-1" }),
        "o1",
        "o1",
    );
    let fail = context(
        "otel-opt-fail",
        "read_doc",
        json!({ "doc_id": "x-fail" }),
        "o2",
        "o2",
    );
    let dispatch = dispatcher.dispatch(&alice(), &read, &task).await;
    dispatcher.dispatch(&alice(), &fail, &task).await;

    let spans = spans_of("otel-opt-read");
    let tool = named(&spans, "execute_tool read_doc");
    let recorded_text = attribute(tool, "gen_ai.tool.call.result").expect("the model result");
    let recorded: Value = serde_json::from_str(&recorded_text).unwrap();
    assert_eq!(
        recorded,
        serde_json::to_value(&dispatch.result.model).unwrap()
    );
    assert!(
        recorded["data"]["text"]
            .as_str()
            .unwrap()
            .contains("OUTPUT-SECRET-2")
    );
    // The model result holds the argument only as the tool echoed it; the arguments themselves
    // and the audit half never appear.
    let text = everything(&spans).replace(&recorded_text, "");
    assert!(!text.contains("ARG-SECRET-1"), "{text}");
    let failed = spans_of("otel-opt-fail");
    let text = everything(&failed);
    assert!(
        !text.contains("gen_ai.tool.call.result"),
        "only on success: {text}"
    );
    assert!(
        !text.contains("RECEIPT-SECRET-3") && !text.contains("DETAIL-SECRET-4"),
        "{text}"
    );
}

/// The planted dispatcher served over MCP to a client of its own, over an in-memory pipe
/// (the process's subscriber set first): the client, and the serving task.
async fn served_planted() -> (
    rmcp::service::RunningService<rmcp::RoleClient, ()>,
    tokio::task::JoinHandle<()>,
) {
    exported();
    let remote = Remote::new();
    let server = McpServer::new(
        Arc::new(planted(&remote, false)),
        Principal::new("acme", "otel"),
    );
    let (client_side, server_side) = tokio::io::duplex(1 << 16);
    let serving = tokio::spawn(async move {
        let (read, write) = tokio::io::split(server_side);
        if let Ok(running) = server.serve_io(read, write).await {
            let _ = running.waiting().await;
        }
    });
    let client = ().serve(client_side).await.expect("the handshake");
    (client, serving)
}

#[tokio::test]
async fn the_mcp_server_span_joins_the_clients_trace_and_marks_tool_errors() {
    let (client, _serving) = served_planted().await;
    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let parent_id = "00f067aa0ba902b7";
    let call = |arguments: Value| {
        let Value::Object(arguments) = arguments else {
            unreachable!("an object literal")
        };
        let mut meta = RequestMetaObject::default();
        meta.insert(
            "traceparent".to_owned(),
            json!(format!("00-{trace_id}-{parent_id}-01")),
        );
        let mut request = CallToolRequestParams::new("read_doc").with_arguments(arguments);
        request.meta = Some(meta);
        request
    };
    let ran = client
        .call_tool(call(json!({ "doc_id": "d-1" })))
        .await
        .unwrap();
    assert_ne!(ran.is_error, Some(true));
    let refused = client
        .call_tool(call(json!({ "doc_id": 7 })))
        .await
        .unwrap();
    assert_eq!(refused.is_error, Some(true));

    let spans = exported().0.lock().unwrap().clone();
    let served: Vec<&SpanData> = spans
        .iter()
        .filter(|span| span.name == "tools/call read_doc")
        .filter(|span| span.span_context.trace_id() == TraceId::from_hex(trace_id).unwrap())
        .collect();
    assert_eq!(served.len(), 2, "{:?}", names(&spans));
    for span in &served {
        assert_eq!(span.span_kind, SpanKind::Server);
        assert_eq!(
            span.span_context.trace_id(),
            TraceId::from_hex(trace_id).unwrap()
        );
        assert_eq!(span.parent_span_id, SpanId::from_hex(parent_id).unwrap());
        assert!(span.parent_span_is_remote);
        assert_eq!(
            attribute(span, "mcp.method.name").as_deref(),
            Some("tools/call")
        );
        assert_eq!(
            attribute(span, "gen_ai.tool.name").as_deref(),
            Some("read_doc")
        );
        assert_eq!(
            attribute(span, "mcp.protocol.version").as_deref(),
            Some("2025-11-25")
        );
        assert!(attribute(span, "jsonrpc.request.id").is_some());
        // The caller, as a keyed pseudonym: never its tenant or subject.
        let principal_ref = keys().principal_ref(&Principal::new("acme", "otel"));
        assert_eq!(
            attribute(span, "enduser.pseudo.id").as_deref(),
            Some(&principal_ref[..12])
        );
        // The dispatcher's span is its child.
        let child = spans
            .iter()
            .find(|child| child.parent_span_id == span.span_context.span_id())
            .expect("an execute_tool child");
        assert_eq!(child.name, "execute_tool read_doc");
    }
    assert_eq!(attribute(served[0], "error.type"), None);
    assert_eq!(
        attribute(served[1], "error.type").as_deref(),
        Some("tool_error")
    );
}

#[tokio::test]
async fn no_argument_of_an_mcp_call_reaches_an_exported_span_at_any_depth() {
    let (client, serving) = served_planted().await;
    for arguments in [
        json!({ "doc_id": "MCP-ARG-SECRET-L1" }),
        json!({ "doc_id": "d-1", "extra": { "deep": ["MCP-ARG-SECRET-L2", { "deeper": "MCP-ARG-SECRET-L3" }] } }),
    ] {
        let Value::Object(arguments) = arguments else {
            unreachable!("an object literal")
        };
        client
            .call_tool(CallToolRequestParams::new("read_doc").with_arguments(arguments))
            .await
            .unwrap();
    }
    // The session's own spans end, and are exported, when it closes.
    client.cancel().await.unwrap();
    serving.await.unwrap();
    let spans = exported().0.lock().unwrap().clone();
    let text = everything(&spans);
    assert!(
        text.contains("tools/call read_doc"),
        "the calls were traced"
    );
    assert!(!text.contains("MCP-ARG-SECRET"), "{text}");
}
