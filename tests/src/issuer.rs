//! A real OAuth 2 / OpenID issuer for the tests: `oauth2-mock-server` under Node 22, started on
//! a loopback port by `tests/node/issuer.mjs`, signing real tokens with keys of its own.
//!
//! It needs Node 22 and the packages of `tests/node` (`npm ci` there). `.ci/run` installs both
//! and names the binary in [`NODE_VARIABLE`]; without it the tests that need an issuer say
//! they were skipped.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

use crate::http;

/// The variable naming the Node 22 binary.
pub const NODE_VARIABLE: &str = "TOOL_CONTRACT_NODE";

/// The resource server's client id at the issuer, for introspection.
pub const CLIENT_ID: &str = "desk-rs";
/// Its secret.
pub const CLIENT_SECRET: &str = "desk-rs-secret";

/// The folder of the Node packages and harnesses.
pub fn node_folder() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("node")
}

/// The Node 22 binary, or `None` (with a line saying `test` was skipped).
pub fn node(test: &str) -> Option<PathBuf> {
    crate::program_named_by(NODE_VARIABLE, test)
}

/// A running issuer; stopped when dropped.
#[derive(Debug)]
pub struct MockIssuer {
    process: Child,
    /// Its issuer URL, as its tokens' `iss` writes it.
    pub url: String,
}

impl MockIssuer {
    /// A new issuer, or `None` when Node is not configured.
    pub fn start(test: &str) -> Option<MockIssuer> {
        let node = node(test)?;
        let mut process = Command::new(&node)
            .arg(node_folder().join("issuer.mjs"))
            .current_dir(node_folder())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|error| panic!("{}: {error}", node.display()));
        let mut line = String::new();
        BufReader::new(process.stdout.take().expect("its stdout"))
            .read_line(&mut line)
            .expect("the issuer names its URL");
        let started: Value = serde_json::from_str(&line)
            .unwrap_or_else(|_| panic!("the issuer did not start: {line:?}"));
        let url = started["issuer"]
            .as_str()
            .expect("an issuer URL")
            .to_owned();
        Some(MockIssuer { process, url })
    }

    /// A token of this issuer: `ask` names `aud`, `scope`, `sub`, `kid`, `expires_in`,
    /// `claims` (more, or overriding), `header`, `remove` (claims left out) and `forge`
    /// (`none`, `hs256-public`).
    pub async fn token(&self, ask: Value) -> String {
        let answer = http::post_json(&format!("{}/harness/token", self.url), &[], &ask).await;
        answer.json()["access_token"]
            .as_str()
            .unwrap_or_else(|| panic!("no token: {}", answer.text))
            .to_owned()
    }

    /// A token for `audience` of `tenant`'s `subject`, granting `scope`.
    pub async fn token_for(
        &self,
        audience: &str,
        tenant: &str,
        subject: &str,
        scope: &str,
    ) -> String {
        self.token(json!({ "aud": audience, "sub": subject, "scope": scope, "claims": { "tenant": tenant } }))
            .await
    }

    /// A new signing key the issuer publishes from now on; its `kid`.
    pub async fn rotate(&self) -> String {
        let answer =
            http::post_json(&format!("{}/harness/rotate", self.url), &[], &json!({})).await;
        answer.json()["kid"].as_str().expect("a kid").to_owned()
    }

    /// How many times its JWK Set was fetched.
    pub async fn jwks_requests(&self) -> u64 {
        let answer = http::get(&format!("{}/harness/jwks-requests", self.url)).await;
        answer.json()["count"].as_u64().expect("a count")
    }

    /// Revokes `token`: introspection says it is not active from now on.
    pub async fn revoke(&self, token: &str) {
        let answer = http::post_json(
            &format!("{}/harness/revoke", self.url),
            &[],
            &json!({ "token": token }),
        )
        .await;
        assert!(answer.status.is_success(), "{}", answer.text);
    }
}

impl Drop for MockIssuer {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}
