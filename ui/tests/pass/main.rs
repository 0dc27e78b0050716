//! Correct use of the DSL compiles, warning-free under clippy, and behaves: each case is a
//! module of this one test program, as a user's crate would hold it. (Misuse is a compile
//! error: `compiletest.rs`, with trybuild.) Compiling them here rather than under trybuild
//! keeps trybuild to `cargo check`, where it builds no dependency's code.

// A case declares contracts it never calls, as a user's crate declares tools for a registry.
#![allow(dead_code)]

mod approving_a_pending_write_in_one_call;
mod dsl_example;
mod every_field_type;
mod grounded_outputs;
mod input_field_allowed_on_purpose;
mod output_field_allowed_on_purpose;
mod writes_with_approval_and_reconcile;
