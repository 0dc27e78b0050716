//! What a control-plane store's failure is.

use std::sync::Arc;

use super::state::IllegalTransition;

/// A store failed, or holds something it should not.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The backing store failed (I/O, database error, unreachable); its error is the source.
    #[error("the control-plane store failed")]
    Store(#[source] Arc<dyn std::error::Error + Send + Sync>),
    /// A stored row cannot be read back.
    #[error("the control-plane store holds a corrupt row: {0}")]
    Corrupt(String),
    /// A stored approval row does not carry this application's seal: it was edited,
    /// inserted or moved outside the store's own steps. Nothing is decided on it.
    #[error("the control-plane store holds a row its seal does not cover: {0}")]
    Unsealed(String),
    /// The event has no move from the record's state.
    #[error(transparent)]
    Illegal(#[from] IllegalTransition),
    /// A fenced write found the row changed under the step (a store without the locking it
    /// promised): nothing was written.
    #[error("the row changed under a fenced write")]
    LostRace,
    /// The database holds a schema newer than this build of the crate writes: refused, so an
    /// older replica never writes rows a newer one cannot trust.
    #[error(
        "the store's schema is version {found}, newer than version {supported} this build knows"
    )]
    SchemaTooNew {
        /// The version the database holds.
        found: u32,
        /// [`SCHEMA_VERSION`](crate::control::SCHEMA_VERSION).
        supported: u32,
    },
    /// The store panicked; the dispatcher caught it.
    #[error("the control-plane store panicked")]
    Panicked,
}

impl StoreError {
    /// The failure of a store's backing system (for stores of one's own).
    pub fn store(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        StoreError::Store(Arc::new(error))
    }
}
