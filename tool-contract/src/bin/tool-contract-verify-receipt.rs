//! Checks an approval receipt offline, with nothing but the published keys: the signature,
//! the key's dates, the rule the approvals met, each approver's passkey assertion (given the
//! published approver keys; built with the `passkeys` feature), and (given the call) that the
//! receipt covers that very call.
//!
//! ```text
//! tool-contract-verify-receipt --keys KEYS.json RECEIPT.json
//! tool-contract-verify-receipt --keys KEYS.json --approvers APPROVERS.json RECEIPT.json
//! tool-contract-verify-receipt --keys KEYS.json --tenant T --subject S --arguments ARGS.json RECEIPT.json
//! ```
//!
//! `RECEIPT.json` may be `-` for standard input. Exits 0 when the receipt verifies (and
//! covers the call, when one is given), 1 when it is refused, 2 on a usage error.

use std::io::Read;
use std::process::ExitCode;

use tool_contract::Principal;
use tool_contract::results::{ApprovalReceipt, BasisKind, KeySet, ReceiptError};

const USAGE: &str = "usage: tool-contract-verify-receipt --keys KEYS.json \
                     [--approvers APPROVERS.json] \
                     [--tenant T --subject S --arguments ARGS.json] RECEIPT.json|-";

/// What the command line asks.
struct Asked {
    keys: String,
    approvers: Option<String>,
    receipt: String,
    tenant: Option<String>,
    subject: Option<String>,
    arguments: Option<String>,
}

fn asked(mut arguments: impl Iterator<Item = String>) -> Result<Asked, String> {
    let (mut keys, mut receipt, mut tenant, mut subject, mut call) = (None, None, None, None, None);
    let mut approvers = None;
    while let Some(argument) = arguments.next() {
        let slot = match argument.as_str() {
            "--keys" => &mut keys,
            "--approvers" => &mut approvers,
            "--tenant" => &mut tenant,
            "--subject" => &mut subject,
            "--arguments" => &mut call,
            "--help" | "-h" => return Err(USAGE.to_owned()),
            flag if flag.starts_with("--") => return Err(format!("unknown flag {flag}\n{USAGE}")),
            _ if receipt.is_none() => {
                receipt = Some(argument);
                continue;
            }
            _ => return Err(format!("one receipt at a time\n{USAGE}")),
        };
        *slot = Some(
            arguments
                .next()
                .ok_or_else(|| format!("{argument} needs a value"))?,
        );
    }
    let (Some(keys), Some(receipt)) = (keys, receipt) else {
        return Err(USAGE.to_owned());
    };
    let call_given = [tenant.is_some(), subject.is_some(), call.is_some()]
        .into_iter()
        .filter(|given| *given)
        .count();
    if !matches!(call_given, 0 | 3) {
        return Err(format!(
            "--tenant, --subject and --arguments go together\n{USAGE}"
        ));
    }
    Ok(Asked {
        keys,
        approvers,
        receipt,
        tenant,
        subject,
        arguments: call,
    })
}

fn read(path: &str) -> Result<Vec<u8>, String> {
    if path == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|error| format!("standard input: {error}"))?;
        return Ok(bytes);
    }
    std::fs::read(path).map_err(|error| format!("{path}: {error}"))
}

fn summary(receipt: &ApprovalReceipt) -> String {
    let mut lines = vec![format!(
        "verified: approval {} of {} (operation {}), signed by key {}",
        receipt.approval_id, receipt.tool, receipt.operation_id, receipt.key_id
    )];
    if let (Some(required), Some(signed)) =
        (receipt.approvals_required, receipt.signatures_required)
    {
        let kind = if signed { " signing with passkeys" } else { "" };
        lines.push(format!("  rule: {required} different approvers{kind}"));
    }
    for given in &receipt.approvals {
        let basis = match given.basis {
            Some(BasisKind::Passkey) => ", signed with their passkey (verified)",
            Some(BasisKind::Client) => ", asserted by an MCP client (not signed)",
            Some(BasisKind::Service) | None => ", asserted by the service (not signed)",
        };
        lines.push(format!(
            "  approved by {} at {}{basis}",
            given.approver, given.approved_at
        ));
    }
    lines.push(format!(
        "  redeemed at {}, approval valid until {}",
        receipt.redeemed_at, receipt.expires_at
    ));
    lines.push(format!("  request_sha256 {}", receipt.request_sha256));
    lines.push(format!("  preview_sha256 {}", receipt.preview_sha256));
    if let Some(edited) = &receipt.edited_arguments_sha256 {
        lines.push(format!("  ran edited arguments, sha256 {edited}"));
    }
    lines.join("\n")
}

fn main() -> ExitCode {
    let asked = match asked(std::env::args().skip(1)) {
        Ok(asked) => asked,
        Err(usage) => {
            eprintln!("{usage}");
            return ExitCode::from(2);
        }
    };
    match verify(&asked) {
        Ok(report) => {
            println!("{report}");
            ExitCode::SUCCESS
        }
        Err(refusal) => {
            println!("refused: {refusal}");
            ExitCode::from(1)
        }
    }
}

fn verify(asked: &Asked) -> Result<String, String> {
    let keys = KeySet::from_json(&read(&asked.keys)?).map_err(|error| error.to_string())?;
    let text = read(&asked.receipt)?;
    let receipt = match &asked.approvers {
        None => keys.verify(&text),
        Some(approvers) => verify_with_approvers(&keys, &text, &read(approvers)?)?,
    }
    .map_err(|error| error.to_string())?;
    let mut report = summary(&receipt);
    if let (Some(tenant), Some(subject), Some(arguments)) =
        (&asked.tenant, &asked.subject, &asked.arguments)
    {
        let principal = Principal::new(tenant, subject);
        receipt
            .check_call(&principal, &read(arguments)?)
            .map_err(|error| error.to_string())?;
        report.push_str(&format!(
            "\n  covers the call of {tenant}/{subject} with the arguments given"
        ));
    }
    Ok(report)
}

#[cfg(feature = "passkeys")]
fn verify_with_approvers(
    keys: &KeySet,
    receipt: &[u8],
    approvers: &[u8],
) -> Result<Result<ApprovalReceipt, ReceiptError>, String> {
    let approvers = tool_contract::results::ApproverKeys::from_json(approvers)
        .map_err(|error| error.to_string())?;
    Ok(keys.verify_with_approvers(receipt, &approvers))
}

#[cfg(not(feature = "passkeys"))]
fn verify_with_approvers(
    _: &KeySet,
    _: &[u8],
    _: &[u8],
) -> Result<Result<ApprovalReceipt, ReceiptError>, String> {
    Err("this build checks no passkeys: build it with the `passkeys` feature".to_owned())
}
