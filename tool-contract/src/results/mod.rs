//! Results, the fourth layer: the records a call produces and the digests that bind them.
//!
//! What the model may see ([`ModelResult`]: status, data or a [`ModelError`] from the fixed
//! [`CATALOG`], [`Execution`], [`Provenance`]) and its JSON Schema; what only auditors may see
//! ([`ProtectedAudit`], with the three digests of its [`Binding`]); the keys those digests
//! and the principal reference are made with ([`AuditKeys`]); the signed receipts of
//! approvals ([`SignedReceipt`], checked offline with a [`KeySet`]); and arbitration between
//! facts.
//! It imports the layers below: the JSON core, the vocabulary, the contract model.

pub(crate) mod arbitrate;
pub(crate) mod audit;
pub(crate) mod catalog;
pub(crate) mod digest;
pub(crate) mod error;
pub(crate) mod execution;
pub(crate) mod model;
pub(crate) mod receipt;
pub(crate) mod schema;

pub use audit::{
    ApprovalRecord, Binding, ContractRevisions, Downstream, PROTECTED_AUDIT_SCHEMA_VERSION,
    PROTECTED_AUDIT_SCHEMA_VERSION_V1, ProtectedAudit, ProviderContext, Redaction,
};
pub use catalog::{CATALOG, CatalogEntry, Category, ErrorCode, Recovery, RetryAfter};
pub use digest::{AuditKeys, DigestAlgorithm, KeyTooShort, SecretKey};
pub use error::{CatalogMismatch, ModelError};
pub use execution::{
    CONTROL_PRODUCER_REVISION, CONTROL_SOURCE_LABEL, Delivery, Execution, Outcome, Provenance,
    ProvenanceFault, Status, Trust,
};
pub use model::{Inconsistency, MODEL_RESULT_SCHEMA_VERSION, ModelResult, ModelResultError};
pub use receipt::{
    ApprovalReceipt, KeySet, PublishedKey, RECEIPT_DOMAIN, ReceiptApproval, ReceiptError,
    ReceiptFacts, ReceiptRevisions, ReceiptSigner, SignedReceipt,
};
