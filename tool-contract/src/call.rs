//! The trusted facts about one call: who asked, and which provider turn asked.

use serde::{Deserialize, Serialize};

use crate::providers::ToolCall;

/// Who asked: from the application's own authentication, never from the model.
///
/// It enters the audit only as a keyed [`principal_ref`](crate::AuditKeys::principal_ref)
/// and never reaches the model.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Principal {
    /// The tenant (organisation, workspace).
    pub tenant: String,
    /// The person or service within it.
    pub subject: String,
}

impl Principal {
    /// A principal.
    #[must_use]
    pub fn new(tenant: impl Into<String>, subject: impl Into<String>) -> Self {
        Principal {
            tenant: tenant.into(),
            subject: subject.into(),
        }
    }
}

/// One call as the dispatcher knows it: the provider's request, plus the ids the application
/// assigned to the logical operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallContext {
    /// The call as the provider adapter read it.
    pub call: ToolCall,
    /// The application's id of the logical operation this call serves.
    pub operation_id: String,
    /// The key every retry of the operation reuses; `None` for calls that are not retried
    /// under a key.
    pub idempotency_key: Option<String>,
}

impl CallContext {
    /// The context of `call`, for operation `operation_id`, with no idempotency key.
    #[must_use]
    pub fn new(call: ToolCall, operation_id: impl Into<String>) -> Self {
        CallContext {
            call,
            operation_id: operation_id.into(),
            idempotency_key: None,
        }
    }

    /// The same context with an idempotency key.
    #[must_use]
    pub fn with_idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.idempotency_key = Some(key.into());
        self
    }
}
