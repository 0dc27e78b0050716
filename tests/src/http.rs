//! A few lines of HTTP/1.1 for the tests that speak to servers over loopback: one request per
//! connection, the whole answer read.

use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde_json::Value;

/// An answer, read whole.
#[derive(Debug, Clone)]
pub struct Answer {
    /// Its status.
    pub status: StatusCode,
    /// Its headers.
    pub headers: HeaderMap,
    /// Its body, as text.
    pub text: String,
}

impl Answer {
    /// The body as JSON: a JSON body, or the first data line of an event stream that holds
    /// any (a stream's priming event holds none).
    pub fn json(&self) -> Value {
        let json = self
            .text
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(str::trim)
            .find(|data| !data.is_empty())
            .unwrap_or(self.text.as_str());
        serde_json::from_str(json)
            .unwrap_or_else(|_| panic!("not JSON ({}): {}", self.status, self.text))
    }

    /// A header's value as text, or `""`.
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
    }
}

/// `method` of `url` (`http://host:port/path?query`) with `headers` and `body`.
pub async fn send(method: Method, url: &str, headers: &[(&str, &str)], body: Vec<u8>) -> Answer {
    let uri: http::Uri = url.parse().expect("an http URL");
    let authority = uri.authority().expect("a host and port").to_string();
    let stream = tokio::net::TcpStream::connect(&authority)
        .await
        .unwrap_or_else(|error| panic!("{authority}: {error}"));
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("an HTTP/1.1 connection");
    tokio::spawn(connection);
    let path = uri.path_and_query().map_or("/", |path| path.as_str());
    let mut request = http::Request::builder()
        .method(method)
        .uri(path)
        .header("host", &authority);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request
        .body(Full::new(Bytes::from(body)))
        .expect("a request");
    let response = sender.send_request(request).await.expect("an answer");
    let status = response.status();
    let headers = response.headers().clone();
    let body = response
        .into_body()
        .collect()
        .await
        .expect("a whole body")
        .to_bytes();
    Answer {
        status,
        headers,
        text: String::from_utf8_lossy(&body).into_owned(),
    }
}

/// `POST url` of the JSON `body`.
pub async fn post_json(url: &str, headers: &[(&str, &str)], body: &Value) -> Answer {
    let mut all = vec![("content-type", "application/json")];
    all.extend_from_slice(headers);
    send(Method::POST, url, &all, body.to_string().into_bytes()).await
}

/// `GET url`.
pub async fn get(url: &str) -> Answer {
    send(Method::GET, url, &[], Vec::new()).await
}

/// A handshake session opened on the MCP server at `url` by `initialize` of `revision`, the
/// client declaring `capabilities`, and `notifications/initialized` sent: its id, and the
/// `initialize` answer.
pub async fn open_session(url: &str, revision: &str, capabilities: Value) -> (String, Answer) {
    let initialize = serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": revision,
            "capabilities": capabilities,
            "clientInfo": { "name": "tool-contract-tests", "version": "1" }
        }
    });
    let headers = [("accept", "application/json, text/event-stream")];
    let opened = post_json(url, &headers, &initialize).await;
    assert_eq!(opened.status, StatusCode::OK, "{}", opened.text);
    let id = opened.header("mcp-session-id").to_owned();
    let initialized =
        serde_json::json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    let sent = in_session(url, revision, &id, &initialized).await;
    assert!(sent.status.is_success(), "{}", sent.text);
    (id, opened)
}

/// `message` POSTed in session `id` (of `revision`) of the MCP server at `url`.
pub async fn in_session(url: &str, revision: &str, id: &str, message: &Value) -> Answer {
    let headers = [
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", revision),
        ("mcp-session-id", id),
    ];
    post_json(url, &headers, message).await
}
