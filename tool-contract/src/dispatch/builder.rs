//! Putting a dispatcher together: a handler for every registered tool, checked when built.

use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use time::OffsetDateTime;

use crate::contract::{ReconciledBy, Registry, ToolContract};
use crate::control::{AuditSink, MemoryAuditLog};
use crate::control::{ControlStore, MemoryStore};
use crate::dispatch::dispatcher::{Dispatcher, Parts};
use crate::dispatch::gate::Gate;
#[cfg(doc)]
use crate::dispatch::handler::HandlerContext;
use crate::dispatch::handler::{
    ApprovalPolicy, ArgumentRule, ErasedStatusInput, Handler, KeyRule, ToolEntry, TypedTool,
    erase_status_input,
};
use crate::dispatch::options::{Authorizer, ToolOptions};
use crate::results::{AuditKeys, ReceiptSigner, SecretKey};
use crate::vocabulary::{Approval, ForbiddenKeys, Operation, Reconcile};

/// Why a dispatcher cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A registered tool has no handler.
    #[error("the registered tool {0:?} has no handler")]
    MissingHandler(&'static str),
    /// A handler was given for a tool the registry does not hold.
    #[error("a handler was given for {0:?}, which the registry does not hold")]
    UnregisteredHandler(&'static str),
    /// A write names a reconcile tool the registry does not hold.
    #[error("{write:?} is reconciled by {reconcile:?}, which the registry does not hold")]
    MissingReconcileTool {
        /// The write.
        write: &'static str,
        /// The tool it names.
        reconcile: &'static str,
    },
    /// A write names a reconcile tool whose effect cannot be a status query (only
    /// `read_only` can: [`Effect::can_reconcile`](crate::Effect::can_reconcile)).
    #[error("{write:?} is reconciled by {reconcile:?}, which is not read_only")]
    ReconcileToolWrites {
        /// The write.
        write: &'static str,
        /// The tool it names.
        reconcile: &'static str,
    },
    /// A write names a reconcile tool whose output contract is not the write's: what the
    /// status query finds could not stand as the write's result.
    #[error("{write:?} is reconciled by {reconcile:?}, whose output contract is not the write's")]
    ReconcileToolOutput {
        /// The write.
        write: &'static str,
        /// The tool it names.
        reconcile: &'static str,
    },
    /// A write reconciled by a tool was registered without the input of its status tool
    /// (with `handler` or `handler_with`, not `write_handler`).
    #[error(
        "{0:?} is reconciled by a tool but was registered without its status input: use write_handler"
    )]
    MissingStatusQuery(&'static str),
    /// No audit sink was given: every call must leave an audit, so there is no silent default.
    #[error("no audit sink: give one with `audit_sink` (JsonLinesAuditLog is the embedded one)")]
    MissingAuditSink,
    /// An approval policy was given for a tool whose contract needs no approval: a policy
    /// decides when a person is asked, within `approval = by_caller` or `by_another`, and never
    /// adds one.
    #[error(
        "an approval policy was given for {0:?}, whose contract needs no approval \
         (approval = not_required)"
    )]
    PolicyWithoutApproval(&'static str),
    /// An approval policy was given for a tool the registry does not hold.
    #[error("an approval policy was given for {0:?}, which the registry does not hold")]
    UnregisteredPolicy(&'static str),
    /// An operation key was given for a tool the registry does not hold.
    #[error("an operation key was given for {0:?}, which the registry does not hold")]
    UnregisteredKey(&'static str),
    /// An operation key was given for a tool whose contract names its operations another way:
    /// the key would be a second rule beside the one the contract declares.
    #[error(
        "an operation key was given for {0:?}, whose contract does not say `operation = key_rule`"
    )]
    KeyWithoutKeyRule(&'static str),
    /// A write whose contract says `operation = key_rule` was given no key.
    #[error(
        "{0:?} says `operation = key_rule` but was given no key: add `.operation_key::<Contract>(|input| ...)`"
    )]
    MissingOperationKey(&'static str),
    /// A policy asked for no approvers at all: a write needing approval needs at least one
    /// person (`approval_when` is how a policy waives it).
    #[error("a policy for {0:?} asks for 0 approvers: at least 1 must approve")]
    NoApprovers(&'static str),
    /// A Cedar policy does not validate against the contracts' schema, or the schema cannot
    /// be written for the registry: where, and what.
    #[cfg(feature = "cedar")]
    #[error("{0}")]
    Policy(crate::policy::PolicyError),
}

/// Every problem [`DispatcherBuilder::build`] found, in registry order: one error, so that
/// `build()?` works, that shows them all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildErrors(Vec<BuildError>);

/// The problems, in registry order (never none).
impl std::ops::Deref for BuildErrors {
    type Target = [BuildError];

    fn deref(&self) -> &[BuildError] {
        &self.0
    }
}

impl fmt::Display for BuildErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = self.0.len();
        write!(f, "the dispatcher cannot be built ({count} problem")?;
        f.write_str(if count == 1 { ")" } else { "s)" })?;
        for (index, error) in self.0.iter().enumerate() {
            let separator = if index == 0 { ": " } else { "; " };
            write!(f, "{separator}{error}")?;
        }
        Ok(())
    }
}

impl std::error::Error for BuildErrors {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.first().map(|error| error as _)
    }
}

impl IntoIterator for BuildErrors {
    type Item = BuildError;
    type IntoIter = std::vec::IntoIter<BuildError>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl Dispatcher {
    /// Starts a dispatcher for `registry`'s tools, sealing results with `keys`.
    ///
    /// ```
    /// # use tool_contract::{ToolContract, ToolOutput};
    /// use std::sync::Arc;
    /// use tool_contract::dispatch::{Dispatcher, HandlerContext, Task};
    /// use tool_contract::control::MemoryAuditLog;
    /// use tool_contract::providers::{Api, Correlation, ToolCall};
    /// use tool_contract::{AuditKeys, Principal, RawProvenance, RawResult, SecretKey, Status, ToolFailure};
    ///
    /// /// Echo a word.
    /// #[derive(serde::Deserialize, ToolContract)]
    /// #[tool_contract(output = Echoed, effect = pure, source_label = "echo", producer_revision = "echo-1")]
    /// struct Echo { word: String }
    ///
    /// #[derive(serde::Serialize, ToolOutput)]
    /// struct Echoed { word: String }
    ///
    /// async fn echo(input: Echo, _: HandlerContext) -> Result<RawResult, ToolFailure> {
    ///     let output = serde_json::json!({ "word": input.word });
    ///     Ok(RawResult::new(output.to_string(), RawProvenance::new("echo-1", "2026-08-22T10:00:00Z")))
    /// }
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dispatcher = Dispatcher::builder(tool_contract::registry![Echo], AuditKeys::new(SecretKey::new([7; 32])?))
    ///     .handler(echo)
    ///     .audit_sink(Arc::new(MemoryAuditLog::new(SecretKey::new([2; 32])?)))
    ///     .build()
    ///     .map_err(|errors| format!("{errors:?}"))?;
    /// let call = ToolCall {
    ///     api: Api::OpenAiResponses,
    ///     adapter_revision: tool_contract::providers::openai::ADAPTER.revision.to_owned(),
    ///     response_id: Some("resp_1".into()),
    ///     call_id: "call_1".into(),
    ///     correlation: Correlation::Id,
    ///     name: "echo".into(),
    ///     arguments: br#"{"word":"hi"}"#.to_vec(),
    /// };
    /// let context = dispatcher.context(call); // its operation, as the contract names it
    /// let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build()?;
    /// let dispatch = runtime.block_on(dispatcher.dispatch(&Principal::new("acme", "alice"), &context, &Task::unlimited()));
    /// assert_eq!(dispatch.result.model.status(), Status::Succeeded);
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn builder(registry: Registry, keys: AuditKeys) -> DispatcherBuilder {
        DispatcherBuilder::new(registry, keys)
    }

    /// A builder for examples, tests and first steps, before there is a secret store: the
    /// [development keys](AuditKeys::development), which anyone can compute (so anyone can
    /// forge what they seal), and a [`MemoryAuditLog`] under the same key. Everything else
    /// is as [`builder`](Self::builder)'s, and a later `audit_sink` replaces the log. The
    /// dispatcher it builds logs a warning that it holds development keys.
    ///
    /// In production: `Dispatcher::builder(registry, AuditKeys::new(key))` with a key of your
    /// own, and an audit sink that keeps what it is given.
    ///
    /// ```
    /// use tool_contract::dispatch::Dispatcher;
    /// use tool_contract::{ToolContract, ToolFailure, ToolOutput};
    ///
    /// /// Say hello to someone.
    /// #[derive(serde::Deserialize, ToolContract)]
    /// #[tool_contract(output = Greeting, effect = pure)]
    /// struct Hello { #[tool_contract(max_len = 40)] name: String }
    ///
    /// #[derive(serde::Serialize, ToolOutput)]
    /// struct Greeting { #[tool_output(max_len = 60)] text: String }
    ///
    /// async fn hello(input: Hello) -> Result<Greeting, ToolFailure> {
    ///     Ok(Greeting { text: format!("Hello, {}!", input.name) })
    /// }
    ///
    /// let dispatcher = Dispatcher::for_development(tool_contract::registry![Hello])
    ///     .handler(hello)
    ///     .build()?;
    /// assert!(dispatcher.binder().keys().is_development());
    /// # Ok::<(), tool_contract::dispatch::BuildErrors>(())
    /// ```
    #[must_use]
    pub fn for_development(registry: Registry) -> DispatcherBuilder {
        let log = MemoryAuditLog::new(SecretKey::development());
        DispatcherBuilder::new(registry, AuditKeys::development()).audit_sink(Arc::new(log))
    }
}

/// How long an approval statement runs by default: see
/// [`DispatcherBuilder::statement_lifetime`].
pub const DEFAULT_STATEMENT_LIFETIME: Duration = Duration::from_secs(3600);

/// How many pending approvals one principal may hold by default: see
/// [`DispatcherBuilder::pending_approvals_per_principal`].
pub const PENDING_APPROVALS_PER_PRINCIPAL: usize = 100;

/// Builds a [`Dispatcher`]. See [`Dispatcher::builder`].
pub struct DispatcherBuilder {
    registry: Registry,
    keys: AuditKeys,
    clock: fn() -> OffsetDateTime,
    tools: HashMap<&'static str, ToolEntry>,
    unregistered: Vec<&'static str>,
    gates: Vec<Box<dyn Gate>>,
    authorizer: Option<Box<dyn Authorizer>>,
    store: Option<Arc<dyn ControlStore>>,
    audit_sink: Option<Arc<dyn AuditSink>>,
    retention: Duration,
    lease_grace: Duration,
    trace_model_results: bool,
    approval_policies: HashMap<&'static str, ApprovalPolicy>,
    /// What the builder's steps refused as they were called (a policy or key for a tool the
    /// registry lacks, no approvers), reported by `build` with the rest.
    refused: Vec<BuildError>,
    receipts: Option<ReceiptSigner>,
    statement_lifetime: Duration,
    pending_approvals_per_principal: usize,
    #[cfg(feature = "passkeys")]
    relying_party: Option<crate::results::RelyingParty>,
    key_rules: HashMap<&'static str, KeyRule>,
    #[cfg(feature = "cedar")]
    policies: Option<crate::policy::Policies>,
}

impl DispatcherBuilder {
    pub(crate) fn new(registry: Registry, keys: AuditKeys) -> Self {
        DispatcherBuilder {
            registry,
            keys,
            clock: OffsetDateTime::now_utc,
            tools: HashMap::new(),
            unregistered: Vec::new(),
            gates: Vec::new(),
            authorizer: None,
            store: None,
            audit_sink: None,
            retention: Duration::from_secs(24 * 60 * 60),
            lease_grace: Duration::from_secs(60),
            trace_model_results: false,
            approval_policies: HashMap::new(),
            refused: Vec::new(),
            receipts: None,
            statement_lifetime: DEFAULT_STATEMENT_LIFETIME,
            pending_approvals_per_principal: PENDING_APPROVALS_PER_PRINCIPAL,
            #[cfg(feature = "passkeys")]
            relying_party: None,
            key_rules: HashMap::new(),
            #[cfg(feature = "cedar")]
            policies: None,
        }
    }

    /// The handler of a registered tool (the contract is its input's type), with
    /// [`ToolOptions::DEFAULT`]. See [`Handler`] for the shapes a handler may have.
    #[must_use]
    pub fn handler<C: ToolContract + Send, M: 'static>(self, handler: impl Handler<C, M>) -> Self {
        self.tool(handler, ToolOptions::DEFAULT, None)
    }

    /// The handler of a registered tool, with its own options.
    #[must_use]
    pub fn handler_with<C: ToolContract + Send, M: 'static>(
        self,
        handler: impl Handler<C, M>,
        options: ToolOptions,
    ) -> Self {
        self.tool(handler, options, None)
    }

    /// The handler of the write `W`, and how to ask its status tool (`reconcile =
    /// StatusTool`) about one of its calls: the status tool's input, built from the write's.
    ///
    /// When a write's outcome is unknown, the dispatcher runs the status tool's own handler on
    /// that input, with [`HandlerContext::reconciling`] naming the write and
    /// [`HandlerContext::idempotency_key`] the write's key: its output (checked against the
    /// write's output contract) settles the write as done,
    /// [`FailureKind::NotFound`](crate::FailureKind) as never done, anything else leaves it
    /// unknown.
    #[must_use]
    pub fn write_handler<W, M: 'static>(
        self,
        handler: impl Handler<W, M>,
        status_input: impl Fn(&W) -> W::StatusTool + Send + Sync + 'static,
        options: ToolOptions,
    ) -> Self
    where
        W: ReconciledBy + Send,
        W::StatusTool: ToolContract + Send,
    {
        self.tool(handler, options, Some(erase_status_input(status_input)))
    }

    /// Whether the registry holds `C` itself (not another contract under its name).
    fn holds<C: ToolContract>(&self) -> bool {
        self.registry
            .get(C::NAME)
            .is_some_and(|spec| std::ptr::eq(spec, C::spec()))
    }

    fn tool<C: ToolContract + Send, M: 'static>(
        mut self,
        handler: impl Handler<C, M>,
        options: ToolOptions,
        status_input: Option<Arc<ErasedStatusInput<C>>>,
    ) -> Self {
        if !self.holds::<C>() {
            self.unregistered.push(C::NAME);
            return self;
        }
        let tool = TypedTool {
            handler: Arc::new(handler),
            status_input,
            contract: PhantomData,
        };
        self.tools.insert(
            C::NAME,
            ToolEntry {
                tool: Box::new(tool),
                options,
            },
        );
        self
    }

    /// Asks a person about `C`'s writes only when `needs_person` says so of the typed
    /// arguments: refunds above an amount, say, while smaller ones run at once. Without a
    /// policy every write of a tool whose contract says `approval = by_caller` or `by_another`
    /// asks; a policy
    /// only narrows that, so one for a tool whose contract needs no approval is a
    /// [`BuildError::PolicyWithoutApproval`]. A policy that panics asks a person.
    ///
    /// ```
    /// # use tool_contract::{ToolContract, ToolOutput};
    /// #[derive(serde::Deserialize, ToolContract)]
    /// #[tool_contract(output = Drafted, effect = non_idempotent_write, operation = same_arguments, approval = by_caller,
    ///                 reconcile = manual, source_label = "desk", producer_revision = "desk-1")]
    /// /// Drafts a refund.
    /// struct DraftRefund {
    ///     #[tool_contract(maximum = 1000000)]
    ///     amount_cents: u32,
    /// }
    /// #[derive(serde::Serialize, ToolOutput)]
    /// struct Drafted { #[tool_output(max_len = 16)] draft_ref: String }
    ///
    /// # fn builder(b: tool_contract::dispatch::DispatcherBuilder) -> tool_contract::dispatch::DispatcherBuilder {
    /// // A supervisor sees refunds above 100.00; smaller ones run.
    /// b.approval_when(|refund: &DraftRefund| refund.amount_cents > 10_000)
    /// # }
    /// ```
    #[must_use]
    pub fn approval_when<C: ToolContract>(
        mut self,
        needs_person: impl Fn(&C) -> bool + Send + Sync + 'static,
    ) -> Self {
        if !self.holds::<C>() {
            self.refused.push(BuildError::UnregisteredPolicy(C::NAME));
            return self;
        }
        let rule = argument_rule(needs_person);
        self.approval_policies.entry(C::NAME).or_default().ask_when = Some(rule);
        self
    }

    /// Asks `approvers` different people (the four-eyes rule, for 2) about each write of `C`
    /// whose typed arguments `applies` holds of: refunds above an amount, say. The write
    /// runs only when that many distinct approvers approved the same preview; a rejection by
    /// any one refuses it; one person approving twice counts once. Approvals may be given on
    /// any replica sharing the store. Writes it does not apply to need what they otherwise
    /// would (one person, or none where [`approval_when`](Self::approval_when) waives it);
    /// where several rules apply, the largest count holds. A rule that panics applies.
    ///
    /// As for `approval_when`, the contract must say who approves (`by_caller`, `by_another`)
    /// ([`BuildError::PolicyWithoutApproval`]); a count of 0 is [`BuildError::NoApprovers`].
    ///
    /// ```
    /// # use tool_contract::{ToolContract, ToolOutput};
    /// #[derive(serde::Deserialize, ToolContract)]
    /// #[tool_contract(output = Drafted, effect = non_idempotent_write, operation = same_arguments, approval = by_caller,
    ///                 reconcile = manual, source_label = "desk", producer_revision = "desk-1")]
    /// /// Drafts a refund.
    /// struct DraftRefund {
    ///     #[tool_contract(maximum = 1000000)]
    ///     amount_cents: u32,
    /// }
    /// #[derive(serde::Serialize, ToolOutput)]
    /// struct Drafted { #[tool_output(max_len = 16)] draft_ref: String }
    ///
    /// # fn builder(b: tool_contract::dispatch::DispatcherBuilder) -> tool_contract::dispatch::DispatcherBuilder {
    /// // Two supervisors for refunds above 500.00; one for the rest.
    /// b.approvers_when(2, |refund: &DraftRefund| refund.amount_cents > 50_000)
    /// # }
    /// ```
    #[must_use]
    pub fn approvers_when<C: ToolContract>(
        mut self,
        approvers: u32,
        applies: impl Fn(&C) -> bool + Send + Sync + 'static,
    ) -> Self {
        if !self.holds::<C>() {
            self.refused.push(BuildError::UnregisteredPolicy(C::NAME));
            return self;
        }
        if approvers == 0 {
            self.refused.push(BuildError::NoApprovers(C::NAME));
        }
        let rule = argument_rule(applies);
        let policy = self.approval_policies.entry(C::NAME).or_default();
        policy.approvers.push((approvers, rule));
        self
    }

    /// Counts only approvals signed by the approvers' own passkeys for each write of `C` whose
    /// typed arguments `applies` holds of (refunds above an amount, say): an approval the
    /// application or an MCP client only asserts is refused
    /// ([`ApprovalError::SignatureRequired`](crate::control::ApprovalError::SignatureRequired)),
    /// so the rule is met by people with their authenticators, each signing the approval
    /// statement (`Dispatcher::decide_signed`, with the `passkeys` feature). A rule that
    /// panics applies. As for `approval_when`, the contract must say who approves.
    ///
    /// ```
    /// # use tool_contract::{ToolContract, ToolOutput};
    /// #[derive(serde::Deserialize, ToolContract)]
    /// #[tool_contract(output = Drafted, effect = non_idempotent_write, operation = same_arguments, approval = by_caller,
    ///                 reconcile = manual, source_label = "desk", producer_revision = "desk-1")]
    /// /// Drafts a refund.
    /// struct DraftRefund {
    ///     #[tool_contract(maximum = 1000000)]
    ///     amount_cents: u32,
    /// }
    /// #[derive(serde::Serialize, ToolOutput)]
    /// struct Drafted { #[tool_output(max_len = 16)] draft_ref: String }
    ///
    /// # fn builder(b: tool_contract::dispatch::DispatcherBuilder) -> tool_contract::dispatch::DispatcherBuilder {
    /// // Two supervisors, each with a passkey, for refunds above 500.00.
    /// b.approvers_when(2, |refund: &DraftRefund| refund.amount_cents > 50_000)
    ///  .signed_approvals_when(|refund: &DraftRefund| refund.amount_cents > 50_000)
    /// # }
    /// ```
    #[must_use]
    pub fn signed_approvals_when<C: ToolContract>(
        mut self,
        applies: impl Fn(&C) -> bool + Send + Sync + 'static,
    ) -> Self {
        if !self.holds::<C>() {
            self.refused.push(BuildError::UnregisteredPolicy(C::NAME));
            return self;
        }
        let rule = argument_rule(applies);
        self.approval_policies
            .entry(C::NAME)
            .or_default()
            .signed
            .push(rule);
        self
    }

    /// Asks `approvers` different people about every write of `C`:
    /// [`approvers_when`](Self::approvers_when) with a rule that always applies.
    #[must_use]
    pub fn approvers<C: ToolContract>(self, approvers: u32) -> Self {
        self.approvers_when(approvers, |_: &C| true)
    }

    /// Signs a receipt each time a grant is redeemed: proof, in the audit and the audit log
    /// (never in the model result), that these people approved exactly this action, which
    /// anyone can check offline with the signer's [published key](ReceiptSigner::published_key)
    /// ([`KeySet::verify`](crate::results::KeySet::verify)). A redemption at a time the key does
    /// not sign runs nothing: it reads `TIMEOUT_BEFORE_EXECUTE` and the grant stays unspent.
    #[must_use]
    pub fn approval_receipts(mut self, signer: ReceiptSigner) -> Self {
        self.receipts = Some(signer);
        self
    }

    /// The longest an approval statement may run: an approver's decision counts at most
    /// this long after the statement was made. [`Dispatcher::approval_statement`] makes no
    /// longer one, and [`Dispatcher::decide_signed`] refuses a statement whose `expires_at`
    /// lies further ahead (`OtherStatement("expires_at")`), whatever its approver signed:
    /// the expiry is the service's to set, not the approver's client's. Default: one hour
    /// ([`DEFAULT_STATEMENT_LIFETIME`]).
    #[cfg_attr(not(feature = "passkeys"), allow(rustdoc::broken_intra_doc_links))]
    #[must_use]
    pub fn statement_lifetime(mut self, lifetime: Duration) -> Self {
        self.statement_lifetime = lifetime;
        self
    }

    /// How many pending approvals one principal may hold at once (each a write of theirs
    /// waiting for a person, not yet expired). A write that would ask for one more is
    /// answered `CALLER_LIMIT` (retry after a wait) and asks nobody; the same write asked
    /// again, or a write whose approval is pending already, is answered as before. The stores
    /// decide it in the same step that writes the pending approval. Default
    /// [`PENDING_APPROVALS_PER_PRINCIPAL`] (100).
    #[must_use]
    pub fn pending_approvals_per_principal(mut self, limit: usize) -> Self {
        self.pending_approvals_per_principal = limit;
        self
    }

    /// Checks approvers' passkeys for `party`: enrollment
    /// ([`Dispatcher::begin_enrollment`]) and signed decisions
    /// ([`Dispatcher::decide_signed`]) verify origin and RP ID against it.
    #[cfg(feature = "passkeys")]
    #[cfg_attr(docsrs, doc(cfg(feature = "passkeys")))]
    #[must_use]
    pub fn relying_party(mut self, party: crate::results::RelyingParty) -> Self {
        self.relying_party = Some(party);
        self
    }

    /// The operation key of `C`, a write whose contract says `operation = key_rule`: how
    /// [`Dispatcher::context`] names the logical operation of one of its calls from the typed
    /// arguments, as the operation id and the idempotency key the ledger and the downstream
    /// service see (scoped to the principal, so two tenants never share one).
    ///
    /// The key names the *intent*, not the call: every retry of one action must give the same
    /// key, and a later, different action a new one. Put in it what makes a later action
    /// different. Closing issue 42 is `close:42`; but an issue can be reopened and closed
    /// again, and under `close:42` the second close would be taken for a retry of the first
    /// and replayed (`local_replay`) without running. Key it by what the action changes from
    /// (`close:42:rev-7`, the issue's revision) or by the request the user made
    /// (`close:42:req-1831`). One key is one action with its exact arguments: the same key
    /// with other arguments is `IDEMPOTENCY_CONFLICT`, never a second run.
    ///
    /// A key for a contract that names its operations another way is
    /// [`BuildError::KeyWithoutKeyRule`]; a `key_rule` contract without one is
    /// [`BuildError::MissingOperationKey`]. A call for which the rule gives an empty (or
    /// blank) key runs nothing (`TOOL_ERROR`, the audit says why): it would make every call
    /// of the tool one operation. The key is kept for good, unless the contract says `within`.
    ///
    /// ```
    /// # use tool_contract::{ToolContract, ToolOutput};
    /// #[derive(serde::Deserialize, ToolContract)]
    /// #[tool_contract(output = Closed, effect = idempotent_write, approval = not_required,
    ///                 operation = key_rule)]
    /// /// Close an issue at the revision the user saw.
    /// struct CloseIssue {
    ///     #[tool_contract(maximum = 100000)]
    ///     number: u32,
    ///     #[tool_contract(maximum = 1000000)]
    ///     revision: u32,
    /// }
    /// #[derive(serde::Serialize, ToolOutput)]
    /// struct Closed { #[tool_output(bound = number)] number: u32 }
    ///
    /// # fn builder(b: tool_contract::dispatch::DispatcherBuilder) -> tool_contract::dispatch::DispatcherBuilder {
    /// b.operation_key(|close: &CloseIssue| format!("close:{}:rev-{}", close.number, close.revision))
    /// # }
    /// ```
    #[must_use]
    pub fn operation_key<C: ToolContract>(
        mut self,
        key: impl Fn(&C) -> String + Send + Sync + 'static,
    ) -> Self {
        if !self.holds::<C>() {
            self.refused.push(BuildError::UnregisteredKey(C::NAME));
            return self;
        }
        if C::spec().operation() != Some(Operation::KeyRule) {
            self.refused.push(BuildError::KeyWithoutKeyRule(C::NAME));
            return self;
        }
        let rule: KeyRule = Arc::new(move |arguments: &[u8], forbidden: &ForbiddenKeys| {
            C::parse_arguments_with(arguments, forbidden)
                .ok()
                .map(|input| key(&input))
        });
        self.key_rules.insert(C::NAME, rule);
        self
    }

    /// Adds a gate; gates run in the order added.
    #[must_use]
    pub fn gate(mut self, gate: impl Gate + 'static) -> Self {
        self.gates.push(Box::new(gate));
        self
    }

    /// Who may call what. Without one, every principal may call every registered tool.
    #[must_use]
    pub fn authorizer(mut self, authorizer: impl Authorizer + 'static) -> Self {
        self.authorizer = Some(Box::new(authorizer));
        self
    }

    /// Cedar policies every call is put to, after the authorizer and before approval; see
    /// [`policy`](crate::policy). Given policies, a call runs only when a `permit` matches
    /// and no `forbid` does, and the authorizer allows it too. They are validated against the
    /// schema the registry's contracts make when the dispatcher is built
    /// ([`BuildError::Policy`]).
    #[cfg(feature = "cedar")]
    #[must_use]
    pub fn policies(mut self, policies: crate::policy::Policies) -> Self {
        self.policies = Some(policies);
        self
    }

    /// The control-plane store: the idempotency ledger and the approvals. Without one, a
    /// [`MemoryStore`] (one process, lost on restart); replicas that share one
    /// (`SqliteStore` on one host, `PostgresStore` across hosts) share every write's record
    /// and every approval.
    #[must_use]
    pub fn store(mut self, store: Arc<dyn ControlStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// How long past a write's own time limits (every attempt's timeout and every retry's
    /// wait) its lease holds (default 60 s): after that, a replica that finds the write
    /// still marked running takes it as `unknown` (its owner died) and reconciles it.
    #[must_use]
    pub fn lease_grace(mut self, grace: Duration) -> Self {
        self.lease_grace = grace;
        self
    }

    /// Records each successful call's model result (what the model reads) on its
    /// `execute_tool` span as `gen_ai.tool.call.result`, which the OpenTelemetry GenAI
    /// conventions make opt-in. Off by default; arguments, outputs before projection and the
    /// audit half are never recorded.
    #[must_use]
    pub fn trace_model_results(mut self, record: bool) -> Self {
        self.trace_model_results = record;
        self
    }

    /// Where audits go (required): [`JsonLinesAuditLog`](crate::control::JsonLinesAuditLog)
    /// is the embedded, hash-chained file; [`MemoryAuditLog`] keeps the same chain in memory.
    /// The audit is also what catches a store's writer who puts a spent approval back: every
    /// audit marks the execution that spent a grant, with or without
    /// [`approval_receipts`](Self::approval_receipts)
    /// ([`HistoryCalls::redeemed_more_than_once`](crate::control::HistoryCalls::redeemed_more_than_once)).
    #[must_use]
    pub fn audit_sink(mut self, sink: Arc<dyn AuditSink>) -> Self {
        self.audit_sink = Some(sink);
        self
    }

    /// How long a finished `per_call` or `same_arguments` write's record is kept and
    /// replayed (default 24 h), and how long pending approvals and rejections are kept. An
    /// operation named by its fields or key is kept as its contract says (for good, or its
    /// `within`), whatever this is.
    #[must_use]
    pub fn retention(mut self, retention: Duration) -> Self {
        self.retention = retention;
        self
    }

    /// Another wall clock, for approval expiry, ledger times and `observed_at` of results the
    /// dispatcher makes (tests and replays want one they control).
    #[must_use]
    pub fn clock(mut self, clock: fn() -> OffsetDateTime) -> Self {
        self.clock = clock;
        self
    }

    /// The dispatcher, once every registered tool has a handler, every reconciled write its
    /// status query and read-only reconcile tool, and an audit sink was given.
    ///
    /// # Errors
    ///
    /// [`BuildErrors`]: every [`BuildError`] found, in registry order.
    pub fn build(self) -> Result<Dispatcher, BuildErrors> {
        let mut errors: Vec<BuildError> = self
            .unregistered
            .iter()
            .map(|name| BuildError::UnregisteredHandler(name))
            .collect();
        for spec in self.registry.tools() {
            if spec.operation() == Some(Operation::KeyRule)
                && !self.key_rules.contains_key(spec.name())
            {
                errors.push(BuildError::MissingOperationKey(spec.name()));
            }
            let Some(entry) = self.tools.get(spec.name()) else {
                errors.push(BuildError::MissingHandler(spec.name()));
                continue;
            };
            let Some(Reconcile::Tool(reconcile)) = spec.reconcile() else {
                continue;
            };
            match self.registry.get(reconcile) {
                None => errors.push(BuildError::MissingReconcileTool {
                    write: spec.name(),
                    reconcile,
                }),
                Some(status) if !status.effect().can_reconcile() => {
                    errors.push(BuildError::ReconcileToolWrites {
                        write: spec.name(),
                        reconcile,
                    });
                }
                Some(status) if status.output_schema() != spec.output_schema() => {
                    errors.push(BuildError::ReconcileToolOutput {
                        write: spec.name(),
                        reconcile,
                    });
                }
                Some(_) => {}
            }
            if !entry.tool.has_status_query() {
                errors.push(BuildError::MissingStatusQuery(spec.name()));
            }
        }
        if self.audit_sink.is_none() {
            errors.push(BuildError::MissingAuditSink);
        }
        #[cfg(feature = "cedar")]
        let policy_check = match self.policies.map(|policies| policies.check(&self.registry)) {
            Some(Ok(check)) => Some(check),
            Some(Err(refused)) => {
                errors.extend(refused.into_iter().map(BuildError::Policy));
                None
            }
            None => None,
        };
        errors.extend(self.refused);
        for name in self.approval_policies.keys() {
            let spec = self.registry.get(name);
            if spec.is_some_and(|spec| !spec.approval().is_some_and(Approval::is_required)) {
                errors.push(BuildError::PolicyWithoutApproval(name));
            }
        }
        let (Some(audit_sink), true) = (self.audit_sink, errors.is_empty()) else {
            return Err(BuildErrors(errors));
        };
        if self.keys.is_development() {
            tracing::warn!(
                "this dispatcher holds the development keys, which anyone can compute: \
                 what it seals can be forged; give it keys of your own in production"
            );
        }
        Ok(Dispatcher::from_parts(Parts {
            registry: self.registry,
            keys: self.keys,
            clock: self.clock,
            tools: self.tools,
            gates: self.gates,
            authorizer: self.authorizer,
            #[cfg(feature = "cedar")]
            policy_check,
            store: self.store.unwrap_or_else(|| Arc::new(MemoryStore::new())),
            audit_sink,
            retention: self.retention,
            lease_grace: self.lease_grace,
            trace_model_results: self.trace_model_results,
            approval_policies: self.approval_policies,
            receipts: self.receipts,
            statement_lifetime: self.statement_lifetime,
            pending_approvals_per_principal: self.pending_approvals_per_principal,
            #[cfg(feature = "passkeys")]
            relying_party: self.relying_party,
            key_rules: self.key_rules,
        }))
    }
}

/// `rule` over the typed input of `C`, erased to its arguments' bytes. Arguments that do not
/// read as `C` (validated before, so never) make it hold: a rule fails toward asking.
fn argument_rule<C: ToolContract>(
    rule: impl Fn(&C) -> bool + Send + Sync + 'static,
) -> ArgumentRule {
    Arc::new(move |arguments: &[u8], forbidden: &ForbiddenKeys| {
        C::parse_arguments_with(arguments, forbidden).map_or(true, |input| rule(&input))
    })
}
