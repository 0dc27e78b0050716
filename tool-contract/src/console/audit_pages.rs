//! The pages over the audit log: the receipts an approver took part in (every receipt for an
//! auditor), each verified and downloadable; and, for auditors only, the chain's state and
//! the last day per tool.
//!
//! A page reads what it shows: [`page_records`](super::ConsoleOptions::page_records) of each
//! chain from its end (older ones a link away), the directory rows of the approvers its
//! receipts name, the last day's records for the overview. Only the audit page's check of
//! the whole chain reads the whole log, when asked for.
//!
//! An auditor is an approver enrolled for every tenant (`"*"`): the chain and the overview
//! count every tenant's calls, and a receipt names principals only by keyed reference, so a
//! receipt is shown to an approver of one tenant when they approved it themselves.

use std::sync::Arc;

use std::collections::BTreeSet;

use axum::extract::{Path, RawQuery, State};
use axum::http::header::{CONTENT_DISPOSITION, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::audit::{self, AuditView, ChainPage, is_auditor};
use super::pages::Visit;
use super::state::Inner;
use crate::control::{Approver, AuditLogError, PageEnds, same_approver};
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
    /// The signed-in approver's visit and the audit log's view, or the page that says why
    /// not (signed out, no audit log).
    async fn audit_visit(
        &self,
        headers: &HeaderMap,
    ) -> Result<(Visit, Approver, Arc<AuditView>), Response> {
        let (visit, approver) = self.page_visit(headers).await?;
        match self.audit_view() {
            Some(view) => Ok((visit, approver, view)),
            None => Err(self.message(
                StatusCode::NOT_FOUND,
                "No audit log here",
                "This console was set up without its audit log.",
                &visit,
            )),
        }
    }

    /// The page that says the log cannot be read now.
    fn unreadable(&self, error: &AuditLogError, visit: &Visit) -> Response {
        tracing::error!(stage = "console", %error, "the audit log could not be read");
        self.message(
            StatusCode::SERVICE_UNAVAILABLE,
            "The audit log cannot be read",
            "Try again in a moment.",
            visit,
        )
    }
}

/// The query naming one record: `at=<seq>:<chain>`.
fn at_query(seq: u64, log: &str) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .append_pair("at", &format!("{seq}:{log}"))
        .finish()
}

/// `GET /receipts`: the receipts the approver may see in a page of the log (`?before=` for
/// older ones), newest first, each verified as an auditor would offline.
pub(super) async fn receipts(
    State(inner): Shared,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let (visit, approver, view) = match inner.audit_visit(&headers).await {
        Ok(visit) => visit,
        Err(response) => return response,
    };
    let ends = audit::places(query.as_deref(), "before");
    let chains = match view.page(&ends, inner.options.page_records).await {
        Ok(chains) => chains,
        Err(error) => return inner.unreadable(&error, &visit),
    };
    let shown: Vec<_> = audit::located_receipts(&chains)
        .into_iter()
        .filter(|located| may_see(&approver, located.receipt))
        .collect();
    // The directory rows of the approvers these receipts name, and no other.
    let named: BTreeSet<&str> = shown
        .iter()
        .flat_map(|located| &located.receipt.receipt.approvals)
        .map(|given| given.approver.as_str())
        .collect();
    let approvers = inner
        .dispatcher
        .published_approvers_named(named)
        .await
        .ok()
        .flatten();
    let items: Vec<_> = shown
        .iter()
        .map(|located| {
            let verdict = audit::verdict(&view.keys, approvers.as_ref(), located.receipt);
            let href = inner.path(&format!(
                "/receipts/{}?{}",
                located.receipt.receipt.approval_id,
                at_query(located.seq, located.log)
            ));
            audit::receipt_view(located.receipt, &verdict, href)
        })
        .collect();
    let read: Vec<_> = chains
        .iter()
        .filter_map(|chain| {
            let through = chain.page.through()?;
            Some(json!({
                "log": chain.page.log,
                "from": chain.begins_after + 1,
                "through": through,
                "records": chain.page.records,
            }))
        })
        .collect();
    let older = audit::older(&chains)
        .map(|ends| inner.path(&format!("/receipts?{}", audit::page_query(&ends))));
    let newest = (!ends.is_empty()).then(|| inner.path("/receipts"));
    inner.render_for(
        "receipts.html",
        json!({
            "items": items,
            "broken": audit::broken_in(&chains),
            "read": read,
            "older": older,
            "newest": newest,
        }),
        &visit,
        &approver,
    )
}

/// The receipt of `approval_id` in `chains`, if `approver` may see it and it is held where
/// `at` says (anywhere, for an empty `at`).
fn receipt_in(
    chains: &[ChainPage],
    approval_id: &str,
    approver: &Approver,
    at: &PageEnds,
) -> Option<String> {
    audit::located_receipts(chains)
        .into_iter()
        .find(|located| {
            located.receipt.receipt.approval_id == approval_id
                && may_see(approver, located.receipt)
                && (at.is_empty() || at.get(located.log) == Some(&located.seq))
        })
        .map(|located| located.receipt.to_json())
}

/// `GET /receipts/{approval_id}`: the receipt's JSON as a file, exactly the text an auditor
/// verifies. With `?at=<seq>:<chain>` (the receipts page's links) its one record is read;
/// without, the log is read from its end, a page at a time, until the receipt is found.
pub(super) async fn receipt(
    State(inner): Shared,
    Path(approval_id): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let (visit, approver, view) = match inner.audit_visit(&headers).await {
        Ok(visit) => visit,
        Err(response) => return response,
    };
    let at = audit::places(query.as_deref(), "at");
    let found = match at.iter().next() {
        Some((log, &seq)) => {
            let ends = PageEnds::from([(log.clone(), seq.saturating_add(1))]);
            view.page(&ends, 1)
                .await
                .map(|chains| receipt_in(&chains, &approval_id, &approver, &at))
        }
        None => {
            let mut ends = PageEnds::new();
            loop {
                let chains = match view.page(&ends, inner.options.page_records).await {
                    Ok(chains) => chains,
                    Err(error) => break Err(error),
                };
                if let Some(found) = receipt_in(&chains, &approval_id, &approver, &at) {
                    break Ok(Some(found));
                }
                match audit::older(&chains) {
                    Some(older) => ends = older,
                    None => break Ok(None),
                }
            }
        }
    };
    let text = match found {
        Ok(Some(text)) => text,
        Ok(None) => {
            return inner.message(
                StatusCode::NOT_FOUND,
                "No such receipt",
                "No receipt of yours has that approval id.",
                &visit,
            );
        }
        Err(error) => return inner.unreadable(&error, &visit),
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
        text,
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

/// `GET /audit`: where each chain stands, as far as a page of its newest records shows;
/// `?whole`: every record of every chain checked, and the signed tree heads.
pub(super) async fn chain(
    State(inner): Shared,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let (visit, approver, view) = match inner.audit_visit(&headers).await {
        Ok(visit) => visit,
        Err(response) => return response,
    };
    if !is_auditor(&approver) {
        return auditors_only(&inner, &visit);
    }
    let whole = url::form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .any(|(name, _)| name == "whole");
    let context = if whole {
        match view.read_whole().await {
            Ok(read) => json!({"whole": true, "chains": audit::chain_views(&read, &view.keys)}),
            Err(error) => return inner.unreadable(&error, &visit),
        }
    } else {
        match view
            .page(&PageEnds::new(), inner.options.page_records)
            .await
        {
            Ok(chains) => json!({
                "whole": false,
                "pages": audit::chain_page_views(&chains, &view.keys, &view.key),
                "whole_href": inner.path("/audit?whole"),
            }),
            Err(error) => return inner.unreadable(&error, &visit),
        }
    };
    inner.render_for("audit.html", context, &visit, &approver)
}

/// The calls of every chain observed from the first of `minutes` on, read a page at a time
/// from each chain's end until a call observed a minute before it (calls answered at once may
/// be appended out of their order): what the overview counts, and hardly more.
async fn calls_in(
    view: &AuditView,
    minutes: &std::ops::RangeInclusive<i64>,
    records: usize,
) -> Result<Vec<(crate::results::ModelResult, crate::results::ProtectedAudit)>, AuditLogError> {
    let since = time::OffsetDateTime::from_unix_timestamp(minutes.start().saturating_mul(60))
        .ok()
        .and_then(|start| start.checked_sub(time::Duration::MINUTE))
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    let mut ends = PageEnds::new();
    let mut calls = Vec::new();
    loop {
        let chains = view.page(&ends, records).await?;
        let mut next = PageEnds::new();
        for chain in chains {
            let reached = chain
                .calls
                .first()
                .and_then(|(_, (model, _))| crate::control::observed_at(model))
                .is_some_and(|observed| observed < since);
            let end = if reached {
                1
            } else {
                chain.page.older().unwrap_or(1)
            };
            next.insert(chain.page.log, end);
            calls.extend(chain.calls.into_iter().map(|(_, call)| call));
        }
        if next.values().all(|&end| end <= 1) {
            return Ok(calls);
        }
        ends = next;
    }
}

/// `GET /overview`: the last day per tool, drawn.
pub(super) async fn overview(State(inner): Shared, headers: HeaderMap) -> Response {
    let (visit, approver, view) = match inner.audit_visit(&headers).await {
        Ok(visit) => visit,
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
    let minutes = crate::control::last_day_minutes(inner.dispatcher.now());
    let tallies = match view.history.tally(&minutes).await {
        Ok(Some(tallies)) => tallies,
        Ok(None) => match calls_in(&view, &minutes, inner.options.page_records).await {
            Ok(calls) => crate::control::tally_calls(&calls, &minutes),
            Err(error) => return inner.unreadable(&error, &visit),
        },
        Err(error) => return inner.unreadable(&error, &visit),
    };
    let days = audit::overview(tallies, &pending);
    let tools: Vec<_> = days
        .iter()
        .map(|(tool, day)| {
            json!({
                "tool": tool,
                "calls": day.counts.calls,
                "pending": day.pending,
                "granted": day.counts.granted,
                "rejected": day.counts.rejected,
                "reconciled": day.counts.reconciled,
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
