//! Misuse of the DSL is a compile error at the user's own span; correct use compiles.
//!
//! The `.stderr` files are generated with `TRYBUILD=overwrite` on the pinned toolchain (1.95)
//! and reviewed; compiler upgrades may change rustc's own wording.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
    cases.pass("tests/ui/pass/*.rs");
}
