//! JSON-RPC's own errors for what rmcp cannot read: a request of a method MCP defines whose
//! params are not that method's (`-32602`), and a body that is not one JSON-RPC message
//! (`-32700` when it is not JSON, `-32600` when it is JSON but no message).
//!
//! rmcp reads a request it cannot type as a request of a method of the server's own, which
//! the server would answer as unknown (`-32601`, on 2026-07-28 HTTP 404): that tells a client
//! the server has no `tools/call` at all. And rmcp's HTTP transport answers a body it cannot
//! read with a plain-text 415. JSON-RPC 2.0 (jsonrpc.org/specification, §5.1) names the codes.
//! Over stdio rmcp itself answers JSON of no message's shape with `-32600` and ignores what is
//! not JSON, as MCP's other SDKs do (rust-sdk issue 938: answering garbage can start a storm).

// Logging and resource subscriptions are deprecated on 2026-07-28 (SEP-2577) and kept on the
// handshake revisions, whose clients still send them.
#![allow(deprecated)]

use rmcp::model::{
    CallToolRequest, CancelTaskRequest, CompleteRequest, DiscoverRequest, GetPromptRequest,
    GetTaskRequest, InitializeRequest, ListPromptsRequest, ListResourceTemplatesRequest,
    ListResourcesRequest, ListToolsRequest, ReadResourceRequest, SetLevelRequest, SubscribeRequest,
    UnsubscribeRequest, UpdateTaskRequest,
};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// JSON-RPC's code for a body that is not JSON.
#[cfg(feature = "mcp-http")]
pub(super) const PARSE_ERROR: i32 = -32700;
/// JSON-RPC's code for JSON that is not one valid request, notification or response.
#[cfg(feature = "mcp-http")]
pub(super) const INVALID_REQUEST: i32 = -32600;
/// JSON-RPC's code for params their method does not read.
#[cfg(feature = "mcp-http")]
pub(super) const INVALID_PARAMS: i32 = -32602;

/// The methods only the handshake revisions have: on 2026-07-28 they are unknown, whatever
/// their params (SEP-2575 asks a 404 and `-32601` of them).
const HANDSHAKE_ONLY: [&str; 4] = [
    "initialize",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

/// Why the params of a request of `method` are not what `method` takes, when `method` is
/// one MCP defines with params on the revision spoken (`handshake`: one of those with
/// `initialize`); `None` for any other method, or params it reads.
pub(super) fn misread(method: &str, params: Option<&Value>, handshake: bool) -> Option<String> {
    if !handshake && HANDSHAKE_ONLY.contains(&method) {
        return None;
    }
    fn error_of<R: DeserializeOwned>(method: &str, params: Option<&Value>) -> Option<String> {
        let mut request = json!({ "method": method });
        if let Some(params) = params {
            request["params"] = params.clone();
        }
        serde_json::from_value::<R>(request)
            .err()
            .map(|error| format!("the params of {method} do not read: {error}"))
    }
    match method {
        "initialize" => error_of::<InitializeRequest>(method, params),
        "server/discover" => error_of::<DiscoverRequest>(method, params),
        "tools/list" => error_of::<ListToolsRequest>(method, params),
        "tools/call" => error_of::<CallToolRequest>(method, params),
        "tasks/get" => error_of::<GetTaskRequest>(method, params),
        "tasks/update" => error_of::<UpdateTaskRequest>(method, params),
        "tasks/cancel" => error_of::<CancelTaskRequest>(method, params),
        "resources/list" => error_of::<ListResourcesRequest>(method, params),
        "resources/templates/list" => error_of::<ListResourceTemplatesRequest>(method, params),
        "resources/read" => error_of::<ReadResourceRequest>(method, params),
        "resources/subscribe" => error_of::<SubscribeRequest>(method, params),
        "resources/unsubscribe" => error_of::<UnsubscribeRequest>(method, params),
        "prompts/list" => error_of::<ListPromptsRequest>(method, params),
        "prompts/get" => error_of::<GetPromptRequest>(method, params),
        "completion/complete" => error_of::<CompleteRequest>(method, params),
        "logging/setLevel" => error_of::<SetLevelRequest>(method, params),
        _ => None,
    }
}

#[cfg(feature = "mcp-http")]
/// A request whose params its method does not read, as the body of a request names it.
pub(super) struct Misread {
    /// The request's id.
    pub(super) id: Value,
    /// What is wrong, for the error's message.
    pub(super) reason: String,
}

#[cfg(feature = "mcp-http")]
/// `body`, a request outside any session (2026-07-28's) of a method that revision defines,
/// whose params that method does not read; `None` for anything else (a notification, a
/// response, a request rmcp reads).
pub(super) fn misread_request(body: &[u8]) -> Option<Misread> {
    #[derive(serde::Deserialize)]
    struct Sent {
        method: String,
        id: Option<Value>,
        params: Option<Value>,
    }
    let sent = serde_json::from_slice::<Sent>(body).ok()?;
    let id = sent
        .id
        .filter(|id| id.is_string() || id.is_i64() || id.is_u64())?;
    let reason = misread(&sent.method, sent.params.as_ref(), false)?;
    Some(Misread { id, reason })
}

#[cfg(feature = "mcp-http")]
/// What is wrong with `body`, which rmcp could not read as one JSON-RPC message: the error's
/// code, its message, and the request's id when one can be read (otherwise `null`).
pub(super) fn unreadable(body: &[u8]) -> (i32, String, Value) {
    let Ok(text) = std::str::from_utf8(body) else {
        return (PARSE_ERROR, "the body is not UTF-8".to_owned(), Value::Null);
    };
    let message = match serde_json::from_str::<Value>(text) {
        Err(error) => {
            return (
                PARSE_ERROR,
                format!("the body is not JSON: {error}"),
                Value::Null,
            );
        }
        Ok(message) => message,
    };
    let id = message
        .get("id")
        .filter(|id| id.is_string() || id.is_i64() || id.is_u64())
        .cloned()
        .unwrap_or(Value::Null);
    let reason = match &message {
        Value::Array(_) => "a batch: MCP takes one message per request".to_owned(),
        Value::Object(members) => match members.get("jsonrpc") {
            Some(Value::String(version)) if version == "2.0" => match members.get("id") {
                Some(Value::Null) => "the id is null: MCP's ids are strings or integers".to_owned(),
                Some(id) if !(id.is_string() || id.is_i64() || id.is_u64()) => {
                    "the id is neither a string nor an integer".to_owned()
                }
                _ if members
                    .get("method")
                    .is_some_and(|method| !method.is_string()) =>
                {
                    "the method is not a string".to_owned()
                }
                _ => "not a request, notification or response of MCP".to_owned(),
            },
            _ => "jsonrpc is not \"2.0\"".to_owned(),
        },
        _ => "not a JSON-RPC message object".to_owned(),
    };
    (INVALID_REQUEST, reason, id)
}

#[cfg(feature = "mcp-http")]
/// A JSON-RPC error response's text.
pub(super) fn error_response(id: Value, code: i32, message: &str) -> String {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": code, "message": message }
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_a_method_reads_are_not_misread() {
        let call = json!({ "name": "read_doc", "arguments": { "doc_id": "d1" } });
        assert_eq!(misread("tools/call", Some(&call), false), None);
        assert_eq!(
            misread("tasks/get", Some(&json!({ "taskId": "t1" })), false),
            None
        );
        assert_eq!(misread("tools/list", None, false), None);
        assert_eq!(
            misread("logging/setLevel", Some(&json!({ "level": "info" })), true),
            None
        );
    }

    #[test]
    fn params_of_the_wrong_shape_name_what_does_not_read() {
        let oops = json!({ "name": "read_doc", "arguments": "oops" });
        let reason = misread("tools/call", Some(&oops), false).unwrap();
        assert!(reason.contains("invalid type"), "{reason}");
        let nameless = misread("tools/call", Some(&json!({ "arguments": {} })), true).unwrap();
        assert!(nameless.contains("name"), "{nameless}");
        assert!(misread("tasks/get", Some(&json!({ "taskId": 5 })), false).is_some());
        assert!(misread("tools/call", None, false).is_some());
    }

    #[test]
    fn a_handshake_method_is_misread_only_on_a_handshake_revision() {
        let level = json!({ "level": 5 });
        assert!(misread("logging/setLevel", Some(&level), true).is_some());
        assert_eq!(misread("logging/setLevel", Some(&level), false), None);
        assert_eq!(misread("initialize", None, false), None);
    }

    #[test]
    fn a_method_mcp_does_not_define_is_never_misread() {
        assert_eq!(misread("tools/dance", Some(&json!(5)), true), None);
    }

    #[cfg(feature = "mcp-http")]
    #[test]
    fn a_body_is_a_parse_error_or_an_invalid_request_as_json_rpc_says() {
        assert_eq!(unreadable(b"\xff{}").0, PARSE_ERROR);
        assert_eq!(unreadable(b"{\"jsonrpc\":").0, PARSE_ERROR);
        for body in [
            r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":7}"#,
            "42",
        ] {
            assert_eq!(unreadable(body.as_bytes()).0, INVALID_REQUEST, "{body}");
        }
        let (_, _, id) = unreadable(br#"{"jsonrpc":"1.0","id":"a","method":"ping"}"#);
        assert_eq!(id, json!("a"));
    }
}
