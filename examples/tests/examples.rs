//! The examples' tests, one test program: each module drives one example as a newcomer would
//! (its binaries, its recorded sessions), so the dependency graph is linked once.

mod conformance;
mod console_browser;
mod desk_tasks;
mod first_build;
mod issue_desk;
mod mcp_auth;
mod mcp_http;
mod mcp_stdio;
mod output_schemas;
mod policies;
mod replay;
mod rig_agent;
