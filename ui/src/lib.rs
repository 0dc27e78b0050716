//! The DSL's compile-fail cases live in `tests/ui` and `tests/compiletest.rs` runs them with
//! trybuild; its compile-pass cases are the modules of `tests/pass`. This crate is theirs
//! alone, so that trybuild checks the DSL's dependencies and nothing else.
