//! The refund desk: an agent's four tools behind the whole `tool-contract` pipeline.
//!
//! `refund-desk [replay] [--provider NAME] [--verbose | --json]` feeds recorded model turns of
//! OpenAI Responses, Anthropic Messages, Gemini `generateContent` and Gemini Interactions
//! (whole and streamed) through the dispatcher, and prints one line per call: its tool, status,
//! error code and recovery (`--verbose` adds the exact next-turn payload for that provider).
//!
//! `refund-desk --declarations [--provider NAME]` prints the `tools` array each provider API
//! takes for the desk's tools, one JSON object per API.
//!
//! `refund-desk mcp [--http ADDR [--issuer URL --resource URL]] [--store PATH | --store
//! postgres://…]` serves the same tools as an MCP server over stdio (or Streamable HTTP on
//! ADDR, each request's principal from its bearer token when an issuer is named), its
//! approvals and write records in an SQLite file by default (they survive a restart), or in
//! PostgreSQL for many replicas. With `--console`, the approvals console on the same port.
//! A refund draft is served as a task to a client that takes tasks (2026-07-28's extension,
//! 2025-11-25's utility): it waits for its approvals in the store, where any replica answers.
//!
//! `refund-desk console [--http ADDR] [--invite APPROVER]` serves the approvals console
//! alone, or prints an invitation for an approver to enrol their first passkey.

mod replay;

use std::process::ExitCode;
use std::sync::Arc;

use tool_contract::Principal;
use tool_contract::console::{Console, ConsoleOptions};
use tool_contract::control::{
    AuditHistory, AuditSink, ControlStore, JsonLinesAuditLog, MemoryAuditLog,
};
use tool_contract::control::{PostgresStore, SqliteStore};
use tool_contract::dispatch::Dispatcher;
use tool_contract::mcp::McpServer;
use tool_contract::providers::tool_declarations;
use tool_contract::results::{KeySet, RelyingParty};

use replay::{Output, Wire};
use tool_contract_examples::refund_desk as desk;

/// The allocator a deployment would choose: under many callers, glibc's malloc spent about a
/// quarter of each served call consolidating its free lists (BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const USAGE: &str = "\
usage: refund-desk [replay] [--provider NAME] [--verbose | --json]
       refund-desk --declarations [--provider NAME]
       refund-desk mcp [--http ADDR [--issuer URL --resource URL] [--console]]
                       [--store PATH | --store postgres://USER@HOST:PORT/DATABASE]
       refund-desk console [--http ADDR | --invite APPROVER | --publish DIR] [--store ...]

replay (the default)  recorded model turns of each provider through the dispatcher,
                      one line per call: tool, status, error code, recovery
  --provider NAME     one provider: openai, anthropic, gemini, interactions
                      (or its API name, e.g. openai_responses)
  --verbose           also each turn's next-turn payload and each preview approved
  --json              one JSON object per call on stdout, nothing else
--declarations        each provider API's tools array for the desk's tools, one
                      object {api, tools} per line (--provider: one API)
mcp                   serve the desk's tools as an MCP server over stdio; a refund
                      draft is a task when the client takes tasks, kept in the store
  --http ADDR         over MCP's Streamable HTTP on ADDR instead (e.g. 127.0.0.1:8931;
                      port 0 takes a free one), named on stderr as listening on URL
  --issuer URL        with --http: each request needs a bearer access token (a JWT,
                      RFC 9068) of this OAuth issuer; its principal is the token's
                      `tenant` claim and `sub`. Reads need tools:read, writes
                      tools:write, refunds above 40.00 refunds:large too
  --resource URL      with --issuer: the desk's canonical URI, its MCP endpoint
                      (e.g. https://desk.example.com/mcp), every token's audience
  --console           with --http: the approvals console at /console on the same
                      port, where a refund above 40.00 waits for two supervisors'
                      passkey signatures (at http://localhost:PORT, the origin
                      their passkeys are made for)
  --store PATH        the SQLite file of approvals and write records (default:
                      refund-desk.sqlite in the temporary directory); a postgres://
                      URL shares them with every replica on that database
console               the approvals console alone, on --http ADDR (default
                      127.0.0.1:8932); approvers sup-ana, sup-ben (supervisors of
                      acme-shop), sup-cy (of another shop) and aud-dee (auditor)
  --invite APPROVER   print the path of APPROVER's invitation to enrol a passkey
                      (valid a day, until they have one), and exit
  --publish DIR       write what an auditor checks receipts with offline into DIR:
                      published-keys.json (the receipt signer's key) and
                      approver-keys.json (the approvers' passkeys), and exit
  --origin URL        with --publish: the console's origin, which the passkeys were
                      made for (default http://localhost:8932)";

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
enum Command {
    Replay {
        wires: Vec<Wire>,
        output: Output,
    },
    Declarations {
        wires: Vec<Wire>,
    },
    Mcp {
        store: Store,
        http: Option<String>,
        auth: Option<Auth>,
        console: bool,
    },
    Console {
        store: Store,
        http: String,
        once: Option<Once>,
    },
    Help,
}

/// What `console` does instead of serving.
#[derive(Debug, PartialEq, Eq)]
enum Once {
    /// Prints an invitation for this approver.
    Invite(String),
    /// Writes the published keys of the console at `origin` into `directory`.
    Publish {
        directory: std::path::PathBuf,
        origin: String,
    },
}

/// Whose tokens `mcp --http` takes, and for which resource.
#[derive(Debug, PartialEq, Eq)]
struct Auth {
    issuer: String,
    resource: String,
}

/// Where `mcp` keeps approvals and write records.
#[derive(Debug, PartialEq, Eq)]
enum Store {
    Sqlite(std::path::PathBuf),
    Postgres(String),
}

impl Store {
    fn from_argument(argument: &str) -> Store {
        if argument.starts_with("postgres://") || argument.starts_with("postgresql://") {
            Store::Postgres(argument.to_owned())
        } else {
            Store::Sqlite(argument.into())
        }
    }

    fn default_file() -> Store {
        Store::Sqlite(std::env::temp_dir().join("refund-desk.sqlite"))
    }
}

fn parse(arguments: &[String]) -> Result<Command, String> {
    let mut mode = None;
    let mut wires = Vec::new();
    let mut output = Output::Text;
    let mut store = None;
    let mut declarations = false;
    let mut http = None;
    let mut issuer = None;
    let mut resource = None;
    let mut console = false;
    let mut once = None;
    let mut origin = None;
    let mut arguments = arguments.iter();
    while let Some(argument) = arguments.next() {
        match argument.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            "--json" | "--verbose" if output != Output::Text => {
                return Err("give --verbose or --json, not both".to_owned());
            }
            "--json" => output = Output::JsonLines,
            "--declarations" => declarations = true,
            "--verbose" => output = Output::Verbose,
            "--provider" => {
                let name = arguments.next().ok_or("--provider needs a name")?;
                let wire =
                    Wire::from_name(name).ok_or_else(|| format!("unknown provider {name:?}"))?;
                if !wires.contains(&wire) {
                    wires.push(wire);
                }
            }
            "--store" => {
                let place = arguments
                    .next()
                    .ok_or("--store needs a file or a postgres:// URL")?;
                store = Some(Store::from_argument(place));
            }
            "--http" => {
                let address = arguments.next().ok_or("--http needs an address")?;
                http = Some(address.clone());
            }
            "--issuer" => issuer = Some(arguments.next().ok_or("--issuer needs a URL")?.clone()),
            "--resource" => {
                resource = Some(arguments.next().ok_or("--resource needs a URL")?.clone());
            }
            "--console" => console = true,
            "--invite" | "--publish" if once.is_some() => {
                return Err("give --invite or --publish, not both".to_owned());
            }
            "--invite" => {
                let approver = arguments.next().ok_or("--invite needs an approver id")?;
                once = Some(Once::Invite(approver.clone()));
            }
            "--publish" => {
                let directory = arguments.next().ok_or("--publish needs a directory")?;
                once = Some(Once::Publish {
                    directory: directory.into(),
                    origin: String::new(),
                });
            }
            "--origin" => origin = Some(arguments.next().ok_or("--origin needs a URL")?.clone()),
            "replay" | "mcp" | "console" if mode.is_none() => mode = Some(argument.as_str()),
            other => return Err(format!("unexpected argument {other:?}")),
        }
    }
    let auth = match (issuer, resource) {
        (Some(issuer), Some(resource)) if http.is_some() => Some(Auth { issuer, resource }),
        (None, None) => None,
        (Some(_), Some(_)) => return Err("--issuer and --resource are for --http".to_owned()),
        _ => return Err("--issuer and --resource go together".to_owned()),
    };
    if console && (mode != Some("mcp") || http.is_none()) {
        return Err("--console is for mcp --http".to_owned());
    }
    if once.is_some() && mode != Some("console") {
        return Err("--invite and --publish are for console".to_owned());
    }
    match (&mut once, origin) {
        (Some(Once::Publish { origin, .. }), given) => {
            *origin = given.unwrap_or_else(|| "http://localhost:8932".to_owned());
        }
        (_, Some(_)) => return Err("--origin is for console --publish".to_owned()),
        _ => {}
    }
    match mode {
        _ if auth.is_some() && mode != Some("mcp") => Err("--issuer is for mcp".to_owned()),
        Some("console") if once.is_some() && http.is_some() => {
            Err("--invite and --publish serve nothing: no --http".to_owned())
        }
        Some("console") if wires.is_empty() && output == Output::Text && !declarations => {
            Ok(Command::Console {
                store: store.unwrap_or_else(Store::default_file),
                http: http.unwrap_or_else(|| "127.0.0.1:8932".to_owned()),
                once,
            })
        }
        Some("console") => {
            Err("console takes no --provider, --verbose, --json or --declarations".to_owned())
        }
        Some("mcp") if declarations => Err("mcp takes no --declarations".to_owned()),
        Some("mcp") if wires.is_empty() && output == Output::Text => Ok(Command::Mcp {
            store: store.unwrap_or_else(Store::default_file),
            http,
            auth,
            console,
        }),
        Some("mcp") => Err("mcp takes no --provider, --verbose or --json".to_owned()),
        _ if store.is_some() => Err("--store is for mcp".to_owned()),
        _ if http.is_some() => Err("--http is for mcp".to_owned()),
        Some("replay") if declarations => Err("--declarations is not a replay".to_owned()),
        _ if declarations && output != Output::Text => {
            Err("--declarations takes no --verbose or --json".to_owned())
        }
        _ if declarations => {
            if wires.is_empty() {
                wires = Wire::ALL.to_vec();
            }
            Ok(Command::Declarations { wires })
        }
        _ => {
            if wires.is_empty() {
                wires = Wire::ALL.to_vec();
            }
            Ok(Command::Replay { wires, output })
        }
    }
}

fn main() -> ExitCode {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let command = match parse(&arguments) {
        Ok(command) => command,
        Err(error) => {
            eprintln!("{error}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let result = match command {
        Command::Help => {
            println!("{USAGE}");
            Ok(())
        }
        Command::Replay { wires, output } => replay::run(&wires, output),
        Command::Declarations { wires } => print_declarations(&wires),
        Command::Mcp {
            store,
            http,
            auth,
            console,
        } => serve_mcp(&store, http.as_deref(), auth.as_ref(), console),
        Command::Console { store, http, once } => serve_console(&store, &http, once.as_ref()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("refund-desk: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Prints each API's `tools` array for the desk's tools, one JSON line per API.
fn print_declarations(wires: &[Wire]) -> Result<(), String> {
    let registry = desk::registry();
    for wire in wires {
        let api = wire.api();
        let tools = tool_declarations(&registry, api).map_err(|error| error.to_string())?;
        println!("{}", serde_json::json!({ "api": api, "tools": tools }));
    }
    Ok(())
}

/// Serves the desk over stdio until the client closes the session, or over HTTP on `http`
/// until stopped (with `auth`, as a resource server of its issuer; with `console`, the
/// approvals console on the same port). Stdout is the protocol's; everything for people goes
/// to stderr.
fn serve_mcp(
    store: &Store,
    http: Option<&str>,
    auth: Option<&Auth>,
    console: bool,
) -> Result<(), String> {
    // Over HTTP, many callers at once: a worker thread per core, as a deployment runs.
    let runtime = match http {
        Some(_) => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|error| format!("no runtime: {error}"))?,
        None => runtime()?,
    };
    runtime.block_on(async {
        let control = open_store(store).await?;
        let desk = Arc::new(desk::Desk::seeded());
        let Some(address) = http else {
            let (audit, _) = open_audit_log("mcp-")?;
            // The same rules as the replay: two supervisors above 40.00, receipts signed.
            let dispatcher = Arc::new(desk::four_eyes_dispatcher(&desk, audit, control)?);
            let server = McpServer::new(dispatcher, Principal::new("acme-shop", "mcp:refund-desk"))
                .with_server_info("refund-desk", env!("CARGO_PKG_VERSION"))
                .with_tasks(desk::task_support);
            return server
                .serve_stdio()
                .await
                .map_err(|error| error.to_string());
        };
        let listener = bind(address).await?;
        let bound = listener
            .local_addr()
            .map_err(|error| format!("no address: {error}"))?;
        let (dispatcher, console) = if console {
            let audit = open_audit_log("console-")?;
            let origin = format!("http://localhost:{}", bound.port());
            let (dispatcher, console) = desk_console(&desk, control, &origin, audit).await?;
            (dispatcher, Some(console))
        } else {
            let (audit, _) = open_audit_log("mcp-")?;
            (
                Arc::new(desk::four_eyes_dispatcher(&desk, audit, control)?),
                None,
            )
        };
        let mut server = match auth {
            Some(auth) => McpServer::authenticated(
                dispatcher,
                desk::resource_server(&auth.issuer, &auth.resource)?,
            )
            .map_err(|error| error.to_string())?,
            None => McpServer::new(dispatcher, Principal::new("acme-shop", "mcp:refund-desk")),
        }
        .with_server_info("refund-desk", env!("CARGO_PKG_VERSION"))
        .with_tasks(desk::task_support);
        if let Some(console) = &console {
            server = server.with_console(console);
            eprintln!("console: http://localhost:{}/console", bound.port());
        }
        eprintln!("listening on http://{bound}");
        server
            .serve_http(listener)
            .await
            .map_err(|error| error.to_string())
    })
}

/// Serves the approvals console alone on `http` until stopped, or does `once` and returns.
fn serve_console(store: &Store, http: &str, once: Option<&Once>) -> Result<(), String> {
    runtime()?.block_on(async {
        let control = open_store(store).await?;
        let desk = Arc::new(desk::Desk::seeded());
        match once {
            // The invitation is the console's signature over the approver's id: any console
            // of the desk's key and store takes it, whatever its port.
            Some(Once::Invite(approver_id)) => {
                let origin = "http://localhost:8932";
                let (_, console) = desk_console(&desk, control, origin, no_audit_log()?).await?;
                let path = console
                    .invitation(approver_id, std::time::Duration::from_secs(24 * 3600))
                    .await
                    .map_err(|error| error.to_string())?;
                println!("{path}");
                return Ok(());
            }
            Some(Once::Publish { directory, origin }) => {
                let (dispatcher, _) = desk_console(&desk, control, origin, no_audit_log()?).await?;
                return publish(&dispatcher, directory).await;
            }
            None => {}
        }
        let listener = bind(http).await?;
        let bound = listener
            .local_addr()
            .map_err(|error| format!("no address: {error}"))?;
        let audit = open_audit_log("console-")?;
        let origin = format!("http://localhost:{}", bound.port());
        let (_, console) = desk_console(&desk, control, &origin, audit).await?;
        let app = console.mounted();
        eprintln!("console: http://localhost:{}/console", bound.port());
        eprintln!("listening on http://{bound}");
        // As the MCP server does: no Nagle delay on a page's answer written in parts.
        let listener = axum::serve::ListenerExt::tap_io(listener, |connection| {
            let _ = connection.set_nodelay(true);
        });
        axum::serve(listener, app)
            .await
            .map_err(|error| error.to_string())
    })
}

/// Writes the receipt signer's published key and the approvers' into `directory`.
async fn publish(dispatcher: &Dispatcher, directory: &std::path::Path) -> Result<(), String> {
    let keys = KeySet::new([desk::receipt_signer()?.published_key()])
        .map_err(|error| error.to_string())?;
    let approvers = dispatcher
        .published_approvers()
        .await
        .map_err(|error| error.to_string())?
        .ok_or("the desk has no relying party")?;
    let write = |name: &str, text: String| {
        let path = directory.join(name);
        std::fs::write(&path, text)
            .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
        println!("{}", path.display());
        Ok::<(), String>(())
    };
    std::fs::create_dir_all(directory)
        .map_err(|error| format!("cannot make {}: {error}", directory.display()))?;
    write("published-keys.json", keys.to_json())?;
    write("approver-keys.json", approvers.to_json())
}

/// The desk's dispatcher with signed four eyes for passkeys made at `origin` (a
/// `http://localhost` one: the relying party `localhost`), its approvers in the directory,
/// and its console there, over `audit`.
async fn desk_console(
    desk: &Arc<desk::Desk>,
    control: Arc<dyn ControlStore>,
    origin: &str,
    (audit, log): AuditLog,
) -> Result<(Arc<Dispatcher>, Console), String> {
    let relying_party = RelyingParty::new("localhost", "Refund desk", [origin])
        .map_err(|error| error.to_string())?;
    let dispatcher = Arc::new(desk::signed_four_eyes_dispatcher(
        desk,
        audit,
        control,
        relying_party,
    )?);
    for approver in desk::approvers() {
        dispatcher
            .put_approver(approver)
            .await
            .map_err(|error| error.to_string())?;
    }
    let signer = desk::receipt_signer()?;
    let published = KeySet::new([signer.published_key()]).map_err(|error| error.to_string())?;
    let console = Console::new(
        dispatcher.clone(),
        desk::console_key()?,
        ConsoleOptions::new(origin, "/console"),
    )
    .map_err(|error| error.to_string())?
    .with_audit_log(log, desk::audit_key()?, published);
    Ok((dispatcher, console))
}

/// An audit log as the dispatcher writes it and as the console reads it.
type AuditLog = (Arc<dyn AuditSink>, Arc<dyn AuditHistory>);

/// A log in memory, for a command that runs no call.
fn no_audit_log() -> Result<AuditLog, String> {
    let log = Arc::new(MemoryAuditLog::new(desk::audit_key()?));
    Ok((log.clone(), log))
}

/// A new audit log file named with `prefix`, signing a tree head after every record.
fn open_audit_log(prefix: &str) -> Result<AuditLog, String> {
    let path = replay::audit_log_path(prefix);
    let signer = desk::receipt_signer()?;
    let log = Arc::new(
        JsonLinesAuditLog::open(&path, desk::audit_key()?)
            .and_then(|log| log.sign_tree_heads(signer, 1))
            .map_err(|error| format!("cannot open {}: {error}", path.display()))?,
    );
    eprintln!("audit log: {}", path.display());
    Ok((log.clone(), log))
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| format!("no runtime: {error}"))
}

async fn open_store(store: &Store) -> Result<Arc<dyn ControlStore>, String> {
    Ok(match store {
        Store::Sqlite(path) => Arc::new(
            SqliteStore::open(path)
                .map_err(|error| format!("cannot open {}: {error}", path.display()))?,
        ),
        Store::Postgres(url) => Arc::new(
            PostgresStore::connect(url)
                .await
                .map_err(|error| format!("cannot use the database: {error}"))?,
        ),
    })
}

async fn bind(address: &str) -> Result<tokio::net::TcpListener, String> {
    tokio::net::TcpListener::bind(address)
        .await
        .map_err(|error| format!("cannot listen on {address}: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_words(words: &str) -> Result<Command, String> {
        let arguments: Vec<String> = words.split_whitespace().map(str::to_owned).collect();
        parse(&arguments)
    }

    #[test]
    fn no_arguments_replay_every_provider_as_text() {
        assert_eq!(
            parse_words(""),
            Ok(Command::Replay {
                wires: Wire::ALL.to_vec(),
                output: Output::Text
            })
        );
    }

    #[test]
    fn provider_takes_short_and_api_names() {
        assert_eq!(
            parse_words("replay --provider anthropic --provider gemini_interactions --json"),
            Ok(Command::Replay {
                wires: vec![Wire::AnthropicMessages, Wire::GeminiInteractions],
                output: Output::JsonLines
            })
        );
    }

    #[test]
    fn verbose_adds_the_payloads_to_the_text() {
        assert_eq!(
            parse_words("--verbose --provider openai"),
            Ok(Command::Replay {
                wires: vec![Wire::OpenAiResponses],
                output: Output::Verbose
            })
        );
    }

    #[test]
    fn mistakes_are_usage_errors() {
        assert!(parse_words("--provider").is_err());
        assert!(parse_words("--provider mistral").is_err());
        assert!(parse_words("mcp --json").is_err());
        assert!(parse_words("--verbose --json").is_err());
        assert!(parse_words("replay replay").is_err());
        assert_eq!(
            parse_words("mcp"),
            Ok(Command::Mcp {
                store: Store::default_file(),
                http: None,
                auth: None,
                console: false,
            })
        );
        assert_eq!(
            parse_words("mcp --store /tmp/desk.sqlite"),
            Ok(Command::Mcp {
                store: Store::Sqlite("/tmp/desk.sqlite".into()),
                http: None,
                auth: None,
                console: false,
            })
        );
        assert_eq!(
            parse_words("mcp --store postgres://postgres@127.0.0.1:5432/test"),
            Ok(Command::Mcp {
                store: Store::Postgres("postgres://postgres@127.0.0.1:5432/test".to_owned()),
                http: None,
                auth: None,
                console: false,
            })
        );
        assert!(parse_words("replay --store x.sqlite").is_err());
        assert!(parse_words("mcp --store").is_err());
        assert!(parse_words("mcp --declarations").is_err());
        assert!(parse_words("replay --declarations").is_err());
        assert!(parse_words("--declarations --json").is_err());
        assert_eq!(
            parse_words("mcp --http 127.0.0.1:0"),
            Ok(Command::Mcp {
                store: Store::default_file(),
                http: Some("127.0.0.1:0".to_owned()),
                auth: None,
                console: false,
            })
        );
        assert!(parse_words("replay --http 127.0.0.1:0").is_err());
        assert!(
            parse_words("mcp --console").is_err(),
            "the console needs --http"
        );
        assert!(parse_words("replay --invite sup-ana").is_err());
        assert!(parse_words("console --invite sup-ana --http 127.0.0.1:0").is_err());
        assert!(parse_words("console --invite sup-ana --publish /tmp/k").is_err());
        assert!(parse_words("console --invite sup-ana --origin http://a").is_err());
        assert_eq!(
            parse_words("console --publish /tmp/k"),
            Ok(Command::Console {
                store: Store::default_file(),
                http: "127.0.0.1:8932".to_owned(),
                once: Some(Once::Publish {
                    directory: "/tmp/k".into(),
                    origin: "http://localhost:8932".to_owned(),
                }),
            })
        );
        assert_eq!(
            parse_words("console --invite sup-ana"),
            Ok(Command::Console {
                store: Store::default_file(),
                http: "127.0.0.1:8932".to_owned(),
                once: Some(Once::Invite("sup-ana".to_owned())),
            })
        );
        assert_eq!(
            parse_words("mcp --http 127.0.0.1:0 --console"),
            Ok(Command::Mcp {
                store: Store::default_file(),
                http: Some("127.0.0.1:0".to_owned()),
                auth: None,
                console: true,
            })
        );
        assert!(parse_words("mcp --http").is_err());
    }

    #[test]
    fn an_issuer_and_a_resource_make_the_http_desk_authenticate() {
        assert_eq!(
            parse_words(
                "mcp --http 127.0.0.1:8931 --issuer http://127.0.0.1:9000 --resource http://127.0.0.1:8931/mcp"
            ),
            Ok(Command::Mcp {
                store: Store::default_file(),
                http: Some("127.0.0.1:8931".to_owned()),
                auth: Some(Auth {
                    issuer: "http://127.0.0.1:9000".to_owned(),
                    resource: "http://127.0.0.1:8931/mcp".to_owned(),
                }),
                console: false,
            })
        );
        assert!(parse_words("mcp --http 127.0.0.1:0 --issuer http://127.0.0.1:9000").is_err());
        assert!(parse_words("mcp --issuer http://a --resource http://b").is_err());
        assert!(parse_words("replay --issuer http://a --resource http://b").is_err());
    }
}
