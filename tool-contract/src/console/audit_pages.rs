//! The pages over the audit log: the receipts an approver took part in (every receipt for an
//! auditor), each verified and downloadable; and, for auditors only, the chain's state and
//! the last day per tool.
//!
//! An auditor is an approver enrolled for every tenant (`"*"`): the chain and the overview
//! count every tenant's calls, and a receipt names principals only by keyed reference, so a
//! receipt is shown to an approver of one tenant when they approved it themselves.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::header::{CONTENT_DISPOSITION, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::audit::{self, AuditView, Read, is_auditor};
use super::pages::Visit;
use super::state::Inner;
use crate::control::{Approver, same_approver};
use crate::results::SignedReceipt;

type Shared = State<Arc<Inner>>;

/// Whether `approver` may see `receipt`: an auditor, or one of its approvers.
fn may_see(approver: &Approver, receipt: &SignedReceipt) -> bool {
    is_auditor(approver)
        || receipt
            .receipt
            .approvals
            .iter()
            .any(|given| same_approver(&given.approver, &approver.approver_id))
}

impl Inner {
    /// The signed-in approver's visit and the audit log read now, or the page that says why
    /// not (signed out, no audit log, the log unreadable).
    async fn audit_read(
        &self,
        headers: &HeaderMap,
    ) -> Result<(Visit, Approver, Arc<AuditView>, Read), Response> {
        let (visit, approver) = self.page_visit(headers).await?;
        let Some(view) = self.audit_view() else {
            return Err(self.message(
                StatusCode::NOT_FOUND,
                "No audit log here",
                "This console was set up without its audit log.",
                &visit,
            ));
        };
        match view.read().await {
            Ok(read) => Ok((visit, approver, view, read)),
            Err(error) => {
                tracing::error!(stage = "console", %error, "the audit log could not be read");
                Err(self.message(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "The audit log cannot be read",
                    "Try again in a moment.",
                    &visit,
                ))
            }
        }
    }
}

/// `GET /receipts`: the receipts the approver may see, newest first, each verified as an
/// auditor would offline.
pub(super) async fn receipts(State(inner): Shared, headers: HeaderMap) -> Response {
    let (visit, approver, view, read) = match inner.audit_read(&headers).await {
        Ok(read) => read,
        Err(response) => return response,
    };
    let approvers = inner.dispatcher.published_approvers().await.ok().flatten();
    let items: Vec<_> = audit::receipts(&read.calls)
        .into_iter()
        .filter(|receipt| may_see(&approver, receipt))
        .map(|receipt| {
            let verdict = audit::verdict(&view.keys, approvers.as_ref(), receipt);
            let href = inner.path(&format!("/receipts/{}", receipt.receipt.approval_id));
            audit::receipt_view(receipt, &verdict, href)
        })
        .collect();
    inner.render_for(
        "receipts.html",
        json!({"items": items, "broken": read.broken()}),
        &visit,
        &approver,
    )
}

/// `GET /receipts/{approval_id}`: the receipt's JSON as a file, exactly the text an auditor
/// verifies.
pub(super) async fn receipt(
    State(inner): Shared,
    Path(approval_id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let (visit, approver, _, read) = match inner.audit_read(&headers).await {
        Ok(read) => read,
        Err(response) => return response,
    };
    let found = audit::receipts(&read.calls)
        .into_iter()
        .find(|receipt| receipt.receipt.approval_id == approval_id && may_see(&approver, receipt));
    let Some(receipt) = found else {
        return inner.message(
            StatusCode::NOT_FOUND,
            "No such receipt",
            "No receipt of yours has that approval id.",
            &visit,
        );
    };
    // The id was matched against a receipt's own; only characters a file name keeps.
    let file: String = approval_id
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
        .collect();
    let disposition = format!("attachment; filename=\"receipt-{file}.json\"");
    (
        [
            (
                CONTENT_TYPE,
                HeaderValue::from_static("application/json; charset=utf-8"),
            ),
            (
                CONTENT_DISPOSITION,
                HeaderValue::from_str(&disposition)
                    .unwrap_or_else(|_| HeaderValue::from_static("attachment")),
            ),
        ],
        receipt.to_json(),
    )
        .into_response()
}

/// The refusal of an auditor's page to anyone else.
fn auditors_only(inner: &Inner, visit: &Visit) -> Response {
    inner.message(
        StatusCode::FORBIDDEN,
        "For auditors",
        "This page counts every tenant's calls: it is for approvers enrolled for every tenant.",
        visit,
    )
}

/// `GET /audit`: where the chain stands.
pub(super) async fn chain(State(inner): Shared, headers: HeaderMap) -> Response {
    let (visit, approver, view, read) = match inner.audit_read(&headers).await {
        Ok(read) => read,
        Err(response) => return response,
    };
    if !is_auditor(&approver) {
        return auditors_only(&inner, &visit);
    }
    let chains = audit::chain_views(&read, &view.keys);
    inner.render_for("audit.html", json!({"chains": chains}), &visit, &approver)
}

/// `GET /overview`: the last day per tool, drawn.
pub(super) async fn overview(State(inner): Shared, headers: HeaderMap) -> Response {
    let (visit, approver, _, read) = match inner.audit_read(&headers).await {
        Ok(read) => read,
        Err(response) => return response,
    };
    if !is_auditor(&approver) {
        return auditors_only(&inner, &visit);
    }
    let Ok(pending) = inner.dispatcher.pending_approvals().await else {
        return inner.message(
            StatusCode::SERVICE_UNAVAILABLE,
            "The store cannot be read",
            "The pending approvals cannot be counted now. Try again in a moment.",
            &visit,
        );
    };
    let days = audit::overview(&read.calls, &pending, inner.dispatcher.now());
    let tools: Vec<_> = days
        .iter()
        .map(|(tool, day)| {
            json!({
                "tool": tool,
                "calls": day.calls,
                "pending": day.pending,
                "granted": day.granted,
                "rejected": day.rejected,
                "reconciled": day.reconciled,
            })
        })
        .collect();
    inner.render_for(
        "overview.html",
        json!({"tools": tools, "chart": audit::overview_view(&days)}),
        &visit,
        &approver,
    )
}
