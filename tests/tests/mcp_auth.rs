//! MCP over HTTP as an OAuth 2.1 resource server, against an authorization server no one here
//! wrote: `oauth2-mock-server` issuing real signed tokens (see `tool_contract_tests::issuer`).
//! Each refusal of a token is a test of its own, and so is each way a principal is kept.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::net::TcpListener;
use tool_contract::Principal;
use tool_contract::control::{ControlStore, MemoryAuditLog, MemoryStore};
use tool_contract::dispatch::{Dispatcher, DispatcherBuilder};
use tool_contract::mcp::auth::{
    AuthConfigError, IntrospectionVerifier, Issuer, JwtVerifier, ResourceServer, TokenVerifier,
};
use tool_contract::mcp::{McpServeError, McpServer, TaskSupport};
use tool_contract_tests::http::{self, Answer};
use tool_contract_tests::issuer::{CLIENT_ID, CLIENT_SECRET, MockIssuer};
use tool_contract_tests::tracker::{Remote, SendMessage, audit_key, builder, keys};

/// A served tracker: its MCP endpoint, canonical URI, and what its calls reached.
struct Served {
    /// The canonical URI: the MCP endpoint, and every token's audience.
    resource: String,
    remote: Arc<Remote>,
    dispatcher: Arc<Dispatcher>,
    audit: Arc<MemoryAuditLog>,
}

/// The issuer of `issuer`, its tenants from the `tenant` claim, keys fetched again at most
/// every 300 ms.
fn jwt(issuer: &MockIssuer) -> JwtVerifier {
    let issuer = Issuer::new(&issuer.url)
        .unwrap()
        .with_tenant_claim("tenant");
    JwtVerifier::new([issuer])
        .unwrap()
        .with_key_refresh_interval(Duration::from_millis(300))
}

/// Serves the tracker on a loopback port with `verifier`, its resource server as `configure`
/// makes it (mail outside acme.example needs `mail:external`).
async fn serve_with(
    verifier: impl TokenVerifier,
    configure: impl FnOnce(DispatcherBuilder) -> DispatcherBuilder,
) -> Served {
    serve_configured(verifier, configure, |server| server).await
}

/// As [`serve_with`], the server as `server` makes it.
async fn serve_configured(
    verifier: impl TokenVerifier,
    configure: impl FnOnce(DispatcherBuilder) -> DispatcherBuilder,
    server: impl FnOnce(McpServer) -> McpServer,
) -> Served {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let resource = format!("http://{}/mcp", listener.local_addr().unwrap());
    let remote = Remote::new();
    let audit = Arc::new(MemoryAuditLog::new(audit_key()));
    let store: Arc<dyn ControlStore> = Arc::new(MemoryStore::new());
    let dispatcher = configure(builder(&remote).store(store).audit_sink(audit.clone()))
        .build()
        .expect("the tracker builds");
    let dispatcher = Arc::new(dispatcher);
    let resource_server = ResourceServer::new(&resource, verifier)
        .unwrap()
        .with_scope_when("mail:external", |message: &SendMessage| {
            !message.to.ends_with("@acme.example")
        });
    let server = server(McpServer::authenticated(dispatcher.clone(), resource_server).unwrap());
    tokio::spawn(server.serve_http(listener));
    Served {
        resource,
        remote,
        dispatcher,
        audit,
    }
}

async fn serve(issuer: &MockIssuer) -> Served {
    serve_with(jwt(issuer), |builder| builder).await
}

/// The `_meta` a 2026-07-28 request carries.
fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": { "elicitation": { "form": {} } },
        "io.modelcontextprotocol/clientInfo": { "name": "auth-test", "version": "1" }
    })
}

/// A `tools/call` of 2026-07-28, with `extra` params beside the name and arguments.
fn tools_call(name: &str, arguments: Value, extra: Value) -> Value {
    let mut params = json!({ "name": name, "arguments": arguments, "_meta": meta() });
    if let (Value::Object(params), Value::Object(extra)) = (&mut params, extra) {
        params.extend(extra);
    }
    json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params })
}

/// `message` POSTed to `url` as 2026-07-28 asks, with `token` as its bearer token.
async fn post(url: &str, token: Option<&str>, message: &Value) -> Answer {
    let method = message["method"].as_str().unwrap_or_default();
    let name = message["params"]["name"].as_str().unwrap_or_default();
    let authorization = token.map(|token| format!("Bearer {token}"));
    let mut headers = vec![
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
    ];
    if !name.is_empty() {
        headers.push(("mcp-name", name));
    }
    if let Some(authorization) = &authorization {
        headers.push(("authorization", authorization));
    }
    http::post_json(url, &headers, message).await
}

/// A read of the document `doc_id`.
fn find(doc_id: &str) -> Value {
    tools_call("read_doc", json!({ "doc_id": doc_id }), json!({}))
}

/// How many requests reached the tracker, reads and writes.
fn ran(served: &Served) -> u32 {
    served.remote.all_requests() + served.remote.reads()
}

fn status(answer: &Answer) -> Value {
    answer.json()["result"]["structuredContent"]["status"].clone()
}

/// The `error_description` of a refusal's challenge.
fn challenge(answer: &Answer) -> &str {
    answer.header("www-authenticate")
}

async fn refused_token(issuer: &MockIssuer, served: &Served, ask: Value) -> Answer {
    let token = issuer.token(ask).await;
    let before = ran(served);
    let answer = post(&served.resource, Some(&token), &find("crash")).await;
    assert_eq!(answer.status, 401, "{}", answer.text);
    assert!(
        challenge(&answer).contains("error=\"invalid_token\""),
        "{}",
        challenge(&answer)
    );
    assert_eq!(ran(served), before, "nothing ran");
    answer
}

/// Asks `send_message` of `message` with `token`: the params of an answer that approves
/// it, with the request state the server sealed.
async fn approval_asked(served: &Served, token: &str, message: &Value) -> Value {
    let call = tools_call("send_message", message.clone(), json!({}));
    let asked = post(&served.resource, Some(token), &call).await;
    let state = asked.json()["result"]["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", asked.text))
        .to_owned();
    json!({
        "inputResponses": { "approval": { "action": "accept", "content": { "approve": true } } },
        "requestState": state,
    })
}

/// A read with a token of `extra` (beside a good read token's claims) is refused `401
/// invalid_token`, its challenge saying `says`, and nothing runs.
async fn refused_with(test: &str, extra: Value, says: &str) {
    let Some(issuer) = MockIssuer::start(test) else {
        return;
    };
    let served = serve(&issuer).await;
    let answer = refused_token(&issuer, &served, with(read_ask(&served), extra)).await;
    assert!(challenge(&answer).contains(says), "{}", challenge(&answer));
}

fn read_ask(served: &Served) -> Value {
    json!({ "aud": served.resource, "scope": "tools:read", "claims": { "tenant": "acme" } })
}

fn with(mut ask: Value, extra: Value) -> Value {
    if let (Value::Object(ask), Value::Object(extra)) = (&mut ask, extra) {
        ask.extend(extra);
    }
    ask
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_protected_resource_metadata_is_served_at_both_well_known_uris() {
    let Some(issuer) = MockIssuer::start("metadata") else {
        return;
    };
    let served = serve(&issuer).await;
    let origin = served.resource.trim_end_matches("/mcp");
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let answer = http::get(&format!("{origin}{path}")).await;
        assert_eq!(answer.status, 200, "{path}: {}", answer.text);
        let metadata = answer.json();
        assert_eq!(metadata["resource"], served.resource.as_str());
        assert_eq!(metadata["authorization_servers"], json!([issuer.url]));
        assert_eq!(metadata["bearer_methods_supported"], json!(["header"]));
        let supported = metadata["scopes_supported"].as_array().unwrap();
        assert!(supported.contains(&json!("tools:read")), "{metadata}");
        assert!(supported.contains(&json!("tools:write")), "{metadata}");
        // A step-up scope is asked for when needed, not up front.
        assert!(!supported.contains(&json!("mail:external")), "{metadata}");
    }
    let elsewhere = http::get(&format!("{origin}/other")).await;
    assert_eq!(elsewhere.status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_without_a_token_is_401_naming_the_metadata_and_the_scopes() {
    let Some(issuer) = MockIssuer::start("no token") else {
        return;
    };
    let served = serve(&issuer).await;
    let answer = post(&served.resource, None, &find("crash")).await;
    assert_eq!(answer.status, 401);
    let origin = served.resource.trim_end_matches("/mcp");
    let expected =
        format!("Bearer resource_metadata=\"{origin}/.well-known/oauth-protected-resource/mcp\"");
    assert!(
        challenge(&answer).starts_with(&expected),
        "{}",
        challenge(&answer)
    );
    assert!(
        challenge(&answer).contains("scope=\""),
        "{}",
        challenge(&answer)
    );
    assert!(
        !challenge(&answer).contains("error="),
        "{}",
        challenge(&answer)
    );
    assert_eq!(ran(&served), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_valid_token_calls_as_the_principal_it_proves() {
    let Some(issuer) = MockIssuer::start("valid token") else {
        return;
    };
    let served = serve(&issuer).await;
    let token = issuer.token(read_ask(&served)).await;
    let answer = post(&served.resource, Some(&token), &find("crash")).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(status(&answer), "succeeded", "{}", answer.text);
    // The audit names the token's principal (keyed), not one fixed at construction.
    let (_, audit) = served.audit.records().pop().expect("one audit");
    assert_eq!(
        audit.principal_ref,
        keys().principal_ref(&Principal::new("acme", "alice"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_of_another_type_verifies_under_its_own_algorithm() {
    let Some(issuer) = MockIssuer::start("ES256") else {
        return;
    };
    let served = serve(&issuer).await;
    let token = issuer
        .token(with(read_ask(&served), json!({ "kid": "es-1" })))
        .await;
    let answer = post(&served.resource, Some(&token), &find("crash")).await;
    assert_eq!(status(&answer), "succeeded", "{}", answer.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_token_is_refused() {
    // Expired two minutes ago: past the 30 s leeway.
    refused_with(
        "expired",
        json!({ "expires_in": -120 }),
        "the token has expired",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_not_yet_valid_is_refused() {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let claims = json!({ "claims": { "tenant": "acme", "nbf": now + 600 } });
    refused_with("not yet valid", claims, "not valid yet").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_of_another_issuer_is_refused() {
    let claims = json!({ "claims": { "tenant": "acme", "iss": "http://127.0.0.1:1" } });
    refused_with("wrong issuer", claims, "issuer is not trusted").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_for_another_resource_is_refused() {
    let Some(issuer) = MockIssuer::start("wrong audience") else {
        return;
    };
    let served = serve(&issuer).await;
    let ask = with(
        read_ask(&served),
        json!({ "aud": "https://other.example.com/mcp" }),
    );
    let answer = refused_token(&issuer, &served, ask).await;
    assert!(challenge(&answer).contains("issued for another resource"));
    let none = with(read_ask(&served), json!({ "remove": ["aud"] }));
    refused_token(&issuer, &served, none).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsigned_token_alg_none_is_refused() {
    refused_with(
        "alg none",
        json!({ "forge": "none" }),
        "algorithm is not its key",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_hs256_token_signed_with_the_public_key_is_refused() {
    let forged = json!({ "forge": "hs256-public" });
    refused_with("hs256 public", forged, "algorithm is not its key").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_id_token_typed_jwt_is_not_an_access_token() {
    let typed = json!({ "header": { "typ": "JWT" } });
    refused_with("typ JWT", typed, "not a JWT access token").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_key_fetches_the_keys_once_per_interval_then_a_rotated_key_is_picked_up() {
    let Some(issuer) = MockIssuer::start("rotation") else {
        return;
    };
    let served = serve(&issuer).await;
    let good = issuer.token(read_ask(&served)).await;
    assert_eq!(
        status(&post(&served.resource, Some(&good), &find("a")).await),
        "succeeded"
    );
    let fetched = issuer.jwks_requests().await;
    assert_eq!(fetched, 1, "the keys are fetched once, at the first token");

    // A key the issuer never published: fetched again once, then refused.
    tokio::time::sleep(Duration::from_millis(350)).await;
    let made_up = with(read_ask(&served), json!({ "header": { "kid": "made-up" } }));
    let answer = refused_token(&issuer, &served, made_up.clone()).await;
    assert!(challenge(&answer).contains("key is not one its issuer publishes"));
    assert_eq!(issuer.jwks_requests().await, 2);
    // Within the interval, more made-up keys fetch nothing.
    for _ in 0..3 {
        refused_token(&issuer, &served, made_up.clone()).await;
    }
    assert_eq!(issuer.jwks_requests().await, 2, "at most once per interval");

    // The issuer rotates: once the interval has passed, its new key is fetched and accepted.
    let kid = issuer.rotate().await;
    tokio::time::sleep(Duration::from_millis(350)).await;
    let rotated = issuer
        .token(with(read_ask(&served), json!({ "kid": kid })))
        .await;
    let answer = post(&served.resource, Some(&rotated), &find("b")).await;
    assert_eq!(status(&answer), "succeeded", "{}", answer.text);
    assert_eq!(issuer.jwks_requests().await, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_in_the_query_string_is_refused_and_never_read() {
    let Some(issuer) = MockIssuer::start("query token") else {
        return;
    };
    let served = serve(&issuer).await;
    let token = issuer.token(read_ask(&served)).await;
    let url = format!("{}?access_token={token}", served.resource);
    let answer = post(&url, None, &find("crash")).await;
    assert_eq!(answer.status, 400, "{}", answer.text);
    assert!(challenge(&answer).contains("error=\"invalid_request\""));
    // Both at once: still refused.
    let answer = post(&url, Some(&token), &find("crash")).await;
    assert_eq!(answer.status, 400, "{}", answer.text);
    assert_eq!(ran(&served), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_and_oversized_authorization_headers_are_refused() {
    let Some(issuer) = MockIssuer::start("malformed header") else {
        return;
    };
    let served = serve(&issuer).await;
    let send = |authorization: String| {
        let resource = served.resource.clone();
        async move {
            let headers = [
                ("accept", "application/json, text/event-stream"),
                ("mcp-protocol-version", "2026-07-28"),
                ("authorization", authorization.as_str()),
            ];
            http::post_json(&resource, &headers, &find("crash")).await
        }
    };
    let not_a_token = send("Bearer not\ta token".to_owned()).await;
    assert_eq!(not_a_token.status, 401);
    assert!(challenge(&not_a_token).contains("invalid_token"));
    let garbage = send("Bearer a.b.c".to_owned()).await;
    assert_eq!(garbage.status, 401);
    assert!(challenge(&garbage).contains("the token is malformed"));
    let other_scheme = send("Basic YWxpY2U6c2VjcmV0".to_owned()).await;
    assert_eq!(other_scheme.status, 401);
    assert!(!challenge(&other_scheme).contains("error="));
    let huge = send(format!("Bearer {}", "a".repeat(16 * 1024))).await;
    assert_eq!(huge.status, 400);
    assert!(challenge(&huge).contains("too long"));
    assert_eq!(ran(&served), 0);
    // A huge header is refused before it is parsed: the issuer was never asked.
    assert_eq!(issuer.jwks_requests().await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_without_the_write_scope_is_403_naming_the_scope() {
    let Some(issuer) = MockIssuer::start("missing scope") else {
        return;
    };
    let served = serve(&issuer).await;
    let token = issuer.token(read_ask(&served)).await;
    let label = tools_call(
        "label_issue",
        json!({ "number": 7, "label": "bug" }),
        json!({}),
    );
    let answer = post(&served.resource, Some(&token), &label).await;
    assert_eq!(answer.status, 403, "{}", answer.text);
    assert!(challenge(&answer).contains("error=\"insufficient_scope\""));
    assert!(
        challenge(&answer).contains("scope=\"tools:write\""),
        "{}",
        challenge(&answer)
    );
    assert!(challenge(&answer).contains("resource_metadata=\""));
    assert_eq!(served.remote.all_requests(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mail_outside_the_organisation_steps_up_to_its_own_scope() {
    let Some(issuer) = MockIssuer::start("step-up") else {
        return;
    };
    let served = serve(&issuer).await;
    let writer = issuer
        .token_for(&served.resource, "acme", "alice", "tools:read tools:write")
        .await;
    let inside = tools_call(
        "send_message",
        json!({ "to": "bob@acme.example", "text": "hi" }),
        json!({}),
    );
    let answer = post(&served.resource, Some(&writer), &inside).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let outside = tools_call(
        "send_message",
        json!({ "to": "eve@globex.example", "text": "hi" }),
        json!({}),
    );
    let answer = post(&served.resource, Some(&writer), &outside).await;
    assert_eq!(answer.status, 403, "{}", answer.text);
    // Every scope the call needs, in one challenge.
    assert!(
        challenge(&answer).contains("scope=\"tools:write mail:external\""),
        "{}",
        challenge(&answer)
    );
    let stepped_up = issuer
        .token_for(
            &served.resource,
            "acme",
            "alice",
            "tools:write mail:external",
        )
        .await;
    let answer = post(&served.resource, Some(&stepped_up), &outside).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(
        answer.json()["result"]["resultType"],
        "input_required",
        "{}",
        answer.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broader_scope_implies_the_narrower() {
    let Some(issuer) = MockIssuer::start("scope hierarchy") else {
        return;
    };
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let resource = format!("http://{}/mcp", listener.local_addr().unwrap());
    let remote = Remote::new();
    let store: Arc<dyn ControlStore> = Arc::new(MemoryStore::new());
    let dispatcher = Arc::new(builder(&remote).store(store).build().unwrap());
    let resource_server = ResourceServer::new(&resource, jwt(&issuer))
        .unwrap()
        .with_scope_implying("tracker:admin", ["tools:read", "tools:write"]);
    let server = McpServer::authenticated(dispatcher, resource_server).unwrap();
    tokio::spawn(server.serve_http(listener));
    let admin = issuer
        .token_for(&resource, "acme", "alice", "tracker:admin")
        .await;
    let answer = post(&resource, Some(&admin), &find("crash")).await;
    assert_eq!(status(&answer), "succeeded", "{}", answer.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_list_shows_only_the_tools_the_token_may_call() {
    let Some(issuer) = MockIssuer::start("tools/list") else {
        return;
    };
    let served = serve(&issuer).await;
    let list =
        json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": { "_meta": meta() } });
    let names = |answer: Answer| -> Vec<String> {
        let listed = answer.json();
        listed["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{listed}"))
            .iter()
            .map(|tool| tool["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let reader = issuer.token(read_ask(&served)).await;
    let read_only = names(post(&served.resource, Some(&reader), &list).await);
    assert!(read_only.contains(&"read_doc".to_owned()), "{read_only:?}");
    assert!(
        !read_only.contains(&"label_issue".to_owned()),
        "{read_only:?}"
    );
    assert!(
        !read_only.contains(&"send_message".to_owned()),
        "{read_only:?}"
    );
    let writer = issuer
        .token_for(&served.resource, "acme", "alice", "tools:read tools:write")
        .await;
    let all = names(post(&served.resource, Some(&writer), &list).await);
    assert!(all.contains(&"send_message".to_owned()), "{all:?}");
    assert!(all.len() > read_only.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_tenants_token_cannot_answer_anothers_request_state() {
    let Some(issuer) = MockIssuer::start("other principal") else {
        return;
    };
    let served = serve(&issuer).await;
    let scope = "tools:read tools:write";
    let alice = issuer
        .token_for(&served.resource, "acme", "alice", scope)
        .await;
    let mallory = issuer
        .token_for(&served.resource, "globex", "mallory", scope)
        .await;
    let message = json!({ "to": "bob@acme.example", "text": "hi" });
    let answer = approval_asked(&served, &alice, &message).await;
    let hijacked = post(
        &served.resource,
        Some(&mallory),
        &tools_call("send_message", message.clone(), answer.clone()),
    )
    .await;
    assert_eq!(
        hijacked.json()["error"]["data"]["reason"],
        "other_principal",
        "{}",
        hijacked.text
    );
    assert_eq!(served.remote.all_requests(), 0, "nothing ran");
    // The state's own principal answers it, and the message goes once.
    let answered = post(
        &served.resource,
        Some(&alice),
        &tools_call("send_message", message, answer),
    )
    .await;
    assert_eq!(status(&answered), "succeeded", "{}", answered.text);
    assert_eq!(served.remote.all_requests(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_write_by_two_tenants_is_two_operations_each_replayed_to_its_own() {
    let Some(issuer) = MockIssuer::start("two tenants") else {
        return;
    };
    let served = serve(&issuer).await;
    let scope = "tools:write";
    let acme = issuer
        .token_for(&served.resource, "acme", "alice", scope)
        .await;
    let globex = issuer
        .token_for(&served.resource, "globex", "alice", scope)
        .await;
    let label = tools_call(
        "label_issue",
        json!({ "number": 7, "label": "bug" }),
        json!({}),
    );
    for token in [&acme, &globex] {
        let answer = post(&served.resource, Some(token), &label).await;
        assert_eq!(status(&answer), "succeeded", "{}", answer.text);
        assert_eq!(
            answer.json()["result"]["structuredContent"]["execution"]["delivery"],
            "fresh"
        );
    }
    assert_eq!(served.remote.all_requests(), 2, "one per tenant");
    let again = post(&served.resource, Some(&acme), &label).await;
    let again = again.json();
    assert_eq!(
        again["result"]["structuredContent"]["execution"]["delivery"], "local_replay",
        "{again}"
    );
    assert_eq!(served.remote.all_requests(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_is_an_approval_by_the_tokens_principal() {
    let Some(issuer) = MockIssuer::start("approver") else {
        return;
    };
    let served = serve_with(jwt(&issuer), |builder| builder.approvers::<SendMessage>(2)).await;
    let alice = issuer
        .token_for(&served.resource, "acme", "alice", "tools:write")
        .await;
    let message = json!({ "to": "bob@acme.example", "text": "hi" });
    let answer = approval_asked(&served, &alice, &message).await;
    let answered = post(
        &served.resource,
        Some(&alice),
        &tools_call("send_message", message, answer),
    )
    .await;
    assert_eq!(answered.status, 200, "{}", answered.text);
    let pending = served.dispatcher.pending_approvals().await.unwrap();
    let approvers: Vec<&str> = pending[0]
        .approvals
        .iter()
        .map(|given| given.approver.as_str())
        .collect();
    assert_eq!(approvers, ["mcp:acme/alice"]);
    assert_eq!(
        served.remote.all_requests(),
        0,
        "a second person is still needed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handshake_session_keeps_the_principal_of_its_initialize() {
    let Some(issuer) = MockIssuer::start("session") else {
        return;
    };
    let served = serve(&issuer).await;
    let scope = "tools:read";
    let alice = issuer
        .token_for(&served.resource, "acme", "alice", scope)
        .await;
    let bob = issuer
        .token_for(&served.resource, "acme", "bob", scope)
        .await;
    let url = &served.resource;
    let opened = in_session(url, &alice, None, &initialize()).await;
    assert_eq!(opened.status, 200, "{}", opened.text);
    let session = opened.header("mcp-session-id").to_owned();
    assert!(!session.is_empty(), "a session id");
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    let noted = in_session(url, &alice, Some(&session), &initialized).await;
    assert!(noted.status.is_success(), "{}", noted.text);

    let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" });
    let by_bob = in_session(url, &bob, Some(&session), &list).await;
    assert_eq!(by_bob.status, 403, "{}", by_bob.text);
    let by_alice = in_session(url, &alice, Some(&session), &list).await;
    assert_eq!(by_alice.status, 200, "{}", by_alice.text);
    assert!(
        by_alice.json()["result"]["tools"].is_array(),
        "{}",
        by_alice.text
    );
    // A session nobody opened here is not found.
    let unknown = in_session(
        url,
        &alice,
        Some("not-a-session"),
        &json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/list" }),
    )
    .await;
    assert_eq!(unknown.status, 404, "{}", unknown.text);
}

/// `message` POSTed as a handshake revision asks: in `session` when it names one.
async fn in_session(url: &str, token: &str, session: Option<&str>, message: &Value) -> Answer {
    let authorization = format!("Bearer {token}");
    let mut headers = vec![
        ("accept", "application/json, text/event-stream"),
        ("authorization", authorization.as_str()),
    ];
    if let Some(session) = session {
        headers.push(("mcp-session-id", session));
        headers.push(("mcp-protocol-version", "2025-11-25"));
    }
    http::post_json(url, &headers, message).await
}

fn initialize() -> Value {
    json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": { "name": "session-test", "version": "1" } } })
}

/// Thirty `initialize`s of one principal at once, at a limit of three sessions: three open,
/// twenty-seven are `429` with `CALLER_LIMIT` and open nothing, while another principal
/// opens a session and lists its tools (timed); a session closed frees its place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_sessions_by_one_principal_ends_at_its_limit_and_another_is_served() {
    const FLOOD: usize = 30;
    const LIMIT: usize = 3;
    let Some(issuer) = MockIssuer::start("sessions per principal") else {
        return;
    };
    let served = serve_configured(
        jwt(&issuer),
        |builder| builder,
        |server| server.with_sessions_per_principal(LIMIT),
    )
    .await;
    let url = served.resource.clone();
    let scope = "tools:read";
    let alice = issuer.token_for(&url, "acme", "alice", scope).await;
    let bob = issuer.token_for(&url, "acme", "bob", scope).await;

    let flood: Vec<_> = (0..FLOOD)
        .map(|_| {
            let (url, alice) = (url.clone(), alice.clone());
            tokio::spawn(async move { in_session(&url, &alice, None, &initialize()).await })
        })
        .collect();
    let started = Instant::now();
    let opened = in_session(&url, &bob, None, &initialize()).await;
    assert_eq!(opened.status, 200, "{}", opened.text);
    let bobs = opened.header("mcp-session-id").to_owned();
    let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" });
    let listed = in_session(&url, &bob, Some(&bobs), &list).await;
    let bob_took = started.elapsed();
    assert_eq!(listed.status, 200, "{}", listed.text);
    eprintln!("another principal's initialize and tools/list during the flood: {bob_took:?}");
    assert!(bob_took < Duration::from_secs(5), "{bob_took:?}");

    let mut sessions = Vec::new();
    let mut refused = 0;
    for answer in flood {
        let answer = answer.await.unwrap();
        match answer.status.as_u16() {
            200 => sessions.push(answer.header("mcp-session-id").to_owned()),
            429 => {
                let error = &answer.json()["error"];
                assert_eq!(error["data"]["code"], "CALLER_LIMIT", "{}", answer.text);
                assert_eq!(error["data"]["recovery"], "retry_after", "{}", answer.text);
                assert_eq!(answer.json()["id"], 1, "{}", answer.text);
                assert!(!answer.header("retry-after").is_empty(), "a Retry-After");
                assert!(answer.header("mcp-session-id").is_empty(), "no session");
                refused += 1;
            }
            status => panic!("{status}: {}", answer.text),
        }
    }
    assert_eq!((sessions.len(), refused), (LIMIT, FLOOD - LIMIT));
    let more = in_session(&url, &alice, None, &initialize()).await;
    assert_eq!(more.status, 429, "{}", more.text);

    let authorization = format!("Bearer {alice}");
    let closed = http::send(
        ::http::Method::DELETE,
        &url,
        &[
            ("authorization", authorization.as_str()),
            ("mcp-session-id", sessions[0].as_str()),
            ("mcp-protocol-version", "2025-11-25"),
        ],
        Vec::new(),
    )
    .await;
    assert!(closed.status.is_success(), "{}", closed.text);
    let again = in_session(&url, &alice, None, &initialize()).await;
    assert_eq!(
        again.status, 200,
        "a closed session frees its place: {}",
        again.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_token_is_refused_through_introspection() {
    let Some(issuer) = MockIssuer::start("introspection") else {
        return;
    };
    let verifier = IntrospectionVerifier::new(
        Issuer::new(&issuer.url)
            .unwrap()
            .with_tenant_claim("tenant"),
        CLIENT_ID,
        CLIENT_SECRET,
    )
    .unwrap();
    let served = serve_with(verifier, |builder| builder).await;
    let token = issuer.token(read_ask(&served)).await;
    let answer = post(&served.resource, Some(&token), &find("crash")).await;
    assert_eq!(status(&answer), "succeeded", "{}", answer.text);
    issuer.revoke(&token).await;
    let answer = post(&served.resource, Some(&token), &find("crash")).await;
    assert_eq!(answer.status, 401, "{}", answer.text);
    assert!(
        challenge(&answer).contains("the token is not active"),
        "{}",
        challenge(&answer)
    );
    // Introspection checks the audience too.
    let elsewhere = issuer
        .token(with(
            read_ask(&served),
            json!({ "aud": "https://other.example.com/mcp" }),
        ))
        .await;
    let answer = post(&served.resource, Some(&elsewhere), &find("crash")).await;
    assert_eq!(answer.status, 401, "{}", answer.text);
    assert_eq!(served.remote.reads(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issuer_that_cannot_be_reached_is_503_not_401() {
    // Nothing listens on port 1: the keys cannot be had, so nobody can say the token is bad.
    let issuer = Issuer::new("http://127.0.0.1:1").unwrap();
    let served = serve_with(JwtVerifier::new([issuer]).unwrap(), |builder| builder).await;
    let token = "eyJhbGciOiJSUzI1NiIsInR5cCI6ImF0K2p3dCIsImtpZCI6ImsifQ.eyJpc3MiOiJodHRwOi8vMTI3LjAuMC4xOjEifQ.c2ln";
    let answer = post(&served.resource, Some(token), &find("crash")).await;
    assert_eq!(answer.status, 503, "{}", answer.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_origin_is_403_even_with_a_token() {
    let Some(issuer) = MockIssuer::start("origin") else {
        return;
    };
    let served = serve(&issuer).await;
    let token = issuer.token(read_ask(&served)).await;
    let authorization = format!("Bearer {token}");
    let headers = [
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("origin", "https://evil.example"),
        ("authorization", authorization.as_str()),
    ];
    let answer = http::post_json(&served.resource, &headers, &find("crash")).await;
    assert_eq!(answer.status, 403, "{}", answer.text);
    assert_eq!(ran(&served), 0);
}

#[tokio::test]
async fn a_server_of_one_principal_refuses_to_listen_beyond_loopback() {
    let remote = Remote::new();
    let dispatcher = Arc::new(builder(&remote).build().unwrap());
    let listener = TcpListener::bind("0.0.0.0:0").await.unwrap();
    let server = McpServer::new(dispatcher.clone(), Principal::new("acme", "desk"));
    let refused = server.serve_http(listener).await;
    assert!(
        matches!(refused, Err(McpServeError::Unprotected(_))),
        "{refused:?}"
    );

    // Said loudly, behind a proxy that authenticates: it serves.
    let listener = TcpListener::bind("0.0.0.0:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = McpServer::new(dispatcher, Principal::new("acme", "desk"))
        .behind_authenticating_proxy(["mcp.internal.example"]);
    tokio::spawn(server.serve_http(listener));
    let answer = post(
        &format!("http://127.0.0.1:{port}/mcp"),
        None,
        &find("crash"),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(status(&answer), "succeeded");
}

#[tokio::test]
async fn an_authenticated_server_has_no_stdio_and_a_misconfigured_one_does_not_start() {
    let remote = Remote::new();
    let dispatcher = Arc::new(builder(&remote).build().unwrap());
    let verifier = || JwtVerifier::new([Issuer::new("https://auth.example.com").unwrap()]).unwrap();
    let resource = ResourceServer::new("https://mcp.example.com/mcp", verifier()).unwrap();
    let server = McpServer::authenticated(dispatcher.clone(), resource).unwrap();
    let over_stream = server.serve_io(tokio::io::empty(), tokio::io::sink()).await;
    assert!(matches!(over_stream, Err(McpServeError::TokensOverStream)));

    let bad_scope = ResourceServer::new("https://mcp.example.com/mcp", verifier())
        .unwrap()
        .with_write_scope("tools write");
    assert_eq!(
        McpServer::authenticated(dispatcher.clone(), bad_scope).err(),
        Some(AuthConfigError::InvalidScope("tools write".to_owned()))
    );
    let unknown_tool = ResourceServer::new("https://mcp.example.com/mcp", verifier())
        .unwrap()
        .with_tool_scopes::<tool_contract_tests::GetOrder>(["orders:read"]);
    assert_eq!(
        McpServer::authenticated(dispatcher, unknown_tool).err(),
        Some(AuthConfigError::UnknownTool("get_order".to_owned()))
    );
    assert!(ResourceServer::new("http://mcp.example.com/mcp", verifier()).is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_does_not_run_what_the_callers_token_could_not_ask_for() {
    let Some(issuer) = MockIssuer::start("edit past the scopes") else {
        return;
    };
    let served = serve(&issuer).await;
    let alice = issuer
        .token_for(&served.resource, "acme", "alice", "tools:write")
        .await;
    let message = json!({ "to": "bob@acme.example", "text": "hi" });
    let call = tools_call("send_message", message.clone(), json!({}));
    let asked = post(&served.resource, Some(&alice), &call).await;
    assert_eq!(
        asked.json()["result"]["resultType"],
        "input_required",
        "{}",
        asked.text
    );
    // A person approves it changed to a recipient outside, which alice's token could not
    // have asked for (mail:external).
    let pending = served
        .dispatcher
        .pending_approvals()
        .await
        .unwrap()
        .remove(0);
    served
        .dispatcher
        .approve_with_edits(
            &pending.approval_id,
            &pending.preview_sha256,
            &json!({ "to": "eve@globex.example", "text": "hi" }),
            "supervisor",
            tool_contract_tests::tracker::clock() + Duration::from_secs(3600),
        )
        .await
        .unwrap();
    let direct = tools_call(
        "send_message",
        json!({ "to": "eve@globex.example", "text": "hi" }),
        json!({}),
    );
    assert_eq!(
        post(&served.resource, Some(&alice), &direct).await.status,
        403
    );

    let retried = post(&served.resource, Some(&alice), &call).await;
    assert_eq!(retried.status, 200, "{}", retried.text);
    let result = &retried.json()["result"]["structuredContent"];
    assert_eq!(result["error"]["code"], "BLOCKED", "{}", retried.text);
    assert_eq!(served.remote.all_requests(), 0, "nothing was sent");

    // With the scope the edit needs, the same call runs the edit, once.
    let stepped_up = issuer
        .token_for(
            &served.resource,
            "acme",
            "alice",
            "tools:write mail:external",
        )
        .await;
    let ran = post(&served.resource, Some(&stepped_up), &call).await;
    assert_eq!(
        ran.json()["result"]["structuredContent"]["error"]["code"],
        "APPROVED_WITH_CHANGES",
        "{}",
        ran.text
    );
    assert_eq!(served.remote.all_requests(), 1);
}

/// Anyone may read a document, and a secret one (`secret-…`) only with `docs:secret`.
fn secret_docs_need_their_scope() -> tool_contract::policy::Policies {
    tool_contract::policy::Policies::cedar(
        "docs.cedar",
        r#"permit(principal, action == Tools::Action::"read_doc", resource)
             when { !(context.input.doc_id like "secret-*") ||
                    (principal has scopes && principal.scopes.contains("docs:secret")) };"#,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policies_read_the_scopes_the_token_grants() {
    let Some(issuer) = MockIssuer::start("policies and scopes") else {
        return;
    };
    let policies = secret_docs_need_their_scope();
    let served = serve_with(jwt(&issuer), |builder| builder.policies(policies)).await;
    let reader = issuer.token(read_ask(&served)).await;
    let cleared = json!({ "scope": "tools:read docs:secret" });
    let cleared = issuer.token(with(read_ask(&served), cleared)).await;

    let refused = post(&served.resource, Some(&reader), &find("secret-1")).await;
    let code = &refused.json()["result"]["structuredContent"]["error"]["code"];
    assert_eq!(code, "NOT_FOUND", "{}", refused.text);
    assert_eq!(ran(&served), 0);
    let answer = post(&served.resource, Some(&reader), &find("d-1")).await;
    assert_eq!(status(&answer), "succeeded", "{}", answer.text);
    let answer = post(&served.resource, Some(&cleared), &find("secret-1")).await;
    assert_eq!(status(&answer), "succeeded", "{}", answer.text);
    assert_eq!(ran(&served), 2);
}

/// A read run as a task is decided by the policies with the scopes of the token it was asked
/// with: the task holds the token's reach, and its decision reads `principal.scopes` as the
/// call's own would.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_decided_by_the_policies_with_the_scopes_of_its_token() {
    let Some(issuer) = MockIssuer::start("a task's scopes") else {
        return;
    };
    let policies = secret_docs_need_their_scope();
    let served = serve_configured(
        jwt(&issuer),
        |builder| builder.policies(policies),
        |server| server.with_tasks(|_| TaskSupport::Optional),
    )
    .await;
    let url = served.resource.clone();
    let reader = issuer.token(read_ask(&served)).await;
    let cleared = json!({ "scope": "tools:read docs:secret" });
    let cleared = issuer.token(with(read_ask(&served), cleared)).await;

    for (token, expected) in [(&reader, "failed"), (&cleared, "succeeded")] {
        let initialize = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": { "tasks": {} },
            "clientInfo": { "name": "task-test", "version": "1" } } });
        let opened = in_session(&url, token, None, &initialize).await;
        assert_eq!(opened.status, 200, "{}", opened.text);
        let session = opened.header("mcp-session-id").to_owned();
        let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        in_session(&url, token, Some(&session), &initialized).await;
        let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "read_doc", "arguments": { "doc_id": "secret-1" }, "task": { "ttl": 60000 } } });
        let created = in_session(&url, token, Some(&session), &call).await.json();
        let task_id = created["result"]["task"]["taskId"].clone();
        assert!(task_id.is_string(), "{created}");
        let result = json!({ "jsonrpc": "2.0", "id": 3, "method": "tasks/result",
            "params": { "taskId": task_id } });
        let result = in_session(&url, token, Some(&session), &result)
            .await
            .json();
        let answer = &result["result"]["structuredContent"];
        assert_eq!(answer["status"], expected, "{result}");
        if expected == "failed" {
            assert_eq!(answer["error"]["code"], "NOT_FOUND", "{result}");
        }
    }
    assert_eq!(
        served.remote.reads(),
        1,
        "only the cleared token's task read"
    );
}
