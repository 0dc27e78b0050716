//! The approvals console: pages where approvers sign in with their passkeys, see what waits
//! for them, and approve or reject it with a signature over the exact action.
//!
//! [`Console::router`] is an axum [`Router`] an application mounts in its own server (e.g.
//! `Router::new().nest("/console", console.router())`, with
//! [`ConsoleOptions::base_path`] `"/console"`). Its pages are rendered on the server
//! (MiniJinja, auto-escaped); the one script, `console.js`, holds the WebAuthn ceremonies,
//! which a page cannot hold without it.
//!
//! - **Sign-in** with a passkey, over a random challenge; the first passkey of an approver is
//!   enrolled through an invitation ([`Console::invitation`]) the operator makes, valid until
//!   that approver's first passkey is enrolled or it lapses.
//! - **Pending approvals** the signed-in approver may decide (their tenants and tools, never
//!   their own call), oldest first, with how many approvals each still needs.
//! - **One approval**: the preview with hidden characters shown escaped, the rule, who has
//!   approved so far; approve, or reject with a reason from the fixed list, each signed by
//!   the approver's passkey over the [approval statement](crate::results::ApprovalStatement)
//!   and recorded by [`Dispatcher::decide_signed`].
//!
//! The page itself: the session cookie is `HttpOnly`, `SameSite=Strict` and `Secure` (but on
//! a loopback origin), signed with the console's key and ended when its credential is revoked
//! or its approver signs out (on every replica: the directory records it);
//! every state-changing request is a POST carrying the session's CSRF token from an allowed
//! `Origin`; every response
//! has a Content Security Policy without inline script and `frame-ancestors 'none'`;
//! failed sign-ins are limited per browser visit, never per approver id.
//!
//! - **Approve with changes**: a form built from the tool's input schema, read back into
//!   arguments that the contract checks before anything is signed; the statement then
//!   names the edits by digest, and the approvers who come after see the diff and approve
//!   the same edits.
//! - **Receipts** ([`Console::with_audit_log`]): those the approver took part in (every one
//!   for an auditor, an approver enrolled for every tenant `"*"`), each verified as an
//!   auditor would offline and downloadable as the exact text that verifies.
//! - **The audit chain** (auditors): how many records, whether the keyed chain holds through
//!   the newest of them; asked to check the whole log, through all of them, and up to which
//!   signed tree head the published keys hold it.
//! - **The overview** (auditors): per tool over the last day (the 1,440 minutes ending with
//!   the present one), calls, approvals pending, granted, rejected and unknown outcomes
//!   reconciled, drawn as a small SVG chart.
//!
//! A page costs what it shows: the receipts and audit pages read
//! [`ConsoleOptions::page_records`] records of each chain from its end (older ones a link
//! away), and each page reads the directory rows of the approvers it names, by key. The
//! overview reads the counts a log keeps as it appends ([`AuditHistory::tally`]:
//! `PostgresAuditLog` keeps them, per minute and tool), and otherwise reads the records back
//! to the day's beginning. Only the whole check reads the whole log.

mod audit;
mod audit_pages;
mod form;
mod limit;
#[cfg(feature = "mcp-http")]
mod mcp;
mod options;
mod pages;
mod state;
mod token;

pub use options::ConsoleOptions;

use std::sync::{Arc, RwLock};
use std::time::Duration;

use axum::Router;
use axum::routing::{get, post};

use crate::control::{AuditHistory, EnrollError};
use crate::dispatch::Dispatcher;
use crate::results::{KeySet, SecretKey};
use audit::AuditView;
use limit::FailureLimit;
use state::{Ceremonies, Inner};
use token::{Invitation, Signer};

/// Why the console could not be set up or an invitation made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConsoleError {
    /// The dispatcher has no relying party ([`DispatcherBuilder::relying_party`](crate::dispatch::DispatcherBuilder::relying_party)):
    /// nobody could sign in.
    #[error("the dispatcher has no relying party: passkeys cannot be checked")]
    NoRelyingParty,
    /// The console's origin is not one of the relying party's.
    #[error("the console's origin {0} is not one of the relying party's origins")]
    OriginNotAllowed(String),
    /// The invited approver is not in the directory, or has a passkey already.
    #[error("{0}")]
    Invitation(String),
    /// The directory could not be read.
    #[error("the approver directory could not be read: {0}")]
    Directory(#[from] EnrollError),
}

/// The approvals console over one dispatcher: see the [module docs](self).
#[derive(Debug, Clone)]
pub struct Console {
    inner: Arc<Inner>,
}

impl Console {
    /// A console over `dispatcher`, whose cookies and invitations `key` signs (keep it
    /// secret and the same across replicas and restarts: a new key signs everyone out and
    /// voids every invitation).
    ///
    /// # Errors
    ///
    /// [`ConsoleError::NoRelyingParty`] when the dispatcher has no relying party;
    /// [`ConsoleError::OriginNotAllowed`] when `options.origin` is not one of its origins.
    pub fn new(
        dispatcher: Arc<Dispatcher>,
        key: SecretKey,
        options: ConsoleOptions,
    ) -> Result<Console, ConsoleError> {
        let party = dispatcher
            .relying_party()
            .ok_or(ConsoleError::NoRelyingParty)?;
        if !party.origins.iter().any(|origin| origin == &options.origin) {
            return Err(ConsoleError::OriginNotAllowed(options.origin.clone()));
        }
        let sign_ins = FailureLimit::new(options.sign_in_attempts, options.sign_in_window);
        Ok(Console {
            inner: Arc::new(Inner {
                dispatcher,
                signer: Signer::new(key),
                templates: pages::templates(),
                ceremonies: Ceremonies::default(),
                sign_ins,
                options,
                audit: RwLock::new(None),
            }),
        })
    }

    /// The console's routes, to mount at [`ConsoleOptions::base_path`].
    pub fn router(&self) -> Router {
        Router::new()
            .route("/", get(pages::home))
            .route("/approvals", get(pages::pending))
            .route("/sign-in", get(pages::sign_in).post(pages::finish_sign_in))
            .route("/sign-in/options", post(pages::begin_sign_in))
            .route("/sign-out", post(pages::sign_out))
            .route(
                "/invitations/{token}",
                get(pages::invitation).post(pages::finish_enrollment),
            )
            .route(
                "/invitations/{token}/options",
                post(pages::begin_enrollment),
            )
            .route("/approvals/{approval_id}", get(pages::approval))
            .route("/approvals/{approval_id}/statement", post(pages::statement))
            .route("/approvals/{approval_id}/decision", post(pages::decide))
            .route("/receipts", get(audit_pages::receipts))
            .route("/receipts/{approval_id}", get(audit_pages::receipt))
            .route("/audit", get(audit_pages::chain))
            .route("/overview", get(audit_pages::overview))
            .route("/console.js", get(pages::script))
            .route("/console.css", get(pages::style))
            .fallback(pages::not_found)
            .layer(axum::middleware::from_fn_with_state(
                Arc::clone(&self.inner),
                pages::same_origin,
            ))
            .layer(axum::middleware::map_response(pages::secured))
            .with_state(Arc::clone(&self.inner))
    }

    /// The same console, with the pages over `log` (the audit log the dispatcher writes):
    /// receipts, the chain's state and the overview. `audit_key` is the key its chain is
    /// keyed with; `published_keys` the public keys of whoever signs the receipts and the
    /// log's tree heads, as auditors hold them. Every page reads the log anew.
    #[must_use]
    pub fn with_audit_log(
        self,
        log: Arc<dyn AuditHistory>,
        audit_key: SecretKey,
        published_keys: KeySet,
    ) -> Console {
        let view = AuditView {
            history: log,
            key: audit_key,
            keys: published_keys,
        };
        *self
            .inner
            .audit
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Arc::new(view));
        self
    }

    /// [`router`](Self::router) under the console's base path: an application of its own,
    /// for a server that serves the console alone.
    pub fn mounted(&self) -> Router {
        if self.inner.options.base_path.is_empty() {
            self.router()
        } else {
            Router::new().nest(&self.inner.options.base_path, self.router())
        }
    }

    /// The path the console's router is mounted at ([`ConsoleOptions::base_path`]).
    #[must_use]
    pub fn base_path(&self) -> &str {
        &self.inner.options.base_path
    }

    /// The address of the page of approval `approval_id`, at the console's origin.
    #[must_use]
    pub fn approval_url(&self, approval_id: &str) -> String {
        format!(
            "{}{}",
            self.inner.options.origin,
            self.inner.path(&format!("/approvals/{approval_id}"))
        )
    }

    /// An invitation for `approver_id` (in the directory, with no passkey yet) to enrol their
    /// first passkey: the path of its page under [`ConsoleOptions::base_path`], valid for
    /// `lifetime` or until that approver has a passkey, whichever comes first. The operator
    /// hands it to the person out of band.
    ///
    /// # Errors
    ///
    /// [`ConsoleError::Invitation`] when the approver is unknown or has a passkey already;
    /// [`ConsoleError::Directory`] when the directory could not be read.
    pub async fn invitation(
        &self,
        approver_id: &str,
        lifetime: Duration,
    ) -> Result<String, ConsoleError> {
        let approver = self
            .inner
            .dispatcher
            .approver(approver_id)
            .await
            .map_err(|error| ConsoleError::Directory(EnrollError::Store(error)))?
            .ok_or_else(|| ConsoleError::Invitation(format!("no approver {approver_id:?}")))?;
        if !approver.credentials.is_empty() {
            return Err(ConsoleError::Invitation(format!(
                "{approver_id:?} has a passkey already: they sign in with it"
            )));
        }
        let nonce = token::random_id().ok_or_else(|| {
            ConsoleError::Invitation("the system's random generator failed".into())
        })?;
        let invitation = Invitation {
            approver_id: approver.approver_id,
            expires_at: self.inner.unix_now()
                + i64::try_from(lifetime.as_secs()).unwrap_or(i64::MAX / 2),
            nonce,
        };
        Ok(format!(
            "{}/invitations/{}",
            self.inner.options.base_path,
            self.inner.signer.seal_invitation(&invitation)
        ))
    }
}
