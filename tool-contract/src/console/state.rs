//! What every page handler reads: the dispatcher, the options, the signer, the templates,
//! the ceremonies under way and the sign-in limit.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use minijinja::Environment;

use super::audit::AuditView;
use super::limit::FailureLimit;
use super::options::ConsoleOptions;
use super::token::{self, Signer};
use crate::dispatch::{Dispatcher, Enrollment};

/// What every page handler reads.
#[derive(Debug)]
pub(super) struct Inner {
    pub(super) dispatcher: Arc<Dispatcher>,
    pub(super) options: ConsoleOptions,
    pub(super) signer: Signer,
    pub(super) templates: Environment<'static>,
    pub(super) ceremonies: Ceremonies,
    pub(super) sign_ins: FailureLimit,
    /// The audit log the receipts, chain and overview pages read, once set.
    pub(super) audit: RwLock<Option<Arc<AuditView>>>,
}

/// A WebAuthn ceremony begun by one visit and not yet finished: kept here, used once.
#[derive(Debug)]
pub(super) enum Ceremony {
    SignIn {
        approver_id: String,
        challenge: [u8; 32],
    },
    Enrol {
        invitation: String,
        enrollment: Box<Enrollment>,
    },
}

/// The ceremonies under way, each bound to the visit that began it; bounded in number and
/// time (five minutes, the authenticator's own timeout).
#[derive(Debug, Default)]
pub(super) struct Ceremonies {
    open: Mutex<HashMap<String, (String, Instant, Ceremony)>>,
}

const CEREMONY_LIFETIME: Duration = Duration::from_secs(300);
const CEREMONIES_OPEN: usize = 10_000;

impl Ceremonies {
    /// Keeps `ceremony` for `visit` under a new id; `None` when too many are open.
    pub(super) fn begin(&self, visit: &str, ceremony: Ceremony) -> Option<String> {
        let id = token::random_id()?;
        let now = Instant::now();
        let mut open = self
            .open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        open.retain(|_, (_, begun, _)| now.duration_since(*begun) < CEREMONY_LIFETIME);
        if open.len() >= CEREMONIES_OPEN {
            return None;
        }
        open.insert(id.clone(), (visit.to_owned(), now, ceremony));
        Some(id)
    }

    /// Takes the ceremony `id` if `visit` began it and it has not lapsed: once.
    pub(super) fn finish(&self, id: &str, visit: &str) -> Option<Ceremony> {
        let mut open = self
            .open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (owner, begun, _) = open.get(id)?;
        if owner != visit || begun.elapsed() >= CEREMONY_LIFETIME {
            return None;
        }
        open.remove(id).map(|(_, _, ceremony)| ceremony)
    }
}

impl Inner {
    pub(super) fn unix_now(&self) -> i64 {
        self.dispatcher.now().unix_timestamp()
    }

    pub(super) fn path(&self, tail: &str) -> String {
        format!("{}{tail}", self.options.base_path)
    }

    pub(super) fn audit_view(&self) -> Option<Arc<AuditView>> {
        self.audit
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}
