//! Replay: recorded model turns of each provider API, call by call through the dispatcher,
//! and the exact next-turn payload each provider is sent back.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use tool_contract::control::Approver;
use tool_contract::control::{JsonLinesAuditLog, verify_chain};
use tool_contract::dispatch::{Dispatch, Task};
use tool_contract::dispatch::{Dispatcher, SignedDecision};
use tool_contract::providers::{
    Answer, AnthropicMessages, Api, GeminiGenerateContent, GeminiInteractions, OpenAiResponses,
    ProviderApi, ProviderError, ToolCall, Turn,
};
use tool_contract::results::{ApproverKeys, Decision, Delivery, KeySet};
use tool_contract::{Binder, CallContext, ErrorCode, ModelResult, Principal};
use tool_contract_tests::passkey::SoftAuthenticator;

use tool_contract_examples::refund_desk::{self as desk, Desk};

/// A provider API the desk has recorded turns of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    OpenAiResponses,
    AnthropicMessages,
    GeminiGenerateContent,
    GeminiInteractions,
}

impl Wire {
    pub const ALL: [Wire; 4] = [
        Wire::OpenAiResponses,
        Wire::AnthropicMessages,
        Wire::GeminiGenerateContent,
        Wire::GeminiInteractions,
    ];

    pub fn api(self) -> Api {
        match self {
            Wire::OpenAiResponses => Api::OpenAiResponses,
            Wire::AnthropicMessages => Api::AnthropicMessages,
            Wire::GeminiGenerateContent => Api::GeminiGenerateContent,
            Wire::GeminiInteractions => Api::GeminiInteractions,
        }
    }

    /// The short name `--provider` takes (the API's wire name is accepted too).
    pub fn short_name(self) -> &'static str {
        match self {
            Wire::OpenAiResponses => "openai",
            Wire::AnthropicMessages => "anthropic",
            Wire::GeminiGenerateContent => "gemini",
            Wire::GeminiInteractions => "interactions",
        }
    }

    pub fn from_name(name: &str) -> Option<Wire> {
        Wire::ALL
            .into_iter()
            .find(|wire| wire.short_name() == name || wire.api().as_str() == name)
    }

    fn title(self) -> &'static str {
        match self {
            Wire::OpenAiResponses => "OpenAI Responses",
            Wire::AnthropicMessages => "Anthropic Messages",
            Wire::GeminiGenerateContent => "Gemini generateContent",
            Wire::GeminiInteractions => "Gemini Interactions",
        }
    }

    /// The recorded turns, shipped with the example.
    fn fixture(self) -> &'static str {
        match self {
            Wire::OpenAiResponses => {
                include_str!("../../../refund-desk/turns/openai-responses.json")
            }
            Wire::AnthropicMessages => {
                include_str!("../../../refund-desk/turns/anthropic-messages.json")
            }
            Wire::GeminiGenerateContent => {
                include_str!("../../../refund-desk/turns/gemini-generate-content.json")
            }
            Wire::GeminiInteractions => {
                include_str!("../../../refund-desk/turns/gemini-interactions.json")
            }
        }
    }

    /// The crate's reader and writer of this API.
    fn provider(self) -> &'static dyn ProviderApi {
        match self {
            Wire::OpenAiResponses => &OpenAiResponses,
            Wire::AnthropicMessages => &AnthropicMessages,
            Wire::GeminiGenerateContent => &GeminiGenerateContent,
            Wire::GeminiInteractions => &GeminiInteractions,
        }
    }
}

/// One recorded turn read into calls by `provider`: a whole response, or its stream's events.
fn read(provider: &dyn ProviderApi, recorded: &RecordedTurn) -> Result<Turn, ProviderError> {
    if let Some(response) = &recorded.response {
        return provider.parse(response.get().as_bytes());
    }
    let mut stream = provider.stream();
    for event in &recorded.stream {
        stream.push(event.get().as_bytes())?;
    }
    stream.finish()
}

/// The next request's tool results for `turn`, from verified results only, and the item of
/// each call within it, in call order.
fn next_turn(
    provider: &dyn ProviderApi,
    binder: &Binder<'_>,
    principal: &Principal,
    turn: &Turn,
    answers: &[Answer],
) -> Result<(Value, Vec<Value>), String> {
    let payload = provider
        .write_results(binder, principal, turn, answers)
        .map_err(|error| chain(&error))?;
    let items = provider.result_items(&payload).to_vec();
    Ok((payload, items))
}

/// An error and its sources, `: `-joined.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

/// A provider's recorded turns, as shipped in `examples/refund-desk/turns/`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Fixture {
    api: String,
    turns: Vec<RecordedTurn>,
}

/// One model turn: a whole response, or the events of a stream.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RecordedTurn {
    step: String,
    #[serde(default)]
    response: Option<Box<RawValue>>,
    #[serde(default)]
    stream: Vec<Box<RawValue>>,
}

/// What the desk does around a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Around {
    Nothing,
    /// Before: the next refund draft's answer is lost.
    LoseNextWriteAnswer,
    /// Before: the order service answers 429 with a retry-after; lifted after.
    RateLimitOrders,
    /// After: the supervisor approves what is pending, having read its preview.
    SupervisorApproves,
}

/// What a call of the script must end as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Succeeded(Delivery),
    Failed(ErrorCode),
}

/// One step of the script: the recorded turn of that name, what happens around it, and what
/// each of its calls must end as.
struct Step {
    name: &'static str,
    title: &'static str,
    around: Around,
    expect: &'static [Expect],
}

/// The retry-after the order service gives while rate limited: more than the dispatcher's
/// retry policy waits in all (30 s), so the model reads it.
const ORDERS_RETRY_AFTER: Duration = Duration::from_secs(45);

const SCRIPT: [Step; 10] = [
    Step {
        name: "plain_read",
        title: "a plain read",
        around: Around::Nothing,
        expect: &[Expect::Succeeded(Delivery::Fresh)],
    },
    Step {
        name: "search_with_injection",
        title: "a search hit carrying a prompt injection: it stays data",
        around: Around::Nothing,
        expect: &[Expect::Succeeded(Delivery::Fresh)],
    },
    Step {
        name: "unknown_tool_and_bad_arguments",
        title: "an unknown tool and bad arguments, in one turn",
        around: Around::Nothing,
        expect: &[
            Expect::Failed(ErrorCode::UnknownTool),
            Expect::Failed(ErrorCode::InvalidArguments),
        ],
    },
    Step {
        name: "draft_needs_approval",
        title: "a refund draft needs approval",
        around: Around::SupervisorApproves,
        expect: &[Expect::Failed(ErrorCode::ApprovalRequired)],
    },
    Step {
        name: "reason_changed",
        title: "another reason than the one approved: refused, the approval stands",
        around: Around::Nothing,
        expect: &[Expect::Failed(ErrorCode::ApprovalInvalid)],
    },
    Step {
        name: "write_times_out",
        title: "the approved write's answer is lost: its outcome is unknown",
        around: Around::LoseNextWriteAnswer,
        expect: &[Expect::Failed(ErrorCode::OutcomeUnknown)],
    },
    Step {
        name: "reconciled",
        title: "asked again: the status query finds the draft, no second write",
        around: Around::Nothing,
        expect: &[Expect::Succeeded(Delivery::ReceiptReconciled)],
    },
    Step {
        name: "rate_limited_read",
        title: "a rate-limited read with retry-after",
        around: Around::RateLimitOrders,
        expect: &[Expect::Failed(ErrorCode::RateLimit)],
    },
    Step {
        name: "same_operation_again",
        title: "the same logical operation once more: replayed from the ledger",
        around: Around::Nothing,
        expect: &[Expect::Succeeded(Delivery::LocalReplay)],
    },
    Step {
        name: "read_the_draft",
        title: "the draft, read back",
        around: Around::Nothing,
        expect: &[Expect::Succeeded(Delivery::Fresh)],
    },
];

/// How the replay prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// For people: one line per call (tool, status, code, recovery).
    Text,
    /// For people, with each turn's next-turn payload and each preview approved.
    Verbose,
    /// One JSON object per call on stdout, nothing else.
    JsonLines,
}

/// The principal every call of the replay is made for.
fn principal() -> Principal {
    Principal::new("acme-shop", "agent:refund-desk")
}

/// Replays the script for each of `wires`, with one audit log for all of them; its path is
/// printed on stderr, and its chain is verified at the end.
pub fn run(wires: &[Wire], output: Output) -> Result<(), String> {
    let path = audit_log_path("");
    let audit = Arc::new(
        JsonLinesAuditLog::open(&path, desk::audit_key()?)
            .map_err(|error| format!("cannot open {}: {error}", path.display()))?,
    );
    eprintln!("audit log: {}", path.display());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(|error| format!("no runtime: {error}"))?;
    // Every run enrols its supervisors afresh: the desk publishes the keys of every run, and
    // every receipt it made.
    let mut receipts = Vec::new();
    let mut published: Option<ApproverKeys> = None;
    for &wire in wires {
        let (receipt, approvers) = runtime.block_on(replay(wire, audit.clone(), output))?;
        published = Some(match published {
            None => approvers,
            Some(earlier) => with_keys_of(earlier, approvers),
        });
        receipts.extend(receipt.map(|receipt| (wire, receipt)));
    }
    let log =
        std::fs::read(&path).map_err(|error| format!("cannot read the audit log: {error}"))?;
    let head = verify_chain(log.as_slice(), &desk::audit_key()?)
        .map_err(|error| format!("the audit chain is broken: {error}"))?;
    eprintln!(
        "audit log: {} records, chain verifies (head {})",
        head.records,
        &head.head_sha256[..16]
    );
    if let (false, Some(approvers)) = (receipts.is_empty(), published) {
        publish(&receipts, &approvers)?;
    }
    Ok(())
}

/// For an auditor: the two published files and each receipt, each verified from the files
/// as written before it is named, and the command that checks it.
fn publish(receipts: &[(Wire, String)], approvers: &ApproverKeys) -> Result<(), String> {
    let keys = KeySet::new([desk::receipt_signer()?.published_key()])
        .map_err(|error| format!("the published key: {error}"))?;
    let keys_path = run_file("published-keys", "json");
    let approvers_path = run_file("approver-keys", "json");
    let written = |path: &PathBuf, text: &str| {
        std::fs::write(path, text)
            .and_then(|()| std::fs::read(path))
            .map_err(|error| format!("cannot write {}: {error}", path.display()))
    };
    let published_keys = KeySet::from_json(&written(&keys_path, &keys.to_json())?)
        .map_err(|error| format!("the published keys do not read: {error}"))?;
    let published_approvers =
        ApproverKeys::from_json(&written(&approvers_path, &approvers.to_json())?)
            .map_err(|error| format!("the approver keys do not read: {error}"))?;
    eprintln!(
        "published keys: {}\napprover keys: {}",
        keys_path.display(),
        approvers_path.display()
    );
    for (wire, receipt) in receipts {
        let receipt_path = run_file(&format!("receipt-{}", wire.api()), "json");
        let text = written(&receipt_path, receipt)?;
        published_keys
            .verify_with_approvers(&text, &published_approvers)
            .map_err(|error| {
                format!(
                    "the {} receipt does not verify with the published files: {error}",
                    wire.api()
                )
            })?;
        eprintln!(
            "approval receipt: {}\ncheck it offline: cargo run -q -p tool-contract --features \
             passkeys --bin tool-contract-verify-receipt -- --keys {} --approvers {} {}",
            receipt_path.display(),
            keys_path.display(),
            approvers_path.display(),
            receipt_path.display()
        );
    }
    Ok(())
}

/// `earlier` with the approvers and credentials of `later` added: one file for every run.
fn with_keys_of(mut earlier: ApproverKeys, later: ApproverKeys) -> ApproverKeys {
    for approver in later.approvers {
        match earlier
            .approvers
            .iter_mut()
            .find(|known| known.approver_id == approver.approver_id)
        {
            Some(known) => known.credentials.extend(approver.credentials),
            None => earlier.approvers.push(approver),
        }
    }
    earlier
}

/// A new audit log's path for a run of `kind`: unique by process and instant, since process
/// ids come round again and a log left by an earlier run is not this run's to go on.
pub fn audit_log_path(kind: &str) -> PathBuf {
    run_file(&format!("{kind}audit"), "jsonl")
}

/// A new file of this run in the temporary directory, `refund-desk-{name}-…{extension}`.
fn run_file(name: &str, extension: &str) -> PathBuf {
    let stamp = time::OffsetDateTime::now_utc().unix_timestamp_nanos();
    std::env::temp_dir().join(format!(
        "refund-desk-{name}-{}-{stamp}.{extension}",
        std::process::id()
    ))
}

/// The script, for one provider API, on a freshly seeded desk.
/// Returns the last approval receipt it verified, and the approver keys of this run.
async fn replay(
    wire: Wire,
    audit: Arc<JsonLinesAuditLog>,
    output: Output,
) -> Result<(Option<String>, ApproverKeys), String> {
    let fixture: Fixture = serde_json::from_str(wire.fixture())
        .map_err(|error| format!("{}: the recorded turns do not read: {error}", wire.title()))?;
    if fixture.api != wire.api().as_str() {
        return Err(format!(
            "{}: the fixture is for {}",
            wire.title(),
            fixture.api
        ));
    }
    let steps: Vec<&str> = fixture
        .turns
        .iter()
        .map(|turn| turn.step.as_str())
        .collect();
    let script: Vec<&str> = SCRIPT.iter().map(|step| step.name).collect();
    if steps != script {
        return Err(format!(
            "{}: the recorded turns are {steps:?}, the script is {script:?}",
            wire.title()
        ));
    }
    let desk = Arc::new(Desk::seeded());
    let dispatcher = desk::signed_four_eyes_dispatcher(
        &desk,
        audit,
        Arc::new(tool_contract::control::MemoryStore::new()),
        desk::relying_party()?,
    )?;
    let binder = dispatcher.binder();
    if output != Output::JsonLines {
        println!("== {} ({}) ==", wire.title(), wire.api());
    }
    let mut supervisors = enrol_supervisors(&dispatcher, output).await?;
    // What the desk publishes: an auditor needs nothing else to check a receipt.
    let keys = KeySet::new([desk::receipt_signer()?.published_key()])
        .map_err(|error| format!("the published key: {error}"))?;
    let approvers = dispatcher
        .published_approvers()
        .await
        .map_err(|error| format!("the approver keys: {error}"))?
        .ok_or("the desk has no relying party")?;
    let principal = principal();
    let task = Task::unlimited();
    let mut last_receipt = None;
    for (number, (step, recorded)) in SCRIPT.iter().zip(&fixture.turns).enumerate() {
        let number = number + 1;
        match step.around {
            Around::LoseNextWriteAnswer => desk.lose_next_write_answer(),
            Around::RateLimitOrders => desk.rate_limit_orders(ORDERS_RETRY_AFTER),
            Around::Nothing | Around::SupervisorApproves => {}
        }
        let turn = read(wire.provider(), recorded)
            .map_err(|error| format!("{} turn {number}: {}", wire.title(), chain(&error)))?;
        if output != Output::JsonLines {
            let form = if recorded.response.is_some() {
                "whole response"
            } else {
                "streamed"
            };
            println!("\nturn {number}: {} ({form})", step.title);
        }
        let (answers, dispatches) = dispatcher
            .dispatch_turn(&principal, &turn, &task)
            .await
            .into_parts();
        let (payload, items) = next_turn(wire.provider(), &binder, &principal, &turn, &answers)?;
        if items.len() != turn.calls.len() {
            return Err(format!("{}: one result item per call", wire.title()));
        }
        for (((call, dispatch), item), answer) in
            turn.calls.iter().zip(&dispatches).zip(items).zip(&answers)
        {
            match output {
                Output::Text | Output::Verbose => print_call(call, dispatch),
                Output::JsonLines => print_json_line(wire, number, step, call, dispatch, item)?,
            }
            last_receipt = check_receipt(&keys, &approvers, dispatch, &answer.context, output)?
                .or(last_receipt);
        }
        if output == Output::Verbose {
            println!("  next turn: {payload}");
        }
        check(wire, number, step, &dispatches)?;
        match step.around {
            Around::SupervisorApproves => {
                approve(&dispatcher, &mut supervisors, &dispatches, output).await?;
            }
            Around::RateLimitOrders => desk.lift_rate_limit(),
            Around::Nothing | Around::LoseNextWriteAnswer => {}
        }
    }
    if output != Output::JsonLines {
        println!(
            "\nrefund drafts in the store: {} (one approved write, however often it was asked)\n",
            desk.draft_count()
        );
    }
    if desk.draft_count() != 1 {
        return Err(format!(
            "{}: the store holds {} drafts, not 1",
            wire.title(),
            desk.draft_count()
        ));
    }
    Ok((last_receipt, approvers))
}

/// Who approves: one supervisor, or two different ones where the desk's rule asks for them.
const SUPERVISORS: [(&str, &str); 2] = [
    ("ana.supervisor@acme.example", "Ana Lima"),
    ("ben.supervisor@acme.example", "Ben Okafor"),
];

/// A supervisor: their approver id and the authenticator holding their passkey (software,
/// standing in for their phone or security key).
struct Supervisor {
    approver_id: &'static str,
    authenticator: SoftAuthenticator,
}

/// Adds the desk's supervisors to its approver directory, for the shop's tenant and every
/// tool, and enrols a passkey for each (a WebAuthn registration, user verification required).
async fn enrol_supervisors(
    dispatcher: &Dispatcher,
    output: Output,
) -> Result<Vec<Supervisor>, String> {
    let mut supervisors = Vec::new();
    for (approver_id, name) in SUPERVISORS {
        let approver = Approver::new(approver_id, name, [principal().tenant], ["*"]);
        dispatcher
            .put_approver(approver)
            .await
            .map_err(|error| format!("{approver_id} is not added: {error}"))?;
        let mut authenticator = SoftAuthenticator::at(desk::CONSOLE_ORIGIN, true);
        let enrollment = dispatcher
            .begin_enrollment(approver_id)
            .await
            .map_err(|error| format!("{approver_id} cannot enrol: {error}"))?;
        let answer = authenticator.register(&enrollment.options).await;
        let enrolled = dispatcher
            .finish_enrollment(&enrollment, &answer)
            .await
            .map_err(|error| format!("{approver_id}'s passkey is refused: {error}"))?;
        if output != Output::JsonLines {
            let credential = &enrolled.credentials[0];
            println!(
                "{name} ({approver_id}) enrols a passkey: credential {}, {} public key",
                credential.credential_id,
                credential.public_key["crv"].as_str().unwrap_or("RSA")
            );
        }
        supervisors.push(Supervisor {
            approver_id,
            authenticator,
        });
    }
    Ok(supervisors)
}

/// The supervisors read each pending preview and approve exactly it, for ten minutes, each
/// signing the approval statement with their passkey: one, or two different ones for a
/// refund above the desk's limit.
async fn approve(
    dispatcher: &Dispatcher,
    supervisors: &mut [Supervisor],
    dispatches: &[Dispatch],
    output: Output,
) -> Result<(), String> {
    for pending in dispatches
        .iter()
        .filter_map(|dispatch| dispatch.pending_approval.as_ref())
    {
        let needed = usize::try_from(pending.approvals_still_needed()).unwrap_or(usize::MAX);
        let signing = supervisors
            .get_mut(..needed)
            .ok_or("more supervisors needed than the desk has")?;
        let count = signing.len();
        for (index, supervisor) in signing.iter_mut().enumerate() {
            let approver_id = supervisor.approver_id;
            let statement = dispatcher
                .approval_statement(
                    &pending.approval_id,
                    approver_id,
                    Decision::Approve,
                    None,
                    Duration::from_secs(600),
                )
                .await
                .map_err(|error| format!("no statement to sign: {error}"))?;
            let request = dispatcher
                .signing_request(&statement)
                .await
                .map_err(|error| format!("no signing request: {error}"))?;
            let assertion = supervisor.authenticator.sign(&request.options).await;
            let decided = dispatcher
                .decide_signed(&statement, None, &assertion)
                .await
                .map_err(|error| format!("the signed approval was refused: {error}"))?;
            let SignedDecision::Approved(approved) = decided else {
                return Err(format!(
                    "{approver_id}'s approval was recorded as {decided:?}"
                ));
            };
            let last = index + 1 == count;
            if approved.grant().is_some() != last {
                return Err(format!(
                    "{approver_id}'s approval left {} more needed",
                    approved.still_needed()
                ));
            }
            let came_to = if last {
                "granted".to_owned()
            } else {
                format!("{} more supervisor needed", approved.still_needed())
            };
            match output {
                Output::Text => println!(
                    "  {approver_id} approves {} with their passkey, after reading its preview \
                     (sha256 {}): {came_to}",
                    pending.approval_id,
                    &pending.preview_sha256[..16]
                ),
                Output::Verbose => println!(
                    "  {approver_id} approves {} with their passkey, after reading the preview \
                     {} (sha256 {}; signed statement sha256 {}): {came_to}",
                    pending.approval_id,
                    pending.preview.arguments,
                    &pending.preview_sha256[..16],
                    hex(&statement.challenge())
                ),
                Output::JsonLines => {}
            }
        }
    }
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The receipt of an approval this dispatch redeemed, if any: verified with the published
/// key alone and checked against the model's call, then printed; its text.
fn check_receipt(
    keys: &KeySet,
    approvers: &ApproverKeys,
    dispatch: &Dispatch,
    context: &CallContext,
    output: Output,
) -> Result<Option<String>, String> {
    let approval = dispatch.result.audit.approval.as_ref();
    let Some(signed) = approval.and_then(|approval| approval.receipt.as_ref()) else {
        return Ok(None);
    };
    let text = signed.to_json();
    let receipt = keys
        .verify_with_approvers(text.as_bytes(), approvers)
        .map_err(|error| format!("the approval receipt does not verify: {error}"))?;
    receipt
        .check_call(&principal(), &context.call.arguments)
        .map_err(|error| format!("the approval receipt does not cover its call: {error}"))?;
    if output != Output::JsonLines {
        let approvers: Vec<&str> = receipt
            .approvals
            .iter()
            .map(|given| given.approver.as_str())
            .collect();
        println!(
            "  approval receipt (audit only, never the model), approved by {}, signed by key {}:",
            approvers.join(" and "),
            receipt.key_id
        );
        if output == Output::Verbose {
            let pretty = serde_json::to_string_pretty(signed)
                .map_err(|error| format!("the receipt does not encode: {error}"))?;
            for line in pretty.lines() {
                println!("    {line}");
            }
        } else {
            println!(
                "    request_sha256 {}, rule: {} approvers signing with passkeys",
                &receipt.request_sha256[..16],
                receipt.approvals_required.unwrap_or(1)
            );
            for given in &receipt.approvals {
                let credential = given
                    .assertion
                    .as_ref()
                    .map_or("none", |assertion| assertion.credential_id.as_str());
                println!(
                    "    {} at {}: assertion of credential {credential}",
                    given.approver, given.approved_at
                );
            }
        }
        println!(
            "    verified offline with the desk's key and this run's supervisors' passkeys \
             (all published at the end), and it covers this very call"
        );
    }
    Ok(Some(text))
}

/// The call and its outcome: status, error code, paths and recovery, delivery.
fn print_call(call: &ToolCall, dispatch: &Dispatch) {
    let model = &dispatch.result.model;
    println!("  {} [{}]: {model}", call.name, call.call_id);
}

/// One line: the call, the tool, the model result and this call's item of the next-turn
/// payload.
fn print_json_line(
    wire: Wire,
    turn: usize,
    step: &Step,
    call: &ToolCall,
    dispatch: &Dispatch,
    provider_payload: Value,
) -> Result<(), String> {
    let line = serde_json::json!({
        "api": wire.api().as_str(),
        "turn": turn,
        "step": step.name,
        "call_id": call.call_id,
        "tool": call.name,
        "model_result": model_json(&dispatch.result.model)?,
        "provider_payload": provider_payload,
    });
    println!("{line}");
    Ok(())
}

fn model_json(model: &ModelResult) -> Result<Value, String> {
    serde_json::to_value(model)
        .map_err(|error| format!("the model result does not encode: {error}"))
}

/// Whether every call ended as the script says; the replay stops with an error otherwise.
fn check(wire: Wire, number: usize, step: &Step, dispatches: &[Dispatch]) -> Result<(), String> {
    let got: Vec<Expect> = dispatches
        .iter()
        .map(|dispatch| {
            let model = &dispatch.result.model;
            match model.error() {
                None => Expect::Succeeded(model.execution().delivery),
                Some(error) => Expect::Failed(error.code()),
            }
        })
        .collect();
    if got == step.expect {
        Ok(())
    } else {
        Err(format!(
            "{} turn {number} ({}): expected {:?}, got {got:?}",
            wire.title(),
            step.name,
            step.expect
        ))
    }
}
