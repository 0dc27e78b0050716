//! The DSL's compile-fail and compile-pass cases live in `tests/ui`; `tests/compiletest.rs`
//! runs them with trybuild. This crate is theirs alone, so that trybuild builds the DSL's
//! dependencies and nothing else.
