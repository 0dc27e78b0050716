//! PostgreSQL for the tests: the server named by one environment variable, one schema per
//! test (dropped when the test ends), so tests run in parallel.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use tool_contract::control::{PostgresOptions, PostgresStore};

/// The variable holding the connection string, e.g. `postgres://postgres@127.0.0.1:5432/test`.
/// `.ci/run` sets it; without it the PostgreSQL tests say they were skipped.
pub const URL_VARIABLE: &str = "TOOL_CONTRACT_POSTGRES_URL";

/// The connection string, or `None` (with a line saying the test was skipped).
pub fn url(test: &str) -> Option<String> {
    match std::env::var(URL_VARIABLE) {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            eprintln!("skipped {test}: {URL_VARIABLE} is not set");
            None
        }
    }
}

/// A schema of its own, dropped when this is.
#[derive(Debug)]
pub struct Schema {
    /// The connection string.
    pub url: String,
    /// The schema's name.
    pub name: String,
}

impl Schema {
    /// A schema for `test` no other test uses, or `None` when PostgreSQL is not configured.
    pub fn new(test: &str) -> Option<Schema> {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let url = url(test)?;
        let name = format!(
            "tc_test_{}_{}_{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |elapsed| elapsed.subsec_nanos())
        );
        Some(Schema { url, name })
    }

    /// The options of a store in this schema.
    pub fn options(&self) -> PostgresOptions {
        PostgresOptions::default().with_schema(self.name.clone())
    }

    /// A store in this schema (migrated on connect).
    pub async fn store(&self) -> PostgresStore {
        PostgresStore::connect_with(&self.url, self.options())
            .await
            .expect("the test database is reachable (is PostgreSQL running?)")
    }

    /// The one integer `sql` selects, in the test database, outside any store.
    pub fn query_i64(&self, sql: &str) -> i64 {
        let sql = sql.to_owned();
        self.on_the_database(move |client| async move {
            client
                .query_one(&sql, &[])
                .await
                .expect("the query runs")
                .get(0)
        })
    }

    /// Runs `sql` in the test database, outside any store.
    pub fn execute(&self, sql: &str) {
        let sql = sql.to_owned();
        self.on_the_database(move |client| async move {
            client
                .batch_execute(&sql)
                .await
                .expect("the statement runs");
        });
    }

    fn on_the_database<T, F>(
        &self,
        work: impl FnOnce(tokio_postgres::Client) -> F + Send + 'static,
    ) -> T
    where
        T: Send + 'static,
        F: std::future::Future<Output = T>,
    {
        on_the_database(&self.url, work)
    }
}

/// What `work` does with a client of the database at `url`, on a thread and a runtime of its
/// own: callers may be inside a runtime, or in `Drop`.
fn on_the_database<T, F>(
    url: &str,
    work: impl FnOnce(tokio_postgres::Client) -> F + Send + 'static,
) -> T
where
    T: Send + 'static,
    F: std::future::Future<Output = T>,
{
    let url = url.to_owned();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(async {
            let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .expect("the test database is reachable");
            let driver = tokio::spawn(connection);
            let answer = work(client).await;
            let _ = driver.await;
            answer
        })
    })
    .join()
    .expect("the database's thread ends")
}

impl Drop for Schema {
    fn drop(&mut self) {
        // A test on a current-thread runtime drops its schema on the runtime's one thread:
        // a step of its own left mid-transaction (a task's work the test did not wait for)
        // can then never finish, and would hold the drop forever. Such a transaction, idle
        // for seconds, is ended.
        let drop = format!(
            "SET lock_timeout = '3s'; DROP SCHEMA IF EXISTS {} CASCADE",
            self.name
        );
        on_the_database(&self.url, move |client| async move {
            if client.batch_execute(&drop).await.is_ok() {
                return;
            }
            client
                .batch_execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                     WHERE datname = current_database() AND pid <> pg_backend_pid() \
                     AND state = 'idle in transaction' \
                     AND now() - state_change > interval '2 seconds'",
                )
                .await
                .expect("the stalled transactions end");
            client
                .batch_execute(&drop)
                .await
                .expect("the schema is dropped");
        });
    }
}

/// A database of its own, for a test that reads PostgreSQL's statistics of one database
/// (which no other test then moves); dropped, with whatever is still connected to it, when
/// this is.
#[derive(Debug)]
pub struct Database {
    /// The connection string of the database.
    pub url: String,
    name: String,
    server_url: String,
}

impl Database {
    /// A new database for `test`, or `None` when PostgreSQL is not configured.
    pub fn new(test: &str) -> Option<Database> {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let server_url = url(test)?;
        let name = format!(
            "tc_db_{}_{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let (base, _) = server_url
            .rsplit_once('/')
            .expect("the connection string names a database");
        let database = Database {
            url: format!("{base}/{name}"),
            name,
            server_url,
        };
        let create = format!("CREATE DATABASE {}", database.name);
        on_the_database(&database.server_url, move |client| async move {
            client
                .batch_execute(&create)
                .await
                .expect("the database is created");
        });
        Some(database)
    }

    /// The transactions PostgreSQL counted in this database so far, committed or rolled back
    /// (`pg_stat_database`, as its backends have reported them: each reports within ten
    /// seconds of going idle).
    pub fn transactions(&self) -> i64 {
        let sql = format!(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = '{}'",
            self.name
        );
        on_the_database(&self.server_url, move |client| async move {
            client
                .query_one(&sql, &[])
                .await
                .expect("the statistics read")
                .get(0)
        })
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        let drop = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
        on_the_database(&self.server_url, move |client| async move {
            let _ = client.batch_execute(&drop).await;
        });
    }
}

/// A TCP relay to the test database that the test can cut (every connection dropped, new
/// ones refused) and restore: PostgreSQL going away mid-run, without stopping the server
/// other tests share. It also counts what its clients ask of the server.
#[derive(Debug)]
pub struct Relay {
    /// The relay's port on 127.0.0.1.
    pub port: u16,
    up: tokio::sync::watch::Sender<bool>,
    traffic: Arc<Traffic>,
}

/// What the relay's clients asked of the server since the last [`Relay::take_traffic`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Asked {
    /// Statements: each `Sync` of the extended protocol and each simple `Query` (the
    /// messages after which the server answers and the client waits).
    pub statements: u64,
    /// Round trips: the times a client spoke after the server had answered it.
    pub round_trips: u64,
    /// Statements the server was asked to parse: each `Parse` of the extended protocol and
    /// each simple `Query` (a prepared statement's later runs send neither).
    pub parses: u64,
}

#[derive(Debug, Default)]
struct Traffic {
    statements: AtomicU64,
    round_trips: AtomicU64,
    parses: AtomicU64,
    /// The `options` parameter of each startup packet, as the client sent it.
    startup_options: std::sync::Mutex<Vec<String>>,
}

impl Relay {
    /// A relay to the host and port of `url` (which must name `127.0.0.1:PORT` or
    /// `localhost:PORT`), running on a thread of its own.
    pub fn start(url: &str) -> Relay {
        let target = url
            .split('@')
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .unwrap_or("127.0.0.1:5432")
            .to_owned();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let port = listener.local_addr().expect("its address").port();
        let (up, watch) = tokio::sync::watch::channel(true);
        let traffic = Arc::new(Traffic::default());
        let counted = traffic.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            runtime.block_on(relay(listener, port, target, watch, counted));
        });
        Relay { port, up, traffic }
    }

    /// What the clients asked since the last call (or since the relay started).
    pub fn take_traffic(&self) -> Asked {
        Asked {
            statements: self.traffic.statements.swap(0, Ordering::SeqCst),
            round_trips: self.traffic.round_trips.swap(0, Ordering::SeqCst),
            parses: self.traffic.parses.swap(0, Ordering::SeqCst),
        }
    }

    /// The `options` parameter of every connection's startup packet so far (`""` for a
    /// connection that sent none).
    pub fn startup_options(&self) -> Vec<String> {
        self.traffic
            .startup_options
            .lock()
            .expect("the relay's traffic")
            .clone()
    }

    /// `url` with its host and port replaced by the relay's.
    pub fn url(&self, url: &str) -> String {
        let (user, rest) = url.split_once('@').unwrap_or(("postgres://postgres", url));
        let database = rest.split_once('/').map_or("", |(_, database)| database);
        format!("{user}@127.0.0.1:{}/{database}", self.port)
    }

    /// A store in `schema`, with `options`, reached through this relay.
    pub async fn store(&self, schema: &Schema, options: PostgresOptions) -> PostgresStore {
        PostgresStore::connect_with(&self.url(&schema.url), options)
            .await
            .expect("the test database is reachable through the relay")
    }

    /// Drops every relayed connection and refuses new ones.
    pub fn cut(&self) {
        self.up.send_replace(false);
        // Let the relay thread see it before the caller goes on.
        std::thread::sleep(std::time::Duration::from_millis(50));
    }

    /// Accepts connections again, on the same port.
    pub fn restore(&self) {
        self.up.send_replace(true);
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

async fn relay(
    listener: std::net::TcpListener,
    port: u16,
    target: String,
    mut up: tokio::sync::watch::Receiver<bool>,
    traffic: Arc<Traffic>,
) {
    listener
        .set_nonblocking(true)
        .expect("a non-blocking listener");
    let mut listener = Some(tokio::net::TcpListener::from_std(listener).expect("a listener"));
    loop {
        let Some(accepting) = &listener else {
            if up.wait_for(|up| *up).await.is_err() {
                return;
            }
            listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
                .await
                .ok();
            continue;
        };
        tokio::select! {
            accepted = accepting.accept() => {
                let Ok((mut client, _)) = accepted else { continue };
                let target = target.clone();
                let mut down = up.clone();
                let traffic = traffic.clone();
                tokio::spawn(async move {
                    let Ok(mut server) = tokio::net::TcpStream::connect(&target).await else {
                        return;
                    };
                    tokio::select! {
                        () = relayed(&mut client, &mut server, &traffic) => {}
                        _ = down.wait_for(|up| !*up) => {}
                    }
                });
            }
            changed = up.changed() => {
                if changed.is_err() {
                    return;
                }
                if !*up.borrow() {
                    listener = None;
                }
            }
        }
    }
}

/// Relays one connection both ways until either side closes, counting the client's
/// statements and round trips into `traffic`.
async fn relayed(
    client: &mut tokio::net::TcpStream,
    server: &mut tokio::net::TcpStream,
    traffic: &Traffic,
) {
    let (mut client_reads, mut client_writes) = client.split();
    let (mut server_reads, mut server_writes) = server.split();
    let answered = AtomicBool::new(false);
    let upstream = async {
        let mut messages = FrontendMessages::default();
        let mut buffer = vec![0; 1 << 16];
        while let Ok(read @ 1..) = client_reads.read(&mut buffer).await {
            if answered.swap(false, Ordering::SeqCst) {
                traffic.round_trips.fetch_add(1, Ordering::SeqCst);
            }
            let fed = messages.feed(&buffer[..read]);
            traffic
                .statements
                .fetch_add(fed.statements, Ordering::SeqCst);
            traffic.parses.fetch_add(fed.parses, Ordering::SeqCst);
            if let Some(options) = fed.startup_options {
                traffic
                    .startup_options
                    .lock()
                    .expect("the relay's traffic")
                    .push(options);
            }
            if server_writes.write_all(&buffer[..read]).await.is_err() {
                break;
            }
        }
    };
    let downstream = async {
        let mut buffer = vec![0; 1 << 16];
        while let Ok(read @ 1..) = server_reads.read(&mut buffer).await {
            // Marked before the client can read it, so its next words count as a new trip.
            answered.store(true, Ordering::SeqCst);
            if client_writes.write_all(&buffer[..read]).await.is_err() {
                break;
            }
        }
    };
    tokio::select! {
        () = upstream => {}
        () = downstream => {}
    }
}

/// The frontend's side of PostgreSQL's wire protocol, read only as far as message
/// boundaries: an untyped startup packet (after any SSL or GSS encryption request), then
/// messages of a type byte and a length that counts itself (PostgreSQL's documentation,
/// "Frontend/Backend Protocol", section "Message Formats").
/// What one read of the client's bytes completed.
#[derive(Debug, Default)]
struct Fed {
    statements: u64,
    parses: u64,
    /// The startup packet's `options`, when these bytes completed it.
    startup_options: Option<String>,
}

#[derive(Debug, Default)]
struct FrontendMessages {
    started: bool,
    pending: Vec<u8>,
}

/// The value of `name` among a startup packet's parameters (after its length and protocol
/// version: name and value pairs, each null-terminated, then a null), or `""`.
fn startup_option(parameters: &[u8], name: &str) -> String {
    let mut fields = parameters.split(|&byte| byte == 0);
    while let (Some(key), Some(value)) = (fields.next(), fields.next()) {
        if key == name.as_bytes() {
            return String::from_utf8_lossy(value).into_owned();
        }
    }
    String::new()
}

impl FrontendMessages {
    /// The request codes of the 8-byte packets sent before the startup packet.
    const SSL_REQUEST: u32 = 80_877_103;
    const GSSENC_REQUEST: u32 = 80_877_104;

    /// Takes the client's next bytes; what the messages they completed asked.
    fn feed(&mut self, bytes: &[u8]) -> Fed {
        self.pending.extend_from_slice(bytes);
        let mut fed = Fed::default();
        let mut at = 0;
        loop {
            let rest = &self.pending[at..];
            let (length, kind, starts) = if self.started {
                let Some(header) = rest.get(..5) else { break };
                let length = u32::from_be_bytes([header[1], header[2], header[3], header[4]]);
                (1 + length as usize, Some(header[0]), false)
            } else {
                let Some(header) = rest.get(..8) else { break };
                let length = u32::from_be_bytes([header[0], header[1], header[2], header[3]]);
                let code = u32::from_be_bytes([header[4], header[5], header[6], header[7]]);
                let starts = code != Self::SSL_REQUEST && code != Self::GSSENC_REQUEST;
                (length as usize, None, starts)
            };
            if rest.len() < length || length == 0 {
                break;
            }
            if starts {
                fed.startup_options = Some(startup_option(&rest[8..length], "options"));
            }
            self.started |= starts;
            fed.statements += u64::from(matches!(kind, Some(b'S' | b'Q')));
            fed.parses += u64::from(matches!(kind, Some(b'P' | b'Q')));
            at += length;
        }
        self.pending.drain(..at);
        fed
    }
}
