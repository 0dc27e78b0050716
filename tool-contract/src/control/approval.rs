//! Approvals bound to the exact action: request digest, preview, approver, expiry; used once.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use time::OffsetDateTime;

use super::error::StoreError;
use super::ledger::{Lease, Record};
use crate::json::canonical;
use crate::json::encoding::infallible;
use crate::json::visible::escape_hidden;
use crate::results::{ApprovalBasis, EarlierRun, ErrorCode};
use crate::vocabulary::Effect;

/// What the person approving sees: built by the dispatcher from the validated arguments and
/// the registry, never from text the model wrote about the action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Preview {
    /// The tool that will run.
    pub tool: String,
    /// The tool's description, from its contract.
    pub description: String,
    /// What the tool does to the world.
    pub effect: Effect,
    /// The validated arguments, exactly as the handler will receive them.
    pub arguments: Value,
    /// The operation's earlier run, when it ran before and its window (`within`) ended: this
    /// call repeats it as a new operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub earlier_run: Option<EarlierRun>,
    /// The approval rules that asked for this approval, by id, when Cedar policies did
    /// (feature `cedar`); empty when the contract or the application's Rust rules did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_by: Vec<String>,
}

impl Preview {
    /// The SHA-256 (hex) of the preview's RFC 8785 canonical JSON: what an approval names to
    /// say "this is what I saw".
    #[must_use]
    pub fn sha256(&self) -> String {
        let value = infallible(
            serde_json::to_value(self),
            "a preview serializes to strings and a `Value`",
        );
        let bytes = infallible(
            canonical::to_vec(&value),
            "a preview's arguments were validated: exact, finite numbers only",
        );
        hex::encode(Sha256::digest(bytes))
    }

    /// The preview as a person should be shown it: indented JSON in which every character
    /// that hides or reorders text (bidi controls, zero-width and other invisible
    /// characters, controls) is a `\uXXXX` escape. The escapes decode to the same value, so
    /// what is shown is exactly what runs.
    ///
    /// ```
    /// use tool_contract::control::Preview;
    /// use tool_contract::Effect;
    ///
    /// let preview = Preview {
    ///     tool: "send_file".into(),
    ///     description: "Send a file.".into(),
    ///     effect: Effect::NonIdempotentWrite,
    ///     arguments: serde_json::json!({ "name": "invoice\u{202e}fdp.exe" }),
    ///     earlier_run: None,
    ///     required_by: Vec::new(),
    /// };
    /// assert!(preview.to_text().contains(r"invoice\u202efdp.exe"));
    /// ```
    #[must_use]
    pub fn to_text(&self) -> String {
        let text = infallible(
            serde_json::to_string_pretty(self),
            "a preview serializes to strings and a `Value`",
        );
        escape_hidden(&text)
    }
}

/// A write waiting for a person: what they are asked to approve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingApproval {
    /// The id to approve or reject it by.
    pub approval_id: String,
    /// The request digest of the exact action.
    pub request_sha256: String,
    /// What the person sees.
    pub preview: Preview,
    /// [`Preview::sha256`] of `preview`.
    pub preview_sha256: String,
    /// The keyed reference of the principal who asked.
    pub principal_ref: String,
    /// The tenant of the principal who asked: which approvers may decide it (an enrolled
    /// approver's tenants). Empty in an approval stored before approvers were enrolled.
    pub tenant: String,
    /// The logical operation.
    pub operation_id: String,
    /// The ledger key of the operation (the principal's reference and the application's
    /// key): what a store keeps the approval under.
    pub ledger_key: String,
    /// How many different people must approve it: 1, unless a policy
    /// ([`DispatcherBuilder::approvers_when`](crate::dispatch::DispatcherBuilder::approvers_when))
    /// asks for more.
    pub approvals_required: u32,
    /// Whether only approvals signed by the approvers' own passkeys count
    /// ([`DispatcherBuilder::signed_approvals_when`](crate::dispatch::DispatcherBuilder::signed_approvals_when)):
    /// an approval asserted by the service or by an MCP client is then refused.
    pub signatures_required: bool,
    /// The approvals given so far, each by a different person, none lapsed when it was
    /// counted.
    pub approvals: Vec<GivenApproval>,
    /// Whether the contract says `approval = by_another`: an approval by the principal who
    /// asked counts for nothing (the store refuses it:
    /// [`ApprovalError::CallerCannotApprove`]).
    pub by_another: bool,
    /// The person who asked, as approvals are compared with it: the keyed reference of the
    /// principal's tenant and the [`ApproverIdentity`](crate::control::ApproverIdentity) of
    /// their subject. Empty in an approval stored before approvals said by whom.
    pub caller_person_ref: String,
}

impl PendingApproval {
    /// Whether an answer of the principal who asked (MCP's confirmation form) can count
    /// toward this approval: not when the contract asks someone else (`by_another`), nor
    /// when only passkey signatures count.
    #[must_use]
    pub fn caller_can_approve(&self) -> bool {
        !self.by_another && !self.signatures_required
    }

    /// How many more different people must approve before the write may run.
    #[must_use]
    pub fn approvals_still_needed(&self) -> u32 {
        let given = u32::try_from(self.approvals.len()).unwrap_or(u32::MAX);
        // At least one person, whatever a row says.
        self.approvals_required.max(1).saturating_sub(given)
    }
}

/// One person's approval of a pending action, as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GivenApproval {
    /// Who approved (the application's own name for the person, as given; approvals are
    /// counted by its [`ApproverIdentity`](crate::control::ApproverIdentity)).
    pub approver: String,
    /// When they approved.
    pub approved_at: OffsetDateTime,
    /// When their approval lapses.
    pub expires_at: OffsetDateTime,
    /// The arguments as they changed them (canonical JSON), when they approved with edits:
    /// every approval of one action names the same edits.
    pub edited_arguments: Option<String>,
    /// What the approval rests on: a passkey's signature, or only someone's word.
    pub basis: ApprovalBasis,
    /// Who the approver is as a principal of the caller's tenant, keyed as
    /// [`PendingApproval::caller_person_ref`] is, when that is known: the caller for an MCP
    /// answer, the name given for the service's word, the directory's `subject` for a
    /// passkey. `None` for an enrolled approver whose subject the directory does not say.
    pub person_ref: Option<String>,
}

/// What [`look_for_approval`](crate::control::ControlStore::look_for_approval) answers: the
/// look a write that needs approval begins with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalLook {
    /// The record at the ask's ledger key, as it stands.
    pub record: Option<Record>,
    /// The approval stage's answer, read in the same step, when that stage writes nothing
    /// ([`decide_approval`](crate::control::decide_approval) says which); `None` when it
    /// would write (or the store does not read it in this step): then
    /// [`check_approval`](crate::control::ControlStore::check_approval) answers.
    pub check: Option<ApprovalCheck>,
}

/// What an approval came to: the grant, once every approval needed is given, or the pending
/// approval with this one counted.
///
/// The approval is recorded either way, so a caller that only approves may drop it; read it
/// to learn whether more people must approve ([`still_needed`](Self::still_needed)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approved {
    /// Every approval needed is given: the write may run, once.
    Granted(ApprovalGrant),
    /// This approval is recorded (once per person, however often they approve); more
    /// people must approve before anything runs.
    Awaiting(PendingApproval),
}

impl Approved {
    /// The grant, if every approval needed is given.
    #[must_use]
    pub fn grant(&self) -> Option<&ApprovalGrant> {
        match self {
            Approved::Granted(grant) => Some(grant),
            Approved::Awaiting(_) => None,
        }
    }

    /// How many more different people must approve (0 once granted).
    #[must_use]
    pub fn still_needed(&self) -> u32 {
        match self {
            Approved::Granted(_) => 0,
            Approved::Awaiting(pending) => pending.approvals_still_needed(),
        }
    }
}

/// The approval of one pending action, by as many different people as it needed. It covers
/// that request digest, tool, principal, operation and key only, until `expires_at`, and is
/// consumed by the one execution it allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalGrant {
    /// The pending approval it answers.
    pub approval_id: String,
    /// The request digest approved.
    pub request_sha256: String,
    /// The preview the person saw.
    pub preview_sha256: String,
    /// The tool approved.
    pub tool: String,
    /// The principal it was approved for.
    pub principal_ref: String,
    /// The operation it was approved for.
    pub operation_id: String,
    /// Each person's approval, in the order given: at least one, each approver once.
    pub approvals: Vec<GivenApproval>,
    /// How many different people the rule asked for.
    pub approvals_required: u32,
    /// Whether the rule asked for signed approvals only.
    pub signatures_required: bool,
    /// When it lapses: the earliest of the approvals' expiries.
    pub expires_at: OffsetDateTime,
    /// The ledger key of the operation.
    pub ledger_key: String,
    /// The arguments as the person changed them (canonical JSON), when they approved with
    /// edits: the execution the grant allows runs these.
    pub edited_arguments: Option<String>,
    /// The operation's earlier run the people were shown, when this repeats one whose window
    /// ended.
    pub earlier_run: Option<EarlierRun>,
    /// The approval rules that asked for it, by id: its preview's
    /// [`required_by`](Preview::required_by), then those that ask of the edited arguments
    /// and not of the ones asked about, when approved with edits.
    pub required_by: Vec<String>,
}

impl ApprovalGrant {
    /// Who approved, in the order they did.
    pub fn approvers(&self) -> impl Iterator<Item = &str> {
        self.approvals.iter().map(|given| given.approver.as_str())
    }
}

/// Why an approval or rejection was refused.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ApprovalError {
    /// No pending approval has that id: it never existed, was decided, or was superseded by
    /// a changed request.
    #[error("no pending approval has that id (decided, superseded, or never issued)")]
    NotPending,
    /// The preview digest given is not the one the pending approval showed.
    #[error("the preview approved is not the preview pending")]
    PreviewMismatch,
    /// The expiry is not after now.
    #[error("the approval would already have expired")]
    Expired,
    /// The edited arguments do not meet the tool's input contract.
    #[error("the edited arguments do not meet the tool's contract: {0}")]
    InvalidEdit(String),
    /// Another person already approved this action with other edits (or none): every
    /// approval of one action must name the same arguments.
    #[error("the edits differ from those another approver approved")]
    EditsDiffer,
    /// The expiry is beyond what RFC 3339 can write (a year past 9999), so no audit could
    /// record it.
    #[error("the approval's expiry is out of range")]
    ExpiryOutOfRange,
    /// The approver's name is empty once normalized (whitespace or invisible characters
    /// only): it names nobody.
    #[error("the approver's name names nobody")]
    NoApprover,
    /// The approval needs signatures (a policy says so) and this one is only asserted.
    #[error("this approval must be signed with the approver's passkey")]
    SignatureRequired,
    /// The contract says `approval = by_another` and this approval is the caller's own: their
    /// answer at the client, or an approver named as the principal who asked.
    #[error("the contract asks someone other than the caller to approve this call")]
    CallerCannotApprove,
    /// The approval could not be checked against the approver directory or the passkey
    /// signing it: the detail says which check refused it.
    #[error("the signed decision was refused: {0}")]
    Refused(#[from] SignedDecisionRefusal),
    /// The control-plane store failed: nothing was recorded.
    #[error("the approval could not be recorded")]
    Store(#[source] StoreError),
}

/// Why a signed decision was refused: each check of the approver, their credential and the
/// assertion, named.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SignedDecisionRefusal {
    /// The dispatcher has no relying party: it cannot check passkeys.
    #[error("this dispatcher checks no passkeys (no relying party configured)")]
    NoRelyingParty,
    /// No enrolled approver has that id.
    #[error("no enrolled approver has that id")]
    UnknownApprover,
    /// The approver may not decide for the principal's tenant.
    #[error("the approver may not decide for this tenant")]
    OtherTenant,
    /// The approver may not decide this tool's calls.
    #[error("the approver may not decide this tool")]
    OtherTool,
    /// Separation of duties: the approver is the principal who asked.
    #[error("the approver asked for this call and may not decide it")]
    OwnCall,
    /// Approvals of several kinds count toward this rule (an MCP answer by the caller, a
    /// directory approver's passkey), and the directory does not say which subject this
    /// approver is: they could be the caller approving twice. Set the approver's `subject`.
    #[error(
        "the directory does not say who this approver is as a principal, and an approval of \
         another kind counts toward this rule: set their subject"
    )]
    UntiedApprover,
    /// The credential that signed is not one of this approver's.
    #[error("the credential is not enrolled for this approver")]
    UnknownCredential,
    /// The credential was revoked before this decision.
    #[error("the credential is revoked")]
    RevokedCredential,
    /// The statement is not the one the pending approval and this decision make: another
    /// approval, principal, tool, request, preview, edit, decision, approver or expiry.
    #[error("the statement is not this decision's: its {0} differs")]
    OtherStatement(&'static str),
    /// The assertion does not verify: its challenge is not the statement's, or its origin,
    /// relying party, user verification or signature is wrong.
    #[error("the assertion does not verify: {0}")]
    Assertion(String),
    /// The signature counter did not rise: a cloned authenticator or a replayed assertion.
    #[error("the credential's signature counter went back (held {stored}, presented {presented})")]
    CounterRegressed {
        /// The counter the directory held.
        stored: u32,
        /// The counter the assertion presented.
        presented: u32,
    },
}

/// Why a request cannot run on the approval at hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Invalidity {
    /// The arguments (hence request digest) changed since approval.
    RequestChanged,
    /// The approval is for another tool, principal or operation.
    Moved,
    /// The approval has lapsed.
    Expired,
}

impl Invalidity {
    /// What it says in an audit's detail.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Invalidity::RequestChanged => "request changed after approval",
            Invalidity::Moved => "approval is for another tool, principal or operation",
            Invalidity::Expired => "approval expired",
        }
    }
}

/// What the approval stage decides for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalCheck {
    /// Approved: the claim may redeem this grant.
    Proceed(ApprovalGrant),
    /// Waiting for a person (first ask, or the same request asked again).
    Required(PendingApproval),
    /// The approval lapsed: a new pending approval replaces it.
    Invalid(PendingApproval, Invalidity),
    /// A grant stands for this operation with other arguments (why says which): this request
    /// is not covered and nothing is asked; the grant is left for the call it covers, until
    /// that call uses it or it expires.
    GrantStands(Invalidity),
    /// A person refused this operation, for this reason if they gave one.
    Rejected(Option<RejectionReason>),
    /// The request needs a new pending approval and its principal holds as many as it may
    /// ([`ApprovalAsk::pending_limit`](crate::control::ApprovalAsk::pending_limit)): nothing
    /// was written, and nobody is asked.
    CallerFull,
}

/// Why a person rejected a write, from a fixed list: what the model reads of it is the
/// reason's own catalog entry, never the person's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RejectionReason {
    /// The action is not permitted (`REJECTED_NOT_PERMITTED`).
    NotPermitted,
    /// The action's details are wrong; corrected, it may be asked again
    /// (`REJECTED_WRONG_DETAILS`).
    WrongDetails,
    /// The action repeats one already done (`REJECTED_DUPLICATE`).
    Duplicate,
}

impl RejectionReason {
    /// The catalog code the model reads for a rejection for this reason.
    #[must_use]
    pub const fn code(self) -> ErrorCode {
        match self {
            RejectionReason::NotPermitted => ErrorCode::RejectedNotPermitted,
            RejectionReason::WrongDetails => ErrorCode::RejectedWrongDetails,
            RejectionReason::Duplicate => ErrorCode::RejectedDuplicate,
        }
    }
}

/// What the store holds of one operation's approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalEntry {
    /// Waiting for a person until `expires_at_ms`.
    Pending {
        /// What the person is asked.
        pending: PendingApproval,
        /// When it is forgotten (ms since the epoch).
        expires_at_ms: u64,
    },
    /// Approved; redeemed by the execution holding `redeemed_by`, once one claimed it.
    Granted {
        /// The approval.
        grant: ApprovalGrant,
        /// The execution that redeemed it.
        redeemed_by: Option<Lease>,
    },
    /// Refused.
    Rejected {
        /// The pending approval refused.
        approval_id: String,
        /// Why, if the person said.
        reason: Option<RejectionReason>,
        /// When it is forgotten (ms since the epoch).
        expires_at_ms: u64,
    },
}

impl ApprovalEntry {
    /// The approval id it is under.
    #[must_use]
    pub fn approval_id(&self) -> &str {
        match self {
            ApprovalEntry::Pending { pending, .. } => &pending.approval_id,
            ApprovalEntry::Granted { grant, .. } => &grant.approval_id,
            ApprovalEntry::Rejected { approval_id, .. } => approval_id,
        }
    }

    /// When it may be purged (ms since the epoch): a grant when it lapses.
    #[must_use]
    pub fn expires_at_ms(&self) -> u64 {
        match self {
            ApprovalEntry::Pending { expires_at_ms, .. }
            | ApprovalEntry::Rejected { expires_at_ms, .. } => *expires_at_ms,
            ApprovalEntry::Granted { grant, .. } => unix_ms(grant.expires_at),
        }
    }
}

/// Milliseconds since the Unix epoch (0 before it).
pub(crate) fn unix_ms(at: OffsetDateTime) -> u64 {
    u64::try_from(at.unix_timestamp_nanos() / 1_000_000).unwrap_or(0)
}

/// `at` moved on by `lifetime`, or the last instant an audit can write (the end of year
/// 9999, RFC 3339's last) if that is sooner: a lifetime too long for the calendar lasts as
/// long as one can, and never overflows.
#[cfg_attr(not(feature = "mcp"), allow(dead_code))]
pub(crate) fn later_by(at: OffsetDateTime, lifetime: std::time::Duration) -> OffsetDateTime {
    let last = infallible(
        OffsetDateTime::from_unix_timestamp(253_402_300_799),
        "9999-12-31T23:59:59Z is a time's instant",
    );
    time::Duration::try_from(lifetime)
        .ok()
        .and_then(|lifetime| at.checked_add(lifetime))
        .map_or(last, |later| later.min(last))
}
