//! What a tool asks the client before it runs (SEP-2322 input requests: a form, a sampling
//! request, the client's roots): the application's rule, the answers gathered round by round
//! under a sealed state, and the client capability each request needs.

use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::RequestStateCodec;
use rmcp::model::{ClientCapabilities, InputRequest, InputRequests, InputResponses, JsonObject};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::approval::{Expected, StateRefusal};
use crate::contract::ToolSpec;

/// What a question rule sees of a call: its tool, what the client answered so far, what the
/// client declared it can be asked, and whether the call is a task.
#[derive(Debug)]
pub struct Asking<'a> {
    pub(super) spec: &'a ToolSpec,
    pub(super) answers: &'a JsonObject,
    pub(super) client: Option<&'a ClientCapabilities>,
    pub(super) in_task: bool,
}

impl<'a> Asking<'a> {
    /// What a rule sees of a call before any task is made.
    pub(super) fn before_task(
        spec: &'a ToolSpec,
        answers: &'a JsonObject,
        client: Option<&'a ClientCapabilities>,
    ) -> Self {
        Asking {
            spec,
            answers,
            client,
            in_task: false,
        }
    }

    /// The tool called.
    #[must_use]
    pub fn tool(&self) -> &ToolSpec {
        self.spec
    }

    /// The client's answer to the request asked under `key`, as it sent it (an
    /// `ElicitResult`, a `CreateMessageResult`, a `ListRootsResult`).
    #[must_use]
    pub fn answer(&self, key: &str) -> Option<&Value> {
        self.answers.get(key)
    }

    /// Whether the client answered the request asked under `key`.
    #[must_use]
    pub fn answered(&self, key: &str) -> bool {
        self.answers.contains_key(key)
    }

    /// Whether the client declared it can be asked `request` (elicitation, sampling, roots).
    #[must_use]
    pub fn client_can_answer(&self, request: &InputRequest) -> bool {
        self.client
            .is_some_and(|declared| missing(declared, request).is_none())
    }

    /// Whether the call is answered as a task: a rule may ask some things before a task is
    /// made (the request is answered `input_required`) and others inside it (the task is
    /// `input_required`, answered with `tasks/update`).
    #[must_use]
    pub fn in_task(&self) -> bool {
        self.in_task
    }
}

/// The application's rule: the requests still open for a call, given what was answered.
pub(super) type QuestionRule = Arc<dyn Fn(&Asking<'_>) -> InputRequests + Send + Sync>;

/// The capability `request` needs that `declared` lacks, if it lacks one.
fn missing(declared: &ClientCapabilities, request: &InputRequest) -> Option<ClientCapabilities> {
    let mut needed = ClientCapabilities::default();
    match request {
        InputRequest::Elicitation(_) if declared.elicitation.is_none() => {
            needed.elicitation = Some(Default::default());
        }
        InputRequest::CreateMessage(_) if declared.sampling.is_none() => {
            needed.sampling = Some(Default::default());
        }
        InputRequest::ListRoots(_) if declared.roots.is_none() => {
            needed.roots = Some(Default::default());
        }
        _ => return None,
    }
    Some(needed)
}

/// The requests `rule` leaves open for `asking`; a client that did not declare it can answer
/// one of them is refused with `-32021`, naming what it lacks.
pub(super) fn open_requests(
    rule: &QuestionRule,
    asking: &Asking<'_>,
) -> Result<InputRequests, ErrorData> {
    let asked = rule(asking);
    match lacking(asking.client, &asked) {
        Some(lacking) => Err(ErrorData::missing_required_client_capability(lacking)),
        None => Ok(asked),
    }
}

/// Every capability `asked` needs that `declared` lacks, merged; `None` when it lacks none.
fn lacking(
    declared: Option<&ClientCapabilities>,
    asked: &InputRequests,
) -> Option<ClientCapabilities> {
    let nothing = ClientCapabilities::default();
    let declared = declared.unwrap_or(&nothing);
    let mut lacking: Option<ClientCapabilities> = None;
    for request in asked.values() {
        if let Some(needed) = missing(declared, request) {
            let all = lacking.get_or_insert_with(ClientCapabilities::default);
            all.elicitation = all.elicitation.take().or(needed.elicitation);
            all.sampling = all.sampling.take().or(needed.sampling);
            all.roots = all.roots.take().or(needed.roots);
        }
    }
    lacking
}

/// The client's answers in a request, each checked to be an object (every result a client
/// can answer with is one); `Err` names the first that is not.
pub(super) fn answers_in(responses: Option<&InputResponses>) -> Result<JsonObject, String> {
    let mut answers = JsonObject::new();
    for (key, answer) in responses.into_iter().flatten() {
        if !answer.is_object() {
            return Err(key.clone());
        }
        answers.insert(key.clone(), answer.clone());
    }
    Ok(answers)
}

/// The answers a call gathered so far, sealed into its `requestState`: bound to one
/// principal, one tool and one request, until `expires_at_ms`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AnswersState {
    /// The layout's version, so that a later layout is refused rather than misread.
    v: u8,
    principal_ref: String,
    tool: String,
    request_sha256: String,
    expires_at_ms: u64,
    pub(super) answers: JsonObject,
    /// The keys the round this state goes out with asks: only responses under them count.
    pub(super) open: Vec<String>,
}

const ANSWERS_VERSION: u8 = 1;

impl AnswersState {
    /// `answers`, and the requests `open` now, for the call `call` describes, valid until
    /// `expires_at_ms`.
    pub(super) fn of(
        call: &Expected<'_>,
        answers: JsonObject,
        open: &InputRequests,
        expires_at_ms: u64,
    ) -> Self {
        AnswersState {
            v: ANSWERS_VERSION,
            principal_ref: call.principal_ref.to_owned(),
            tool: call.tool.to_owned(),
            request_sha256: call.request_sha256.to_owned(),
            expires_at_ms,
            answers,
            open: open.keys().cloned().collect(),
        }
    }

    /// The state, sealed.
    pub(super) fn seal(&self, codec: &RequestStateCodec) -> Option<String> {
        codec.seal_json(self).ok()
    }

    /// Opens `sealed` and checks it against `call`: `Ok(None)` when it opens but holds
    /// something else (an approval's state), a refusal when it does not open or was sealed
    /// for another call, or has expired.
    pub(super) fn open(
        codec: &RequestStateCodec,
        sealed: &str,
        call: &Expected<'_>,
    ) -> Result<Option<Self>, StateRefusal> {
        let opened: Value = codec.open_json(sealed).map_err(|_| StateRefusal::Forged)?;
        let Ok(state) = serde_json::from_value::<AnswersState>(opened) else {
            return Ok(None);
        };
        if state.v != ANSWERS_VERSION {
            return Err(StateRefusal::Forged);
        }
        call.admits(
            &state.principal_ref,
            &state.tool,
            &state.request_sha256,
            state.expires_at_ms,
        )?;
        Ok(Some(state))
    }
}
