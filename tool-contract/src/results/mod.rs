//! Results, the fourth layer: the records a call produces and the digests that bind them.
//!
//! What the model may see ([`ModelResult`]: status, data or a [`ModelError`] from the fixed
//! [`CATALOG`], [`Execution`], [`Provenance`]) and its JSON Schema; what only auditors may see
//! ([`ProtectedAudit`], with the three digests of its [`Binding`]); the keys those digests
//! and the principal reference are made with ([`AuditKeys`]); the signed receipts of
//! approvals ([`SignedReceipt`], checked offline with a [`KeySet`]); and arbitration between
//! facts.
//! It imports the layers below: the JSON core, the vocabulary, the contract model.

pub(crate) mod approver_keys;
pub(crate) mod arbitrate;
pub(crate) mod assertion;
pub(crate) mod audit;
mod audit_canonical;
pub(crate) mod catalog;
pub(crate) mod digest;
pub(crate) mod error;
pub(crate) mod execution;
pub(crate) mod model;
pub(crate) mod receipt;
pub(crate) mod schema;
pub(crate) mod statement;

pub use approver_keys::{ApproverKeys, PublishedApprover, PublishedCredential};
#[cfg(feature = "passkeys")]
pub use assertion::RelyingPartyError;
pub use assertion::{ApprovalBasis, PasskeyAssertion, RelyingParty};
pub use audit::{
    ApprovalRecord, Binding, ContractRevisions, Downstream, PROTECTED_AUDIT_SCHEMA_VERSION,
    PROTECTED_AUDIT_SCHEMA_VERSION_V1, ProtectedAudit, ProviderContext, Redaction,
};
pub use catalog::{CATALOG, CatalogEntry, Category, ErrorCode, Recovery, RetryAfter};
pub use digest::{AuditKeys, DigestAlgorithm, KeyTooShort, SecretKey};
pub use error::{ArgumentViolation, CatalogMismatch, ModelError};
pub use execution::{
    CONTROL_PRODUCER_REVISION, CONTROL_SOURCE_LABEL, Delivery, Execution, Outcome, Provenance,
    ProvenanceFault, Status, Trust,
};
pub use model::{Inconsistency, MODEL_RESULT_SCHEMA_VERSION, ModelResult, ModelResultError};
pub use receipt::{
    ApprovalFact, ApprovalReceipt, BasisKind, EarlierRun, KeySet, PublishedKey, RECEIPT_DOMAIN,
    RECEIPT_DOMAIN_V1, ReceiptApproval, ReceiptError, ReceiptFacts, ReceiptRevisions,
    ReceiptSigner, SignedReceipt,
};
pub use statement::{ApprovalStatement, Decision, STATEMENT_DOMAIN, edited_arguments_sha256};
