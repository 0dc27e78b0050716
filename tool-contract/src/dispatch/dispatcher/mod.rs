//! The pipeline around every call: lookup, validation, gates, authorization, approval,
//! ledger, budget, handler, projection, audit. Each stage is one method named after it, in
//! the file of its part: `admit` (may it run), `write` (ledger and approval), `execute`
//! (handler and projection). Each stage returns what it decided; [`Dispatcher::finish`] puts
//! the [`Dispatch`] together in one place.

mod admit;
mod execute;
#[cfg(feature = "mcp")]
mod holds;
mod settle;
mod signed;
mod stale;
mod status;
mod tasks;
#[cfg(feature = "mcp")]
mod waiting;
mod write;

#[cfg(feature = "mcp")]
pub(crate) use holds::{Awaits, SAFETY_POLL};
pub use settle::{SettleError, Settlement};
pub use signed::SignedDecision;
#[cfg(feature = "passkeys")]
pub use signed::{Enrollment, SigningRequest};
pub use tasks::TASK_LEASE;

use std::collections::{BTreeSet, HashMap};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::FutureExt;
use rand::SeedableRng;
use rand::rngs::{SmallRng, SysRng};
use serde_json::Value;
use sha2::{Digest, Sha256};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tokio::sync::watch;
use tracing::{Instrument, Span, debug, info, warn};

use crate::binder::{Binder, CallResult, ToolFailure};
use crate::contract::{Registry, ToolSpec};
use crate::control::Guarded;
use crate::control::{Advanced, ControlStore, Lease, Purged, Record, RowSeal, StoreError};
use crate::control::{
    ApprovalBasis, ApprovalError, ApproveStep, Approved, ApproverIdentity, PendingApproval,
    RejectStep, RejectionReason, later_by,
};
use crate::control::{AuditLogError, AuditSink};
use crate::control::{WriteEvent, WriteState};
use crate::dispatch::budget::{StopReason, Task};
use crate::dispatch::client_side::ClientSide;
use crate::dispatch::gate::Gate;
use crate::dispatch::handler::{ApprovalPolicy, KeyRule, ToolEntry};
use crate::dispatch::operation::{Naming, operation_id};
use crate::dispatch::options::Authorizer;
use crate::dispatch::outcome::{Dispatch, DispatchedTurn};
use crate::dispatch::telemetry;
use crate::providers::{Answer, Turn};
use crate::results::digest::lower_hex;
use crate::results::{ApprovalRecord, AuditKeys, ErrorCode, ModelError, ReceiptSigner};
#[cfg(doc)]
use crate::vocabulary::Operation;
use crate::vocabulary::{CallContext, Principal, Reconcile, ToolCall};

/// Edited arguments a person approves: canonical JSON, checked against the contract, with
/// what the approval policy asks of them.
pub(crate) struct Edit {
    pub(super) arguments: String,
    pub(super) approvals_required: u32,
    pub(super) signatures_required: bool,
    /// The approval rules that ask of the edited arguments, by id.
    pub(super) required_by: Vec<String>,
}

/// Who gives an approval, as the store records and compares them.
pub(crate) struct Approving {
    /// The name the approval is recorded under.
    pub(super) name: String,
    /// The person they are among the caller's tenant's principals, when known.
    pub(super) person_ref: Option<String>,
    /// What the approval rests on.
    pub(super) basis: ApprovalBasis,
}

/// A stage's early exit: the call's final result (boxed: results are large, exits rare).
type Exit = Box<CallResult>;

/// Runs every call through the trusted pipeline; see the [module docs](crate::dispatch).
pub struct Dispatcher {
    registry: Registry,
    keys: AuditKeys,
    /// The seal of approval rows, from `keys`.
    row_seal: RowSeal,
    clock: fn() -> OffsetDateTime,
    tools: HashMap<&'static str, ToolEntry>,
    gates: Vec<Box<dyn Gate>>,
    authorizer: Option<Box<dyn Authorizer>>,
    #[cfg(feature = "cedar")]
    policy_check: Option<crate::policy::PolicyCheck>,
    store: Arc<dyn ControlStore>,
    audit_sink: Arc<dyn AuditSink>,
    owner: String,
    retention: Duration,
    lease_grace: Duration,
    trace_model_results: bool,
    approval_policies: HashMap<&'static str, ApprovalPolicy>,
    receipts: Option<ReceiptSigner>,
    statement_lifetime: Duration,
    /// How many pending approvals one principal may hold.
    pending_approvals_per_principal: usize,
    #[cfg(feature = "passkeys")]
    passkeys: Option<Passkeys>,
    key_rules: HashMap<&'static str, KeyRule>,
    in_flight: Mutex<HashMap<String, watch::Sender<bool>>>,
    /// The tasks this dispatcher's work holds, held together by its worker's lease.
    #[cfg(feature = "mcp")]
    holds: Arc<holds::Holds>,
    /// For each read a write names as `reconcile = ThisTool`, the writes it is the status
    /// query of.
    status_tools: HashMap<&'static str, Vec<&'static str>>,
    rng: Mutex<SmallRng>,
    sequence: AtomicU64,
    writes: AtomicU64,
}

/// What a dispatcher is made of, as its builder checked it.
pub(crate) struct Parts {
    pub(crate) registry: Registry,
    pub(crate) keys: AuditKeys,
    pub(crate) clock: fn() -> OffsetDateTime,
    pub(crate) tools: HashMap<&'static str, ToolEntry>,
    pub(crate) gates: Vec<Box<dyn Gate>>,
    pub(crate) authorizer: Option<Box<dyn Authorizer>>,
    #[cfg(feature = "cedar")]
    pub(crate) policy_check: Option<crate::policy::PolicyCheck>,
    pub(crate) store: Arc<dyn ControlStore>,
    pub(crate) audit_sink: Arc<dyn AuditSink>,
    pub(crate) retention: Duration,
    pub(crate) lease_grace: Duration,
    pub(crate) trace_model_results: bool,
    pub(crate) approval_policies: HashMap<&'static str, ApprovalPolicy>,
    pub(crate) receipts: Option<ReceiptSigner>,
    pub(crate) statement_lifetime: Duration,
    pub(crate) pending_approvals_per_principal: usize,
    #[cfg(feature = "passkeys")]
    pub(crate) relying_party: Option<crate::results::RelyingParty>,
    pub(crate) key_rules: HashMap<&'static str, KeyRule>,
}

/// The relying party approvers' passkeys are checked for, with its verifier.
#[cfg(feature = "passkeys")]
struct Passkeys {
    party: crate::results::RelyingParty,
    core: webauthn_rs_core::WebauthnCore,
}

/// How many writes pass between two purges of expired ledger keys.
pub const PURGE_EVERY: u64 = 256;

impl std::fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatcher")
            .field("tools", &self.tools.keys().collect::<Vec<_>>())
            .field("gates", &self.gates.len())
            .field("owner", &self.owner)
            .finish_non_exhaustive()
    }
}

/// The call one dispatch serves: what every stage reads, and none changes.
struct Call<'a> {
    principal: &'a Principal,
    context: &'a CallContext,
    task: &'a Task,
    binder: Binder<'a>,
    /// The call the model made, when a person approved it with edits and this call is the
    /// edited one: what the model is told is bound to it.
    edited_from: Option<&'a CallContext>,
    /// The write this read runs as the status query of.
    status_of: Option<&'static str>,
    /// What the caller's own credentials may ask (an MCP token's scopes), when the caller
    /// has limits beyond the principal's: an edit a person approved runs only within them;
    /// and the token's scopes, for the policies. One reference: every move of a dispatch's
    /// future copies its calls.
    credentials: Option<&'a Credentials<'a>>,
    /// What the client gives the handler besides the input.
    client: Option<&'a ClientSide>,
}

/// Whether a caller's credentials may ask for a call of a tool with these arguments.
pub(crate) type Reach<'a> = dyn Fn(&ToolSpec, &[u8]) -> bool + Send + Sync + 'a;

/// What a caller's credentials say beyond the principal: how far an approved edit may
/// reach, and the token's scopes (for the policies), when it came with a token.
#[cfg_attr(not(feature = "mcp"), allow(dead_code))]
pub(crate) struct Credentials<'a> {
    pub(crate) reach: &'a Reach<'a>,
    #[cfg_attr(not(feature = "cedar"), allow(dead_code))]
    pub(crate) scopes: Option<&'a BTreeSet<String>>,
}

/// How a dispatch ended, as the stage that ended it decided. The approvals are boxed: a read
/// has neither, and an `Ended` is moved from stage to stage (1 KB less to copy each time).
struct Ended {
    result: CallResult,
    write_state: Option<WriteState>,
    pending_approval: Option<Box<PendingApproval>>,
    /// The approval the write ran on, for the audit.
    approval: Option<Box<ApprovalRecord>>,
    attempts: u32,
    stop: Option<StopReason>,
    /// Whether the handler panicked.
    handler_panicked: bool,
    /// `Some` once the result went to the audit sink (with the sink's failure, if it failed).
    audited: Option<Option<AuditLogError>>,
}

impl Ended {
    fn new(result: CallResult) -> Self {
        Ended {
            result,
            write_state: None,
            pending_approval: None,
            approval: None,
            attempts: 0,
            stop: None,
            handler_panicked: false,
            audited: None,
        }
    }

    fn in_state(mut self, state: Option<WriteState>) -> Self {
        self.write_state = state;
        self
    }

    fn stopped(mut self, stop: Option<StopReason>) -> Self {
        self.stop = stop;
        self
    }

    fn approved(mut self, approval: Option<ApprovalRecord>) -> Self {
        self.approval = approval.map(Box::new);
        self
    }
}

/// A registered, validated call.
struct Valid<'a> {
    spec: &'static ToolSpec,
    entry: &'a ToolEntry,
    arguments: Value,
    /// The Cedar policies that let it through, once authorized (none without policies).
    policies: Vec<String>,
}

impl Dispatcher {
    /// The dispatcher of `parts`, with an owner id of its own in the ledger.
    pub(crate) fn from_parts(parts: Parts) -> Self {
        let mut rng = SmallRng::try_from_rng(&mut SysRng).unwrap_or_else(|_| {
            // No OS randomness: jitter and owner ids still differ per process and instant.
            let nanos = OffsetDateTime::now_utc().unix_timestamp_nanos();
            SmallRng::seed_from_u64(nanos as u64 ^ u64::from(std::process::id()))
        });
        let owner = format!("owner-{:016x}", rand::Rng::next_u64(&mut rng));
        let mut status_tools: HashMap<&'static str, Vec<&'static str>> = HashMap::new();
        for spec in parts.registry.tools() {
            if let Some(Reconcile::Tool(status)) = spec.reconcile() {
                status_tools.entry(status).or_default().push(spec.name());
            }
        }
        Dispatcher {
            registry: parts.registry,
            row_seal: RowSeal::new(&parts.keys),
            keys: parts.keys,
            clock: parts.clock,
            tools: parts.tools,
            gates: parts.gates,
            authorizer: parts.authorizer,
            #[cfg(feature = "cedar")]
            policy_check: parts.policy_check,
            store: Arc::new(Guarded(parts.store)),
            audit_sink: parts.audit_sink,
            owner,
            retention: parts.retention,
            lease_grace: parts.lease_grace,
            trace_model_results: parts.trace_model_results,
            approval_policies: parts.approval_policies,
            receipts: parts.receipts,
            statement_lifetime: parts.statement_lifetime,
            pending_approvals_per_principal: parts.pending_approvals_per_principal,
            #[cfg(feature = "passkeys")]
            passkeys: parts.relying_party.and_then(|party| {
                // A relying party is checked when it is made; one that no longer builds a
                // verifier checks no passkey.
                let core = party.core().ok()?;
                Some(Passkeys { party, core })
            }),
            key_rules: parts.key_rules,
            in_flight: Mutex::new(HashMap::new()),
            #[cfg(feature = "mcp")]
            holds: Arc::default(),
            status_tools,
            rng: Mutex::new(rng),
            // Lease generations are fencing tokens: started from the clock, a dispatcher
            // started later begins above one started earlier.
            sequence: AtomicU64::new(start_of_sequence()),
            writes: AtomicU64::new(0),
        }
    }

    /// The registry.
    #[must_use]
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The call as the dispatcher runs it: its operation id and idempotency key named by the
    /// tool's contract (`#[tool_contract(operation = ...)]`, [`Operation`]): a write's by the
    /// fields it names, by its model call, by the application's
    /// [`operation_key`](crate::dispatch::DispatcherBuilder::operation_key), or by its exact
    /// arguments; a read's by its call id. A `per_call` write whose provider gives no call id
    /// kept across turns (a Gemini call matched by name, in a response without an id) gets a
    /// fresh name: each context made is its own operation, and dispatching that context again
    /// is its retry.
    ///
    /// [`dispatch_turn`](Self::dispatch_turn) names every call of a turn this way; name a
    /// call yourself only to dispatch it alone.
    #[must_use]
    pub fn context(&self, call: ToolCall) -> CallContext {
        let operation_id = self.operation_id(&call);
        CallContext::new(call, operation_id.clone()).with_idempotency_key(operation_id)
    }

    /// The operation of `call` by its contract's rule ([`context`](Self::context)).
    pub(crate) fn operation_id(&self, call: &ToolCall) -> String {
        let naming = Naming {
            spec: self.registry.get(&call.name),
            key_rule: self.key_rules.get(call.name.as_str()),
            forbidden: self.registry.forbidden_keys(),
        };
        operation_id(&naming, call).unwrap_or_else(|| self.fresh_operation_id(&call.name))
    }

    /// A name no other operation has: `name:once:` and 128 random bits.
    pub(crate) fn fresh_operation_id(&self, name: &str) -> String {
        let mut rng = self
            .rng
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let high = rand::Rng::next_u64(&mut *rng);
        let low = rand::Rng::next_u64(&mut *rng);
        format!("{name}:once:{high:016x}{low:016x}")
    }

    /// A binder over the dispatcher's registry and keys, to verify results with.
    #[must_use]
    pub fn binder(&self) -> Binder<'_> {
        Binder::new(&self.registry, self.keys.clone()).with_clock(self.clock)
    }

    /// The time by the dispatcher's clock ([`DispatcherBuilder::clock`](crate::dispatch::DispatcherBuilder::clock)): what approval
    /// expiries are measured against.
    #[must_use]
    pub fn now(&self) -> OffsetDateTime {
        (self.clock)()
    }

    /// This dispatcher's owner id in the store's leases (one per dispatcher).
    #[must_use]
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// Runs one call through the whole pipeline. Every exit is a sealed result: the tool's
    /// validated output, or a catalog error; nothing panics on any input.
    pub async fn dispatch(
        &self,
        principal: &Principal,
        context: &CallContext,
        task: &Task,
    ) -> Dispatch {
        let span = self.span(context);
        self.dispatch_in_span(principal, context, task, None, None)
            .instrument(span)
            .await
    }

    /// Runs every call of `turn`, in order, each under the context
    /// [`context`](Self::context) gives it: each call's answer for the provider's next turn
    /// ([`DispatchedTurn::answers`], what
    /// [`ProviderApi::write_results`](crate::providers::ProviderApi::write_results) takes),
    /// beside its dispatch.
    pub async fn dispatch_turn(
        &self,
        principal: &Principal,
        turn: &Turn,
        task: &Task,
    ) -> DispatchedTurn {
        let mut dispatched = DispatchedTurn::with_capacity(turn.calls.len());
        for call in &turn.calls {
            let context = self.context(call.clone());
            let dispatch = self.dispatch(principal, &context, task).await;
            let result = dispatch.result.clone();
            dispatched.push(Answer { context, result }, dispatch);
        }
        dispatched
    }

    /// Runs again the calls of a turn held open that waited for approval, each under the
    /// operation it was asked about, now that people decided: the approved write runs on its
    /// grant (once, on whichever replica), a rejected one reads its rejection, one still
    /// waiting reads `APPROVAL_REQUIRED` with the same pending approval. The turn's other
    /// answers stay as they were: nothing else runs again. Hand the result to the provider's
    /// [`write_results`](crate::providers::ProviderApi::write_results) once, and the model's
    /// next turn reads each write's real result, as if it had run at once, with no second
    /// call of the model's.
    ///
    /// Every check holds as for the first dispatch: the call is the one asked about (its
    /// request digest, so an approval covers exactly it), the ledger runs its operation once,
    /// and the audit records both dispatches.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use tool_contract::prelude::*;
    /// # /// Refund an order; a supervisor approves it first.
    /// # #[derive(serde::Deserialize, ToolContract)]
    /// # #[tool_contract(output = Refund, effect = idempotent_write, approval = by_another, operation = [order_ref])]
    /// # struct RefundOrder { #[tool_contract(max_len = 16)] order_ref: String }
    /// # #[derive(serde::Serialize, ToolOutput)]
    /// # struct Refund { #[tool_output(bound = order_ref)] order_ref: String }
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build()?.block_on(async {
    /// # let desk = Dispatcher::for_development(registry![RefundOrder])
    /// #     .handler(|input: RefundOrder| async move { Ok::<_, ToolFailure>(Refund { order_ref: input.order_ref }) })
    /// #     .build()?;
    /// # let alice = Principal::new("acme", "alice");
    /// # let turn = OpenAiResponses.parse(br#"{"id":"resp_1","status":"completed","output":[{"type":"function_call","call_id":"call_1","name":"refund_order","arguments":"{\"order_ref\":\"ORDER-7\"}"}]}"#)?;
    /// let held = desk.dispatch_turn(&alice, &turn, &Task::unlimited()).await;
    /// for pending in held.pending_approvals() {
    ///     desk.approve_pending(pending, "supervisor:sam", Duration::from_secs(600)).await?;
    /// }
    /// let decided = desk.resume_turn(&alice, held, &Task::unlimited()).await;
    /// assert_eq!(decided.answers()[0].result.model.status(), Status::Succeeded);
    /// let next = OpenAiResponses.write_results(&desk.binder(), &alice, &turn, decided.answers())?;
    /// # let _ = next;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn resume_turn(
        &self,
        principal: &Principal,
        held: DispatchedTurn,
        task: &Task,
    ) -> DispatchedTurn {
        let (answers, dispatches) = held.into_parts();
        let mut resumed = DispatchedTurn::with_capacity(answers.len());
        for (answer, dispatch) in answers.into_iter().zip(dispatches) {
            if dispatch.pending_approval.is_none() {
                resumed.push(answer, dispatch);
                continue;
            }
            let context = answer.context;
            let again = self.dispatch(principal, &context, task).await;
            let result = again.result.clone();
            resumed.push(Answer { context, result }, again);
        }
        resumed
    }

    /// Asks what became of a write whose outcome is unknown, through the write's status query,
    /// without ever running the write again. A write already finished answers from the ledger.
    /// The call is admitted as a dispatch is: validated, through the gates and the authorizer.
    pub async fn reconcile(
        &self,
        principal: &Principal,
        context: &CallContext,
        task: &Task,
    ) -> Dispatch {
        let span = self.span(context);
        async {
            let call = self.call(principal, context, task);
            // The same admission as a dispatch: a status query reads the remote too.
            let ended = match self.admit(&call) {
                Err(result) => Ended::new(*result),
                Ok(valid) => self.reconcile_call(&call, &valid).await,
            };
            self.finish(ended).await
        }
        .instrument(span)
        .await
    }

    /// Approves a pending write: the person saw `preview_sha256` and approves until
    /// `expires_at`. The approval covers exactly that request, tool, principal and operation,
    /// and is redeemed by the one execution it allows, on whichever replica shares the store.
    ///
    /// `approver` is the service's word for who approves, compared with the principal who
    /// asked as a subject of their tenant ([`ApproverIdentity`](crate::control::ApproverIdentity)):
    /// under `approval = by_another`, an approver who is the caller is refused.
    ///
    /// Where a policy asks for several approvers ([`DispatcherBuilder::approvers_when`](crate::dispatch::DispatcherBuilder::approvers_when)), each
    /// approval is recorded against the same pending approval ([`Approved::Awaiting`]) until
    /// that many different people have approved; then [`Approved::Granted`].
    ///
    /// # Errors
    ///
    /// [`ApprovalError`] when nothing is pending under that id (decided, or superseded by a
    /// changed request), the preview is not the one pending, the expiry has passed or
    /// cannot be written as RFC 3339 (a year past 9999), the contract asks someone other than
    /// the caller and `approver` is the caller ([`ApprovalError::CallerCannotApprove`]), or
    /// the store failed.
    pub async fn approve(
        &self,
        approval_id: &str,
        preview_sha256: &str,
        approver: &str,
        expires_at: OffsetDateTime,
    ) -> Result<Approved, ApprovalError> {
        let pending = self.pending(approval_id).await?;
        let approving = self.named_approver(&pending, approver);
        self.approve_as(approval_id, preview_sha256, approving, expires_at, None)
            .await
    }

    /// Approves `pending`, as the person saw it, for `lifetime` from now: [`approve`](Self::approve)
    /// in one call. The hand-back: the model's next identical call runs the write (a
    /// re-dispatch of the same call context does too, and
    /// [`resume_turn`](Self::resume_turn) runs a held turn's), once, on any replica sharing
    /// the store.
    ///
    /// # Errors
    ///
    /// As [`approve`](Self::approve).
    pub async fn approve_pending(
        &self,
        pending: &PendingApproval,
        approver: &str,
        lifetime: Duration,
    ) -> Result<Approved, ApprovalError> {
        let expires_at = later_by(self.now(), lifetime);
        let approving = self.named_approver(pending, approver);
        self.approve_as(
            &pending.approval_id,
            &pending.preview_sha256,
            approving,
            expires_at,
            None,
        )
        .await
    }

    /// Approves a pending write with the person's changes: the execution the grant allows
    /// runs `edited_arguments`, never the arguments the person was asked about. An edit is
    /// an approval of its own arguments: they are checked against the tool's input contract
    /// now, and the approval policy ([`DispatcherBuilder::approval_when`],
    /// [`DispatcherBuilder::approvers_when`]) is asked again of them, so an edit that needs
    /// more approvers than the request did waits for them (every one approving the same
    /// edits). When the grant is redeemed, the edited call passes the contract, the gates,
    /// the authorizer and that count again, or nothing runs. The model's own call, sent
    /// again, redeems the grant; it reads `APPROVED_WITH_CHANGES` (the action happened, as
    /// changed) instead of the output, and the audit holds both the edited run and what the
    /// model was told.
    ///
    /// [`DispatcherBuilder::approval_when`]: crate::dispatch::DispatcherBuilder::approval_when
    /// [`DispatcherBuilder::approvers_when`]: crate::dispatch::DispatcherBuilder::approvers_when
    ///
    /// # Errors
    ///
    /// As [`approve`](Self::approve), and [`ApprovalError::InvalidEdit`] when the edited
    /// arguments do not meet the tool's contract.
    pub async fn approve_with_edits(
        &self,
        approval_id: &str,
        preview_sha256: &str,
        edited_arguments: &Value,
        approver: &str,
        expires_at: OffsetDateTime,
    ) -> Result<Approved, ApprovalError> {
        let pending = self.pending(approval_id).await?;
        let edit = self.checked_edit(&pending, edited_arguments)?;
        let approving = self.named_approver(&pending, approver);
        self.approve_as(
            approval_id,
            preview_sha256,
            approving,
            expires_at,
            Some(edit),
        )
        .await
    }

    /// The approval `approval_id`, if it is still pending.
    /// The approval `approval_id` while it waits for a decision (as any replica sharing the
    /// store sees it, with the approvals given so far); `None` once it was granted, rejected
    /// or has expired, or if it never was.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    pub async fn pending_approval(
        &self,
        approval_id: &str,
    ) -> Result<Option<PendingApproval>, StoreError> {
        self.store
            .pending_approval(approval_id, self.now_ms(), &self.row_seal)
            .await
    }

    pub(super) async fn pending(
        &self,
        approval_id: &str,
    ) -> Result<PendingApproval, ApprovalError> {
        self.store
            .pending_approval(approval_id, self.now_ms(), &self.row_seal)
            .await
            .map_err(|error| self.approval_store_failed(error))?
            .ok_or(ApprovalError::NotPending)
    }

    /// Edited arguments checked against the pending approval's tool, with what the policy
    /// asks of them.
    pub(super) fn checked_edit(
        &self,
        pending: &PendingApproval,
        edited_arguments: &Value,
    ) -> Result<Edit, ApprovalError> {
        let edited = crate::json::canonical::to_vec(edited_arguments)
            .map_err(|error| ApprovalError::InvalidEdit(error.to_string()))?;
        let (Some(spec), Some(entry)) = (
            self.registry.get(&pending.preview.tool),
            self.tools.get(pending.preview.tool.as_str()),
        ) else {
            return Err(ApprovalError::NotPending);
        };
        entry
            .tool
            .validate(&edited, self.registry.forbidden_keys())
            .map_err(|violations| ApprovalError::InvalidEdit(violations.to_string()))?;
        let approvals_required = self.approvals_required(spec, &edited, edited_arguments);
        let signatures_required = self.signatures_required(spec, &edited, edited_arguments);
        let required_by = self.approval_rules_asking(spec, edited_arguments);
        let arguments = String::from_utf8(edited)
            .map_err(|error| ApprovalError::InvalidEdit(error.to_string()))?;
        Ok(Edit {
            arguments,
            approvals_required,
            signatures_required,
            required_by,
        })
    }

    /// The person `name` stands for among `tenant`'s principals, as approvals compare people
    /// ([`GivenApproval::person_ref`](crate::control::GivenApproval::person_ref)); `None`
    /// when the name is empty once normalized.
    pub(crate) fn person_ref(&self, tenant: &str, name: &str) -> Option<String> {
        ApproverIdentity::of(name).map(|identity| self.keys.person_ref(tenant, identity.as_str()))
    }

    /// An approval on the service's word by `approver`, a name the application gives: compared
    /// with the caller as a subject of `pending`'s tenant.
    fn named_approver(&self, pending: &PendingApproval, approver: &str) -> Approving {
        Approving {
            name: approver.to_owned(),
            person_ref: self.person_ref(&pending.tenant, approver),
            basis: ApprovalBasis::Service,
        }
    }

    /// Records the approval of the person at `principal`'s client: their answer to MCP's
    /// confirmation form, recorded as `mcp:{tenant}/{subject}` on the client's word
    /// ([`ApprovalBasis::Client`]), which never counts under `approval = by_another`.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) async fn approve_as_caller(
        &self,
        principal: &Principal,
        approval_id: &str,
        preview_sha256: &str,
        expires_at: OffsetDateTime,
    ) -> Result<Approved, ApprovalError> {
        let approving = Approving {
            name: format!("mcp:{}/{}", principal.tenant, principal.subject),
            person_ref: self.person_ref(&principal.tenant, &principal.subject),
            basis: ApprovalBasis::Client,
        };
        self.approve_as(approval_id, preview_sha256, approving, expires_at, None)
            .await
    }

    /// Records one approval: who gives it, on what basis, until when, with which edits. Whether
    /// it counts (the caller under `by_another`, one person twice, an approver who cannot be
    /// told from the caller) is the store's atomic approve step to decide.
    pub(crate) async fn approve_as(
        &self,
        approval_id: &str,
        preview_sha256: &str,
        approving: Approving,
        expires_at: OffsetDateTime,
        edit: Option<Edit>,
    ) -> Result<Approved, ApprovalError> {
        // The audit records the expiry as RFC 3339, which has four-digit years only.
        if expires_at.format(&Rfc3339).is_err() {
            return Err(ApprovalError::ExpiryOutOfRange);
        }
        let (edited_arguments, approvals_required, signatures_required, required_by) = match edit {
            Some(edit) => (
                Some(edit.arguments),
                edit.approvals_required,
                edit.signatures_required,
                edit.required_by,
            ),
            None => (None, 0, false, Vec::new()),
        };
        let step = ApproveStep {
            approval_id: approval_id.to_owned(),
            preview_sha256: preview_sha256.to_owned(),
            approver: approving.name,
            expires_at,
            now: (self.clock)(),
            approvals_required,
            signatures_required,
            required_by,
            edited_arguments,
            basis: approving.basis,
            person_ref: approving.person_ref,
            seal: self.row_seal.clone(),
        };
        let approved = self
            .store
            .approve(&step)
            .await
            .map_err(|error| self.approval_store_failed(error))??;
        match &approved {
            Approved::Granted(_) => info!(stage = "approval", state = "approved", "write approved"),
            Approved::Awaiting(pending) => info!(
                stage = "approval",
                state = "pending_approval",
                approvals_still_needed = pending.approvals_still_needed(),
                "approval recorded; more approvers needed"
            ),
        }
        Ok(approved)
    }

    /// Rejects a pending write; its operation is refused from then on, on every replica.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::NotPending`] when nothing is pending under that id;
    /// [`ApprovalError::Store`] when the store failed.
    pub async fn reject(&self, approval_id: &str) -> Result<(), ApprovalError> {
        self.reject_as(approval_id, None).await
    }

    /// Rejects a pending write for `reason`, from the fixed list: the model reads that
    /// reason's catalog entry (`REJECTED_WRONG_DETAILS`, …) as trusted control data, where a
    /// rejection without one reads `BLOCKED`.
    ///
    /// # Errors
    ///
    /// As [`reject`](Self::reject).
    pub async fn reject_because(
        &self,
        approval_id: &str,
        reason: RejectionReason,
    ) -> Result<(), ApprovalError> {
        self.reject_as(approval_id, Some(reason)).await
    }

    async fn reject_as(
        &self,
        approval_id: &str,
        reason: Option<RejectionReason>,
    ) -> Result<(), ApprovalError> {
        let step = RejectStep {
            approval_id: approval_id.to_owned(),
            reason,
            now: (self.clock)(),
            retention_ms: duration_ms(self.retention),
            seal: self.row_seal.clone(),
        };
        self.store
            .reject(&step)
            .await
            .map_err(|error| self.approval_store_failed(error))??;
        info!(stage = "approval", state = "rejected", "write rejected");
        Ok(())
    }

    /// A person's decision the store could not take: reported, and kept in the trace.
    fn approval_store_failed(&self, error: StoreError) -> ApprovalError {
        warn!(stage = "approval", error = %error, "the store refused a decision; nothing was recorded");
        ApprovalError::Store(error)
    }

    /// The approvals waiting for a person, across every replica sharing the store, oldest
    /// first: what a supervisor's queue shows.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    pub async fn pending_approvals(&self) -> Result<Vec<PendingApproval>, StoreError> {
        self.store
            .pending_approvals(self.now_ms(), &self.row_seal)
            .await
    }

    /// Asks a running write to stop. The answer is `cancel_requested` until the handler
    /// confirms it never acted (then the dispatch reports `cancelled`); a cancellation is
    /// never reported as "did not happen" on its own. For a write not running, its state.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    pub async fn cancel(
        &self,
        principal: &Principal,
        context: &CallContext,
    ) -> Result<Option<WriteState>, StoreError> {
        let ledger_key = self.ledger_key(principal, context);
        let Some(record) = self.store.get(&ledger_key).await? else {
            return Ok(None);
        };
        if record.state != WriteState::Executing || record.lease.owner != self.owner {
            return Ok(Some(record.state));
        }
        let keeping = self.keeping(self.registry.get(&record.tool));
        let step = self.advance(
            &ledger_key,
            &record.lease,
            keeping,
            WriteState::Executing,
            WriteEvent::RequestCancel,
            None,
        );
        let state = match self.store.advance(&step).await? {
            Advanced::Applied(record) => record.state,
            Advanced::Stale(record) => return Ok(record.map(|record| record.state)),
        };
        if let Some(signal) = self.in_flight_signals().get(&ledger_key) {
            signal.send_replace(true);
        }
        info!(stage = "cancel", state = state.as_str(), "cancel requested");
        Ok(Some(state))
    }

    /// Removes the store's finished records whose retention has passed, and approvals past
    /// their own expiry (a grant when it lapses; a pending approval or a rejection a
    /// retention after it was written, by the retention of the replica that wrote it), so a
    /// replica never purges what another still needs. The dispatcher also does this on its
    /// own, once every [`PURGE_EVERY`] writes.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    pub async fn purge_expired(&self) -> Result<Purged, StoreError> {
        let purged = self.store.purge_expired(self.now_ms()).await?;
        debug!(
            stage = "ledger",
            records = purged.records,
            approvals = purged.approvals,
            "expired keys and approvals purged"
        );
        Ok(purged)
    }

    /// An operator's purge of finished operations by age: removes the ledger records whose
    /// window ended `older_than` ago or earlier, kept ones included (`within = "30d"`, whose
    /// records outlive their window so that a repeat names the earlier run). An operation
    /// within its window is never touched, nor one kept for good (`[fields]` or `key_rule`
    /// without `within`: its window never ends), nor an `unknown` or running one. Answers how
    /// many records it removed.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    pub async fn purge_operations(&self, older_than: Duration) -> Result<u64, StoreError> {
        let window_ended_by = self.now_ms().saturating_sub(duration_ms(older_than));
        let purged = self.store.purge_operations(window_ended_by).await?;
        info!(
            stage = "ledger",
            records = purged,
            "operations purged by age"
        );
        Ok(purged)
    }

    /// Where the write of `context` stands in the ledger: `unknown` for one still marked
    /// running whose lease has lapsed.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    pub async fn write_state(
        &self,
        principal: &Principal,
        context: &CallContext,
    ) -> Result<Option<WriteState>, StoreError> {
        let ledger_key = self.ledger_key(principal, context);
        Ok(self.store.get(&ledger_key).await?.map(|record| {
            // Nobody holds a lapsed lease any more: what it was doing is unknown.
            if self.lease_lapsed(&record) {
                WriteState::Unknown
            } else {
                record.state
            }
        }))
    }

    /// Whether `record` is in flight under a lease nobody holds any more. A lease this
    /// dispatcher holds for a write it is still running has not lapsed, whatever the wall
    /// clock says: a clock that jumps (a VM resumed, an NTP step) does not end a running
    /// write.
    fn lease_lapsed(&self, record: &Record) -> bool {
        let running_here =
            record.lease.owner == self.owner && self.in_flight_signals().contains_key(&record.key);
        record.state.is_in_flight() && record.lease_until_ms <= self.now_ms() && !running_here
    }

    /// [`dispatch`](Self::dispatch) for a caller whose credentials reach less far than the
    /// principal: an approved edit beyond `reach` does not run.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) async fn dispatch_within(
        &self,
        principal: &Principal,
        context: &CallContext,
        task: &Task,
        credentials: &Credentials<'_>,
        client: &ClientSide,
    ) -> Dispatch {
        let span = self.span(context);
        self.dispatch_in_span(principal, context, task, Some(credentials), Some(client))
            .instrument(span)
            .await
    }

    async fn dispatch_in_span(
        &self,
        principal: &Principal,
        context: &CallContext,
        task: &Task,
        credentials: Option<&Credentials<'_>>,
        client: Option<&ClientSide>,
    ) -> Dispatch {
        let mut call = self.call(principal, context, task);
        call.credentials = credentials;
        call.client = client;
        let mut ended = match self.admit(&call) {
            Err(result) => Ended::new(*result),
            // On the heap: a write's steps make a future of some 15 KB, which every read's
            // future would otherwise be as large as, and be copied whole where it is moved.
            Ok(valid) if valid.spec.effect().is_write() => {
                let mut ended = Box::pin(self.write(&call, &valid)).await;
                ended.result.audit.policies = valid.policies;
                ended
            }
            Ok(valid) => {
                let mut ended = self.read(&mut call, &valid).await;
                ended.result.audit.policies = valid.policies;
                ended
            }
        };
        let audit_error = self.audited(&mut ended).await;
        self.finished(ended, audit_error)
    }

    /// `principal`'s call refused with `code` before anything of it ran (`detail` for the
    /// audit only): bound and audited as every refusal is.
    #[cfg(feature = "mcp")]
    pub(crate) async fn refuse(
        &self,
        principal: &Principal,
        context: &CallContext,
        code: ErrorCode,
        detail: &str,
    ) -> Dispatch {
        let task = Task::unlimited();
        let call = self.call(principal, context, &task);
        let result = self.control(&call, ModelError::new(code), detail);
        self.finish(Ended::new(result)).await
    }

    fn call<'a>(
        &'a self,
        principal: &'a Principal,
        context: &'a CallContext,
        task: &'a Task,
    ) -> Call<'a> {
        Call {
            principal,
            context,
            task,
            binder: self.binder(),
            edited_from: None,
            status_of: None,
            credentials: None,
            client: None,
        }
    }

    fn span(&self, context: &CallContext) -> Span {
        let sequence = self.sequence.fetch_add(1, Ordering::Relaxed);
        telemetry::execute_tool(
            self.registry.get(&context.call.name),
            context,
            || format!("{}-{sequence}", self.owner),
            || prefix(&sha256_hex(context.operation_id.as_bytes())).to_owned(),
        )
    }

    fn project_failure(&self, call: &Call<'_>, failure: ToolFailure) -> CallResult {
        call.binder
            .project_failure(call.principal, call.context, failure)
    }

    fn control(&self, call: &Call<'_>, error: ModelError, detail: &str) -> CallResult {
        call.binder
            .control(call.principal, call.context, error, Some(detail.to_owned()))
    }

    /// The store failed before anything ran: the write does not run (it is never run
    /// without a claim), and the model may try again later.
    fn store_failed(&self, call: &Call<'_>, error: &StoreError) -> CallResult {
        let error_text = chain(error);
        let code = match error {
            // A row no step of this application wrote: nothing is decided on it, and a
            // retry would meet the same row; a person must look.
            StoreError::Unsealed(_) => {
                warn!(stage = "ledger", error = %error, "an unsealed store row; nothing was run");
                ErrorCode::Blocked
            }
            _ => {
                warn!(stage = "ledger", error = %error, "store failed; nothing was run");
                ErrorCode::StoreUnavailable
            }
        };
        self.control(call, ModelError::new(code), &error_text)
    }

    /// Sends `result` to the audit sink, with the approval it ran on; returns the sink's
    /// failure, if it failed. (The policies that let the call through are in its audit
    /// already: like the approval, beside the binding and in no digest.)
    async fn audit(
        &self,
        result: &mut CallResult,
        approval: Option<&ApprovalRecord>,
    ) -> Option<AuditLogError> {
        // Not part of any digest: the approval is kept beside the binding, for auditors.
        result.audit.approval = approval.cloned();
        let append = || self.audit_sink.append(&result.model, &result.audit);
        // A sink that panics (building its future or in it) has failed to keep the record,
        // like one that errs.
        let appended = match catch_unwind(AssertUnwindSafe(append)) {
            Ok(appending) => AssertUnwindSafe(appending)
                .catch_unwind()
                .await
                .unwrap_or(Err(AuditLogError::Panicked)),
            Err(_) => Err(AuditLogError::Panicked),
        };
        let error = appended.err();
        if let Some(error) = &error {
            warn!(stage = "audit", error = %error, "audit sink failed");
        }
        error
    }

    /// Puts the dispatch together: the audit sink (unless the write path sent it already),
    /// the last trace event, and what the stages decided.
    async fn finish(&self, mut ended: Ended) -> Dispatch {
        let audit_error = self.audited(&mut ended).await;
        self.finished(ended, audit_error)
    }

    /// The audit sink's answer for `ended`: sent now, unless the write path sent it already.
    async fn audited(&self, ended: &mut Ended) -> Option<AuditLogError> {
        match ended.audited.take() {
            Some(error) => error,
            None => {
                self.audit(&mut ended.result, ended.approval.as_deref())
                    .await
            }
        }
    }

    /// The last trace event, and the dispatch of what the stages decided. Apart from
    /// [`finish`](Self::finish) so that a read's future holds its `Ended` once: an `async fn`
    /// keeps an argument it moves both as it came and as moved.
    fn finished(&self, ended: Ended, audit_error: Option<AuditLogError>) -> Dispatch {
        let model_json = self
            .trace_model_results
            .then(|| serde_json::to_string(&ended.result.model).ok())
            .flatten();
        telemetry::record_outcome(&Span::current(), &ended.result.model, model_json.as_deref());
        let binding = &ended.result.audit.binding;
        info!(
            stage = "done",
            status = ended.result.model.status().as_str(),
            error_code = ended
                .result
                .model
                .error()
                .map(|error| error.code().as_str()),
            state = ended.write_state.map(WriteState::as_str),
            attempts = ended.attempts,
            stop_reason = ended.stop.map(StopReason::as_str),
            request_sha256 = prefix(&binding.request_sha256),
            result_sha256 = prefix(&binding.result_sha256),
            call_binding_sha256 = prefix(&binding.call_binding_sha256),
        );
        Dispatch {
            result: ended.result,
            write_state: ended.write_state,
            pending_approval: ended.pending_approval.map(|pending| *pending),
            attempts: ended.attempts,
            stop: ended.stop,
            audit_error,
            handler_panicked: ended.handler_panicked,
        }
    }

    /// A lease of this dispatcher's own, under a generation never used before.
    fn new_lease(&self) -> Lease {
        Lease {
            owner: self.owner.clone(),
            generation: self.sequence.fetch_add(1, Ordering::Relaxed),
        }
    }

    fn now_ms(&self) -> u64 {
        let nanos = (self.clock)().unix_timestamp_nanos() / 1_000_000;
        u64::try_from(nanos).unwrap_or(0)
    }

    fn in_flight_signals(&self) -> std::sync::MutexGuard<'_, HashMap<String, watch::Sender<bool>>> {
        self.in_flight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// An error and its sources, `: `-joined: the whole story for an audit's detail.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

fn duration_ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

fn sha256_hex(bytes: &[u8]) -> String {
    lower_hex(&Sha256::digest(bytes))
}

/// The first 12 hex digits: enough to correlate traces, too few to matter as a digest.
fn prefix(digest: &str) -> &str {
    digest.get(..12).unwrap_or(digest)
}

/// Where a dispatcher's sequence starts: microseconds since the Unix epoch, by the system
/// clock (0 before it).
fn start_of_sequence() -> u64 {
    let micros = OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000;
    u64::try_from(micros).unwrap_or(0)
}
