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
//! PostgreSQL for many replicas.

mod desk;
mod replay;

use std::process::ExitCode;
use std::sync::Arc;

use tool_contract::Principal;
use tool_contract::control::{ControlStore, JsonLinesAuditLog};
use tool_contract::control::{PostgresStore, SqliteStore};
use tool_contract::mcp::McpServer;
use tool_contract::providers::tool_declarations;

use replay::{Output, Wire};

const USAGE: &str = "\
usage: refund-desk [replay] [--provider NAME] [--verbose | --json]
       refund-desk --declarations [--provider NAME]
       refund-desk mcp [--http ADDR [--issuer URL --resource URL]]
                       [--store PATH | --store postgres://USER@HOST:PORT/DATABASE]

replay (the default)  recorded model turns of each provider through the dispatcher,
                      one line per call: tool, status, error code, recovery
  --provider NAME     one provider: openai, anthropic, gemini, interactions
                      (or its API name, e.g. openai_responses)
  --verbose           also each turn's next-turn payload and each preview approved
  --json              one JSON object per call on stdout, nothing else
--declarations        each provider API's tools array for the desk's tools, one
                      object {api, tools} per line (--provider: one API)
mcp                   serve the desk's tools as an MCP server over stdio
  --http ADDR         over MCP's Streamable HTTP on ADDR instead (e.g. 127.0.0.1:8931;
                      port 0 takes a free one), named on stderr as listening on URL
  --issuer URL        with --http: each request needs a bearer access token (a JWT,
                      RFC 9068) of this OAuth issuer; its principal is the token's
                      `tenant` claim and `sub`. Reads need tools:read, writes
                      tools:write, refunds above 40.00 refunds:large too
  --resource URL      with --issuer: the desk's canonical URI, its MCP endpoint
                      (e.g. https://desk.example.com/mcp), every token's audience
  --store PATH        the SQLite file of approvals and write records (default:
                      refund-desk.sqlite in the temporary directory); a postgres://
                      URL shares them with every replica on that database";

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
    },
    Help,
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
            "replay" | "mcp" if mode.is_none() => mode = Some(argument.as_str()),
            other => return Err(format!("unexpected argument {other:?}")),
        }
    }
    let auth = match (issuer, resource) {
        (Some(issuer), Some(resource)) if http.is_some() => Some(Auth { issuer, resource }),
        (None, None) => None,
        (Some(_), Some(_)) => return Err("--issuer and --resource are for --http".to_owned()),
        _ => return Err("--issuer and --resource go together".to_owned()),
    };
    match mode {
        _ if auth.is_some() && mode != Some("mcp") => Err("--issuer is for mcp".to_owned()),
        Some("mcp") if declarations => Err("mcp takes no --declarations".to_owned()),
        Some("mcp") if wires.is_empty() && output == Output::Text => Ok(Command::Mcp {
            store: store.unwrap_or_else(Store::default_file),
            http,
            auth,
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
        Command::Mcp { store, http, auth } => serve_mcp(&store, http.as_deref(), auth.as_ref()),
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
/// until stopped (with `auth`, as a resource server of its issuer). Stdout is the
/// protocol's; everything for people goes to stderr.
fn serve_mcp(store: &Store, http: Option<&str>, auth: Option<&Auth>) -> Result<(), String> {
    let path = replay::audit_log_path("mcp-");
    let audit = Arc::new(
        JsonLinesAuditLog::open(&path, desk::audit_key()?)
            .map_err(|error| format!("cannot open {}: {error}", path.display()))?,
    );
    eprintln!("audit log: {}", path.display());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| format!("no runtime: {error}"))?;
    runtime.block_on(async {
        let control: Arc<dyn ControlStore> = match store {
            Store::Sqlite(path) => Arc::new(
                SqliteStore::open(path)
                    .map_err(|error| format!("cannot open {}: {error}", path.display()))?,
            ),
            Store::Postgres(url) => Arc::new(
                PostgresStore::connect(url)
                    .await
                    .map_err(|error| format!("cannot use the database: {error}"))?,
            ),
        };
        let desk = Arc::new(desk::Desk::seeded());
        // The same rules as the replay: two supervisors above 40.00, receipts signed.
        let dispatcher = Arc::new(desk::four_eyes_dispatcher(&desk, audit, control)?);
        let server = match auth {
            Some(auth) => McpServer::authenticated(dispatcher, desk::resource_server(auth)?)
                .map_err(|error| error.to_string())?,
            None => McpServer::new(dispatcher, Principal::new("acme-shop", "mcp:refund-desk")),
        }
        .with_server_info("refund-desk", env!("CARGO_PKG_VERSION"));
        let Some(address) = http else {
            return server
                .serve_stdio()
                .await
                .map_err(|error| error.to_string());
        };
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .map_err(|error| format!("cannot listen on {address}: {error}"))?;
        let bound = listener
            .local_addr()
            .map_err(|error| format!("no address: {error}"))?;
        eprintln!("listening on http://{bound}");
        server
            .serve_http(listener)
            .await
            .map_err(|error| error.to_string())
    })
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
            })
        );
        assert_eq!(
            parse_words("mcp --store /tmp/desk.sqlite"),
            Ok(Command::Mcp {
                store: Store::Sqlite("/tmp/desk.sqlite".into()),
                http: None,
                auth: None,
            })
        );
        assert_eq!(
            parse_words("mcp --store postgres://postgres@127.0.0.1:5432/test"),
            Ok(Command::Mcp {
                store: Store::Postgres("postgres://postgres@127.0.0.1:5432/test".to_owned()),
                http: None,
                auth: None,
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
            })
        );
        assert!(parse_words("replay --http 127.0.0.1:0").is_err());
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
            })
        );
        assert!(parse_words("mcp --http 127.0.0.1:0 --issuer http://127.0.0.1:9000").is_err());
        assert!(parse_words("mcp --issuer http://a --resource http://b").is_err());
        assert!(parse_words("replay --issuer http://a --resource http://b").is_err());
    }
}
