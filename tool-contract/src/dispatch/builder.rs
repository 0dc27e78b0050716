//! Putting a dispatcher together: a handler for every registered tool, checked when built.

use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::SeedableRng;
use rand::rngs::{SmallRng, SysRng};
use time::OffsetDateTime;

use crate::binding::AuditKeys;
use crate::call::Principal;
use crate::contract::ToolContract;
use crate::dispatch::approval::ApprovalBook;
use crate::dispatch::audit_log::AuditSink;
#[cfg(doc)]
use crate::dispatch::audit_log::MemoryAuditLog;
use crate::dispatch::dispatcher::{Dispatcher, ToolEntry};
use crate::dispatch::gate::Gate;
use crate::dispatch::handler::{Handler, StatusQuery, TypedTool, erase_query};
use crate::dispatch::ledger::{Ledger, MemoryLedger};
use crate::dispatch::retry::RetryPolicy;
use crate::registry::Registry;
use crate::spec::{Effect, Reconcile, ToolSpec};

/// How the dispatcher runs one tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolOptions {
    /// How long one attempt may run.
    pub timeout: Duration,
    /// How transient failures are retried (within what the effect allows).
    pub retry: RetryPolicy,
    /// What one attempt costs against the task's `cost_units`.
    pub cost_units: u64,
}

impl ToolOptions {
    /// 30 s per attempt, [`RetryPolicy::DEFAULT`], one cost unit.
    pub const DEFAULT: ToolOptions = ToolOptions {
        timeout: Duration::from_secs(30),
        retry: RetryPolicy::DEFAULT,
        cost_units: 1,
    };
}

impl Default for ToolOptions {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Decides whether a principal may use a tool with these arguments. A refusal reads to the
/// model exactly like `NOT_FOUND`, so nobody can probe for what exists.
///
/// Any `Fn(&Principal, &ToolSpec, &serde_json::Value) -> bool` is one.
pub trait Authorizer: Send + Sync {
    /// Whether the call may go on.
    fn authorize(
        &self,
        principal: &Principal,
        spec: &ToolSpec,
        arguments: &serde_json::Value,
    ) -> bool;
}

impl<F> Authorizer for F
where
    F: Fn(&Principal, &ToolSpec, &serde_json::Value) -> bool + Send + Sync,
{
    fn authorize(
        &self,
        principal: &Principal,
        spec: &ToolSpec,
        arguments: &serde_json::Value,
    ) -> bool {
        self(principal, spec, arguments)
    }
}

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
    /// A write names a reconcile tool that is not a read.
    #[error("{write:?} is reconciled by {reconcile:?}, which is not read_only or pure")]
    ReconcileToolWrites {
        /// The write.
        write: &'static str,
        /// The tool it names.
        reconcile: &'static str,
    },
    /// A write reconciled by a tool has no status query.
    #[error("{0:?} is reconciled by a tool but was given no status query")]
    MissingStatusQuery(&'static str),
    /// No audit sink was given: every call must leave an audit, so there is no silent default.
    #[error("no audit sink: give one with `audit_sink` (JsonLinesAuditLog is the embedded one)")]
    MissingAuditSink,
}

/// Builds a [`Dispatcher`]. See [`Dispatcher::builder`].
pub struct DispatcherBuilder {
    registry: Registry,
    keys: AuditKeys,
    clock: fn() -> OffsetDateTime,
    tools: HashMap<&'static str, ToolEntry>,
    unregistered: Vec<&'static str>,
    gates: Vec<Box<dyn Gate>>,
    authorizer: Option<Box<dyn Authorizer>>,
    ledger: Option<Arc<dyn Ledger>>,
    audit_sink: Option<Arc<dyn AuditSink>>,
    retention: Duration,
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
            ledger: None,
            audit_sink: None,
            retention: Duration::from_secs(24 * 60 * 60),
        }
    }

    /// The handler of `C`, with [`ToolOptions::DEFAULT`].
    #[must_use]
    pub fn handler<C: ToolContract + Send>(self, handler: impl Handler<C>) -> Self {
        self.tool::<C>(handler, ToolOptions::DEFAULT, None)
    }

    /// The handler of `C`, with its own options.
    #[must_use]
    pub fn handler_with<C: ToolContract + Send>(
        self,
        handler: impl Handler<C>,
        options: ToolOptions,
    ) -> Self {
        self.tool::<C>(handler, options, None)
    }

    /// The handler of the write `W` and the status query behind its `reconcile = "tool"`.
    #[must_use]
    pub fn write_handler<W: ToolContract + Send>(
        self,
        handler: impl Handler<W>,
        status_query: impl StatusQuery<W>,
        options: ToolOptions,
    ) -> Self {
        self.tool::<W>(handler, options, Some(erase_query(status_query)))
    }

    fn tool<C: ToolContract + Send>(
        mut self,
        handler: impl Handler<C>,
        options: ToolOptions,
        status_query: Option<Arc<super::handler::ErasedQuery<C>>>,
    ) -> Self {
        let registered = self
            .registry
            .get(C::NAME)
            .is_some_and(|spec| std::ptr::eq(spec, C::spec()));
        if !registered {
            self.unregistered.push(C::NAME);
            return self;
        }
        let tool = TypedTool {
            handler: Arc::new(handler),
            status_query,
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

    /// The idempotency ledger. Without one, a [`MemoryLedger`] (lost on restart).
    #[must_use]
    pub fn ledger(mut self, ledger: Arc<dyn Ledger>) -> Self {
        self.ledger = Some(ledger);
        self
    }

    /// Where audits go (required): [`JsonLinesAuditLog`](crate::dispatch::JsonLinesAuditLog)
    /// is the embedded, hash-chained file; [`MemoryAuditLog`] keeps the same chain in memory.
    #[must_use]
    pub fn audit_sink(mut self, sink: Arc<dyn AuditSink>) -> Self {
        self.audit_sink = Some(sink);
        self
    }

    /// How long a finished write's record is kept and replayed (default 24 h).
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
    /// Every [`BuildError`] found, in registry order.
    pub fn build(self) -> Result<Dispatcher, Vec<BuildError>> {
        let mut errors: Vec<BuildError> = self
            .unregistered
            .iter()
            .map(|name| BuildError::UnregisteredHandler(name))
            .collect();
        for spec in self.registry.tools() {
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
                Some(status) if !matches!(status.effect(), Effect::ReadOnly | Effect::Pure) => {
                    errors.push(BuildError::ReconcileToolWrites {
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
        let (Some(audit_sink), true) = (self.audit_sink, errors.is_empty()) else {
            return Err(errors);
        };
        let mut rng = SmallRng::try_from_rng(&mut SysRng).unwrap_or_else(|_| {
            // No OS randomness: jitter and owner ids still differ per process and instant.
            let nanos = OffsetDateTime::now_utc().unix_timestamp_nanos();
            SmallRng::seed_from_u64(nanos as u64 ^ u64::from(std::process::id()))
        });
        let owner = format!("owner-{:016x}", rand::Rng::next_u64(&mut rng));
        Ok(Dispatcher {
            registry: self.registry,
            keys: self.keys,
            clock: self.clock,
            tools: self.tools,
            gates: self.gates,
            authorizer: self.authorizer,
            ledger: self.ledger.unwrap_or_else(|| Arc::new(MemoryLedger::new())),
            approvals: ApprovalBook::default(),
            audit_sink,
            owner,
            retention: self.retention,
            in_flight: Mutex::new(HashMap::new()),
            rng: Mutex::new(rng),
            sequence: AtomicU64::new(0),
            writes: AtomicU64::new(0),
        })
    }
}
