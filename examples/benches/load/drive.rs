//! The load's client side: kept-alive HTTP/1.1 connections to an MCP server's Streamable HTTP
//! endpoint, each calling `get_order` one request at a time, closed-loop (each call sent as the
//! last is answered) or open-loop (each call sent at its planned time, its latency counted
//! from then, so a server that falls behind shows its queue in the latency).

use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;

/// The MCP revision a connection speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Revision {
    /// 2026-07-28: no session, the revision and capabilities in each request's `_meta`.
    Stateless,
    /// 2025-11-25: `initialize` first, then every request in its session.
    Session,
}

impl Revision {
    pub fn name(self) -> &'static str {
        match self {
            Revision::Stateless => "2026-07-28",
            Revision::Session => "2025-11-25",
        }
    }
}

/// The order every call reads.
pub const ORDER: &str = "ORDER-1001";

/// One kept-alive connection, its session if its revision has one.
pub struct Connection {
    sender: SendRequest<Full<Bytes>>,
    address: String,
    revision: Revision,
    session: Option<String>,
    next_id: u64,
}

impl Connection {
    /// A connection to `address`, its session begun on 2025-11-25.
    pub async fn open(address: &str, revision: Revision) -> Result<Self, String> {
        let stream = tokio::net::TcpStream::connect(address)
            .await
            .map_err(|error| format!("connect {address}: {error}"))?;
        stream
            .set_nodelay(true)
            .map_err(|error| error.to_string())?;
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|error| error.to_string())?;
        tokio::spawn(connection);
        let mut connection = Connection {
            sender,
            address: address.to_owned(),
            revision,
            session: None,
            next_id: 0,
        };
        if revision == Revision::Session {
            let initialize = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"load","version":"1"}}}"#;
            connection.post(initialize.to_owned(), None).await?;
            let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
            connection.post(initialized.to_owned(), None).await?;
        }
        Ok(connection)
    }

    /// One `tools/call` of `get_order`: the answer's body, checked to be a success.
    pub async fn call(&mut self) -> Result<Bytes, String> {
        self.next_id += 1;
        let id = self.next_id;
        let body = match self.revision {
            Revision::Stateless => format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"get_order","arguments":{{"order_ref":"{ORDER}"}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}},"io.modelcontextprotocol/clientInfo":{{"name":"load","version":"1"}}}}}}}}"#
            ),
            Revision::Session => format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"get_order","arguments":{{"order_ref":"{ORDER}"}}}}}}"#
            ),
        };
        let answer = self.post(body, Some("get_order")).await?;
        if !answer.windows(11).any(|window| window == br#""succeeded""#) {
            return Err(format!(
                "not a success: {}",
                String::from_utf8_lossy(&answer[..answer.len().min(300)])
            ));
        }
        Ok(answer)
    }

    async fn post(&mut self, body: String, tool: Option<&str>) -> Result<Bytes, String> {
        let mut request = hyper::Request::post("/mcp")
            .header("host", &self.address)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", self.revision.name());
        if let Some(session) = &self.session {
            request = request.header("mcp-session-id", session);
        }
        if let (Revision::Stateless, Some(tool)) = (self.revision, tool) {
            request = request
                .header("mcp-method", "tools/call")
                .header("mcp-name", tool);
        }
        let request = request
            .body(Full::new(Bytes::from(body)))
            .map_err(|error| error.to_string())?;
        self.sender
            .ready()
            .await
            .map_err(|error| format!("connection: {error}"))?;
        let response = self
            .sender
            .send_request(request)
            .await
            .map_err(|error| format!("request: {error}"))?;
        if let Some(session) = response.headers().get("mcp-session-id") {
            self.session = session.to_str().ok().map(str::to_owned);
        }
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|error| format!("body: {error}"))?
            .to_bytes();
        if !status.is_success() {
            return Err(format!("{status}: {}", String::from_utf8_lossy(&body)));
        }
        Ok(body)
    }
}

/// What one run of calls did.
#[derive(Debug, Default)]
pub struct Run {
    /// The calls answered with a success within the run.
    pub completed: u64,
    /// The calls that failed, and the first failure.
    pub errors: u64,
    pub first_error: Option<String>,
    /// How long the run lasted, from its start to its last answer.
    pub elapsed: Duration,
    /// Each answered call's latency (open-loop: from its planned send time).
    pub latencies: Vec<Duration>,
}

impl Run {
    pub fn per_second(&self) -> f64 {
        self.completed as f64 / self.elapsed.as_secs_f64()
    }

    /// The `q` quantile of the latencies (0.5, 0.99, 0.999), in milliseconds.
    pub fn quantile_ms(&mut self, q: f64) -> f64 {
        if self.latencies.is_empty() {
            return f64::NAN;
        }
        self.latencies.sort_unstable();
        let at = ((self.latencies.len() as f64 * q).ceil() as usize).clamp(1, self.latencies.len());
        self.latencies[at - 1].as_secs_f64() * 1e3
    }

    fn merge(&mut self, other: Run) {
        self.completed += other.completed;
        self.errors += other.errors;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
        self.elapsed = self.elapsed.max(other.elapsed);
        self.latencies.extend(other.latencies);
    }
}

/// `connections` connections to `address`, opened (and their sessions begun) before any run.
pub async fn connect_all(
    address: &str,
    revision: Revision,
    connections: usize,
) -> Result<Vec<Connection>, String> {
    let mut opened = Vec::with_capacity(connections);
    for _ in 0..connections {
        opened.push(Connection::open(address, revision).await?);
    }
    Ok(opened)
}

/// Every connection calling back to back for `length`: the most the server answers.
pub async fn closed_loop(connections: Vec<Connection>, length: Duration) -> (Run, Vec<Connection>) {
    let start = Instant::now();
    let end = start + length;
    let tasks: Vec<_> = connections
        .into_iter()
        .map(|mut connection| {
            tokio::spawn(async move {
                let mut run = Run::default();
                while Instant::now() < end {
                    let sent = Instant::now();
                    record(&mut run, connection.call().await, sent);
                }
                run.elapsed = start.elapsed();
                (run, connection)
            })
        })
        .collect();
    gather(tasks).await
}

/// Calls at `rate` a second in all, spread evenly over the connections, each sent at its
/// planned time (or as soon as its connection is free, when the server is behind) and its
/// latency counted from the planned time, for `length`.
pub async fn open_loop(
    connections: Vec<Connection>,
    rate: f64,
    length: Duration,
) -> (Run, Vec<Connection>) {
    let count = connections.len();
    let interval = Duration::from_secs_f64(count as f64 / rate);
    let start = Instant::now() + Duration::from_millis(20);
    let end = start + length;
    let tasks: Vec<_> = connections
        .into_iter()
        .enumerate()
        .map(|(index, mut connection)| {
            let first = start + interval.mul_f64(index as f64 / count as f64);
            tokio::spawn(async move {
                let mut run = Run::default();
                let mut planned = first;
                while planned < end {
                    wait_until(planned).await;
                    record(&mut run, connection.call().await, planned);
                    planned += interval;
                }
                run.elapsed = start.elapsed();
                (run, connection)
            })
        })
        .collect();
    gather(tasks).await
}

/// Sleeps to within a millisecond of `at` (the timer's grain), then yields until it comes.
async fn wait_until(at: Instant) {
    let now = Instant::now();
    if at > now + Duration::from_millis(2) {
        tokio::time::sleep_until((at - Duration::from_millis(1)).into()).await;
    }
    while Instant::now() < at {
        tokio::task::yield_now().await;
    }
}

fn record(run: &mut Run, answered: Result<Bytes, String>, since: Instant) {
    match answered {
        Ok(_) => {
            run.completed += 1;
            run.latencies.push(since.elapsed());
        }
        Err(error) => {
            run.errors += 1;
            run.first_error.get_or_insert(error);
        }
    }
}

async fn gather(tasks: Vec<tokio::task::JoinHandle<(Run, Connection)>>) -> (Run, Vec<Connection>) {
    let mut total = Run::default();
    let mut connections = Vec::with_capacity(tasks.len());
    for task in tasks {
        let (run, connection) = task.await.expect("a connection's task");
        total.merge(run);
        connections.push(connection);
    }
    (total, connections)
}
