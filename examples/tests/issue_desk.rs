//! `issue-desk` end to end: the real binary, and its size.

use std::process::Command;

#[test]
fn the_issue_desk_asks_runs_the_approved_close_once_and_hands_each_turn_back() {
    let output = Command::new(env!("CARGO_BIN_EXE_issue-desk"))
        .output()
        .expect("the desk runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let calls: Vec<&str> = stdout
        .lines()
        .filter(|line| line.starts_with("  ") && line.contains("_issue: "))
        .collect();
    assert_eq!(
        calls,
        [
            "  get_issue: succeeded, delivery fresh",
            "  label_issue: succeeded, delivery fresh",
            "  close_issue: failed, APPROVAL_REQUIRED, recovery request_approval, delivery fresh",
            "  close_issue: succeeded, delivery fresh",
        ],
        "{stdout}"
    );
    assert!(stdout.contains("maintainer approves:"), "{stdout}");
    assert_eq!(
        stdout.matches("  next turn's input: [").count(),
        2,
        "{stdout}"
    );
    assert!(stdout.contains(r#"\"state\":\"closed\""#), "{stdout}");
    // Opened at revision 1, labelled (2), closed once (3).
    assert!(stdout.contains("issue 7: Closed at revision 3"), "{stdout}");
    assert!(stdout.starts_with("tools for OpenAI: [{"), "{stdout}");
}

/// Lines of code in `source` (neither blank nor a comment) outside its contracts.
fn code_outside_contracts(source: &str) -> usize {
    let mut in_contracts = false;
    source
        .lines()
        .filter(|line| {
            let marker = line.starts_with("// -- contracts --")
                || line.starts_with("// -- end of contracts --");
            if marker {
                in_contracts = !in_contracts;
            }
            let text = line.trim();
            !marker && !in_contracts && !text.is_empty() && !text.starts_with("//")
        })
        .count()
}

#[test]
fn the_issue_desk_is_at_most_50_lines_of_code_and_its_tracker_100_outside_its_contracts() {
    let desk = code_outside_contracts(include_str!("../src/bin/issue-desk.rs"));
    assert!(desk <= 50, "{desk} lines of code in the desk");
    let tracker = code_outside_contracts(include_str!("../tour/src/issue_tracker.rs"));
    assert!(
        tracker <= 100,
        "{tracker} lines of code outside the contracts"
    );
}
