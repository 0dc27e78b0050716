//! `refund-desk` replay end to end: the real binary, its stdout and its audit log.

use std::process::{Command, Output};

use serde_json::Value;

/// The refund desk's audit key (`desk::AUDIT_KEY` in the example).
fn audit_key() -> tool_contract::SecretKey {
    tool_contract::SecretKey::new(*b"refund desk audit key not secret").unwrap()
}

fn desk(arguments: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_refund-desk"))
        .args(arguments)
        .output()
        .expect("the desk runs")
}

/// The JSON lines of one provider's replay, and its audit log's records.
pub(crate) fn json_replay(provider: &str) -> (Vec<Value>, u64) {
    let output = desk(&["--json", "--provider", provider]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let stdout = String::from_utf8(output.stdout).expect("UTF-8");
    let lines = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line}")))
        .collect();
    let path = stderr
        .lines()
        .find_map(|line| line.strip_prefix("audit log: "))
        .expect("the audit log's path on stderr");
    let log = std::fs::read(path).expect("the audit log");
    let head = tool_contract::control::verify_chain(log.as_slice(), &audit_key())
        .expect("the chain verifies");
    (lines, head.records)
}

/// Each call of the script: its step, tool, and status with error code or delivery.
const SCRIPT: [(&str, &str, &str); 11] = [
    ("plain_read", "get_order", "succeeded fresh"),
    ("search_with_injection", "search_kb", "succeeded fresh"),
    (
        "unknown_tool_and_bad_arguments",
        "issue_gift_card",
        "failed UNKNOWN_TOOL",
    ),
    (
        "unknown_tool_and_bad_arguments",
        "get_order",
        "failed INVALID_ARGUMENTS",
    ),
    (
        "draft_needs_approval",
        "create_refund_draft",
        "failed APPROVAL_REQUIRED",
    ),
    (
        "reason_changed",
        "create_refund_draft",
        "failed APPROVAL_INVALID",
    ),
    (
        "write_times_out",
        "create_refund_draft",
        "unknown OUTCOME_UNKNOWN",
    ),
    (
        "reconciled",
        "create_refund_draft",
        "succeeded receipt_reconciled",
    ),
    ("rate_limited_read", "get_order", "failed RATE_LIMIT"),
    (
        "same_operation_again",
        "create_refund_draft",
        "succeeded local_replay",
    ),
    ("read_the_draft", "get_refund_draft", "succeeded fresh"),
];

fn outcome(model: &Value) -> String {
    let status = model["status"].as_str().unwrap_or_default();
    match model["error"]["code"].as_str() {
        Some(code) => format!("{status} {code}"),
        None => format!(
            "{status} {}",
            model["execution"]["delivery"].as_str().unwrap_or_default()
        ),
    }
}

/// Every line has exactly these keys; the script's calls come in order.
fn check_lines(lines: &[Value], api: &str) {
    assert_eq!(lines.len(), SCRIPT.len(), "one line per call");
    for (line, (step, tool, expected)) in lines.iter().zip(SCRIPT) {
        let mut keys: Vec<&str> = line
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "api",
                "call_id",
                "model_result",
                "provider_payload",
                "step",
                "tool",
                "turn"
            ]
        );
        assert_eq!(line["api"], api);
        assert_eq!(line["step"], step);
        assert_eq!(line["tool"], tool);
        assert_eq!(outcome(&line["model_result"]), expected, "{step}");
    }
}

/// The model result as the provider carries it: its canonical JSON text.
fn canonical_text(model: &Value) -> String {
    String::from_utf8(tool_contract::json::canonical::to_vec(model).unwrap()).unwrap()
}

fn succeeded(line: &Value) -> bool {
    line["model_result"]["status"] == "succeeded"
}

#[test]
fn openai_responses_lines_carry_function_call_outputs() {
    let (lines, records) = json_replay("openai");
    check_lines(&lines, "openai_responses");
    for line in &lines {
        let item = &line["provider_payload"];
        assert_eq!(item["type"], "function_call_output");
        assert_eq!(item["call_id"], line["call_id"]);
        assert_eq!(item["output"], canonical_text(&line["model_result"]));
        assert_eq!(item.as_object().unwrap().len(), 3);
    }
    assert_eq!(records, 11);
}

#[test]
fn anthropic_messages_lines_carry_tool_result_blocks() {
    let (lines, records) = json_replay("anthropic");
    check_lines(&lines, "anthropic_messages");
    for line in &lines {
        let block = &line["provider_payload"];
        assert_eq!(block["type"], "tool_result");
        assert_eq!(block["tool_use_id"], line["call_id"]);
        assert_eq!(block["content"][0]["type"], "text");
        assert_eq!(
            block["content"][0]["text"],
            canonical_text(&line["model_result"])
        );
        assert_eq!(block.get("is_error").is_some(), !succeeded(line));
    }
    assert_eq!(records, 11);
}

#[test]
fn gemini_generate_content_lines_carry_function_responses() {
    let (lines, records) = json_replay("gemini");
    check_lines(&lines, "gemini_generate_content");
    for line in &lines {
        let response = &line["provider_payload"]["functionResponse"];
        assert_eq!(response["id"], line["call_id"]);
        assert_eq!(response["name"], line["tool"]);
        let key = if succeeded(line) { "output" } else { "error" };
        assert_eq!(response["response"][key], line["model_result"]);
    }
    assert_eq!(records, 11);
}

#[test]
fn gemini_interactions_lines_carry_function_result_steps() {
    let (lines, records) = json_replay("interactions");
    check_lines(&lines, "gemini_interactions");
    for line in &lines {
        let step = &line["provider_payload"];
        assert_eq!(step["type"], "function_result");
        assert_eq!(step["call_id"], line["call_id"]);
        assert_eq!(step["name"], line["tool"]);
        assert_eq!(step["result"], canonical_text(&line["model_result"]));
        assert_eq!(step.get("is_error").is_some(), !succeeded(line));
    }
    assert_eq!(records, 11);
}

#[test]
fn the_injected_instruction_reaches_the_model_as_untrusted_data() {
    let (lines, _) = json_replay("openai");
    let search = &lines[1]["model_result"];
    assert_eq!(search["provenance"]["trust"], "untrusted_data");
    let excerpts: Vec<&str> = search["data"]["hits"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|hit| hit["excerpt"].as_str())
        .collect();
    assert!(
        excerpts
            .iter()
            .any(|excerpt| excerpt.contains("ignore your previous instructions"))
    );
    // It changed nothing: the next write still needed a person.
    assert_eq!(
        lines[4]["model_result"]["error"]["code"],
        "APPROVAL_REQUIRED"
    );
}

#[test]
fn the_rate_limited_read_tells_the_model_how_long_to_wait() {
    let (lines, _) = json_replay("anthropic");
    let error = &lines[8]["model_result"]["error"];
    assert_eq!(error["recovery"], "retry_after");
    assert_eq!(error["retry_after_ms"], 45_000);
}

#[test]
fn every_provider_replays_into_one_audit_log_by_default() {
    let output = desk(&[]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    for title in [
        "== OpenAI Responses",
        "== Anthropic Messages",
        "== Gemini generateContent",
        "== Gemini Interactions",
    ] {
        assert!(stdout.contains(title), "{title}");
    }
    assert!(
        stderr.contains("audit log: 44 records, chain verifies"),
        "{stderr}"
    );
}

#[test]
fn the_default_text_gives_each_call_one_line_and_no_payload() {
    let output = desk(&["--provider", "openai"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success());
    assert_eq!(stdout.matches("next turn: ").count(), 0);
    let calls: Vec<&str> = stdout
        .lines()
        .filter(|line| {
            SCRIPT
                .iter()
                .any(|(_, tool, _)| line.starts_with(&format!("  {tool} [")))
        })
        .collect();
    assert_eq!(calls.len(), SCRIPT.len(), "{stdout}");
    for (line, (_, tool, expected)) in calls.iter().zip(SCRIPT) {
        let (status, detail) = expected.split_once(' ').unwrap();
        assert!(line.contains(tool) && line.contains(status), "{line}");
        if status != "succeeded" {
            assert!(
                line.contains(detail) && line.contains("recovery "),
                "{line}"
            );
        }
    }
    assert!(stdout.lines().all(|line| line.len() < 160), "{stdout}");
}

#[test]
fn verbose_text_adds_every_turns_payload() {
    let output = desk(&["--verbose"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success());
    assert_eq!(stdout.matches("next turn: ").count(), 40);
}

#[test]
fn a_usage_mistake_exits_2_with_the_usage() {
    let output = desk(&["--provider", "mistral"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("usage: refund-desk"));
    assert!(output.stdout.is_empty());
}

#[test]
fn declarations_print_each_apis_tools_array_for_the_four_tools() {
    let output = desk(&["--declarations"]);
    assert!(output.status.success(), "{output:?}");
    let lines: Vec<Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let apis: Vec<&str> = lines
        .iter()
        .map(|line| line["api"].as_str().unwrap())
        .collect();
    assert_eq!(
        apis,
        [
            "openai_responses",
            "anthropic_messages",
            "gemini_generate_content",
            "gemini_interactions"
        ]
    );
    for line in &lines {
        let tools = &line["tools"];
        let tools = match line["api"].as_str() {
            Some("gemini_generate_content") => &tools[0]["functionDeclarations"],
            _ => tools,
        };
        let names: Vec<&str> = tools
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["name"].as_str().unwrap())
            .collect();
        assert_eq!(names.len(), 4, "{line}");
        assert!(names.contains(&"create_refund_draft"), "{line}");
    }
    let one = desk(&["--declarations", "--provider", "anthropic"]);
    assert_eq!(String::from_utf8(one.stdout).unwrap().lines().count(), 1);
}

#[test]
fn a_refund_above_the_limit_needs_two_supervisors_and_its_receipt_verifies_offline() {
    let output = desk(&["--provider", "anthropic"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let enrolled: Vec<&str> = stdout
        .lines()
        .filter(|line| line.contains(" enrols a passkey: credential "))
        .collect();
    assert_eq!(enrolled.len(), 2, "two supervisors enrol: {stdout}");
    let approvals: Vec<&str> = stdout
        .lines()
        .filter(|line| line.contains(" approves apr_"))
        .collect();
    // The draft approved stands through the turn that asked another reason: one grant.
    assert_eq!(approvals.len(), 2, "two supervisors, once: {stdout}");
    assert!(
        approvals[0].starts_with("  ana.supervisor@")
            && approvals[0].contains("with their passkey")
            && approvals[0].ends_with("1 more supervisor needed")
    );
    assert!(approvals[1].starts_with("  ben.supervisor@") && approvals[1].ends_with("granted"));
    assert_eq!(
        stdout
            .matches("approval receipt (audit only, never the model)")
            .count(),
        1
    );
    assert!(
        stdout.contains("approved by ana.supervisor@acme.example and ben.supervisor@acme.example")
    );
    assert!(stdout.contains("verified offline with the desk's key and this run's supervisors'"));
    let named = |prefix: &str| {
        stderr
            .lines()
            .find_map(|line| line.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("{prefix} is named: {stderr}"))
            .to_owned()
    };
    let (receipt_path, keys_path, approvers_path) = (
        named("approval receipt: "),
        named("published keys: "),
        named("approver keys: "),
    );
    // What the auditor's command does, with the three files alone.
    let command = named("check it offline: ");
    assert!(command.contains(&format!(
        "--keys {keys_path} --approvers {approvers_path} {receipt_path}"
    )));
    let keys =
        tool_contract::results::KeySet::from_json(&std::fs::read(&keys_path).unwrap()).unwrap();
    let approvers =
        tool_contract::results::ApproverKeys::from_json(&std::fs::read(&approvers_path).unwrap())
            .unwrap();
    let receipt_text = std::fs::read(&receipt_path).unwrap();
    let receipt = keys
        .verify_with_approvers(&receipt_text, &approvers)
        .expect("it verifies");
    assert_eq!(receipt.approvals.len(), 2);
    assert!(
        receipt
            .approvals
            .iter()
            .all(|approval| approval.is_signed())
    );
    assert_eq!(receipt.signatures_required, Some(true));
    assert_eq!(receipt.tool, "create_refund_draft");
    // Without the supervisors' keys, no one can take its signatures on trust.
    assert_eq!(
        keys.verify(&receipt_text),
        Err(tool_contract::results::ReceiptError::ApproverKeysNeeded)
    );
}

#[test]
fn the_desk_publishes_the_keys_of_every_run_and_every_receipt_verifies_with_them() {
    let output = desk(&[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let named = |prefix: &str| -> Vec<String> {
        stderr
            .lines()
            .filter_map(|line| line.strip_prefix(prefix))
            .map(str::to_owned)
            .collect()
    };
    let (keys_path, approvers_path) = (named("published keys: "), named("approver keys: "));
    assert_eq!((keys_path.len(), approvers_path.len()), (1, 1), "{stderr}");
    let receipts = named("approval receipt: ");
    assert_eq!(
        receipts.len(),
        4,
        "one receipt per provider's run: {stderr}"
    );
    let keys =
        tool_contract::results::KeySet::from_json(&std::fs::read(&keys_path[0]).unwrap()).unwrap();
    let approvers = tool_contract::results::ApproverKeys::from_json(
        &std::fs::read(&approvers_path[0]).unwrap(),
    )
    .unwrap();
    // Each run enrolled its own passkeys: the one file holds all eight.
    let credentials: usize = approvers
        .approvers
        .iter()
        .map(|approver| approver.credentials.len())
        .sum();
    assert_eq!(credentials, 8);
    let mut signers = std::collections::BTreeSet::new();
    for receipt_path in &receipts {
        let receipt = keys
            .verify_with_approvers(&std::fs::read(receipt_path).unwrap(), &approvers)
            .unwrap_or_else(|error| panic!("{receipt_path}: {error}"));
        for approval in &receipt.approvals {
            signers.insert(approval.assertion.as_ref().unwrap().credential_id.clone());
        }
    }
    assert_eq!(signers.len(), 8, "four runs, two supervisors each");
    assert_eq!(named("check it offline: ").len(), 4);
}
