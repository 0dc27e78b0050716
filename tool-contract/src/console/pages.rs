//! The console's handlers: who is asking (the signed session), what they may see, and the
//! page or JSON answer. Every state change is a POST with the session's CSRF token.

// A handler answers with a response whichever way it goes; a refusal returned early is built
// once per request, so its size is not worth boxing.
#![allow(clippy::result_large_err)]

use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, COOKIE, LOCATION, SET_COOKIE};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use minijinja::Environment;
use minijinja::value::Serde;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::audit::is_auditor;
use super::form;
use super::state::{Ceremony, Inner};
use super::token::{self, Session};
use crate::control::{ApprovalBasis, ApprovalError, Approver, PendingApproval};
use crate::dispatch::SignedDecision;
use crate::results::{ApprovalStatement, Decision};

/// The cookie the session rides in.
const COOKIE_NAME: &str = "tc_console";
/// The header a page's script sends its CSRF token in.
const CSRF_HEADER: &str = "x-csrf-token";

/// Scripts and styles from this origin only, none inline; no framing, no plugins, forms and
/// requests to this origin only.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
                   connect-src 'self'; form-action 'self'; base-uri 'none'; \
                   frame-ancestors 'none'";

type Shared = State<Arc<Inner>>;

/// The templates, compiled once (MiniJinja escapes every value in an `.html` template).
pub(super) fn templates() -> Environment<'static> {
    let mut environment = Environment::new();
    for (name, source) in [
        ("layout.html", include_str!("assets/layout.html")),
        ("sign_in.html", include_str!("assets/sign_in.html")),
        ("invitation.html", include_str!("assets/invitation.html")),
        ("pending.html", include_str!("assets/pending.html")),
        ("approval.html", include_str!("assets/approval.html")),
        ("message.html", include_str!("assets/message.html")),
        ("receipts.html", include_str!("assets/receipts.html")),
        ("audit.html", include_str!("assets/audit.html")),
        ("overview.html", include_str!("assets/overview.html")),
    ] {
        if let Err(error) = environment.add_template(name, source) {
            // The templates are this crate's own, checked by its tests.
            unreachable!("the console's template {name} does not compile: {error}");
        }
    }
    environment
}

/// A request that changes state comes from the console's own pages: its `Origin`, when a
/// browser sends one, is the console's (or one allowed besides, or a loopback origin), by the
/// MCP endpoint's rule. The CSRF token proves the page; this refuses a page of another origin
/// that holds one.
pub(super) async fn same_origin(
    State(inner): Shared,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let reads = matches!(
        *request.method(),
        http::Method::GET | http::Method::HEAD | http::Method::OPTIONS
    );
    let origins = inner.options.posting_origins();
    if !reads && !crate::vocabulary::origin::origin_allowed(request.headers(), &origins) {
        return refusal(
            StatusCode::FORBIDDEN,
            "origin",
            "the request comes from a page of another origin",
        );
    }
    next.run(request).await
}

/// Every response: the Content Security Policy and its companions; pages are never cached.
pub(super) async fn secured(mut response: Response) -> Response {
    let headers = response.headers_mut();
    for (name, value) in [
        ("content-security-policy", CSP),
        ("x-content-type-options", "nosniff"),
        ("x-frame-options", "DENY"),
        // No referrer to another origin; to its own, the page's origin, which a browser's
        // form POST must carry as `Origin` (under `no-referrer` it sends `Origin: null`).
        ("referrer-policy", "same-origin"),
        ("cross-origin-opener-policy", "same-origin"),
    ] {
        headers.insert(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    }
    if !headers.contains_key(CACHE_CONTROL) {
        headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

/// The visit a request belongs to: its signed session, or a new anonymous one (`fresh`, to be
/// set as the cookie).
pub(super) struct Visit {
    session: Session,
    fresh: bool,
}

impl Inner {
    pub(super) fn visit(&self, headers: &HeaderMap) -> Result<Visit, Response> {
        let now = self.unix_now();
        if let Some(session) =
            cookie(headers).and_then(|value| self.signer.open_session(value, now))
        {
            return Ok(Visit {
                session,
                fresh: false,
            });
        }
        let session = Session::anonymous(now + self.session_seconds()).ok_or_else(unavailable)?;
        Ok(Visit {
            session,
            fresh: true,
        })
    }

    fn session_seconds(&self) -> i64 {
        i64::try_from(self.options.session_lifetime.as_secs()).unwrap_or(i64::MAX / 4)
    }

    /// The `Set-Cookie` value carrying `session`.
    fn cookie_for(&self, session: &Session) -> HeaderValue {
        let path = if self.options.base_path.is_empty() {
            "/"
        } else {
            &self.options.base_path
        };
        let secure = if self.options.loopback() {
            ""
        } else {
            "; Secure"
        };
        let value = format!(
            "{COOKIE_NAME}={}; Path={path}; Max-Age={}; HttpOnly; SameSite=Strict{secure}",
            self.signer.seal_session(session),
            self.session_seconds()
        );
        HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static(""))
    }

    /// The approver a session is signed in as, while their credential is still theirs and not
    /// revoked.
    pub(super) async fn signed_in(&self, session: &Session) -> Option<Approver> {
        let (approver_id, credential_id) = (
            session.approver_id.as_deref()?,
            session.credential_id.as_deref()?,
        );
        let approver = self.dispatcher.approver(approver_id).await.ok()??;
        let credential = approver.credential(credential_id)?;
        if credential.revoked_at.is_some() {
            return None;
        }
        // Signed out since, here or on another replica: the directory says so to every one.
        if approver.sign_outs != session.sign_outs {
            return None;
        }
        Some(approver)
    }

    /// A POST's visit, signed in or not, once its CSRF token is checked.
    fn posted(&self, headers: &HeaderMap, csrf: Option<&str>) -> Result<Session, Response> {
        let visit = self.visit(headers)?;
        let given = csrf.or_else(|| headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok()));
        match given {
            Some(given) if !visit.fresh && self.signer.csrf_matches(&visit.session, given) => {
                Ok(visit.session)
            }
            _ => Err(refusal(
                StatusCode::FORBIDDEN,
                "csrf",
                "this request does not carry the page's CSRF token: reload the page",
            )),
        }
    }

    /// A signed-in POST: its session and approver.
    async fn posted_signed_in(&self, headers: &HeaderMap) -> Result<(Session, Approver), Response> {
        let session = self.posted(headers, None)?;
        match self.signed_in(&session).await {
            Some(approver) => Ok((session, approver)),
            None => Err(refusal(
                StatusCode::UNAUTHORIZED,
                "signed_out",
                "sign in again",
            )),
        }
    }

    /// The pending approval `approval_id` if `approver` may decide it: otherwise, as if there
    /// were none (an approval of another tenant is not even shown to exist).
    async fn decidable(&self, approver: &Approver, approval_id: &str) -> Option<PendingApproval> {
        let pending = self.dispatcher.pending_approval(approval_id).await.ok()??;
        self.dispatcher
            .may_decide(approver, &pending)
            .is_ok()
            .then_some(pending)
    }

    /// A page's visit and the approver signed in, or the way to sign in.
    pub(super) async fn page_visit(
        &self,
        headers: &HeaderMap,
    ) -> Result<(Visit, Approver), Response> {
        let visit = self.visit(headers)?;
        match self.signed_in(&visit.session).await {
            Some(approver) => Ok((visit, approver)),
            None => Err(self.to_sign_in(&visit)),
        }
    }

    /// [`render`](Self::render) for a signed-in approver: their name, and the pages they
    /// may reach.
    pub(super) fn render_for(
        &self,
        template: &str,
        context: Value,
        visit: &Visit,
        approver: &Approver,
    ) -> Response {
        let mut context = context;
        if let Value::Object(members) = &mut context {
            members.insert("approver".into(), approver.display_name.clone().into());
            members.insert("auditor".into(), is_auditor(approver).into());
            members.insert("audit_log".into(), self.audit_view().is_some().into());
        }
        self.render(template, context, visit)
    }

    pub(super) fn render(&self, template: &str, context: Value, visit: &Visit) -> Response {
        let mut context = context;
        if let Value::Object(members) = &mut context {
            members.insert("csrf".into(), self.signer.csrf(&visit.session).into());
            members.insert("base".into(), self.options.base_path.clone().into());
        }
        let html = match self.templates.get_template(template) {
            Ok(template) => template.render(Serde(&context)),
            Err(error) => Err(error),
        };
        let mut response = match html {
            Ok(html) => (
                [(
                    CONTENT_TYPE,
                    HeaderValue::from_static("text/html; charset=utf-8"),
                )],
                html,
            )
                .into_response(),
            Err(error) => {
                tracing::error!(stage = "console", %error, "a page did not render");
                StatusCode::INTERNAL_SERVER_ERROR.into_response()
            }
        };
        if visit.fresh {
            response
                .headers_mut()
                .insert(SET_COOKIE, self.cookie_for(&visit.session));
        }
        response
    }

    pub(super) fn message(
        &self,
        status: StatusCode,
        title: &str,
        text: &str,
        visit: &Visit,
    ) -> Response {
        let mut response =
            self.render("message.html", json!({"title": title, "text": text}), visit);
        *response.status_mut() = status;
        response
    }

    pub(super) fn to_sign_in(&self, visit: &Visit) -> Response {
        let mut response = see_other(&self.path("/sign-in"));
        if visit.fresh {
            response
                .headers_mut()
                .insert(SET_COOKIE, self.cookie_for(&visit.session));
        }
        response
    }

    /// Signs `approver_id` in with `credential_id`: a new visit id, so that nothing of the
    /// anonymous visit carries over.
    fn signed_in_as(&self, approver: &Approver, credential_id: String) -> Response {
        let Some(visit) = token::random_id() else {
            return unavailable();
        };
        let session = Session {
            visit,
            approver_id: Some(approver.approver_id.clone()),
            credential_id: Some(credential_id),
            expires_at: self.unix_now() + self.session_seconds(),
            sign_outs: approver.sign_outs,
        };
        let mut response = axum::Json(json!({"next": self.path("/approvals")})).into_response();
        response
            .headers_mut()
            .insert(SET_COOKIE, self.cookie_for(&session));
        response
    }
}

/// The console's cookie among the request's.
fn cookie(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .find_map(|pair| pair.trim().strip_prefix(COOKIE_NAME)?.strip_prefix('='))
}

/// A JSON refusal a page's script shows: `{"error": code, "message": why}`.
pub(super) fn refusal(status: StatusCode, code: &str, message: &str) -> Response {
    (
        status,
        axum::Json(json!({"error": code, "message": message})),
    )
        .into_response()
}

fn unavailable() -> Response {
    refusal(
        StatusCode::SERVICE_UNAVAILABLE,
        "unavailable",
        "the console cannot take this request now: try again",
    )
}

fn see_other(location: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(location) = HeaderValue::from_str(location) {
        response.headers_mut().insert(LOCATION, location);
    }
    response
}

/// A JSON body read within the crate's depth limit; a refusal naming what was wrong.
fn body<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Response> {
    crate::json::depth::from_slice(bytes).map_err(|error| {
        refusal(
            StatusCode::BAD_REQUEST,
            "bad_request",
            &format!("the request body is not what this page sends: {error}"),
        )
    })
}

/// A credential as the browser's `toJSON()` gave it, back to bytes for the checks.
fn credential_bytes(credential: &Value) -> Vec<u8> {
    serde_json::to_vec(credential).unwrap_or_default()
}

fn approval_refusal(error: &ApprovalError) -> Response {
    let status = match error {
        ApprovalError::NotPending => StatusCode::NOT_FOUND,
        ApprovalError::Refused(_) | ApprovalError::Expired => StatusCode::FORBIDDEN,
        ApprovalError::InvalidEdit(_) => StatusCode::UNPROCESSABLE_ENTITY,
        _ => StatusCode::CONFLICT,
    };
    refusal(status, "refused", &error.to_string())
}

/// What the pages show of one pending approval.
fn approval_view(inner: &Inner, pending: &PendingApproval) -> Value {
    let approvals: Vec<Value> = pending
        .approvals
        .iter()
        .map(|given| {
            let basis = match &given.basis {
                ApprovalBasis::Passkey(_) => "signed with their passkey",
                ApprovalBasis::Client => "the MCP client's word",
                _ => "the service's word",
            };
            json!({
                "approver": given.approver,
                "approved_at": crate::control::rfc3339(given.approved_at),
                "basis": basis,
            })
        })
        .collect();
    json!({
        "approval_id": pending.approval_id,
        "href": inner.path(&format!("/approvals/{}", pending.approval_id)),
        "tool": pending.preview.tool,
        "description": pending.preview.description,
        "effect": pending.preview.effect,
        "preview": pending.preview.to_text(),
        "required": pending.approvals_required.max(1),
        "given": pending.approvals.len(),
        "still_needed": pending.approvals_still_needed(),
        "signatures_required": pending.signatures_required,
        "approvals": approvals,
    })
}

/// `GET /`: the list of approvals.
pub(super) async fn home(State(inner): Shared) -> Response {
    see_other(&inner.path("/approvals"))
}

/// `GET /approvals`: what waits for the signed-in approver, oldest first (the stores list pending
/// approvals by when they lapse).
pub(super) async fn pending(State(inner): Shared, headers: HeaderMap) -> Response {
    let (visit, approver) = match inner.page_visit(&headers).await {
        Ok(signed_in) => signed_in,
        Err(response) => return response,
    };
    let Ok(all) = inner.dispatcher.pending_approvals().await else {
        return inner.message(
            StatusCode::SERVICE_UNAVAILABLE,
            "The store cannot be read",
            "The approvals cannot be listed now. Try again in a moment.",
            &visit,
        );
    };
    let items: Vec<Value> = all
        .iter()
        .filter(|pending| inner.dispatcher.may_decide(&approver, pending).is_ok())
        .map(|pending| approval_view(&inner, pending))
        .collect();
    inner.render_for("pending.html", json!({"items": items}), &visit, &approver)
}

/// `GET /sign-in`.
pub(super) async fn sign_in(State(inner): Shared, headers: HeaderMap) -> Response {
    match inner.visit(&headers) {
        Ok(visit) => inner.render("sign_in.html", json!({}), &visit),
        Err(response) => response,
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SignInAsked {
    approver_id: String,
}

/// `POST /sign-in/options`: a challenge for the approver's passkeys, counted against the
/// sign-in limit. An unknown id and an id without passkeys get the same answer.
pub(super) async fn begin_sign_in(
    State(inner): Shared,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    let session = match inner.posted(&headers, None) {
        Ok(session) => session,
        Err(response) => return response,
    };
    let asked: SignInAsked = match body(&bytes) {
        Ok(asked) => asked,
        Err(response) => return response,
    };
    let approver_id = asked.approver_id.trim().to_owned();
    if !inner.sign_ins.allows(&session.visit, Instant::now()) {
        return refusal(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            "too many failed sign-ins from this browser: wait a few minutes",
        );
    }
    let Some(challenge) = token::random_bytes::<32>() else {
        return unavailable();
    };
    // Every id answers alike: one with no passkey, or nobody's, is offered a decoy credential
    // no authenticator holds, and its sign-in fails as a wrong passkey's does.
    let Ok(options) = inner
        .dispatcher
        .passkey_request_or_decoy(&approver_id, &challenge, |input| {
            inner.signer.decoy_bytes(input)
        })
        .await
    else {
        return unavailable();
    };
    let ceremony = Ceremony::SignIn {
        approver_id,
        challenge,
    };
    match inner.ceremonies.begin(&session.visit, ceremony) {
        Some(ceremony) => {
            axum::Json(json!({"ceremony": ceremony, "options": options})).into_response()
        }
        None => unavailable(),
    }
}

#[derive(Deserialize)]
struct CeremonyAnswered {
    ceremony: String,
    credential: Value,
}

/// A ceremony's answer (its CSRF token checked) and the ceremony it finishes, taken once if
/// this visit began it.
fn finished(
    inner: &Inner,
    headers: &HeaderMap,
    bytes: &[u8],
) -> Result<(CeremonyAnswered, Option<Ceremony>, String), Response> {
    let session = inner.posted(headers, None)?;
    let answered: CeremonyAnswered = body(bytes)?;
    let ceremony = inner.ceremonies.finish(&answered.ceremony, &session.visit);
    Ok((answered, ceremony, session.visit))
}

/// `POST /sign-in`: the assertion over the challenge; a new signed-in session.
pub(super) async fn finish_sign_in(
    State(inner): Shared,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    let (answered, ceremony, visit) = match finished(&inner, &headers, &bytes) {
        Ok(finished) => finished,
        Err(response) => return response,
    };
    let Some(Ceremony::SignIn {
        approver_id,
        challenge,
    }) = ceremony
    else {
        return refusal(
            StatusCode::BAD_REQUEST,
            "no_ceremony",
            "this sign-in was not begun here, or took too long: try again",
        );
    };
    match inner
        .dispatcher
        .sign_in(
            &approver_id,
            &challenge,
            &credential_bytes(&answered.credential),
        )
        .await
    {
        Ok((approver, credential_id)) => inner.signed_in_as(&approver, credential_id),
        Err(error) => {
            tracing::warn!(stage = "console", %approver_id, %error, "a sign-in was refused");
            inner.sign_ins.failed(&visit, Instant::now());
            // Why stays in the log: an answer that told an unknown id from a wrong passkey
            // would list the enrolled ids.
            refusal(
                StatusCode::UNAUTHORIZED,
                "sign_in_refused",
                "the passkey did not sign you in",
            )
        }
    }
}

#[derive(Deserialize)]
pub(super) struct SignOutForm {
    csrf: String,
}

/// `POST /sign-out` (a plain form): a new anonymous visit.
pub(super) async fn sign_out(
    State(inner): Shared,
    headers: HeaderMap,
    axum::Form(form): axum::Form<SignOutForm>,
) -> Response {
    let signed_out = match inner.posted(&headers, Some(&form.csrf)) {
        Ok(signed_out) => signed_out,
        Err(response) => return response,
    };
    // The cookie alone would still open the pages until it expires: the sign-out is recorded
    // where every replica reads it.
    if let Some(approver_id) = &signed_out.approver_id
        && inner.dispatcher.end_sessions(approver_id).await.is_err()
    {
        return unavailable();
    }
    let Some(session) = Session::anonymous(inner.unix_now() + inner.session_seconds()) else {
        return unavailable();
    };
    let mut response = see_other(&inner.path("/sign-in"));
    response
        .headers_mut()
        .insert(SET_COOKIE, inner.cookie_for(&session));
    response
}

/// The approver an invitation token invites, while it is valid: signed by this console, not
/// lapsed, and the approver still without a passkey.
async fn invited(inner: &Inner, token: &str) -> Option<Approver> {
    let invitation = inner.signer.open_invitation(token, inner.unix_now())?;
    let approver = inner
        .dispatcher
        .approver(&invitation.approver_id)
        .await
        .ok()??;
    approver.credentials.is_empty().then_some(approver)
}

/// `GET /invitations/{token}`.
pub(super) async fn invitation(
    State(inner): Shared,
    Path(token): Path<String>,
    headers: HeaderMap,
) -> Response {
    let visit = match inner.visit(&headers) {
        Ok(visit) => visit,
        Err(response) => return response,
    };
    match invited(&inner, &token).await {
        Some(approver) => inner.render(
            "invitation.html",
            json!({
                "approver_id": approver.approver_id,
                "display_name": approver.display_name,
                "token": token,
            }),
            &visit,
        ),
        None => inner.message(
            StatusCode::NOT_FOUND,
            "This invitation is not valid",
            "It has lapsed, was used already, or was not made here. Ask the operator for a new one.",
            &visit,
        ),
    }
}

/// `POST /invitations/{token}/options`: the registration ceremony's options.
pub(super) async fn begin_enrollment(
    State(inner): Shared,
    Path(token): Path<String>,
    headers: HeaderMap,
) -> Response {
    let session = match inner.posted(&headers, None) {
        Ok(session) => session,
        Err(response) => return response,
    };
    let Some(approver) = invited(&inner, &token).await else {
        return refusal(
            StatusCode::NOT_FOUND,
            "invitation",
            "this invitation is not valid",
        );
    };
    let enrollment = match inner
        .dispatcher
        .begin_enrollment(&approver.approver_id)
        .await
    {
        Ok(enrollment) => enrollment,
        Err(error) => return refusal(StatusCode::CONFLICT, "enrollment", &error.to_string()),
    };
    let options = enrollment.options.clone();
    let ceremony = Ceremony::Enrol {
        invitation: token,
        enrollment: Box::new(enrollment),
    };
    match inner.ceremonies.begin(&session.visit, ceremony) {
        Some(ceremony) => {
            axum::Json(json!({"ceremony": ceremony, "options": options})).into_response()
        }
        None => unavailable(),
    }
}

/// `POST /invitations/{token}`: the new credential; once enrolled, signed in with it.
pub(super) async fn finish_enrollment(
    State(inner): Shared,
    Path(token): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    let (answered, ceremony, _) = match finished(&inner, &headers, &bytes) {
        Ok(finished) => finished,
        Err(response) => return response,
    };
    let Some(Ceremony::Enrol {
        invitation,
        enrollment,
    }) = ceremony
    else {
        return refusal(
            StatusCode::BAD_REQUEST,
            "no_ceremony",
            "this enrollment was not begun here, or took too long: try again",
        );
    };
    if invitation != token || invited(&inner, &token).await.is_none() {
        return refusal(
            StatusCode::NOT_FOUND,
            "invitation",
            "this invitation is not valid",
        );
    }
    match inner
        .dispatcher
        .finish_enrollment(&enrollment, &credential_bytes(&answered.credential))
        .await
    {
        Ok(approver) => match approver.credentials.last() {
            Some(credential) => {
                let credential_id = credential.credential_id.clone();
                inner.signed_in_as(&approver, credential_id)
            }
            None => unavailable(),
        },
        Err(error) => refusal(StatusCode::BAD_REQUEST, "enrollment", &error.to_string()),
    }
}

/// `GET /approvals/{approval_id}`.
pub(super) async fn approval(
    State(inner): Shared,
    Path(approval_id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let (visit, approver) = match inner.page_visit(&headers).await {
        Ok(signed_in) => signed_in,
        Err(response) => return response,
    };
    match inner.decidable(&approver, &approval_id).await {
        Some(pending) => {
            let mut view = approval_view(&inner, &pending);
            let arguments =
                earlier_edits(&pending).unwrap_or_else(|| pending.preview.arguments.clone());
            if let Some(schema) = input_schema(&inner, &pending) {
                view["fields"] = form::fields(schema, &arguments).into();
            }
            if let Some(edited) = earlier_edits(&pending) {
                view["edits"] = form::diff(&pending.preview.arguments, &edited).into();
            }
            inner.render_for(
                "approval.html",
                json!({"approval": view}),
                &visit,
                &approver,
            )
        }
        None => inner.message(
            StatusCode::NOT_FOUND,
            "Nothing waits here",
            "This approval was decided, has lapsed, or is not yours to decide.",
            &visit,
        ),
    }
}

/// The input schema of the pending approval's tool.
fn input_schema<'a>(inner: &'a Inner, pending: &PendingApproval) -> Option<&'a Value> {
    inner
        .dispatcher
        .registry()
        .get(&pending.preview.tool)
        .map(|spec| spec.input_schema())
}

/// The arguments as the approvers so far changed them, if they did: every approver of one
/// pending approval approves the same edits, so whoever comes next approves these.
fn earlier_edits(pending: &PendingApproval) -> Option<Value> {
    let edited = pending
        .approvals
        .iter()
        .find_map(|given| given.edited_arguments.as_deref())?;
    crate::json::depth::from_slice(edited.as_bytes()).ok()
}

/// `POST /approvals/{approval_id}/statement`: the statement of the decision asked (its
/// form's fields: `decision`, and an edit's `edit.*` fields read back by the tool's input
/// schema), and the options that ask the approver's passkey to sign it. Edits are checked
/// against the contract here, before anything is signed.
pub(super) async fn statement(
    State(inner): Shared,
    Path(approval_id): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    let (_, approver) = match inner.posted_signed_in(&headers).await {
        Ok(signed_in) => signed_in,
        Err(response) => return response,
    };
    let asked: Map<String, Value> = match body(&bytes) {
        Ok(asked) => asked,
        Err(response) => return response,
    };
    let decision = match asked
        .get("decision")
        .cloned()
        .map(serde_json::from_value::<Decision>)
    {
        Some(Ok(decision)) => decision,
        _ => {
            return refusal(
                StatusCode::BAD_REQUEST,
                "bad_request",
                "the request names no decision this page offers",
            );
        }
    };
    let Some(pending) = inner.decidable(&approver, &approval_id).await else {
        return approval_refusal(&ApprovalError::NotPending);
    };
    let posted_edits = match input_schema(&inner, &pending) {
        Some(schema) => form::arguments(schema, &asked),
        None => Ok(None),
    };
    let edits = match posted_edits {
        Ok(Some(edits)) => Some(edits),
        Ok(None) if decision == Decision::Approve => earlier_edits(&pending),
        Ok(None) => None,
        Err(why) => return approval_refusal(&ApprovalError::InvalidEdit(why)),
    };
    let statement = match inner
        .dispatcher
        .approval_statement(
            &approval_id,
            &approver.approver_id,
            decision,
            edits.as_ref(),
            inner.options.statement_lifetime,
        )
        .await
    {
        Ok(statement) => statement,
        Err(error) => return approval_refusal(&error),
    };
    match inner.dispatcher.signing_request(&statement).await {
        Ok(request) => axum::Json(json!({
            "statement": request.statement,
            "edited_arguments": edits,
            "options": request.options,
        }))
        .into_response(),
        Err(error) => approval_refusal(&error),
    }
}

#[derive(Deserialize)]
struct DecisionSigned {
    statement: ApprovalStatement,
    credential: Value,
    /// The edits the statement names by digest, as the statement's page gave them.
    #[serde(default)]
    edited_arguments: Option<Value>,
}

/// `POST /approvals/{approval_id}/decision`: the signed statement, recorded.
pub(super) async fn decide(
    State(inner): Shared,
    Path(approval_id): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    let (_, approver) = match inner.posted_signed_in(&headers).await {
        Ok(signed_in) => signed_in,
        Err(response) => return response,
    };
    let signed: DecisionSigned = match body(&bytes) {
        Ok(signed) => signed,
        Err(response) => return response,
    };
    if signed.statement.approver_id != approver.approver_id
        || signed.statement.approval_id != approval_id
    {
        return refusal(
            StatusCode::FORBIDDEN,
            "other_statement",
            "a statement is signed by the approver signed in, for this approval",
        );
    }
    match inner
        .dispatcher
        .decide_signed_within(
            &signed.statement,
            signed.edited_arguments.as_ref(),
            &credential_bytes(&signed.credential),
            // The lifetime the console's statements are made with is the one it honours.
            inner.options.statement_lifetime,
        )
        .await
    {
        Ok(decision) => {
            let outcome = match decision {
                SignedDecision::Rejected => "rejected",
                SignedDecision::Approved(_) => "approved",
            };
            tracing::info!(
                stage = "console",
                approver_id = %approver.approver_id,
                %approval_id,
                outcome,
                "a decision was signed in the console"
            );
            axum::Json(json!({"outcome": outcome, "next": inner.path("/approvals")}))
                .into_response()
        }
        Err(error) => approval_refusal(&error),
    }
}

/// `GET /console.js`.
pub(super) async fn script() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("assets/console.js"),
    )
}

/// `GET /console.css`.
pub(super) async fn style() -> Response {
    asset(
        "text/css; charset=utf-8",
        include_str!("assets/console.css"),
    )
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (CONTENT_TYPE, HeaderValue::from_static(content_type)),
            (CACHE_CONTROL, HeaderValue::from_static("max-age=300")),
        ],
        body,
    )
        .into_response()
}

/// Anything else.
pub(super) async fn not_found() -> Response {
    refusal(StatusCode::NOT_FOUND, "not_found", "no such page")
}
