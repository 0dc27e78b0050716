//! A real browser for the console's tests: Debian's Chromium, headless, driven by its
//! ChromeDriver over WebDriver (fantoccini), each browser with a virtual authenticator (the
//! WebAuthn spec's WebDriver extension, §11.3) that holds its person's passkey and verifies
//! them without a prompt.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use fantoccini::wd::{Capabilities, WebDriverCompatibleCommand};
use fantoccini::{Client, ClientBuilder, Locator};
use http::Method;
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{Value, json};
use tokio::process::{Child, Command};

/// The variable naming the `chromedriver` binary (Debian's package `chromium-driver`).
pub const CHROMEDRIVER_VARIABLE: &str = "TOOL_CONTRACT_CHROMEDRIVER";

/// The `chromedriver` binary, or `None` (with a line saying `test` was skipped).
pub fn chromedriver(test: &str) -> Option<PathBuf> {
    crate::program_named_by(CHROMEDRIVER_VARIABLE, test)
}

/// A running ChromeDriver on a loopback port; stopped when dropped, with every browser it
/// started (a test that fails leaves none behind).
pub struct Driver {
    _process: Child,
    url: String,
    /// The profiles of the browsers it started.
    profiles: Vec<PathBuf>,
}

impl Drop for Driver {
    fn drop(&mut self) {
        // A browser whose session never ended outlives its driver.
        for profile in &self.profiles {
            end_browsers_of(profile);
        }
    }
}

/// Ends every process started with `profile` as its `--user-data-dir`, which only a browser
/// of that profile names. The pattern itself starts with `--`, so it follows `--`: pkill would
/// read it as an option it does not know, and end nothing.
pub fn end_browsers_of(profile: &Path) {
    let _ = std::process::Command::new("pkill")
        .arg("-f")
        .arg("--")
        .arg(format!("--user-data-dir={}", profile.display()))
        .stderr(Stdio::null())
        .status();
}

impl Driver {
    /// Starts `chromedriver` on a free loopback port and waits until it answers.
    pub async fn start(chromedriver: &Path) -> Driver {
        let port = {
            let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
            probe.local_addr().expect("its address").port()
        };
        let process = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("chromedriver starts");
        let url = format!("http://127.0.0.1:{port}");
        for _ in 0..100 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
            {
                return Driver {
                    _process: process,
                    url,
                    profiles: Vec::new(),
                };
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("chromedriver did not listen on {url}");
    }

    /// A new browser of its own (its own profile, cookies and authenticator), downloading
    /// into `downloads`.
    pub async fn browser(&mut self, downloads: &Path) -> Browser {
        let profile = downloads.join("profile");
        self.profiles.push(profile.clone());
        let mut capabilities = Capabilities::new();
        capabilities.insert(
            "goog:chromeOptions".to_owned(),
            json!({
                "binary": std::env::var("TOOL_CONTRACT_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_owned()),
                // As this machine's own check starts it: headless, as root, and without the
                // background connections a closed network refuses.
                "args": [
                    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync", "--disable-quic",
                    "--window-size=1100,900", "--hide-scrollbars",
                    format!("--user-data-dir={}", profile.display()),
                ],
                "prefs": {
                    "download.default_directory": downloads.display().to_string(),
                    "download.prompt_for_download": false,
                },
            }),
        );
        let client = ClientBuilder::new(HttpConnector::new())
            .capabilities(capabilities)
            .connect(&self.url)
            .await
            .expect("a browser session");
        let authenticator = client
            .issue_cmd(AddVirtualAuthenticator)
            .await
            .expect("a virtual authenticator");
        assert!(authenticator.is_string(), "{authenticator}");
        Browser { client }
    }
}

/// `POST /session/{id}/webauthn/authenticator`: a platform authenticator with a resident
/// key and user verification, which the person always passes.
#[derive(Debug)]
struct AddVirtualAuthenticator;

impl WebDriverCompatibleCommand for AddVirtualAuthenticator {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!(
            "session/{}/webauthn/authenticator",
            session_id.unwrap_or_default()
        ))
    }

    fn method_and_body(&self, _: &url::Url) -> (Method, Option<String>) {
        let body = json!({
            "protocol": "ctap2",
            "transport": "internal",
            "hasResidentKey": true,
            "hasUserVerification": true,
            "isUserConsenting": true,
            "isUserVerified": true,
        });
        (Method::POST, Some(body.to_string()))
    }
}

/// One person's browser.
pub struct Browser {
    /// The WebDriver session.
    pub client: Client,
}

impl Browser {
    /// Opens `url` and waits for its `<main>`.
    pub async fn open(&self, url: &str) {
        self.client.goto(url).await.expect("the page opens");
        self.element("main").await;
    }

    /// The first element `css` selects, waited for up to ten seconds.
    pub async fn element(&self, css: &str) -> fantoccini::elements::Element {
        self.client
            .wait()
            .at_most(Duration::from_secs(10))
            .for_element(Locator::Css(css))
            .await
            .unwrap_or_else(|error| panic!("no {css}: {error}"))
    }

    /// Clicks the first element `css` selects.
    pub async fn click(&self, css: &str) {
        self.element(css)
            .await
            .click()
            .await
            .unwrap_or_else(|error| panic!("{css} does not click: {error}"));
    }

    /// Types `text` into the field `css` selects, in place of what it held.
    pub async fn fill(&self, css: &str, text: &str) {
        let field = self.element(css).await;
        field.clear().await.expect("the field clears");
        field.send_keys(text).await.expect("the field takes keys");
    }

    /// The page's address, waited for until its path ends with `path_end` (ten seconds).
    pub async fn wait_for_path(&self, path_end: &str) {
        for _ in 0..200 {
            let url = self.client.current_url().await.expect("an address");
            if url.path().ends_with(path_end) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let url = self.client.current_url().await.expect("an address");
        panic!("the browser stayed at {url}, not …{path_end}");
    }

    /// The text of the status line of the form `form_css`, once it is no longer the line
    /// shown while the passkey is asked (ten seconds).
    pub async fn status_of(&self, form_css: &str) -> String {
        let status = self.element(&format!("{form_css} .status")).await;
        for _ in 0..200 {
            let text = status.text().await.unwrap_or_default();
            if !text.is_empty() && !text.starts_with("Waiting") {
                return text;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("{form_css} shows no answer");
    }

    /// The page's visible text.
    pub async fn text(&self) -> String {
        self.element("body")
            .await
            .text()
            .await
            .expect("the page has text")
    }

    /// Runs `script` (an async function body; `arguments[0]` is the callback) in the page and
    /// returns what it passed back.
    pub async fn run(&self, script: &str) -> Value {
        self.client
            .execute_async(script, Vec::new())
            .await
            .expect("the script runs")
    }

    /// A PNG of the page as the person sees it, written to `path`.
    pub async fn screenshot(&self, path: &Path) {
        let png = self.client.screenshot().await.expect("a screenshot");
        std::fs::write(path, png).expect("the screenshot is written");
    }

    /// Ends the session (the browser closes).
    pub async fn close(self) {
        let _ = self.client.close().await;
    }
}
