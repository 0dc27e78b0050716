//! What surrounds a write: the ledger's word on its key, approval, the claim, the record of
//! its end, and reconciliation of an unknown outcome.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures_util::FutureExt;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tracing::{Instrument, debug, info, warn};

use super::stale::stored_call;
use super::{Call, Dispatcher, Ended, PURGE_EVERY, Valid, duration_ms, prefix, sha256_hex};
use crate::binder::{CallResult, FailureKind, RawProvenance, RawResult, Seal, ToolFailure};
use crate::contract::ToolSpec;
use crate::control::IfAbsent;
use crate::control::StoreError;
use crate::control::{Advance, Advanced, Claim, Claimed, Lease, Record, Release, RowSeal};
use crate::control::{
    ApprovalAsk, ApprovalCheck, ApprovalGrant, ApprovalLook, PendingApproval, Preview,
    RejectionReason, unix_ms,
};
use crate::control::{WriteEvent, WriteState};
use crate::dispatch::handler::{ArgumentRule, BoxFuture, HandlerContext};
use crate::dispatch::operation::key_is_empty;
use crate::dispatch::options::ToolOptions;
use crate::dispatch::telemetry::{self, Guardrail, Verdict};
use crate::json::encoding::infallible;
use crate::results::digest::digests_equal;
use crate::results::{
    ApprovalFact, ApprovalRecord, Delivery, EarlierRun, ErrorCode, ModelError, ModelResult,
    Provenance, ReceiptFacts, ReceiptRevisions, Status, Trust,
};
use crate::vocabulary::{Approval, CallContext, OperationWindow, Principal, Reconcile};

use WriteEvent::{Approve, Reject, RequestApproval};

/// The approval states, as the diagram reaches them.
const PENDING_APPROVAL: WriteState = WriteState::along(&[RequestApproval]);
const APPROVED: WriteState = WriteState::along(&[RequestApproval, Approve]);
const REJECTED: WriteState = WriteState::along(&[RequestApproval, Reject]);

/// A write's ledger identity.
pub(super) struct WriteKey {
    pub(super) ledger_key: String,
    pub(super) downstream_key: String,
    pub(super) request_sha256: String,
    /// The lease this dispatch claims the key under (its own generation).
    pub(super) lease: Lease,
    /// The seal of the write's approval row.
    pub(super) seal: RowSeal,
    /// Until when the claim holds the record (ms since the epoch), once claimed.
    pub(super) lease_until_ms: AtomicU64,
    /// How long the record stays its operation, by the contract's rule.
    pub(super) keeping: Keeping,
    /// The operation's earlier run, when the look found it over (its window ended): what a
    /// person approving this repeat is shown.
    pub(super) earlier_run: Option<EarlierRun>,
}

/// How long the ledger keeps a write's record as its operation, and whether past that.
#[derive(Debug, Clone, Copy)]
pub(super) struct Keeping {
    /// The record's retention after its last change: the ledger's, the contract's `within`,
    /// or `u64::MAX` (for good).
    pub(super) retention_ms: u64,
    /// Whether it outlives that until an operator purges it ([`Record::kept`]).
    pub(super) kept: bool,
}

impl WriteKey {
    /// The release of this dispatch's claim; `return_grant` when no attempt was made.
    pub(super) fn release(&self, return_grant: bool) -> Release {
        Release {
            key: self.ledger_key.clone(),
            lease: self.lease.clone(),
            return_grant,
            seal: self.seal.clone(),
        }
    }
}

impl Dispatcher {
    /// A write: the ledger's word on the key first (replay, conflict, in flight, unknown), then
    /// approval, authorization again, the atomic claim, and the execution.
    pub(super) async fn write(&self, call: &Call<'_>, valid: &Valid<'_>) -> Ended {
        if self.writes.fetch_add(1, Ordering::Relaxed) % PURGE_EVERY == PURGE_EVERY - 1 {
            // Housekeeping only: a failure here changes no answer.
            let _ = self.purge_expired().await;
        }
        if key_is_empty(valid.spec, &call.context.operation_id) {
            warn!(
                stage = "ledger",
                "the operation key rule gave an empty key; nothing ran"
            );
            let error = ModelError::new(ErrorCode::ToolError);
            let detail = "the application's operation key rule (DispatcherBuilder::operation_key) \
                          gave an empty key for these arguments: every call would be one \
                          operation, so none runs";
            return Ended::new(self.control(call, error, detail));
        }
        let mut key = self.write_key(call, valid.spec);
        debug!(
            stage = "ledger",
            request_sha256 = prefix(&key.request_sha256),
            key_sha256 = prefix(&sha256_hex(key.ledger_key.as_bytes()))
        );
        let approvals_required =
            self.approvals_required(valid.spec, &call.context.call.arguments, &valid.arguments);
        // The approval stage as the look asked and read it, when the look found no record:
        // the stage then needs no step of its own (`Some` answer), or is asked the same.
        let mut looked_stage = None;
        // A write nobody approves claims an empty key in the look's own step (one round trip
        // on PostgreSQL); one that needs approval only looks (with its approval stage, one
        // round trip too), since nothing may be claimed before a person approves.
        let looked = if approvals_required == 0 {
            match self
                .store
                .claim_if_absent(&self.claim(call, valid, &key))
                .await
            {
                Ok(IfAbsent::Claimed(claimed)) => {
                    let ended = self
                        .ran_as_claimed(call, valid, &key, None, None, Ok(claimed))
                        .await;
                    return ended.unwrap_or_else(|| self.grant_none_named(call));
                }
                Ok(IfAbsent::Present(record)) => Ok(Some(record)),
                Err(error) => Err(error),
            }
        } else {
            let ask = self.approval_ask(call, valid, &key, approvals_required);
            // A grant the store wrote itself needs no read: the claim that redeems it checks
            // its row, and reads the record when the key is taken.
            let look = match self.store.approval_hint(&ask) {
                Some(grant) => Ok(ApprovalLook {
                    record: None,
                    check: Some(ApprovalCheck::Proceed(grant)),
                }),
                None => self.store.look_for_approval(&ask).await,
            };
            look.map(|look| {
                if look.record.is_none() {
                    looked_stage = Some((ask, look.check));
                }
                look.record
            })
        };
        match looked {
            Err(error) => return Ended::new(self.store_failed(call, &error)),
            Ok(Some(record)) => {
                // The fencing token grows with every claim of the operation: this one's is
                // above every claim the record has seen.
                self.sequence
                    .fetch_max(record.lease.generation.saturating_add(1), Ordering::Relaxed);
                key.lease = self.new_lease();
                if !expired(&record, self.now_ms()) {
                    if let Some(ended) = self.settled(call, valid, &key, record).await {
                        return ended;
                    }
                } else if record.kept {
                    // Its window ended: this is a new operation, never silently a first one.
                    let earlier = self.earlier_run(&key, &record);
                    info!(
                        stage = "ledger",
                        window_ended_at = %earlier.window_ended_at,
                        "the operation's window ended; a repeat is a new operation"
                    );
                    key.earlier_run = Some(earlier);
                }
            }
            Ok(None) => {}
        }
        if approvals_required == 0 {
            let ended = self
                .claim_and_run(call, valid, &key, None, None, None)
                .await;
            return ended.unwrap_or_else(|| self.grant_none_named(call));
        }
        // The grant is redeemed by the claim, in the store's same step: spent only by an
        // execution, once, whichever replica claims. A claim that runs nothing (a budget
        // stop) releases the key and gives the grant back.
        for _ in 0..2 {
            let looked = looked_stage.take();
            let (approval, grant) = match self
                .approval(call, valid, &key, approvals_required, looked)
                .await
            {
                Ok(approved) => approved,
                Err(ended) => return *ended,
            };
            // Permission may have changed while the write waited for a person.
            if let Err(result) = self.authorize(call, valid) {
                return Ended::new(*result)
                    .in_state(Some(APPROVED))
                    .approved(Some(approval));
            }
            let redeem = Some(&grant);
            let ran = match &grant.edited_arguments {
                None => {
                    self.claim_and_run(call, valid, &key, Some(approval), redeem, None)
                        .await
                }
                Some(edited)
                    if call.credentials.is_some_and(|credentials| {
                        !(credentials.reach)(valid.spec, edited.as_bytes())
                    }) =>
                {
                    // A person may change the call, not what its caller may ask for: the edit
                    // does not run with credentials that could not have asked it.
                    let refused = ModelError::new(ErrorCode::Blocked);
                    let detail =
                        "the approved edit asks for more than the caller's credentials allow";
                    return Ended::new(self.control(call, refused, detail))
                        .in_state(Some(APPROVED))
                        .approved(Some(approval));
                }
                Some(edited) => {
                    let mut context = call.context.clone();
                    context.call.arguments = edited.as_bytes().to_vec();
                    self.claim_and_run_edited(call, valid, &key, approval, redeem, &context)
                        .await
                }
            };
            if let Some(ended) = ran {
                return ended;
            }
            // The grant was spent or replaced between the two steps: ask again.
        }
        let error = ModelError::new(ErrorCode::ApprovalInvalid);
        Ended::new(self.control(call, error, "the approval was spent by another execution"))
    }

    /// Claims the write's key (redeeming `redeem`, if given) and runs it on a fresh claim:
    /// as `call`, or as `fresh_as` (the edited call a person approved) when given; an
    /// existing record answers `call`. `None` when the grant was spent and nothing was
    /// claimed. A redemption's receipt, when the dispatcher signs them, is signed before the
    /// claim (a key that does not sign now runs nothing) and kept on the audit only if this
    /// claim redeemed the grant.
    async fn claim_and_run(
        &self,
        call: &Call<'_>,
        valid: &Valid<'_>,
        key: &WriteKey,
        mut approval: Option<ApprovalRecord>,
        redeem: Option<&ApprovalGrant>,
        fresh_as: Option<(&Call<'_>, &Valid<'_>)>,
    ) -> Option<Ended> {
        let mut claim = self.claim(call, valid, key);
        if let Some(grant) = redeem {
            claim.redeem = Some(grant.approval_id.clone());
            if let Some(signer) = &self.receipts {
                let redeemed_at = (self.clock)();
                claim.now_ms = unix_ms(redeemed_at);
                match signer.sign(&self.receipt_facts(grant, valid, redeemed_at)) {
                    Ok(receipt) => {
                        if let Some(record) = approval.as_mut() {
                            record.receipt = Some(receipt);
                        }
                    }
                    Err(error) => {
                        warn!(stage = "approval", error = %error, "no receipt; nothing was run");
                        let refused = ModelError::new(ErrorCode::TimeoutBeforeExecute);
                        let detail = format!("no approval receipt could be signed: {error}");
                        let result = self.control(call, refused, &detail);
                        return Some(
                            Ended::new(result)
                                .in_state(Some(APPROVED))
                                .approved(approval),
                        );
                    }
                }
            }
        }
        let claimed = match redeem {
            Some(grant) => self.store.claim_redeeming(&claim, grant).await,
            None => self.store.claim(&claim).await,
        };
        if let Some(record) = approval.as_mut() {
            let redeemed = matches!(claimed, Ok(Claimed::Fresh));
            record.redeemed = Some(redeemed);
            if !redeemed {
                // This claim redeemed nothing: there is nothing to give a receipt for.
                record.receipt = None;
            }
        }
        self.ran_as_claimed(call, valid, key, approval, fresh_as, claimed)
            .await
    }

    /// What a claim's answer leads to: the execution on a fresh claim, else the existing
    /// record's answer. `None` when the grant was spent and nothing was claimed.
    async fn ran_as_claimed(
        &self,
        call: &Call<'_>,
        valid: &Valid<'_>,
        key: &WriteKey,
        approval: Option<ApprovalRecord>,
        fresh_as: Option<(&Call<'_>, &Valid<'_>)>,
        claimed: Result<Claimed, StoreError>,
    ) -> Option<Ended> {
        Some(match claimed {
            Err(error) => {
                let approved = approval.as_ref().map(|_| APPROVED);
                Ended::new(self.store_failed(call, &error))
                    .in_state(approved)
                    .approved(approval)
            }
            Ok(Claimed::GrantSpent) => return None,
            Ok(Claimed::Fresh) => {
                debug!(stage = "ledger", state = "executing", "claimed");
                let (call, valid) = fresh_as.unwrap_or((call, valid));
                self.execute(call, valid, Some(key), approval).await
            }
            Ok(Claimed::Replay(record) | Claimed::Conflict(record) | Claimed::InFlight(record)) => {
                self.answer_existing(call, valid, key, record)
                    .approved(approval)
            }
            Ok(Claimed::Unknown(record)) => {
                self.reconcile_unknown(call, valid, key, record, approval)
                    .await
            }
        })
    }

    /// A write no person approves whose claim asked for a grant: the store answered out of
    /// turn.
    fn grant_none_named(&self, call: &Call<'_>) -> Ended {
        let error = ModelError::new(ErrorCode::ToolError);
        Ended::new(self.control(call, error, "the store asked for a grant none named"))
    }

    /// The model's `call`, approved with edits: the edited call (`context`), checked again
    /// against the contract and the authorizer, runs under the model's call's key; the model
    /// is told of it on its own call.
    async fn claim_and_run_edited(
        &self,
        call: &Call<'_>,
        valid: &Valid<'_>,
        key: &WriteKey,
        approval: ApprovalRecord,
        redeem: Option<&ApprovalGrant>,
        context: &CallContext,
    ) -> Option<Ended> {
        let edited = Call {
            edited_from: Some(call.context),
            ..self.call(call.principal, context, call.task)
        };
        // Everything a call must pass, asked again of the edited call: its contract, the
        // gates, the authorizer, and as many approvers as its own arguments call for.
        let checked = self.lookup_and_validate(&edited).and_then(|mut edited_valid| {
            self.gates(&edited, &edited_valid)?;
            edited_valid.policies = self.authorize(&edited, &edited_valid)?;
            let needed = self.approvals_required(
                edited_valid.spec,
                &context.call.arguments,
                &edited_valid.arguments,
            );
            let given = redeem.map_or(0, |grant| grant.approvals.len());
            let unsigned = redeem
                .is_some_and(|grant| grant.approvals.iter().any(|given| !given.basis.is_signed()));
            if unsigned
                && self.signatures_required(
                    edited_valid.spec,
                    &context.call.arguments,
                    &edited_valid.arguments,
                )
            {
                let error = ModelError::new(ErrorCode::ApprovalInvalid);
                let detail = "the edited arguments need approvals signed by passkeys";
                return Err(Box::new(self.control(&edited, error, detail)));
            }
            if usize::try_from(needed).unwrap_or(usize::MAX) > given {
                let error = ModelError::new(ErrorCode::ApprovalInvalid);
                let detail = format!(
                    "the edited arguments need {needed} different approvers; the grant has {given}"
                );
                return Err(Box::new(self.control(&edited, error, &detail)));
            }
            Ok(edited_valid)
        });
        let edited_valid = match checked {
            Ok(edited_valid) => edited_valid,
            Err(refused) => {
                // The contract or the permissions changed since the approval.
                let told = self.told_of_edit(call, &refused);
                return Some(
                    Ended::new(told)
                        .in_state(Some(APPROVED))
                        .approved(Some(approval)),
                );
            }
        };
        self.claim_and_run(
            call,
            valid,
            key,
            Some(approval),
            redeem,
            Some((&edited, &edited_valid)),
        )
        .await
    }

    /// What the model is told on its own `call` of the edited call's `result`: the action
    /// happened as changed (`APPROVED_WITH_CHANGES`), or the edited call's error, bound to
    /// the call the model made.
    pub(super) fn told_of_edit(&self, call: &Call<'_>, result: &CallResult) -> CallResult {
        let binding = &result.audit.binding;
        let detail = format!(
            "a person approved this call with changed arguments; the changed request \
             (request_sha256 {}) ran, its result is result_sha256 {}",
            prefix(&binding.request_sha256),
            prefix(&binding.result_sha256),
        );
        let error = match result.model.error() {
            Some(error) => error.clone(),
            None => ModelError::new(ErrorCode::ApprovedWithChanges),
        };
        self.control(call, error, &detail)
    }

    /// A reconciliation asked for outright ([`Dispatcher::reconcile`]): the ledger's word on
    /// the write's key, never a new execution.
    pub(super) async fn reconcile_call(&self, call: &Call<'_>, valid: &Valid<'_>) -> Ended {
        if !valid.spec.effect().is_write() {
            let error = ModelError::new(ErrorCode::ToolError);
            return Ended::new(self.control(call, error, "reconcile asked of a read"));
        }
        let key = self.write_key(call, valid.spec);
        let settled = match self.store.get(&key.ledger_key).await {
            Ok(Some(record)) => self.settled(call, valid, &key, record).await,
            Ok(None) => None,
            Err(error) => Some(Ended::new(self.store_failed(call, &error))),
        };
        settled.unwrap_or_else(|| {
            let error = ModelError::new(ErrorCode::NotFound);
            Ended::new(self.control(call, error, "no operation under this key"))
        })
    }

    /// What an existing record settles before approval is asked: `None` when the write may go
    /// on to approval and claim.
    async fn settled(
        &self,
        call: &Call<'_>,
        valid: &Valid<'_>,
        key: &WriteKey,
        record: Record,
    ) -> Option<Ended> {
        if self.lease_lapsed(&record) {
            // A lapsed lease: the claim turns it to unknown, atomically, before anyone is
            // asked to approve a write that may already have happened.
            return match self.store.claim(&self.claim(call, valid, key)).await {
                Ok(Claimed::Unknown(record)) => {
                    Some(self.reconcile_unknown(call, valid, key, record, None).await)
                }
                Ok(Claimed::Fresh) => {
                    // Purged between the two steps: give the key back and start over.
                    let _ = self.store.release(&key.release(true)).await;
                    None
                }
                Ok(Claimed::GrantSpent) => None,
                Ok(
                    Claimed::Replay(record) | Claimed::Conflict(record) | Claimed::InFlight(record),
                ) => Some(self.answer_existing(call, valid, key, record)),
                Err(error) => Some(Ended::new(self.store_failed(call, &error))),
            };
        }
        let same_request =
            record.request_sha256 == key.request_sha256 && record.tool == valid.spec.name();
        if same_request && record.state == WriteState::Unknown {
            return Some(self.reconcile_unknown(call, valid, key, record, None).await);
        }
        Some(self.answer_existing(call, valid, key, record))
    }

    /// The answer a record gives without running anything: replay, conflict, in flight.
    fn answer_existing(
        &self,
        call: &Call<'_>,
        valid: &Valid<'_>,
        key: &WriteKey,
        record: Record,
    ) -> Ended {
        let result =
            if record.request_sha256 != key.request_sha256 || record.tool != valid.spec.name() {
                debug!(stage = "ledger", error_code = "IDEMPOTENCY_CONFLICT");
                let error = ModelError::new(ErrorCode::IdempotencyConflict);
                self.control(call, error, "the key was used for another request")
            } else if record.state.is_in_flight() {
                debug!(stage = "ledger", error_code = "OPERATION_IN_PROGRESS");
                let error = ModelError::new(ErrorCode::OperationInProgress);
                self.control(call, error, "another execution holds the key")
            } else if record.state == WriteState::Unknown {
                self.unknown_result(call, valid, "the outcome is unknown")
            } else {
                self.replay(call, valid, key, &record)
            };
        Ended::new(result).in_state(Some(record.state))
    }

    /// A finished record's stored result, delivered as `local_replay`: its seal checked, then
    /// projected again through today's contract, so a replay verifies across a deploy and an
    /// edited row is caught.
    ///
    /// A replay's provenance is today's registry's (source label, producer revision) with the
    /// stored `observed_at` and resource revision: the audit binds today's contract
    /// revisions, and its detail names the producer revision the result was made under.
    fn replay(
        &self,
        call: &Call<'_>,
        valid: &Valid<'_>,
        key: &WriteKey,
        record: &Record,
    ) -> CallResult {
        debug!(
            stage = "ledger",
            state = record.state.as_str(),
            delivery = "local_replay"
        );
        let Some(stored) = self.stored_result(key, record) else {
            warn!(
                stage = "ledger",
                "a finished record's stored result does not hold"
            );
            let error = ModelError::new(ErrorCode::OutputContractViolation);
            let detail = "a finished record whose stored result is missing, unreadable or \
                          not sealed by this application's keys: a person must review it";
            return self.control(call, error, detail);
        };
        let provenance = stored.provenance();
        let note = format!(
            "replayed from the idempotency ledger; made under producer revision {:?}",
            provenance.producer_revision
        );
        let projected = match stored.data_json() {
            Some(data) => {
                let mut raw_provenance =
                    RawProvenance::new(valid.spec.producer_revision(), &provenance.observed_at);
                raw_provenance.resource_revision = provenance.resource_revision.clone();
                let mut raw = RawResult::new(data, raw_provenance);
                raw.truncated = stored.execution().truncated;
                valid
                    .entry
                    .tool
                    .project(&call.binder, call.principal, call.context, raw)
            }
            None => self.replayed_failure(call, valid, &stored),
        };
        call.binder.redeliver(
            call.principal,
            call.context,
            projected,
            Delivery::LocalReplay,
            &note,
        )
    }

    /// A stored failure, under today's provenance for its trust, its error checked against
    /// the catalog.
    fn replayed_failure(
        &self,
        call: &Call<'_>,
        valid: &Valid<'_>,
        stored: &ModelResult,
    ) -> CallResult {
        let error = stored.error().filter(|error| error.check().is_ok());
        let Some(error) = error else {
            let error = ModelError::new(ErrorCode::OutputContractViolation);
            return self.control(call, error, "a stored failure that is not the catalog's");
        };
        let mut provenance = match stored.provenance().trust {
            Trust::TrustedControl => call.binder.control_provenance(),
            Trust::UntrustedData => Provenance {
                source_label: valid.spec.source_label().to_owned(),
                producer_revision: valid.spec.producer_revision().to_owned(),
                resource_revision: None,
                observed_at: String::new(),
                trust: Trust::UntrustedData,
            },
        };
        provenance
            .observed_at
            .clone_from(&stored.provenance().observed_at);
        let model = ModelResult::failed(error.clone(), Delivery::LocalReplay, provenance);
        call.binder.seal(
            call.principal,
            call.context,
            Seal::new(Some(valid.spec), model),
        )
    }

    /// How many different people must approve a write of `spec` with `arguments` (0: it runs
    /// at once; `validated` is the same arguments, read): none unless its contract says who
    /// approves (`by_caller`, `by_another`); then one, or what the application's rules for
    /// the tool say of these arguments. Where both its Rust rules and its Cedar approval rules
    /// speak, the larger count holds.
    pub(super) fn approvals_required(
        &self,
        spec: &ToolSpec,
        arguments: &[u8],
        validated: &serde_json::Value,
    ) -> u32 {
        if !spec.approval().is_some_and(Approval::is_required) {
            return 0;
        }
        let by_rules = self.approval_policies.get(spec.name()).map(|policy| {
            let forbidden = self.registry.forbidden_keys();
            // A rule that panics holds: the application's code fails toward asking.
            let holds = |rule: &ArgumentRule| {
                catch_unwind(AssertUnwindSafe(|| rule(arguments, forbidden))).unwrap_or_else(|_| {
                    warn!(stage = "approval", "approval policy panicked");
                    true
                })
            };
            let asked = policy.ask_when.as_ref().is_none_or(holds);
            policy
                .approvers
                .iter()
                .filter(|(_, rule)| holds(rule))
                .fold(u32::from(asked), |most, (count, _)| most.max(*count))
        });
        let by_policies = self
            .policy_approval(spec, validated)
            .map(|ask| ask.approvers);
        let required = match (by_rules, by_policies) {
            (None, None) => 1,
            (Some(count), None) | (None, Some(count)) => count,
            (Some(rules), Some(policies)) => rules.max(policies),
        };
        if required == 0 {
            debug!(
                stage = "approval",
                state = "not_needed",
                "the approval policy waived it"
            );
        }
        required
    }

    /// Whether only signed approvals count for a write of `spec` with `arguments`: when a
    /// rule of the application's (`signed_approvals_when`) holds of them, or a Cedar approval
    /// rule annotated `@signed_approvals` matches them.
    pub(super) fn signatures_required(
        &self,
        spec: &ToolSpec,
        arguments: &[u8],
        validated: &serde_json::Value,
    ) -> bool {
        if self
            .policy_approval(spec, validated)
            .is_some_and(|ask| ask.signed)
        {
            return true;
        }
        let Some(policy) = self.approval_policies.get(spec.name()) else {
            return false;
        };
        let forbidden = self.registry.forbidden_keys();
        // A rule that panics holds: the application's code fails toward signatures.
        policy.signed.iter().any(|rule| {
            catch_unwind(AssertUnwindSafe(|| rule(arguments, forbidden))).unwrap_or_else(|_| {
                warn!(stage = "approval", "signed-approval policy panicked");
                true
            })
        })
    }

    /// The Cedar approval rules, by id, that ask for an approval of a write of `spec` with
    /// `validated` arguments.
    pub(super) fn approval_rules_asking(
        &self,
        spec: &ToolSpec,
        validated: &serde_json::Value,
    ) -> Vec<String> {
        self.policy_approval(spec, validated)
            .map(|ask| ask.by)
            .unwrap_or_default()
    }

    /// What the Cedar approval rules ask of a write of `spec` with `validated` arguments, when
    /// any apply to the tool.
    #[cfg(feature = "cedar")]
    fn policy_approval(
        &self,
        spec: &ToolSpec,
        validated: &serde_json::Value,
    ) -> Option<PoliciesAsk> {
        let check = self.policy_check.as_ref()?;
        // Rules that panic ask, as Rust rules that panic hold.
        let asked = catch_unwind(AssertUnwindSafe(|| check.approval(spec.name(), validated)))
            .unwrap_or_else(|_| {
                warn!(stage = "approval", "approval rules panicked");
                Some(crate::policy::ApprovalAsk {
                    approvers: 1,
                    signed: true,
                    by: Vec::new(),
                })
            })?;
        Some(PoliciesAsk {
            approvers: asked.approvers,
            signed: asked.signed,
            by: asked.by,
        })
    }

    /// Without the `cedar` feature there are no approval rules of Cedar's.
    #[cfg(not(feature = "cedar"))]
    #[allow(clippy::unused_self)]
    fn policy_approval(&self, _: &ToolSpec, _: &serde_json::Value) -> Option<PoliciesAsk> {
        None
    }

    /// The approval stage: the grant for exactly this request, for the claim to redeem
    /// (with what the audit records of it); or the end of the dispatch, waiting for a person
    /// or refused by one. `looked` is what the write's look asked of the stage, with the
    /// answer it read if the stage writes nothing.
    async fn approval(
        &self,
        call: &Call<'_>,
        valid: &Valid<'_>,
        key: &WriteKey,
        approvals_required: u32,
        looked: Option<(ApprovalAsk, Option<ApprovalCheck>)>,
    ) -> Result<(ApprovalRecord, ApprovalGrant), Box<Ended>> {
        let guardrail = Guardrail::Approval.span(call.context);
        let checked = match looked {
            Some((_, Some(checked))) => checked,
            looked => {
                let ask = match looked {
                    Some((ask, _)) => ask,
                    None => self.approval_ask(call, valid, key, approvals_required),
                };
                match self
                    .store
                    .check_approval(&ask)
                    .instrument(guardrail.clone())
                    .await
                {
                    Ok(checked) => checked,
                    Err(error) => {
                        telemetry::verdict(&guardrail, Verdict::Deny);
                        return Err(Box::new(Ended::new(self.store_failed(call, &error))));
                    }
                }
            }
        };
        let decided = match &checked {
            ApprovalCheck::Proceed(_) => Verdict::Allow,
            ApprovalCheck::Required(_) | ApprovalCheck::Invalid(..) => Verdict::Escalate,
            ApprovalCheck::Rejected(_)
            | ApprovalCheck::GrantStands(_)
            | ApprovalCheck::CallerFull => Verdict::Deny,
        };
        telemetry::verdict(&guardrail, decided);
        match checked {
            ApprovalCheck::Proceed(grant) => {
                debug!(stage = "approval", state = "approved", "approval found");
                let record = ApprovalRecord {
                    approval_id: grant.approval_id.clone(),
                    approvers: grant.approvers().map(str::to_owned).collect(),
                    request_sha256: grant.request_sha256.clone(),
                    preview_sha256: grant.preview_sha256.clone(),
                    expires_at: infallible(
                        grant.expires_at.format(&Rfc3339),
                        "approvals are refused with an expiry RFC 3339 cannot write",
                    ),
                    edited_arguments: grant.edited_arguments.clone(),
                    receipt: None,
                    redeemed: Some(false),
                };
                Ok((record, grant))
            }
            ApprovalCheck::Required(pending) => Err(Box::new(self.awaiting_approval(
                call,
                pending,
                ErrorCode::ApprovalRequired,
                "waiting for approval",
            ))),
            ApprovalCheck::Invalid(pending, why) => Err(Box::new(self.awaiting_approval(
                call,
                pending,
                ErrorCode::ApprovalInvalid,
                why.as_str(),
            ))),
            ApprovalCheck::GrantStands(why) => {
                debug!(
                    stage = "approval",
                    state = "approved",
                    error_code = "APPROVAL_INVALID"
                );
                // Nothing is pending to show: the grant waits for the call it covers.
                let error = ModelError::new(ErrorCode::ApprovalInvalid);
                let detail = format!(
                    "an approval stands for this operation with other arguments ({}); it is \
                     left for the call it covers",
                    why.as_str()
                );
                let result = self.control(call, error, &detail);
                Err(Box::new(Ended::new(result).in_state(Some(APPROVED))))
            }
            ApprovalCheck::CallerFull => {
                debug!(
                    stage = "approval",
                    error_code = ErrorCode::CallerLimit.as_str()
                );
                let error = ModelError::new(ErrorCode::CallerLimit);
                let result = self.control(
                    call,
                    error,
                    "the principal holds as many pending approvals as it may",
                );
                Err(Box::new(Ended::new(result)))
            }
            ApprovalCheck::Rejected(reason) => {
                let code = reason.map_or(ErrorCode::Blocked, RejectionReason::code);
                debug!(
                    stage = "approval",
                    state = "rejected",
                    error_code = code.as_str()
                );
                let error = ModelError::new(code);
                let result = self.control(call, error, "the approver rejected this operation");
                Err(Box::new(Ended::new(result).in_state(Some(REJECTED))))
            }
        }
    }

    /// What the receipt of `grant`'s redemption at `redeemed_at` states.
    fn receipt_facts(
        &self,
        grant: &ApprovalGrant,
        valid: &Valid<'_>,
        redeemed_at: OffsetDateTime,
    ) -> ReceiptFacts {
        let revisions = valid.spec.revisions();
        ReceiptFacts {
            approval_id: grant.approval_id.clone(),
            approvals: grant
                .approvals
                .iter()
                .map(|given| ApprovalFact {
                    approver: given.approver.clone(),
                    approved_at: given.approved_at,
                    expires_at: given.expires_at,
                    basis: given.basis.clone(),
                })
                .collect(),
            approvals_required: grant.approvals_required,
            signatures_required: grant.signatures_required,
            principal_ref: grant.principal_ref.clone(),
            tool: grant.tool.clone(),
            operation_id: grant.operation_id.clone(),
            request_sha256: grant.request_sha256.clone(),
            request_digest: self.keys.algorithm(),
            revisions: ReceiptRevisions {
                effect: revisions.effect.clone(),
                input: revisions.input.clone(),
                output: revisions.output.clone(),
            },
            preview_sha256: grant.preview_sha256.clone(),
            expires_at: grant.expires_at,
            redeemed_at,
            edited_arguments: grant.edited_arguments.clone(),
            earlier_run: grant.earlier_run.clone(),
            required_by: grant.required_by.clone(),
        }
    }

    /// What the approval stage is asked for `call`: its request, and the pending approval
    /// it writes if it needs one.
    fn approval_ask(
        &self,
        call: &Call<'_>,
        valid: &Valid<'_>,
        key: &WriteKey,
        approvals_required: u32,
    ) -> ApprovalAsk {
        let principal_ref = self.keys.principal_ref(call.principal);
        let fresh = self.new_pending_approval(call, valid, key, &principal_ref, approvals_required);
        ApprovalAsk {
            ledger_key: key.ledger_key.clone(),
            request_sha256: key.request_sha256.clone(),
            tool: valid.spec.name().to_owned(),
            principal_ref,
            operation_id: call.context.operation_id.clone(),
            now: (self.clock)(),
            fresh,
            retention_ms: duration_ms(self.retention),
            pending_limit: self.pending_approvals_per_principal,
            seal: key.seal.clone(),
        }
    }

    /// What a person is asked to approve: a preview built from the validated arguments and
    /// the registry, under a fresh approval id.
    fn new_pending_approval(
        &self,
        call: &Call<'_>,
        valid: &Valid<'_>,
        key: &WriteKey,
        principal_ref: &str,
        approvals_required: u32,
    ) -> PendingApproval {
        let preview = Preview {
            tool: valid.spec.name().to_owned(),
            description: valid.spec.description().to_owned(),
            effect: valid.spec.effect(),
            arguments: valid.arguments.clone(),
            earlier_run: key.earlier_run.clone(),
            required_by: self.approval_rules_asking(valid.spec, &valid.arguments),
        };
        let preview_sha256 = preview.sha256();
        let sequence = self.sequence.fetch_add(1, Ordering::Relaxed);
        // Unique across replicas: the owner id is this dispatcher's own.
        let seed = format!(
            "{}\n{}\n{}\n{sequence}",
            self.owner, key.ledger_key, key.request_sha256
        );
        PendingApproval {
            approval_id: format!("apr_{}", prefix(&sha256_hex(seed.as_bytes()))),
            request_sha256: key.request_sha256.clone(),
            preview,
            preview_sha256,
            principal_ref: principal_ref.to_owned(),
            tenant: call.principal.tenant.clone(),
            operation_id: call.context.operation_id.clone(),
            ledger_key: key.ledger_key.clone(),
            approvals_required,
            signatures_required: self.signatures_required(
                valid.spec,
                &call.context.call.arguments,
                &valid.arguments,
            ),
            approvals: Vec::new(),
            by_another: valid.spec.approval() == Some(Approval::ByAnother),
            caller_person_ref: self
                .person_ref(&call.principal.tenant, &call.principal.subject)
                .unwrap_or_default(),
        }
    }

    /// A write that waits for a person: `APPROVAL_REQUIRED` or `APPROVAL_INVALID`, with the
    /// pending approval for the application to show.
    fn awaiting_approval(
        &self,
        call: &Call<'_>,
        pending: PendingApproval,
        code: ErrorCode,
        detail: &str,
    ) -> Ended {
        debug!(
            stage = "approval",
            state = "pending_approval",
            error_code = code.as_str()
        );
        let mut ended = Ended::new(self.control(call, ModelError::new(code), detail))
            .in_state(Some(PENDING_APPROVAL));
        ended.pending_approval = Some(Box::new(pending));
        ended
    }

    /// Moves the record from wherever this execution left it (executing, or
    /// cancel_requested); a confirmation that does not fit the state reads as "nothing
    /// happened".
    pub(super) async fn ledger_record(
        &self,
        key: &WriteKey,
        event: WriteEvent,
        result: &CallResult,
    ) -> Option<WriteState> {
        let stored = Some(self.stored(key, &result.model));
        for from in [WriteState::Executing, WriteState::CancelRequested] {
            let event = match (from, event) {
                (WriteState::Executing, WriteEvent::ConfirmCancelled) => {
                    WriteEvent::ConfirmNothingHappened
                }
                _ => event,
            };
            let step = self.advance(
                &key.ledger_key,
                &key.lease,
                key.keeping,
                from,
                event,
                stored.clone(),
            );
            match self.store.advance(&step).await {
                Ok(Advanced::Applied(record)) => {
                    debug!(stage = "ledger", state = record.state.as_str(), "recorded");
                    return Some(record.state);
                }
                // Cancellation was asked for meanwhile: record from there.
                Ok(Advanced::Stale(Some(record)))
                    if from == WriteState::Executing
                        && record.state == WriteState::CancelRequested => {}
                Ok(Advanced::Stale(Some(record)))
                    if record.state == WriteState::Unknown && event == WriteEvent::Commit =>
                {
                    // Our lease lapsed and someone marked it unknown: our receipt settles it.
                    return self
                        .settle_unknown(key, WriteEvent::ReconcileFound, stored.clone())
                        .await;
                }
                Ok(Advanced::Stale(record)) => return record.map(|record| record.state),
                Err(error) => {
                    warn!(stage = "ledger", error = %error, "recording the outcome failed");
                    // The lease will lapse and the claim turn it to unknown: never lost.
                    return Some(WriteState::Unknown);
                }
            }
        }
        None
    }

    /// Marks a record settled as never having happened `disputed`, storing `conflict` as the
    /// answer every later call replays; where it stands after.
    pub(super) async fn dispute(
        &self,
        key: &WriteKey,
        from: WriteState,
        conflict: &CallResult,
    ) -> Option<WriteState> {
        let stored = Some(self.stored(key, &conflict.model));
        let step = self.advance(
            &key.ledger_key,
            &key.lease,
            key.keeping,
            from,
            WriteEvent::ActedAfterSettled,
            stored,
        );
        match self.store.advance(&step).await {
            Ok(Advanced::Applied(record) | Advanced::Stale(Some(record))) => Some(record.state),
            Ok(Advanced::Stale(None)) => None,
            Err(error) => {
                warn!(stage = "ledger", error = %error, "recording the dispute failed");
                Some(from)
            }
        }
    }

    /// Moves an unknown record by what reconciliation learned; where it stands after (`None`:
    /// the record is gone).
    pub(super) async fn settle_unknown(
        &self,
        key: &WriteKey,
        event: WriteEvent,
        stored: Option<String>,
    ) -> Option<WriteState> {
        let step = self.advance(
            &key.ledger_key,
            &key.lease,
            key.keeping,
            WriteState::Unknown,
            event,
            stored,
        );
        match self.store.advance(&step).await {
            Ok(Advanced::Applied(record)) => Some(record.state),
            Ok(Advanced::Stale(record)) => record.map(|record| record.state),
            Err(_) => Some(WriteState::Unknown),
        }
    }

    /// An unknown write: its status query, if the contract has one; otherwise a person.
    async fn reconcile_unknown(
        &self,
        call: &Call<'_>,
        valid: &Valid<'_>,
        key: &WriteKey,
        record: Record,
        approval: Option<ApprovalRecord>,
    ) -> Ended {
        if record.request_sha256 != key.request_sha256 {
            return self
                .answer_existing(call, valid, key, record)
                .approved(approval);
        }
        let unknown = |detail: &str| {
            Ended::new(self.unknown_result(call, valid, detail)).in_state(Some(WriteState::Unknown))
        };
        let status_tool = match valid.spec.reconcile() {
            Some(Reconcile::Tool(name)) => self.tools.get(name),
            _ => None,
        };
        let forbidden = self.registry.forbidden_keys();
        let arguments = &call.context.call.arguments;
        // The application's builder of the status query's input, guarded like every closure
        // of the application's: one that panics leaves the write unknown, as one that fails.
        let built = catch_unwind(AssertUnwindSafe(|| {
            valid.entry.tool.status_input(arguments, forbidden)
        }))
        .unwrap_or_else(|_| {
            warn!(
                stage = "reconcile",
                "the status query's input builder panicked"
            );
            Some(Err(ToolFailure::new(
                FailureKind::Failed,
                "the status query's input builder panicked",
            )))
        });
        let (Some(status_tool), Some(input)) = (status_tool, built) else {
            return unknown("no status query: a person must check").approved(approval);
        };
        let Ok(input) = input else {
            return unknown("the status query could not be asked").approved(approval);
        };
        if let Err(stop) = call.task.spend_tool_call(status_tool.options.cost_units) {
            return unknown("no budget left for the status query")
                .stopped(Some(stop))
                .approved(approval);
        }
        // Never cancelled: a status query only reads.
        let (_cancel_sender, cancel) = tokio::sync::watch::channel(false);
        let context = HandlerContext {
            operation_id: call.context.operation_id.clone(),
            idempotency_key: key.downstream_key.clone(),
            attempt: 1,
            cancel,
            reconciling: Some(valid.spec.name()),
            clock: self.clock,
            lease: None,
            client: crate::dispatch::ClientSide::default(),
        };
        let query = status_tool.tool.attempt_input(input, context);
        let timeout = status_tool.options.timeout;
        let (mut result, event) = match self.ask_status(call, valid, timeout, query).await {
            StatusAnswer::Settled(result, event) => (result, event),
            StatusAnswer::Withheld(projected) => {
                return Ended::new(projected)
                    .in_state(Some(WriteState::Unknown))
                    .approved(approval);
            }
            StatusAnswer::CannotTell => {
                return unknown("the status query could not tell").approved(approval);
            }
        };
        // The audit first, as for every write's end.
        result.audit.policies.clone_from(&valid.policies);
        let audit_error = self.audit(&mut result, approval.as_ref()).await;
        let state = self
            .settle_unknown(key, event, Some(self.stored(key, &result.model)))
            .await;
        debug!(stage = "reconcile", state = state.map(WriteState::as_str));
        let mut ended = Ended::new(result).in_state(state).approved(approval);
        ended.audited = Some(audit_error);
        ended
    }

    /// Runs a write's status tool under its timeout, its panics caught, and reads its answer:
    /// the write's own output (validated as the write's), or its absence (`NotFound`).
    async fn ask_status(
        &self,
        call: &Call<'_>,
        valid: &Valid<'_>,
        timeout: Duration,
        query: BoxFuture<Result<RawResult, ToolFailure>>,
    ) -> StatusAnswer {
        let answer = tokio::time::timeout(timeout, AssertUnwindSafe(query).catch_unwind()).await;
        debug!(stage = "reconcile", answered = answer.is_ok());
        match answer {
            Ok(Ok(Ok(raw))) => {
                let projected =
                    valid
                        .entry
                        .tool
                        .project(&call.binder, call.principal, call.context, raw);
                if projected.model.status() != Status::Succeeded {
                    return StatusAnswer::Withheld(projected);
                }
                let result = call.binder.redeliver(
                    call.principal,
                    call.context,
                    projected,
                    Delivery::ReceiptReconciled,
                    "found by the status query",
                );
                StatusAnswer::Settled(result, WriteEvent::ReconcileFound)
            }
            Ok(Ok(Err(failure))) if failure.kind == FailureKind::NotFound => {
                let failure = ToolFailure::new(
                    FailureKind::Failed,
                    "the status query confirms the write never happened",
                );
                StatusAnswer::Settled(
                    self.project_failure(call, failure),
                    WriteEvent::ReconcileAbsent,
                )
            }
            // Not known yet, failed, panicked, or timed out: still unknown.
            Ok(Ok(Err(_)) | Err(_)) | Err(_) => StatusAnswer::CannotTell,
        }
    }

    /// The unknown-outcome result a write's contract calls for: `OUTCOME_UNKNOWN` (query
    /// status) when a status query exists, `OUTCOME_UNCONFIRMED` (a person) otherwise.
    pub(super) fn unknown_result(
        &self,
        call: &Call<'_>,
        valid: &Valid<'_>,
        detail: &str,
    ) -> CallResult {
        let code = match valid.spec.reconcile() {
            Some(Reconcile::Tool(_)) if valid.entry.tool.has_status_query() => {
                ErrorCode::OutcomeUnknown
            }
            _ => ErrorCode::OutcomeUnconfirmed,
        };
        debug!(
            stage = "outcome",
            state = "unknown",
            error_code = code.as_str()
        );
        self.control(call, ModelError::new(code), detail)
    }

    /// How long a record of `spec`'s operations is kept: for good or for the contract's
    /// `within` under `[fields]` and `key_rule`, for the ledger's retention otherwise (and for
    /// a tool the registry lacks).
    pub(super) fn keeping(&self, spec: Option<&ToolSpec>) -> Keeping {
        match spec.and_then(ToolSpec::operation_window) {
            Some(OperationWindow::ForGood) => Keeping {
                retention_ms: u64::MAX,
                kept: true,
            },
            Some(OperationWindow::Within(window)) => Keeping {
                retention_ms: duration_ms(window),
                kept: true,
            },
            _ => Keeping {
                retention_ms: duration_ms(self.retention),
                kept: false,
            },
        }
    }

    pub(super) fn write_key(&self, call: &Call<'_>, spec: &ToolSpec) -> WriteKey {
        let context = call.context;
        WriteKey {
            ledger_key: self.ledger_key(call.principal, context),
            downstream_key: self
                .keys
                .downstream_key(call.principal, application_key(context)),
            request_sha256: self.keys.request_digest(
                call.principal,
                spec.name(),
                Some(spec),
                &context.call.arguments,
            ),
            lease: self.new_lease(),
            seal: self.row_seal.clone(),
            lease_until_ms: AtomicU64::new(0),
            keeping: self.keeping(Some(spec)),
            earlier_run: None,
        }
    }

    /// The ledger key: the operation's key, scoped to the principal so tenants never meet.
    pub(super) fn ledger_key(&self, principal: &Principal, context: &CallContext) -> String {
        format!(
            "{}:{}",
            self.keys.principal_ref(principal),
            application_key(context)
        )
    }

    pub(super) fn claim(&self, call: &Call<'_>, valid: &Valid<'_>, key: &WriteKey) -> Claim {
        let now_ms = self.now_ms();
        let lease_ms = lease_ms(&valid.entry.options, self.lease_grace);
        key.lease_until_ms
            .store(now_ms.saturating_add(lease_ms), Ordering::Relaxed);
        Claim {
            key: key.ledger_key.clone(),
            request_sha256: key.request_sha256.clone(),
            tool: valid.spec.name().to_owned(),
            lease: key.lease.clone(),
            now_ms,
            lease_ms,
            retention_ms: key.keeping.retention_ms,
            kept: key.keeping.kept,
            redeem: None,
            seal: key.seal.clone(),
            call: stored_call(call),
        }
    }

    /// What the ledger keeps of a result to replay: the seal of its model half, a newline,
    /// and the model half's canonical JSON.
    pub(super) fn stored(&self, key: &WriteKey, model: &ModelResult) -> String {
        let json = model.to_canonical_json();
        let seal = self
            .keys
            .ledger_record_digest(&key.ledger_key, &key.request_sha256, &json);
        let json = infallible(String::from_utf8(json), "canonical JSON is UTF-8");
        format!("{seal}\n{json}")
    }

    /// The earlier run of an operation `record` was, once its window ended: how it ended,
    /// when, and the `result_sha256` its audit binds (when its stored result is there and
    /// sealed by these keys).
    fn earlier_run(&self, key: &WriteKey, record: &Record) -> EarlierRun {
        let result_sha256 = record.result.as_deref().and_then(|stored| {
            let (seal, json) = stored.split_once('\n')?;
            let expected = self.keys.ledger_record_digest(
                &key.ledger_key,
                &record.request_sha256,
                json.as_bytes(),
            );
            digests_equal(seal, &expected).then(|| self.keys.result_digest(json.as_bytes()))
        });
        let window_ended = i128::from(record.expires_at_ms).saturating_mul(1_000_000);
        EarlierRun {
            ended: record.state.as_str().to_owned(),
            window_ended_at: OffsetDateTime::from_unix_timestamp_nanos(window_ended)
                .ok()
                .and_then(|at| at.format(&Rfc3339).ok())
                .unwrap_or_default(),
            result_sha256,
        }
    }

    /// A record's stored result, if it is there, sealed by these keys for this key and
    /// request, and readable.
    fn stored_result(&self, key: &WriteKey, record: &Record) -> Option<ModelResult> {
        let (seal, json) = record.result.as_deref()?.split_once('\n')?;
        let expected =
            self.keys
                .ledger_record_digest(&key.ledger_key, &key.request_sha256, json.as_bytes());
        if !digests_equal(seal, &expected) {
            return None;
        }
        ModelResult::from_json(json.as_bytes()).ok()
    }

    /// The change of the record at `key` held by `lease`, kept as `keeping` says from now.
    pub(super) fn advance(
        &self,
        key: &str,
        lease: &Lease,
        keeping: Keeping,
        from: WriteState,
        event: WriteEvent,
        result: Option<String>,
    ) -> Advance {
        Advance {
            key: key.to_owned(),
            lease: lease.clone(),
            from,
            event,
            result,
            now_ms: self.now_ms(),
            retention_ms: keeping.retention_ms,
        }
    }
}

/// What a status query told.
enum StatusAnswer {
    /// It settled the write: the result to deliver, and the event the record takes.
    Settled(CallResult, WriteEvent),
    /// It found the write, but its output does not meet the contract: still unknown.
    Withheld(CallResult),
    /// It could not tell (not yet known, failed, panicked, timed out).
    CannotTell,
}

/// The application's key of the operation: the idempotency key, or the operation id when
/// there is none. Scoped to the principal, it is the ledger key and the key sent downstream.
pub(super) fn application_key(context: &CallContext) -> &str {
    context
        .idempotency_key
        .as_deref()
        .unwrap_or(&context.operation_id)
}

fn expired(record: &Record, now_ms: u64) -> bool {
    record.state.is_terminal() && record.expires_at_ms <= now_ms
}

/// The lease covers every attempt, every wait, and the grace given.
fn lease_ms(options: &ToolOptions, grace: Duration) -> u64 {
    let attempts = u64::from(options.retry.max_attempts.max(1));
    duration_ms(options.timeout)
        .saturating_mul(attempts)
        .saturating_add(duration_ms(options.retry.max_total_wait))
        .saturating_add(duration_ms(grace))
}

/// What the Cedar approval rules that matched a write ask, together, and which asked.
struct PoliciesAsk {
    approvers: u32,
    signed: bool,
    by: Vec<String>,
}
