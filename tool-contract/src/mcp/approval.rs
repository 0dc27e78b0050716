//! Approvals over MCP: the one confirmation form both protocol generations show, and the
//! sealed `requestState` that carries a 2026-07-28 approval from the question to the answer.
//!
//! MCP 2026-07-28 has no server-to-client requests: a `tools/call` that needs a person answers
//! `resultType: "input_required"` with the form and a `requestState`, and the client sends the
//! same call again with the person's answer and that state. The spec (`basic/patterns/mrtr`,
//! Server Requirements 4 and 5) says the state is attacker-controlled, must be
//! integrity-protected when it bears on authorization, should be bound to the principal, the
//! method, a digest of the parameters and a short lifetime, and that single use is the
//! server's to enforce. Here the state is sealed with HMAC-SHA256 (rmcp's
//! `RequestStateCodec`) and names the approval, principal, tool, request digest, preview digest
//! and expiry; single use is the store's: an approval leaves `pending` once, on whichever
//! replica records the answer.

use rmcp::model::{
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema, EnumSchema,
    RequestStateCodec,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::control::{PendingApproval, RejectionReason};

/// The form field a person answers an approval with.
const APPROVE_FIELD: &str = "approve";

/// The form field a person may say why they reject with: one of [`RejectionReason`]'s names.
const REASON_FIELD: &str = "reason";

/// Every [`RejectionReason`], as the form offers them.
const REASONS: [RejectionReason; 3] = [
    RejectionReason::NotPermitted,
    RejectionReason::WrongDetails,
    RejectionReason::Duplicate,
];

/// The key of the confirmation among a result's `inputRequests`.
pub(super) const CONFIRMATION_KEY: &str = "approval";

/// What a person decided, read from their answer to the confirmation form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Decision {
    /// Accepted with `approve: true`.
    Approve,
    /// Declined, or accepted with `approve: false` (and, then, perhaps a reason).
    Reject(Option<RejectionReason>),
    /// Dismissed, or no answer: the approval stays pending.
    Undecided,
}

impl Decision {
    /// The decision an elicitation answer carries.
    pub(super) fn of(answer: &ElicitResult) -> Self {
        match answer.action {
            ElicitationAction::Accept => {
                let approved = answer
                    .content
                    .as_ref()
                    .and_then(|content| content.get(APPROVE_FIELD))
                    .and_then(Value::as_bool);
                if approved == Some(true) {
                    return Decision::Approve;
                }
                // A reason not on the list is no reason: the rejection still stands.
                let reason = answer
                    .content
                    .as_ref()
                    .and_then(|content| content.get(REASON_FIELD))
                    .and_then(|reason| RejectionReason::deserialize(reason).ok());
                Decision::Reject(reason)
            }
            ElicitationAction::Decline => Decision::Reject(None),
            _ => Decision::Undecided,
        }
    }

    /// The decision among a 2026-07-28 retry's `inputResponses`: undecided when the
    /// confirmation is missing or is not an elicitation answer.
    pub(super) fn among(responses: Option<&rmcp::model::InputResponses>) -> Self {
        Decision::under(responses, CONFIRMATION_KEY)
    }

    /// The decision answered under `key` among `responses` (a task's `tasks/update`, whose
    /// keys are unique over the task's life).
    pub(super) fn under(responses: Option<&rmcp::model::InputResponses>, key: &str) -> Self {
        responses
            .and_then(|responses| responses.get(key))
            .and_then(|answer| ElicitResult::deserialize(answer).ok())
            .map_or(Decision::Undecided, |answer| Decision::of(&answer))
    }
}

/// The confirmation form for `pending`: the preview, one required yes/no field, and, for a
/// no, an optional reason from the fixed list.
/// Where the person gives a signed approval is `console`, `{approval_id}` standing for its id.
/// `None` when the contract asks someone other than the caller (`approval = by_another`): the
/// person at the caller's client is not asked what their answer could not decide.
pub(super) fn confirmation(
    pending: &PendingApproval,
    console: Option<&str>,
) -> Option<ElicitRequestParams> {
    if pending.by_another {
        return None;
    }
    let preview = pending.preview.to_text();
    let message = format!(
        "Approve this {} call? It runs exactly as shown.{}\n{preview}",
        pending.preview.tool,
        still_needed(pending, console)
    );
    let reasons = REASONS
        .iter()
        .filter_map(|reason| serde_json::to_value(reason).ok())
        .filter_map(|reason| reason.as_str().map(str::to_owned))
        .collect();
    let requested_schema = ElicitationSchema::builder()
        .required_bool(APPROVE_FIELD)
        .optional_enum_schema(REASON_FIELD, EnumSchema::builder(reasons).build())
        .build()
        .ok()?;
    Some(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema,
    })
}

/// The page where `pending`'s approvals are given when the caller's answer cannot give them
/// (signatures asked, or `approval = by_another`): `console` with `{approval_id}` standing for
/// its id; `None` when the caller's answer counts or no console is set.
pub(super) fn console_page(pending: &PendingApproval, console: Option<&str>) -> Option<String> {
    console
        .filter(|_| !pending.caller_can_approve())
        .map(|url| url.replace("{approval_id}", &pending.approval_id))
}

/// The URL-mode elicitation that sends the person to `page`, where approvers sign `pending`
/// with their passkeys (MCP 2025-11-25, `elicitation/create` with `mode: "url"`). Its answer
/// says only whether the person went there: the decision is the signatures'.
pub(super) fn console_link(pending: &PendingApproval, page: String) -> ElicitRequestParams {
    let message = format!(
        "Approve this {} call in the approvals console, where it shows exactly what would run.{}",
        pending.preview.tool,
        still_needed(pending, None)
    );
    ElicitRequestParams::UrlElicitationParams {
        meta: None,
        message,
        url: page,
        elicitation_id: pending.approval_id.clone(),
    }
}

/// What the confirmation says of the approvals still needed, where more than one person
/// must approve: nothing for the common one.
fn still_needed(pending: &PendingApproval, console: Option<&str>) -> String {
    let required = pending.approvals_required;
    if pending.by_another && !pending.signatures_required {
        let needed = pending.approvals_still_needed();
        let people = if needed == 1 { "person" } else { "people" };
        return format!(
            " It needs {needed} more {people} other than the one who asked to approve it \
             there: an answer here does not count toward them."
        );
    }
    if pending.signatures_required {
        // An answer here is the client's word, which this rule does not count.
        let signed = pending
            .approvals
            .iter()
            .filter(|given| given.basis.is_signed())
            .count();
        let needed = usize::try_from(required.max(1))
            .unwrap_or(usize::MAX)
            .saturating_sub(signed);
        let approvals = if needed == 1 { "approval" } else { "approvals" };
        let place = console.map_or_else(
            || "the approvals console".to_owned(),
            |url| {
                format!(
                    "the approvals console, {}",
                    url.replace("{approval_id}", &pending.approval_id)
                )
            },
        );
        return format!(
            " It needs {needed} more {approvals} signed with an approver's own passkey, given \
             in {place}: an answer here does not count toward them."
        );
    }
    let needed = pending.approvals_still_needed();
    if required <= 1 {
        return String::new();
    }
    let people = if needed == 1 { "person" } else { "people" };
    format!(
        " It needs {required} different approvers: {needed} more {people} must approve \
         before it runs."
    )
}

/// Why a `requestState` sent back with an answer was refused; nothing was recorded.
///
/// The JSON-RPC error's `data.reason` is [`code`](Self::code). The client's way on is the same
/// `tools/call` without the state: it is asked again (or, when the write already ran, reads
/// its recorded result).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StateRefusal {
    /// The state does not open under this server's key: made up, edited, or sealed by a server
    /// with other keys.
    #[error("the request state does not verify")]
    Forged,
    /// The approval it carries has lapsed.
    #[error("the request state has expired")]
    Expired,
    /// Its approval was already decided: the state was used once.
    #[error("the request state was already used")]
    Replayed,
    /// It was sealed for another principal.
    #[error("the request state belongs to another principal")]
    OtherPrincipal,
    /// It was sealed for another tool.
    #[error("the request state belongs to another tool")]
    OtherTool,
    /// The arguments are not the ones the person was asked about.
    #[error("the arguments changed since the approval was asked")]
    ChangedArguments,
}

impl StateRefusal {
    /// The refusal as `data.reason` gives it.
    #[must_use]
    pub fn code(self) -> &'static str {
        match self {
            StateRefusal::Forged => "forged",
            StateRefusal::Expired => "expired",
            StateRefusal::Replayed => "replayed",
            StateRefusal::OtherPrincipal => "other_principal",
            StateRefusal::OtherTool => "other_tool",
            StateRefusal::ChangedArguments => "changed_arguments",
        }
    }
}

/// What a sealed `requestState` says: one pending approval, asked of one principal about one
/// exact request, until `expires_at_ms`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ApprovalState {
    /// The layout's version, so that a later layout is refused rather than misread.
    pub(super) v: u8,
    pub(super) approval_id: String,
    pub(super) principal_ref: String,
    pub(super) tool: String,
    pub(super) request_sha256: String,
    pub(super) preview_sha256: String,
    pub(super) expires_at_ms: u64,
    /// What the person was asked; a state of version 1 without it asked the form.
    #[serde(default)]
    pub(super) question: Question,
    /// The operation asked about, so that the call sent back with the answer is the same one
    /// where its arguments alone do not name it (`operation = per_call`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) operation_id: Option<String>,
    /// The client's answers to the tool's questions, given before the approval was asked.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub(super) answers: serde_json::Map<String, Value>,
}

/// What a 2026-07-28 `input_required` asked the person.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Question {
    /// The confirmation form: its answer is the decision.
    #[default]
    Form,
    /// To go to the approvals console: the answer decides nothing, the signatures there do.
    Console,
}

const STATE_VERSION: u8 = 1;

impl ApprovalState {
    /// The state of `pending` asked by `question`, valid until `expires_at_ms`.
    pub(super) fn of(pending: &PendingApproval, question: Question, expires_at_ms: u64) -> Self {
        ApprovalState {
            v: STATE_VERSION,
            approval_id: pending.approval_id.clone(),
            principal_ref: pending.principal_ref.clone(),
            tool: pending.preview.tool.clone(),
            request_sha256: pending.request_sha256.clone(),
            preview_sha256: pending.preview_sha256.clone(),
            expires_at_ms,
            question,
            operation_id: Some(pending.operation_id.clone()),
            answers: serde_json::Map::new(),
        }
    }

    /// The operation a sealed state was issued for, when it opens; what else it says is
    /// checked when the answer is recorded.
    pub(super) fn operation_of(codec: &RequestStateCodec, sealed: &str) -> Option<String> {
        let state: ApprovalState = codec.open_json(sealed).ok()?;
        (state.v == STATE_VERSION)
            .then_some(state.operation_id)
            .flatten()
    }

    /// The state, sealed.
    pub(super) fn seal(&self, codec: &RequestStateCodec) -> Option<String> {
        codec.seal_json(self).ok()
    }

    /// Opens `sealed` and checks it against the call it came back with: its principal, tool
    /// and request digest, and the time. Whether it was used already is the store's to say.
    pub(super) fn open(
        codec: &RequestStateCodec,
        sealed: &str,
        call: &Expected<'_>,
    ) -> Result<Self, StateRefusal> {
        // Every failure to open is one refusal: the codec's detail stays here (rmcp's advice).
        let state: ApprovalState = codec.open_json(sealed).map_err(|_| StateRefusal::Forged)?;
        if state.v != STATE_VERSION {
            return Err(StateRefusal::Forged);
        }
        call.admits(
            &state.principal_ref,
            &state.tool,
            &state.request_sha256,
            state.expires_at_ms,
        )?;
        Ok(state)
    }
}

impl ApprovalState {
    /// Opens the state a task kept of the approval it asked about, for the answer
    /// `principal_ref` gives through `tasks/update` about the task's `tool`: the request is
    /// the task's own, so only the principal, the tool and the time are checked.
    pub(super) fn open_for_task(
        codec: &RequestStateCodec,
        sealed: &str,
        principal_ref: &str,
        tool: &str,
        now_ms: u64,
    ) -> Result<Self, StateRefusal> {
        let state: ApprovalState = codec.open_json(sealed).map_err(|_| StateRefusal::Forged)?;
        let expected = Expected {
            principal_ref,
            tool,
            request_sha256: &state.request_sha256,
            now_ms,
        };
        ApprovalState::open(codec, sealed, &expected)
    }
}

/// The call a state came back with, as the server computed it.
pub(super) struct Expected<'a> {
    pub(super) principal_ref: &'a str,
    pub(super) tool: &'a str,
    pub(super) request_sha256: &'a str,
    pub(super) now_ms: u64,
}

impl Expected<'_> {
    /// Whether a state sealed for `principal_ref`'s call of `tool` with `request_sha256`,
    /// until `expires_at_ms`, may come back with this call.
    pub(super) fn admits(
        &self,
        principal_ref: &str,
        tool: &str,
        request_sha256: &str,
        expires_at_ms: u64,
    ) -> Result<(), StateRefusal> {
        if expires_at_ms <= self.now_ms {
            return Err(StateRefusal::Expired);
        }
        if principal_ref != self.principal_ref {
            return Err(StateRefusal::OtherPrincipal);
        }
        if tool != self.tool {
            return Err(StateRefusal::OtherTool);
        }
        if request_sha256 != self.request_sha256 {
            return Err(StateRefusal::ChangedArguments);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codec(byte: u8) -> RequestStateCodec {
        RequestStateCodec::try_new(vec![byte; 32]).unwrap()
    }

    fn state() -> ApprovalState {
        ApprovalState {
            v: STATE_VERSION,
            approval_id: "approval-1".into(),
            principal_ref: "p".repeat(64),
            tool: "issue_refund".into(),
            request_sha256: "r".repeat(64),
            preview_sha256: "v".repeat(64),
            expires_at_ms: 2_000,
            question: Question::Form,
            operation_id: None,
            answers: serde_json::Map::new(),
        }
    }

    fn expected(state: &ApprovalState, now_ms: u64) -> Expected<'_> {
        Expected {
            principal_ref: &state.principal_ref,
            tool: &state.tool,
            request_sha256: &state.request_sha256,
            now_ms,
        }
    }

    #[test]
    fn a_state_opens_for_the_call_it_was_sealed_for() {
        let state = state();
        let sealed = state.seal(&codec(1)).unwrap();
        let opened = ApprovalState::open(&codec(1), &sealed, &expected(&state, 1_999));
        assert_eq!(opened, Ok(state));
    }

    #[test]
    fn a_state_under_another_key_or_edited_is_forged() {
        let state = state();
        let sealed = state.seal(&codec(1)).unwrap();
        let call = expected(&state, 0);
        assert_eq!(
            ApprovalState::open(&codec(2), &sealed, &call),
            Err(StateRefusal::Forged)
        );
        let mut edited = sealed.into_bytes();
        let last = edited.len() - 1;
        edited[last] = if edited[last] == b'A' { b'B' } else { b'A' };
        let edited = String::from_utf8(edited).unwrap();
        assert_eq!(
            ApprovalState::open(&codec(1), &edited, &call),
            Err(StateRefusal::Forged)
        );
        assert_eq!(
            ApprovalState::open(&codec(1), "not a state", &call),
            Err(StateRefusal::Forged)
        );
    }

    #[test]
    fn a_state_is_refused_at_and_after_its_expiry() {
        let state = state();
        let sealed = state.seal(&codec(1)).unwrap();
        assert_eq!(
            ApprovalState::open(&codec(1), &sealed, &expected(&state, 2_000)),
            Err(StateRefusal::Expired)
        );
    }

    #[test]
    fn a_state_sealed_before_it_named_its_question_asked_the_form() {
        #[derive(Serialize)]
        struct Earlier<'a> {
            v: u8,
            approval_id: &'a str,
            principal_ref: &'a str,
            tool: &'a str,
            request_sha256: &'a str,
            preview_sha256: &'a str,
            expires_at_ms: u64,
        }
        let state = state();
        let sealed = codec(1)
            .seal_json(&Earlier {
                v: STATE_VERSION,
                approval_id: &state.approval_id,
                principal_ref: &state.principal_ref,
                tool: &state.tool,
                request_sha256: &state.request_sha256,
                preview_sha256: &state.preview_sha256,
                expires_at_ms: state.expires_at_ms,
            })
            .unwrap();
        let opened = ApprovalState::open(&codec(1), &sealed, &expected(&state, 0)).unwrap();
        assert_eq!(opened.question, Question::Form);
        let console = ApprovalState {
            question: Question::Console,
            ..state.clone()
        };
        let sealed = console.seal(&codec(1)).unwrap();
        let opened = ApprovalState::open(&codec(1), &sealed, &expected(&state, 0));
        assert_eq!(opened, Ok(console));
    }

    #[test]
    fn a_state_of_a_later_layout_is_refused() {
        let mut state = state();
        state.v = STATE_VERSION + 1;
        let sealed = state.seal(&codec(1)).unwrap();
        assert_eq!(
            ApprovalState::open(&codec(1), &sealed, &expected(&state, 0)),
            Err(StateRefusal::Forged)
        );
    }

    #[test]
    fn an_answer_is_approval_only_when_accepted_with_approve_true() {
        let answer = |action, content: Option<Value>| {
            let mut result = ElicitResult::new(action);
            result.content = content;
            Decision::of(&result)
        };
        let yes = Some(serde_json::json!({ "approve": true }));
        let no = Some(serde_json::json!({ "approve": false }));
        assert_eq!(answer(ElicitationAction::Accept, yes), Decision::Approve);
        assert_eq!(
            answer(ElicitationAction::Accept, no),
            Decision::Reject(None)
        );
        assert_eq!(
            answer(ElicitationAction::Accept, None),
            Decision::Reject(None)
        );
        assert_eq!(
            answer(ElicitationAction::Decline, None),
            Decision::Reject(None)
        );
        let why = Some(serde_json::json!({ "approve": false, "reason": "wrong_details" }));
        let reason = Some(RejectionReason::WrongDetails);
        assert_eq!(
            answer(ElicitationAction::Accept, why),
            Decision::Reject(reason)
        );
        let unknown = Some(serde_json::json!({ "approve": false, "reason": "bored" }));
        assert_eq!(
            answer(ElicitationAction::Accept, unknown),
            Decision::Reject(None)
        );
        assert_eq!(answer(ElicitationAction::Cancel, None), Decision::Undecided);
        assert_eq!(Decision::among(None), Decision::Undecided);
    }
}
