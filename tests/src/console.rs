//! The approvals console on loopback, and one person's visit to it over plain HTTP: its
//! cookie, the CSRF token of the page last read, and the same JSON the page's script posts.

use http::Method;
use serde_json::{Value, json};
use tool_contract::console::Console;

use crate::http::{Answer, send};
use crate::passkey::SoftAuthenticator;

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
        let cookie = self.cookie.clone().unwrap_or_default();
        let mut headers = vec![("content-type", "application/json")];
        if !cookie.is_empty() {
            headers.push(("cookie", cookie.as_str()));
        }
        if let Some(csrf) = csrf {
            headers.push(("x-csrf-token", csrf));
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
        self.get("/sign-in").await;
        let begun = self
            .post("/sign-in/options", &json!({"approver_id": approver_id}))
            .await;
        if begun.status != 200 {
            return begun;
        }
        let begun = begun.json();
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
        let page = format!("/approvals/{approval_id}");
        self.get(&page).await;
        let asked = self
            .post(&format!("{page}/statement"), &json!({"decision": decision}))
            .await;
        if asked.status != 200 {
            return asked;
        }
        let asked = asked.json();
        let credential = authenticator.sign(&asked["options"]).await;
        let credential: Value = serde_json::from_slice(&credential).expect("JSON");
        self.post(
            &format!("{page}/decision"),
            &json!({"statement": asked["statement"], "credential": credential}),
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
