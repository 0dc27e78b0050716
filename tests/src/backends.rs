//! The three control-plane stores, each opened as a test needs it: again after a
//! "restart", or once per replica.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use tool_contract::control::SqliteStore;
use tool_contract::control::{ControlStore, MemoryStore};

use crate::postgres::Schema;

/// A store under test, opened once per replica (or per restart).
// Used generically by the tests only, never as `dyn`: the future's `Send` is not needed.
#[allow(async_fn_in_trait)]
pub trait Backend: Sync {
    /// Another handle on the same store.
    async fn open(&self) -> Arc<dyn ControlStore>;
}

/// In memory: clones share one state (a restart cannot be shown; a second dispatcher can).
pub struct Memory(pub MemoryStore);

impl Backend for Memory {
    async fn open(&self) -> Arc<dyn ControlStore> {
        Arc::new(self.0.clone())
    }
}

/// One SQLite file, opened again for every handle; removed with its journal when dropped.
pub struct Sqlite(pub PathBuf);

impl Backend for Sqlite {
    async fn open(&self) -> Arc<dyn ControlStore> {
        Arc::new(SqliteStore::open(&self.0).expect("the store file opens"))
    }
}

impl Drop for Sqlite {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let mut path = self.0.clone().into_os_string();
            path.push(suffix);
            let _ = std::fs::remove_file(path);
        }
    }
}

/// An SQLite file no other test uses.
pub fn sqlite_file() -> Sqlite {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let name = format!(
        "tool-contract-store-{}-{}.sqlite",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    Sqlite(std::env::temp_dir().join(name))
}

/// PostgreSQL, in a schema of its own; a new pool for every handle.
pub struct Postgres(pub Schema);

impl Backend for Postgres {
    async fn open(&self) -> Arc<dyn ControlStore> {
        Arc::new(self.0.store().await)
    }
}

/// One `#[tokio::test]` per store for each `async fn case(backend: &impl Backend)` named:
/// `memory::case`, `sqlite::case`, `postgres::case` (the last saying it was skipped when
/// `TOOL_CONTRACT_POSTGRES_URL` is not set; `.ci/run` sets it).
#[macro_export]
macro_rules! on_every_store {
    ($($case:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test]
                async fn $case() {
                    let store = tool_contract::control::MemoryStore::new();
                    super::$case(&$crate::backends::Memory(store)).await;
                }
            )*
        }
        mod sqlite {
            $(
                #[tokio::test]
                async fn $case() {
                    super::$case(&$crate::backends::sqlite_file()).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test]
                async fn $case() {
                    if let Some(schema) = $crate::postgres::Schema::new(stringify!($case)) {
                        super::$case(&$crate::backends::Postgres(schema)).await;
                    }
                }
            )*
        }
    };
}
