//! The first command a newcomer runs builds `tool-contract` and its own dependencies, no more:
//! `cargo run --example 01_read_tool` at the workspace's root builds the numbered examples'
//! package alone (the workspace's default member), without features, and that package has no
//! dev-dependencies an example would build too.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// The names of the packages `cargo tree` lists along `edges` with `arguments`, run at the
/// workspace's root.
fn packages(edges: &str, arguments: &[&str]) -> BTreeSet<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let output = Command::new(env!("CARGO"))
        .args(["tree", "--prefix", "none", "--edges", edges])
        .args(arguments)
        .current_dir(root)
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let listed = String::from_utf8(output.stdout).expect("cargo tree prints UTF-8");
    listed
        .lines()
        .filter_map(|line| line.split(' ').next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_first_example_builds_the_crate_and_its_own_dependencies_alone() {
    // What an example of the root's default member builds, beside what the crate alone needs
    // (its own dev-dependencies are not built for another package's example).
    let first = packages("normal,build,dev", &[]);
    let crate_alone = packages("normal,build", &["-p", "tool-contract"]);
    let beyond: BTreeSet<&str> = first.difference(&crate_alone).map(String::as_str).collect();
    // `#[tokio::main]` is the one companion beyond `serde`'s derive the crate uses itself.
    assert_eq!(
        beyond,
        BTreeSet::from(["tokio-macros", "tool-contract-tour"])
    );
}

#[test]
fn an_example_that_names_a_feature_builds_that_feature_alone() {
    let mcp = packages("normal,build,dev", &["--features", "mcp"]);
    assert!(mcp.contains("rmcp"), "{mcp:?}");
    for other in [
        "rusqlite",
        "tokio-postgres",
        "axum",
        "webauthn-rs-core",
        "rig-core",
        "hyper",
    ] {
        assert!(!mcp.contains(other), "`--features mcp` builds {other}");
    }
}
