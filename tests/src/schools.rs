//! Advisor discovery: grounded tools over a fake web whose source failures a test scripts,
//! the fixtures of the evidence tests.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tool_contract::control::MemoryAuditLog;
use tool_contract::dispatch::{
    Dispatch, Dispatcher, DispatcherBuilder, HandlerContext, RequireNonEmpty, Task,
};
use tool_contract::evidence::GroundingSource;
use tool_contract::{
    CallContext, FailureKind, RawProvenance, RawResult, Registry, ToolContract, ToolFailure,
    ToolOutput,
};

use crate::tracker::{OPTIONS, alice, clock, context, keys};

/// List the accredited schools that teach a field.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Schools, effect = read_only, source_label = "accreditation register",
                producer_revision = "register-v1", source_tier = authoritative_database)]
pub struct ListCandidateSchools {
    /// The field of study, e.g. optics.
    #[tool_contract(min_len = 1, max_len = 100)]
    pub field: String,
}

/// The schools found, and the register entries that say so.
#[derive(Debug, PartialEq, serde::Serialize, ToolOutput)]
#[tool_output(grounded)]
pub struct Schools {
    /// The schools' names.
    #[tool_output(max_items = 20, max_len = 120)]
    pub names: Vec<String>,
    /// Where the register was read.
    #[tool_output(max_items = 5)]
    pub sources: Vec<GroundingSource>,
}

/// Find advisors at the candidate schools, from the schools' own staff pages.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = AdvisorList, effect = read_only, source_label = "school staff pages",
                producer_revision = "staff-v1", source_tier = official)]
pub struct DiscoverAdvisors {
    /// The candidate schools, as `list_candidate_schools` gave them.
    #[tool_contract(max_items = 20, max_len = 120)]
    pub schools: Vec<String>,
}

/// The advisors found.
#[derive(Debug, PartialEq, serde::Serialize, ToolOutput)]
pub struct AdvisorList {
    /// Each advisor, each with the pages that name them.
    #[tool_output(grounded, max_items = 20)]
    pub advisors: Vec<Advisor>,
}

/// One advisor: grounded where a list declares it so.
#[derive(Debug, PartialEq, serde::Serialize, ToolOutput)]
pub struct Advisor {
    /// The name.
    #[tool_output(min_len = 1, max_len = 120)]
    pub name: String,
    /// The school.
    #[tool_output(max_len = 120)]
    pub school: String,
    /// The e-mail address, if the page gives a real one.
    #[tool_output(max_len = 254, strip_synthetic(placeholder_email))]
    pub email: Option<String>,
    /// Where the advisor was found.
    #[tool_output(max_items = 5)]
    pub sources: Vec<GroundingSource>,
}

/// Search the web for a person's e-mail address.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = EmailHits, effect = read_only, source_label = "web search",
                producer_revision = "search-v1", source_tier = web_search)]
pub struct SearchEmail {
    /// The person's name.
    #[tool_contract(min_len = 1, max_len = 120)]
    pub name: String,
}

/// The addresses found.
#[derive(Debug, PartialEq, serde::Serialize, ToolOutput)]
#[tool_output(grounded)]
pub struct EmailHits {
    /// The addresses.
    #[tool_output(max_items = 5, max_len = 254,
                  reject_synthetic(placeholder_email, with = crate::schools::role_account))]
    pub emails: Vec<String>,
    /// The pages they were read on.
    #[tool_output(max_items = 5)]
    pub sources: Vec<GroundingSource>,
}

/// Ask an advisor for an introduction by e-mail.
#[derive(Debug, serde::Deserialize, ToolContract)]
#[tool_contract(output = Sent, effect = non_idempotent_write, operation = same_arguments, approval = not_required,
                reconcile = manual, source_label = "mailer", producer_revision = "mailer-v1")]
pub struct RequestIntroduction {
    /// The advisor's address.
    #[tool_contract(max_len = 254)]
    pub email: String,
}

/// The message was sent.
#[derive(Debug, PartialEq, serde::Serialize, ToolOutput)]
pub struct Sent {
    /// The mailer's message number.
    #[tool_output(maximum = 1000000)]
    pub message: u32,
}

/// A custom detector: addresses of a role, not of a person (`info@`, `noreply@`).
#[must_use]
pub fn role_account(value: &str) -> bool {
    let local = value.split('@').next().unwrap_or_default();
    matches!(local, "info" | "noreply" | "no-reply" | "office" | "admin")
}

/// The tools above, accepting every shipped adapter.
pub fn registry() -> Registry {
    tool_contract::registry![
        ListCandidateSchools,
        DiscoverAdvisors,
        SearchEmail,
        RequestIntroduction
    ]
    .into_builder()
    .all_adapters()
    .build()
}

/// The fake web: what each source answers, and the failures a test scripts for the next
/// requests.
#[derive(Debug, Default)]
pub struct Web {
    state: Mutex<WebState>,
}

#[derive(Debug, Default)]
struct WebState {
    failures: VecDeque<(FailureKind, bool)>,
    requests: u32,
    /// Overrides the next answer of any tool, as raw JSON text.
    answers: VecDeque<String>,
}

impl Web {
    /// A web that answers every request.
    pub fn new() -> Arc<Self> {
        Arc::new(Web::default())
    }

    fn state(&self) -> std::sync::MutexGuard<'_, WebState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The next request fails with `kind`, saying whether another source may be tried.
    pub fn fail_next(&self, kind: FailureKind, alternate_source: bool) {
        self.state().failures.push_back((kind, alternate_source));
    }

    /// The next request is answered with `output`, whatever it asked.
    pub fn answer_next(&self, output: Value) {
        self.state().answers.push_back(output.to_string());
    }

    /// Requests received.
    pub fn requests(&self) -> u32 {
        self.state().requests
    }

    fn fetch(&self, producer: &str, answer: Value) -> Result<RawResult, ToolFailure> {
        let mut state = self.state();
        state.requests += 1;
        if let Some((kind, alternate_source)) = state.failures.pop_front() {
            let detail = format!("internal: GET {producer} failed as {kind:?}; trace 7f3a");
            return Err(ToolFailure::new(kind, detail).with_alternate_source(alternate_source));
        }
        let text = state
            .answers
            .pop_front()
            .unwrap_or_else(|| answer.to_string());
        Ok(RawResult::new(
            text,
            RawProvenance::new(producer, "2026-11-30T09:00:00Z"),
        ))
    }
}

/// A source as JSON, for handler answers.
#[must_use]
pub fn source(id: &str, tier: &str, snippet: &str, confidence: f64) -> Value {
    json!({
        "id": id,
        "label": format!("page {id}"),
        "tier": tier,
        "url": format!("https://{id}.example.org/"),
        "snippet": snippet,
        "confidence": confidence,
    })
}

/// The register's answer for `field`: two schools for optics, none for anything else, with
/// the register page that says so either way.
#[must_use]
pub fn register_answer(field: &str) -> Value {
    let names: Vec<&str> = if field == "optics" {
        vec!["Lund University", "Uppsala University"]
    } else {
        Vec::new()
    };
    let snippet = format!("{} accredited programmes in {field}", names.len());
    json!({
        "names": names,
        "sources": [source("register", "authoritative_database", &snippet, 1.0)],
    })
}

/// The staff pages' answer: one advisor per school, the Uppsala page with a placeholder
/// address.
#[must_use]
pub fn staff_answer(schools: &[String]) -> Value {
    let advisors: Vec<Value> = schools
        .iter()
        .map(|school| {
            let (name, email) = if school.starts_with("Lund") {
                ("Ada Byron", "ada.byron@fysik.lu.se")
            } else {
                ("Carl Svensson", "carl.svensson@institution.edu")
            };
            json!({
                "name": name,
                "school": school,
                "email": email,
                "sources": [source("staff", "official", &format!("{name}, optics group"), 0.9)],
            })
        })
        .collect();
    json!({ "advisors": advisors })
}

/// The gate that sends advisor discovery without candidate schools to the register first.
#[must_use]
pub fn schools_first() -> RequireNonEmpty {
    RequireNonEmpty::new("discover_advisors", "/schools", "list_candidate_schools")
}

/// A dispatcher over [`registry`] with every tool wired to `web`, no gate, before `build`.
pub fn builder(web: &Arc<Web>) -> DispatcherBuilder {
    let (w1, w2, w3, w4) = (web.clone(), web.clone(), web.clone(), web.clone());
    Dispatcher::builder(registry(), keys())
        .clock(clock)
        .audit_sink(Arc::new(MemoryAuditLog::new(crate::tracker::audit_key())))
        .handler_with(
            move |input: ListCandidateSchools, _cx: HandlerContext| {
                let web = w1.clone();
                async move { web.fetch("register-v1", register_answer(&input.field)) }
            },
            OPTIONS,
        )
        .handler_with(
            move |input: DiscoverAdvisors, _cx: HandlerContext| {
                let web = w2.clone();
                async move { web.fetch("staff-v1", staff_answer(&input.schools)) }
            },
            OPTIONS,
        )
        .handler_with(
            move |_input: SearchEmail, _cx: HandlerContext| {
                let web = w3.clone();
                async move {
                    let answer = json!({
                        "emails": ["ada@gmail.com"],
                        "sources": [source("forum", "web_search", "mail ada@gmail.com", 0.6)],
                    });
                    web.fetch("search-v1", answer)
                }
            },
            OPTIONS,
        )
        .handler_with(
            move |_input: RequestIntroduction, _cx: HandlerContext| {
                let web = w4.clone();
                async move { web.fetch("mailer-v1", json!({ "message": 1 })) }
            },
            OPTIONS,
        )
}

/// [`builder`] with the [`schools_first`] gate, built.
pub fn dispatcher(web: &Arc<Web>) -> Dispatcher {
    builder(web)
        .gate(schools_first())
        .build()
        .expect("every tool has its handler")
}

/// A call of `name` with `arguments`.
#[must_use]
pub fn call(call_id: &str, name: &str, arguments: Value) -> CallContext {
    context(
        call_id,
        name,
        arguments,
        &format!("op-{call_id}"),
        &format!("k-{call_id}"),
    )
}

/// Dispatches `call` for alice, with no budget limit.
pub async fn run(dispatcher: &Dispatcher, call: &CallContext) -> Dispatch {
    dispatcher
        .dispatch(&alice(), call, &Task::unlimited())
        .await
}

/// Checks that `dispatch`'s result verifies for alice's `call`.
///
/// # Panics
/// If it does not.
pub fn verified(dispatcher: &Dispatcher, call: &CallContext, dispatch: &Dispatch) {
    dispatcher
        .binder()
        .verify(&alice(), call, &dispatch.result)
        .expect("the result verifies");
}

/// The audit's redactions of `dispatch`, as `(path, reason)`.
#[must_use]
pub fn redactions(dispatch: &Dispatch) -> Vec<(String, String)> {
    dispatch
        .result
        .audit
        .redactions
        .iter()
        .map(|redaction| (redaction.path.clone(), redaction.reason.clone()))
        .collect()
}
