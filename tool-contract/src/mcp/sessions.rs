//! Which handshake sessions of Streamable HTTP each principal holds on this replica, within
//! a bound: a flood of `initialize` from one caller ends at its own limit, and never pushes
//! another caller's sessions out.

use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::vocabulary::Principal;

/// How many handshake sessions (2025-11-25 and before, over Streamable HTTP) one principal
/// may hold open on one server unless
/// [`McpServer::with_sessions_per_principal`](crate::mcp::McpServer::with_sessions_per_principal)
/// says otherwise: an `initialize` past it is answered `429` with a JSON-RPC error whose
/// `data` is the catalog's `CALLER_LIMIT`, and no session is opened.
///
/// A server of [`McpServer::new`](crate::mcp::McpServer::new) acts for one principal, so
/// every client of it shares this many sessions; an authenticated server counts each
/// verified principal apart.
pub const SESSIONS_PER_PRINCIPAL: usize = 1_000;

/// Sessions remembered at once, whoever holds them; past that the oldest is forgotten (its
/// client is told the session is gone and opens another).
const SESSIONS: usize = 10_000;

/// The header of a handshake session's id.
const SESSION_HEADER: &str = "mcp-session-id";

/// The session a request names, if any.
pub(crate) fn session_of(headers: &http::HeaderMap) -> Option<&str> {
    headers.get(SESSION_HEADER).and_then(|id| id.to_str().ok())
}

/// The sessions one server's clients hold, by principal.
pub(crate) struct SessionBook {
    per_principal: usize,
    held: Mutex<Held>,
}

#[derive(Default)]
struct Held {
    owners: HashMap<String, Principal>,
    by_principal: HashMap<Principal, HashSet<String>>,
    /// Sessions being opened: counted against their principal until the answer names them.
    opening: HashMap<Principal, usize>,
    order: VecDeque<String>,
}

impl Held {
    fn count(&self, principal: &Principal) -> usize {
        self.by_principal.get(principal).map_or(0, HashSet::len)
            + self.opening.get(principal).copied().unwrap_or(0)
    }

    fn forget(&mut self, id: &str) {
        let Some(owner) = self.owners.remove(id) else {
            return;
        };
        if let Some(ids) = self.by_principal.get_mut(&owner) {
            ids.remove(id);
            if ids.is_empty() {
                self.by_principal.remove(&owner);
            }
        }
    }
}

/// A session counted against its principal while its `initialize` is answered; dropped
/// without [`opened`](Opening::opened), it counts no more.
pub(super) struct Opening {
    book: Arc<SessionBook>,
    principal: Principal,
}

impl SessionBook {
    pub(super) fn new(per_principal: usize) -> Self {
        SessionBook {
            per_principal,
            held: Mutex::default(),
        }
    }

    fn held(&self) -> MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The principal that opened session `id`, if this book knows it.
    #[cfg_attr(not(feature = "mcp-auth"), allow(dead_code))]
    pub(crate) fn owner(&self, id: &str) -> Option<Principal> {
        self.held().owners.get(id).cloned()
    }

    /// Counts one more session of `principal` while it opens, or `None` when it holds its
    /// limit already. At the limit, its sessions the transport no longer has (`alive` says
    /// which it has: a session that timed out is never closed by its client) are forgotten
    /// first.
    pub(super) async fn open<F, Alive>(
        self: &Arc<Self>,
        principal: &Principal,
        alive: Alive,
    ) -> Option<Opening>
    where
        Alive: Fn(String) -> F,
        F: Future<Output = bool>,
    {
        if self.try_open(principal) {
            return Some(self.opening(principal));
        }
        let held: Vec<String> = self
            .held()
            .by_principal
            .get(principal)
            .map(|ids| ids.iter().cloned().collect())
            .unwrap_or_default();
        for id in held {
            if !alive(id.clone()).await {
                self.held().forget(&id);
            }
        }
        self.try_open(principal).then(|| self.opening(principal))
    }

    fn try_open(&self, principal: &Principal) -> bool {
        let mut held = self.held();
        if held.count(principal) >= self.per_principal {
            return false;
        }
        *held.opening.entry(principal.clone()).or_default() += 1;
        true
    }

    fn opening(self: &Arc<Self>, principal: &Principal) -> Opening {
        Opening {
            book: self.clone(),
            principal: principal.clone(),
        }
    }

    /// Notes that the session `id` was closed.
    pub(super) fn closed(&self, id: &str) {
        let mut held = self.held();
        held.forget(id);
        held.order.retain(|kept| kept != id);
    }

    /// The most sessions one principal may hold.
    pub(super) fn per_principal(&self) -> usize {
        self.per_principal
    }
}

impl Opening {
    /// The session opened as `id`: it belongs to its principal from now on.
    pub(super) fn opened(self, id: &str) {
        let mut held = self.book.held();
        if held.owners.contains_key(id) {
            return;
        }
        if held.order.len() >= SESSIONS
            && let Some(oldest) = held.order.pop_front()
        {
            held.forget(&oldest);
        }
        held.owners.insert(id.to_owned(), self.principal.clone());
        held.by_principal
            .entry(self.principal.clone())
            .or_default()
            .insert(id.to_owned());
        held.order.push_back(id.to_owned());
    }
}

impl Drop for Opening {
    fn drop(&mut self) {
        let mut held = self.book.held();
        if let Some(opening) = held.opening.get_mut(&self.principal) {
            *opening -= 1;
            if *opening == 0 {
                held.opening.remove(&self.principal);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alice() -> Principal {
        Principal::new("acme", "alice")
    }

    async fn open(book: &Arc<SessionBook>, principal: &Principal) -> Option<Opening> {
        book.open(principal, |_| async { true }).await
    }

    #[tokio::test]
    async fn a_principal_opens_no_more_than_its_limit_counting_those_opening() {
        let book = Arc::new(SessionBook::new(2));
        let first = open(&book, &alice()).await.expect("the first opens");
        let second = open(&book, &alice()).await.expect("the second opens");
        assert!(open(&book, &alice()).await.is_none());
        first.opened("s1");
        drop(second);
        let third = open(&book, &alice())
            .await
            .expect("a dropped opening counts no more");
        third.opened("s2");
        assert!(open(&book, &alice()).await.is_none());
        assert!(open(&book, &Principal::new("acme", "bob")).await.is_some());
    }

    #[tokio::test]
    async fn sessions_the_transport_ended_are_forgotten_at_the_limit() {
        let book = Arc::new(SessionBook::new(1));
        open(&book, &alice()).await.unwrap().opened("gone");
        let opening = book
            .open(&alice(), |id| async move { id != "gone" })
            .await
            .expect("the ended session no longer counts");
        opening.opened("new");
        assert_eq!(book.owner("new"), Some(alice()));
        assert_eq!(book.owner("gone"), None);
    }

    #[tokio::test]
    async fn a_closed_session_frees_its_place() {
        let book = Arc::new(SessionBook::new(1));
        open(&book, &alice()).await.unwrap().opened("s1");
        book.closed("s1");
        assert!(open(&book, &alice()).await.is_some());
    }
}
