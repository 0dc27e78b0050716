//! Declare each LLM tool's contract in Rust types, and read what tools return exactly.
//!
//! New here? The [guide](crate::guide) (in these docs) starts from the problems you have,
//! chapter by chapter; the workspace's numbered examples are a path through the same ground.
//!
//! An agent's tools return untrusted data: handler output, third-party APIs, web pages. A
//! contract says, in Rust types, exactly what a tool takes and what it may return. The derives
//! turn it into an exact validator and a registry entry at compile time, and misuse of the DSL
//! is a compile error at your own span.
//!
//! ```
//! use tool_contract::{ToolContract, ToolOutput};
//!
//! /// Read one order by its reference.
//! #[derive(Debug, serde::Deserialize, ToolContract)]
//! #[tool_contract(output = OrderView, effect = read_only,
//!                 source_label = "orders", producer_revision = "orders-v2")]
//! pub struct GetOrder {
//!     /// The order reference, e.g. ORDER-7.
//!     #[tool_contract(pattern = "^ORDER-[0-9]{1,12}$", max_len = 32)]
//!     pub order_ref: String,
//! }
//!
//! #[derive(Debug, serde::Serialize, ToolOutput)]
//! pub struct OrderView {
//!     #[tool_output(bound = order_ref)] // must equal this call's order_ref
//!     pub order_ref: String,
//!     pub status: OrderStatus,
//! }
//!
//! #[derive(Debug, PartialEq, serde::Serialize, ToolOutput)]
//! #[serde(rename_all = "snake_case")]
//! pub enum OrderStatus { Paid, Pending, Refunded }
//!
//! // The model's arguments, read exactly.
//! let call = GetOrder::parse_arguments(br#"{"order_ref":"ORDER-7"}"#)?;
//!
//! // The handler's output, untrusted, read against the contract and this very call.
//! let view = call.validate_output(br#"{"order_ref":"ORDER-7","status":"paid"}"#)?;
//! assert_eq!(view.status, OrderStatus::Paid);
//!
//! // Everything wrong is reported at once, each at a JSON Pointer, with no value echoed.
//! let bad = br#"{"order_ref":"ORDER-8","status":"lost","access_token":"x"}"#;
//! let violations = call.validate_output(bad).unwrap_err();
//! let paths: Vec<&str> = violations.paths().collect();
//! assert_eq!(paths, ["/order_ref", "/status", "/access_token"]);
//!
//! // The spec: schemas for providers, revisions for audits.
//! let spec = GetOrder::spec();
//! assert_eq!(spec.name(), "get_order");
//! assert_eq!(spec.input_schema()["additionalProperties"], false);
//! # Ok::<(), tool_contract::Violations>(())
//! ```
//!
//! ## What validation checks
//!
//! In one pass over the bytes, never through a `serde_json::Value` first:
//! - the exact field set at every depth (unknown and missing fields both fail; `Option<T>`
//!   fields must be present, as `null` when empty);
//! - real JSON types with no coercion: `"1"` is not an integer, `1.0` is not an integer,
//!   `true` is not a string; integers within the Rust type and I-JSON's ±(2^53 − 1); doubles
//!   exactly as written (`1e-400` does not become `0`, 2^64 does not become a float);
//! - enum values, lengths, patterns, formats, bounds, item counts, `bound` fields;
//! - nesting depth and encoded size; duplicate keys; the forbidden-key scan;
//! - JSON syntax, UTF-8 and lone surrogates.
//!
//! Every violation found is reported (up to
//! [`MAX_VIOLATIONS`](vocabulary::MAX_VIOLATIONS)), each with a JSON Pointer path and a
//! [`ViolationKind`]. Nothing panics on any input.
//!
//! ## Results the model may see, audits it may not
//!
//! A [`Binder`] turns each call's outcome into a [`CallResult`]: a [`ModelResult`]
//! (`tool-model-result-v2`: status, data or a catalog [`ModelError`](results::ModelError),
//! execution, provenance) and a [`ProtectedAudit`](results::ProtectedAudit) (principal
//! reference, provider context, contract revisions, downstream ids, redactions, and the three
//! digests of its [`Binding`](results::Binding)). [`Binder::verify`] recomputes every digest
//! from the trusted principal, call and registry; the adapters in [`providers`] write only
//! what verifies. [`json::canonical`] is RFC 8785 on its own. The
//! [`CATALOG`](results::CATALOG) fixes every failure's message and recovery.
//!
//! ## The pipeline around every call
//!
//! A [`dispatch::Dispatcher`] takes each call from the registry lookup to a sealed result:
//! exact argument validation, gates, authorization, approvals bound to the exact action, the
//! idempotency ledger and the approvals in one control-plane store ([`control::MemoryStore`];
//! `SqliteStore` with the `sqlite` feature; `PostgresStore`, shared by replicas, with the
//! `postgres` feature), budgets and deadline, the handler under a timeout with cancellation, retries by
//! effect, projection, the audit sink ([`control::JsonLinesAuditLog`], a keyed chain), and the
//! ledger record. A write whose outcome is lost is `unknown` and is reconciled, never rerun.
//!
//! ## Serving over MCP
//!
//! With the `mcp` feature, `mcp::McpServer` serves a dispatcher's registry to MCP clients:
//! input schemas and [`ToolSpec::model_result_schema`] in `tools/list`, the verified model
//! result as `structuredContent` of `tools/call`, approvals asked by elicitation. With
//! `mcp-auth` it serves HTTP as an OAuth 2.1 resource server: every request proves its
//! principal with a bearer access token issued for this server.
//!
//! ## In a rig agent
//!
//! With the `rig` feature, `rig::RigTools` gives a rig agent one tool per contract: the
//! contract's input schema as its parameters, each call through the dispatcher for the
//! principal the tools were built for, the verified model result as what the model reads.
//!
//! ## Evidence for facts
//!
//! [`evidence`]: outputs declared `grounded` carry [`evidence::GroundingSource`]s, whose tier
//! no payload can raise above its contract's `source_tier`; `reject_synthetic` and
//! `strip_synthetic` keep placeholder values out of results; [`evidence::arbitrate`] picks one
//! value among candidates from several sources, or hands a tie to a person. A handler that
//! cannot read its source fails fast with its [`FailureKind`], never with made-up data.
//!
//! ## Cargo features
//!
//! No feature is on by default: the crate alone validates, projects, binds, dispatches and
//! writes the four provider APIs, with the in-memory store and the file and memory audit logs.
//!
//! | feature | gives |
//! | --- | --- |
//! | `sqlite` | `control::SqliteStore`: the control-plane store on an embedded SQLite file (compiled from source, nothing to install), shared by the processes of one host, surviving a restart |
//! | `postgres` | `control::PostgresStore` and `control::PostgresAuditLog`: the store and an audit log that replicas share on PostgreSQL |
//! | `mcp` | `mcp::McpServer`: a dispatcher's registry served over MCP (stdio or any byte stream; protocol revisions 2024-11-05 to 2026-07-28) |
//! | `mcp-http` | `McpServer::serve_http`: the same over MCP's Streamable HTTP transport (implies `mcp`) |
//! | `mcp-auth` | `McpServer::authenticated` and `mcp::auth`: Streamable HTTP as an OAuth 2.1 resource server, each request's principal from its verified bearer token, scopes per tool (implies `mcp-http`) |
//! | `passkeys` | approvals signed by the approvers' own passkeys (WebAuthn, verified by `webauthn-rs-core`; building needs OpenSSL's headers): `Dispatcher::begin_enrollment`, `decide_signed`, `results::KeySet::verify_with_approvers`; the approver directory, the approval statement and signed audit tree heads need no feature |
//! | `rig` | `rig::RigTools`: a dispatcher's registry as the tools of a rig (`rig-core` 0.44) agent, every call from its loop through the pipeline (needs Rust 1.95) |
//! | `cedar` | `policy`: Cedar policies validated against a schema the contracts make when the dispatcher is built, and evaluated on every call |
//! | `cedar-prove` | `policy::Prover`: claims about those policies ("every refund above 500.00 waits for two people") proved for every call, or refuted with one, by Cedar's symbolic compiler and the cvc5 solver (implies `cedar`) |
//! | `otel` | the MCP server's `tools/call` spans parented from the trace context in the request's `_meta`, through the application's OpenTelemetry propagator |
//!
//! Items behind a feature say so in these docs.
//!
//! ## The crate's layers
//!
//! Each module is one layer, and imports only from the layers below it; inside a layer no
//! files import each other in a circle (a test reads the sources and fails on either):
//!
//! | layer | module | holds |
//! | --- | --- | --- |
//! | 1 | [`json`] | RFC 8785 canonical JSON, the byte scanner, exact numbers, named formats |
//! | 2 | [`vocabulary`] | effects, limits, the tool-name rule, source tiers, synthetic-data detectors, forbidden keys, violations; the call types ([`Principal`], [`CallContext`], [`vocabulary::ToolCall`], [`vocabulary::Api`]) |
//! | 3 | [`contract`] | the traits the derives implement, specs, shapes and rules, the exact reader, bounds, grounding sources, argument and output schemas, the [`Registry`] |
//! | 4 | [`results`] | execution and provenance, the error catalog, the model result and its schema, the protected audit, keys and digests, receipts, arbitration |
//! | 5 | [`binder`] | what handlers return; projecting, sealing and verifying results |
//! | 6 | [`providers`] | reading provider responses and streams, writing the next turn |
//! | 7 | [`control`] | the control plane: the idempotency ledger, write states, approvals, the stores that keep them, the audit logs |
//! | 8 | `policy` | Cedar policies: the schema the contracts make, validation, each call's decision (feature `cedar`) |
//! | 9 | [`dispatch`] | the pipeline: gates, approval rules, retries, budgets, handlers, the dispatcher |
//! | 10 | `mcp` | serving a dispatcher over MCP (feature `mcp`) |
//! | 11 | `rig` | a dispatcher's tools for a rig agent's loop (feature `rig`) |
//!
//! The crate root, [`evidence`] and the hidden module generated code calls only re-export.
#![doc = include_str!("../ATTRIBUTES.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

// The derives name `::tool_contract::…`; this lets the crate derive its own output types.
extern crate self as tool_contract;

pub mod binder;
#[cfg(feature = "console")]
pub mod console;
pub mod contract;
pub mod control;
pub mod dispatch;
pub mod evidence;
// Pages only: rendered by rustdoc, their snippets run by the workspace's `tests` crate (with
// every feature), so not collected as doctests here.
#[cfg(all(doc, not(doctest)))]
pub mod guide;
pub mod json;
#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "cedar")]
pub mod policy;
pub mod prelude;
pub mod providers;
pub mod results;
#[cfg(feature = "rig")]
pub mod rig;
pub mod vocabulary;

#[doc(hidden)]
pub mod __private;

pub use binder::{Binder, CallResult, FailureKind, RawProvenance, RawResult, ToolFailure};
pub use contract::{Registry, ToolContract, ToolOutput, ToolSpec};
pub use results::{AuditKeys, ErrorCode, ModelResult, SecretKey, Status};
pub use vocabulary::{CallContext, Effect, Principal, Violation, ViolationKind, Violations};

/// Derives [`ToolContract`] for a struct of a tool's arguments; see the crate docs.
pub use tool_contract_derive::ToolContract;

/// Derives [`ToolOutput`] for a tool's output struct or unit-only enum; see the crate docs.
pub use tool_contract_derive::ToolOutput;
