//! The approvals console on loopback, and one person's visit to it over plain HTTP: its
//! cookie, the CSRF token of the page last read, and the same JSON the page's script posts.

use std::path::PathBuf;
use std::sync::Arc;

use http::Method;
use serde_json::{Value, json};
use time::OffsetDateTime;
use tool_contract::SecretKey;
use tool_contract::console::{Console, ConsoleOptions};
use tool_contract::control::{
    Approver, ControlStore, JsonLinesAuditLog, MemoryStore, PendingApproval,
};
use tool_contract::dispatch::{Dispatcher, DispatcherBuilder};
use tool_contract::results::{KeySet, ReceiptSigner, RelyingParty};

use crate::http::{Answer, send};
use crate::passkey::{ORIGIN, RP_ID, SoftAuthenticator};
use crate::tracker::{Remote, SendMessage, audit_key, builder};

/// A desk whose messages need two approvers, each signing with a passkey, and whose
/// redemptions are receipted; its audit log a file that signs a tree head every two records;
/// its console on loopback, with that log. Four people in its directory, none enrolled yet:
/// two supervisors of `acme`, one of another tenant, and an auditor of every tenant.
pub struct Desk {
    /// The remote the desk's tools call.
    pub remote: Arc<Remote>,
    /// The dispatcher.
    pub dispatcher: Arc<Dispatcher>,
    /// The console.
    pub console: Console,
    /// The console's base URL.
    pub base: String,
    /// The audit log's file.
    pub audit_log: PathBuf,
    /// The audit log itself, as the dispatcher writes it.
    pub log: Arc<JsonLinesAuditLog>,
    /// The published key of the receipts and tree heads.
    pub published: KeySet,
}

/// The signer of the desk's receipts and tree heads.
pub fn receipt_signer() -> ReceiptSigner {
    let since = OffsetDateTime::from_unix_timestamp(1_767_225_600).expect("2026");
    ReceiptSigner::new("desk-2026", [0x51; 32], since)
}

/// How many desks this process made: each its own audit log.
static DESKS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A new [`Desk`].
pub async fn desk() -> Desk {
    let remote = Remote::new();
    let messages = builder(&remote)
        .approvers_when(2, |_: &SendMessage| true)
        .signed_approvals_when(|_: &SendMessage| true);
    desk_of(remote, messages).await
}

/// A [`Desk`] of the tools `tools` dispatches (their rules of approval its own), over a new
/// memory store, with the desk's audit log, passkeys, receipts, directory and console.
pub async fn desk_of(remote: Arc<Remote>, tools: DispatcherBuilder) -> Desk {
    let store: Arc<dyn ControlStore> = Arc::new(MemoryStore::new());
    let relying_party = relying_party();
    let directory = std::env::temp_dir().join(format!(
        "tool-contract-console-{}-{}",
        std::process::id(),
        DESKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&directory).expect("a temporary directory");
    let audit_log = directory.join("audit.jsonl");
    let log = Arc::new(
        JsonLinesAuditLog::open(&audit_log, audit_key())
            .expect("the audit log opens")
            .sign_tree_heads(receipt_signer(), 2)
            .expect("it signs tree heads"),
    );
    let dispatcher = Arc::new(
        tools
            .store(store)
            .audit_sink(log.clone())
            .relying_party(relying_party)
            .approval_receipts(receipt_signer())
            .build()
            .expect("the desk builds"),
    );
    put_people(&dispatcher).await;
    let published = KeySet::new([receipt_signer().published_key()]).expect("one key");
    let console = Console::new(
        Arc::clone(&dispatcher),
        SecretKey::new([0x33; 32]).expect("a key"),
        ConsoleOptions::new(ORIGIN, "/console"),
    )
    .expect("the console sets up")
    .with_audit_log(log.clone(), audit_key(), published.clone());
    let base = serve(&console).await;
    Desk {
        remote,
        dispatcher,
        console,
        base,
        audit_log,
        log,
        published,
    }
}

/// The desk's four people, in `dispatcher`'s directory: two supervisors of `acme`, one of
/// another tenant, and an auditor of every tenant.
pub async fn put_people(dispatcher: &Dispatcher) {
    for (id, name, tenant) in [
        ("sup-ana", "Ana Lima", "acme"),
        ("sup-ben", "Ben Okafor", "acme"),
        ("sup-cy", "Cy Other", "globex"),
        ("aud-dee", "Dee Auditor", "*"),
    ] {
        dispatcher
            .put_approver(Approver::new(id, name, [tenant], ["*"]))
            .await
            .expect("added");
    }
}

/// A relying party for the tests' passkeys.
pub fn relying_party() -> RelyingParty {
    RelyingParty::new(RP_ID, "Acme desk", [ORIGIN]).expect("the tests' relying party")
}

impl Desk {
    /// Ana, enrolled and signed in, on the page of a new pending approval (`m-1` to bob):
    /// her browser, the approval, and the path the page asks its statement at.
    pub async fn ana_on_a_pending_approval(&self) -> (Visit, PendingApproval, String) {
        let (mut ana, _) = self.enrolled("sup-ana").await;
        let call = crate::tracker::message("m-1", "bob");
        let pending = crate::tracker::pending_approval(&self.dispatcher, &call).await;
        ana.get(&format!("/approvals/{}", pending.approval_id))
            .await;
        let statement = format!("/approvals/{}/statement", pending.approval_id);
        (ana, pending, statement)
    }

    /// `approver_id`'s browser, enrolled through an invitation and signed in.
    pub async fn enrolled(&self, approver_id: &str) -> (Visit, SoftAuthenticator) {
        let mut visit = Visit::new(&self.base);
        let mut authenticator = SoftAuthenticator::new();
        let invited = invitation(&self.console, approver_id).await;
        let enrolled = visit.enrol(&invited, &mut authenticator).await;
        assert_eq!(enrolled.status, 200, "{}", enrolled.text);
        assert_eq!(enrolled.json()["next"], "/console/approvals");
        // As the page's script does: on to the list, whose page carries the new CSRF token.
        assert_eq!(visit.get("/approvals").await.status, 200);
        (visit, authenticator)
    }
}

/// Serves `console`'s router at `/console` on a loopback port: its base URL.
pub async fn serve(console: &Console) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let address = listener.local_addr().expect("its address");
    let app = axum::Router::new().nest("/console", console.router());
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{address}/console")
}

/// One person's visit: the cookie the console set, the CSRF token of the last page read.
#[derive(Debug, Clone)]
pub struct Visit {
    base: String,
    /// The `tc_console` cookie as last set, `name=value`.
    pub cookie: Option<String>,
    /// The CSRF token of the last page read.
    pub csrf: String,
}

impl Visit {
    /// A visit to the console at `base` (e.g. `http://127.0.0.1:4000/console`).
    pub fn new(base: &str) -> Self {
        Visit {
            base: base.to_owned(),
            cookie: None,
            csrf: String::new(),
        }
    }

    fn keep_cookie(&mut self, answer: &Answer) {
        let set = answer.header("set-cookie");
        if let Some(pair) = set.split(';').next().filter(|pair| !pair.is_empty()) {
            self.cookie = Some(pair.to_owned());
        }
    }

    /// GETs `path` (under the console), keeping its cookie and the page's CSRF token.
    pub async fn get(&mut self, path: &str) -> Answer {
        let cookie = self.cookie.clone().unwrap_or_default();
        let headers: Vec<(&str, &str)> = if cookie.is_empty() {
            Vec::new()
        } else {
            vec![("cookie", cookie.as_str())]
        };
        let answer = send(
            Method::GET,
            &format!("{}{path}", self.base),
            &headers,
            Vec::new(),
        )
        .await;
        self.keep_cookie(&answer);
        if let Some(token) = csrf_of(&answer.text) {
            self.csrf = token;
        }
        answer
    }

    /// POSTs `body` as the page's script does: JSON, with the cookie and the CSRF header
    /// (`csrf`: `None` leaves the header out).
    pub async fn post_with(&mut self, path: &str, body: &Value, csrf: Option<&str>) -> Answer {
        self.post_as(path, body, csrf, None).await
    }

    /// [`post_with`](Self::post_with), with an `Origin` header when `origin` is given.
    async fn post_as(
        &mut self,
        path: &str,
        body: &Value,
        csrf: Option<&str>,
        origin: Option<&str>,
    ) -> Answer {
        let cookie = self.cookie.clone().unwrap_or_default();
        let mut headers = vec![("content-type", "application/json")];
        if !cookie.is_empty() {
            headers.push(("cookie", cookie.as_str()));
        }
        if let Some(csrf) = csrf {
            headers.push(("x-csrf-token", csrf));
        }
        if let Some(origin) = origin {
            headers.push(("origin", origin));
        }
        let answer = send(
            Method::POST,
            &format!("{}{path}", self.base),
            &headers,
            serde_json::to_vec(body).expect("JSON"),
        )
        .await;
        self.keep_cookie(&answer);
        answer
    }

    /// Tries to sign in as `approver_id` with the passkey of `other_id` on `other_key`: an
    /// assertion `other_key` makes for a sign-in of `other_id` (an authenticator signs only
    /// for a credential it holds), posted to this visit's sign-in as `approver_id`.
    pub async fn sign_in_with_anothers(
        &mut self,
        approver_id: &str,
        other_id: &str,
        other_key: &mut SoftAuthenticator,
    ) -> Answer {
        let begun = match self.begin_sign_in(approver_id).await {
            Ok(begun) => begun,
            Err(refused) => return refused,
        };
        let theirs = Visit::new(&self.base)
            .begin_sign_in(other_id)
            .await
            .expect("their sign-in begins");
        let credential = other_key.sign(&theirs["options"]).await;
        let credential: Value = serde_json::from_slice(&credential).expect("JSON");
        self.post(
            "/sign-in",
            &json!({"ceremony": begun["ceremony"], "credential": credential}),
        )
        .await
    }

    /// Opens the sign-in page and asks the options of `approver_id`'s sign-in: the ceremony
    /// and its options, or the answer that refused them.
    async fn begin_sign_in(&mut self, approver_id: &str) -> Result<Value, Answer> {
        self.get("/sign-in").await;
        let begun = self
            .post("/sign-in/options", &json!({"approver_id": approver_id}))
            .await;
        if begun.status != 200 {
            return Err(begun);
        }
        Ok(begun.json())
    }

    /// POSTs `body` with this page's CSRF token, as a page of `origin` would (its `Origin`).
    pub async fn post_from(&mut self, origin: &str, path: &str, body: &Value) -> Answer {
        let csrf = self.csrf.clone();
        self.post_as(path, body, Some(&csrf), Some(origin)).await
    }

    /// POSTs `body` with this page's CSRF token.
    pub async fn post(&mut self, path: &str, body: &Value) -> Answer {
        let csrf = self.csrf.clone();
        self.post_with(path, body, Some(&csrf)).await
    }

    /// Follows an invitation (`path` under the base, as [`Console::invitation`] gives it less
    /// the base path): enrols a passkey on `authenticator` and is signed in.
    pub async fn enrol(
        &mut self,
        invitation: &str,
        authenticator: &mut SoftAuthenticator,
    ) -> Answer {
        let page = self.get(invitation).await;
        assert_eq!(page.status, 200, "{}", page.text);
        let begun = self
            .post(&format!("{invitation}/options"), &json!({}))
            .await;
        assert_eq!(begun.status, 200, "{}", begun.text);
        let begun = begun.json();
        let credential = authenticator.register(&begun["options"]).await;
        let credential: Value = serde_json::from_slice(&credential).expect("JSON");
        self.post(
            invitation,
            &json!({"ceremony": begun["ceremony"], "credential": credential}),
        )
        .await
    }

    /// Signs in as `approver_id` with `authenticator`.
    pub async fn sign_in(
        &mut self,
        approver_id: &str,
        authenticator: &mut SoftAuthenticator,
    ) -> Answer {
        let begun = match self.begin_sign_in(approver_id).await {
            Ok(begun) => begun,
            Err(refused) => return refused,
        };
        let credential = authenticator.sign(&begun["options"]).await;
        let credential: Value = serde_json::from_slice(&credential).expect("JSON");
        self.post(
            "/sign-in",
            &json!({"ceremony": begun["ceremony"], "credential": credential}),
        )
        .await
    }

    /// Decides `approval_id` as the approval page does: asks the statement of `decision`,
    /// signs it on `authenticator`, posts it.
    pub async fn decide(
        &mut self,
        approval_id: &str,
        decision: &str,
        authenticator: &mut SoftAuthenticator,
    ) -> Answer {
        self.decide_with(approval_id, &json!({"decision": decision}), authenticator)
            .await
    }

    /// Decides `approval_id` with the fields of one of the approval page's forms (the
    /// decision, and an edit's `edit.*` fields): asks the statement, signs it on
    /// `authenticator`, posts it with the edits the statement names.
    pub async fn decide_with(
        &mut self,
        approval_id: &str,
        fields: &Value,
        authenticator: &mut SoftAuthenticator,
    ) -> Answer {
        let page = format!("/approvals/{approval_id}");
        self.get(&page).await;
        let asked = self.post(&format!("{page}/statement"), fields).await;
        if asked.status != 200 {
            return asked;
        }
        let asked = asked.json();
        let credential = authenticator.sign(&asked["options"]).await;
        let credential: Value = serde_json::from_slice(&credential).expect("JSON");
        self.post(
            &format!("{page}/decision"),
            &json!({
                "statement": asked["statement"],
                "edited_arguments": asked["edited_arguments"],
                "credential": credential,
            }),
        )
        .await
    }
}

/// The CSRF token a page carries in its `<meta name="csrf-token">`.
fn csrf_of(html: &str) -> Option<String> {
    let at = html.find(r#"<meta name="csrf-token" content=""#)?;
    let rest = &html[at + r#"<meta name="csrf-token" content=""#.len()..];
    rest.split('"').next().map(str::to_owned)
}

/// The console's invitation path for `approver_id`, less its base path (`/console`).
pub async fn invitation(console: &Console, approver_id: &str) -> String {
    let path = console
        .invitation(approver_id, std::time::Duration::from_secs(3600))
        .await
        .expect("an invitation");
    path.strip_prefix("/console")
        .expect("under the base path")
        .to_owned()
}
