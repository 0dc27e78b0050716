//! The conformance suite, one test program: each module is one behaviour's tests. One program
//! links the dependency graph once and runs every test on one pool of threads. (A test that
//! sets something for its whole process, a global allocator or tracing subscriber, is a
//! program of its own: see `Cargo.toml`.)

mod adapters;
mod approval_policies;
mod arbitration;
mod arguments;
mod audit_log;
mod audit_log_postgres;
mod binding;
mod canonical;
mod canonical_output;
mod catalog;
mod console;
mod console_records;
mod crash;
mod declarations;
mod deep_values;
mod dispatch_pipeline;
mod fault_schedules;
mod field_types;
mod four_eyes;
mod grounding;
mod integrity;
mod json_test_suite;
mod key_order;
mod knowledge_base;
mod late_writes;
mod mcp_auth;
mod mcp_console;
mod mcp_http;
mod mcp_server;
mod mcp_stateless;
mod missing_context;
mod model_result_envelope;
mod model_result_schema;
mod no_panic;
mod operation_keys;
mod output_validation;
mod projection;
mod providers;
mod receipts;
mod registry;
mod replicas;
mod retries_and_budgets;
mod schema_agreement;
mod signed_approvals;
mod source_failures;
mod store_conformance;
mod store_outage;
mod stream_mutations;
mod structured_mutations;
mod tree_heads;
mod typed_handlers;
mod unknown_outcomes;
mod write_state;
