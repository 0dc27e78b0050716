//! How a console is set up: where it is served, how long its sign-ins and statements last,
//! how many sign-in attempts it allows.

use std::time::Duration;

/// How a [`Console`](super::Console) is set up: [`ConsoleOptions::new`] (the origin and the
/// path have no sensible default), changed by the `with_*` methods, so that a field added
/// later breaks no one.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ConsoleOptions {
    /// The path the router is mounted at (`"/console"`), or `""` at the root: the pages' links
    /// and the cookie's `Path` start with it.
    pub base_path: String,
    /// The origin the pages are served from (`https://desk.example.com`), one of the relying
    /// party's origins. Cookies are `Secure` unless it is `http://` on a loopback host.
    pub origin: String,
    /// How long a sign-in lasts.
    pub session_lifetime: Duration,
    /// How long an approver has to sign a decision's statement once the page asks.
    pub statement_lifetime: Duration,
    /// Failed sign-ins allowed per browser visit in [`sign_in_window`](Self::sign_in_window);
    /// past them, that visit is refused sign-in options until the window ends. The limit
    /// counts failures and the client that made them, never an approver id (which anyone can
    /// type, and lock its owner out with).
    pub sign_in_attempts: u32,
    /// The window of [`sign_in_attempts`](Self::sign_in_attempts).
    pub sign_in_window: Duration,
    /// Origins besides [`origin`](Self::origin) whose pages may post to the console, as
    /// `McpServer::with_allowed_origins` names them for the MCP endpoint (lowercase, no
    /// trailing `/`). A POST whose `Origin` is none of them nor a loopback origin is refused,
    /// by the MCP endpoint's rule.
    pub allowed_origins: Vec<String>,
    /// How many records of each chain of the audit log one page reads: the receipts page
    /// shows the receipts among them, the audit page checks them. A page costs what it
    /// shows, however long the log; older records are a link away.
    pub page_records: usize,
}

impl ConsoleOptions {
    /// Options for pages served from `origin`, mounted at `base_path`: sign-ins of 8 hours,
    /// statements to sign within 5 minutes, 10 failed sign-ins per visit per 15 minutes,
    /// pages of 100 records of the audit log.
    #[must_use]
    pub fn new(origin: impl Into<String>, base_path: impl Into<String>) -> Self {
        ConsoleOptions {
            base_path: base_path.into().trim_end_matches('/').to_owned(),
            origin: origin.into().trim_end_matches('/').to_owned(),
            session_lifetime: Duration::from_secs(8 * 3600),
            statement_lifetime: Duration::from_secs(300),
            sign_in_attempts: 10,
            sign_in_window: Duration::from_secs(15 * 60),
            allowed_origins: Vec::new(),
            page_records: 100,
        }
    }

    /// These options with sign-ins lasting `lifetime`.
    #[must_use]
    pub fn with_session_lifetime(mut self, lifetime: Duration) -> Self {
        self.session_lifetime = lifetime;
        self
    }

    /// These options with `lifetime` to sign a decision's statement once the page asks.
    #[must_use]
    pub fn with_statement_lifetime(mut self, lifetime: Duration) -> Self {
        self.statement_lifetime = lifetime;
        self
    }

    /// These options with `attempts` failed sign-ins per browser visit in each `window`.
    #[must_use]
    pub fn with_sign_in_limit(mut self, attempts: u32, window: Duration) -> Self {
        self.sign_in_attempts = attempts;
        self.sign_in_window = window;
        self
    }

    /// These options with pages of the audit log of `records` records of each chain (at
    /// least one).
    #[must_use]
    pub fn with_page_records(mut self, records: usize) -> Self {
        self.page_records = records.max(1);
        self
    }

    /// These options with pages of `origins` allowed to post too (see
    /// [`allowed_origins`](Self::allowed_origins)).
    #[must_use]
    pub fn with_allowed_origins(
        mut self,
        origins: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.allowed_origins = origins
            .into_iter()
            .map(|origin| crate::vocabulary::origin::normalized(&origin.into()))
            .collect();
        self
    }

    /// The origins a POST may come from, by the rule of
    /// [`origin_allowed`](crate::vocabulary::origin::origin_allowed): the console's own and
    /// those allowed besides.
    pub(super) fn posting_origins(&self) -> Vec<String> {
        let mut origins = vec![crate::vocabulary::origin::normalized(&self.origin)];
        origins.extend(self.allowed_origins.iter().cloned());
        origins
    }

    /// Whether cookies may go without `Secure`: plain HTTP on a loopback host only.
    pub(super) fn loopback(&self) -> bool {
        let Some(rest) = self.origin.strip_prefix("http://") else {
            return false;
        };
        let host = rest.rsplit_once(':').map_or(rest, |(host, _port)| host);
        matches!(host, "localhost" | "127.0.0.1" | "[::1]")
    }
}
