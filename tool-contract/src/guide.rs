//! The guide: each chapter starts from a problem you have, shows the shortest code that solves
//! it, then the details. Every snippet here runs as a test of the workspace.
//!
//! 1. [Contracts and outputs](contracts): say in Rust types what a tool takes and returns.
//! 2. [What the model sees, and what auditors see](results): the two halves of a result.
//! 3. [Dispatch, writes and operations](dispatch): a model's turn through the pipeline, and
//!    each real action run once.
//! 4. [Approvals](approvals): rules, four eyes, passkeys, the console.
//! 5. [Stores and replicas](stores): one control store shared by every process.
//! 6. [MCP](mcp): the same tools to any MCP client, over stdio or HTTP with OAuth.
//! 7. [Providers and rig](providers): each provider API's own shapes, and rig agents.
//! 8. [Audit, receipts and tree heads](audit): records someone else can check.
//! 9. [Running it in production](production): keys, traces, reconciling, limits.
//! 10. [Long work and tasks](tasks): a call that outlasts its request, on any replica.
//! 11. [Policies](policies): who may call what, as Cedar text checked against the contracts.
//!
//! The examples are a path through the same ground, each a program of its own
//! (`cargo run --example 01_read_tool`, then `02_…` to `07_…`, each with the features it
//! names), and the refund desk is the whole tour.

// The chapters name items of every feature; built without one, those names stay text rather
// than links (docs.rs builds with every feature, and CI checks the links there).
#![cfg_attr(
    not(all(
        feature = "mcp-auth",
        feature = "console",
        feature = "postgres",
        feature = "rig",
        feature = "cedar-prove"
    )),
    allow(rustdoc::broken_intra_doc_links)
)]

#[doc = include_str!("../guide/01-contracts.md")]
pub mod contracts {}

#[doc = include_str!("../guide/02-results.md")]
pub mod results {}

#[doc = include_str!("../guide/03-dispatch.md")]
pub mod dispatch {}

#[doc = include_str!("../guide/04-approvals.md")]
pub mod approvals {}

#[doc = include_str!("../guide/05-stores.md")]
pub mod stores {}

#[doc = include_str!("../guide/06-mcp.md")]
pub mod mcp {}

#[doc = include_str!("../guide/07-providers.md")]
pub mod providers {}

#[doc = include_str!("../guide/08-audit.md")]
pub mod audit {}

#[doc = include_str!("../guide/09-production.md")]
pub mod production {}

#[doc = include_str!("../guide/10-tasks.md")]
pub mod tasks {}

#[doc = include_str!("../guide/11-policies.md")]
pub mod policies {}
