//! What the console shows of the audit log: the receipts of the approvals redeemed, each
//! verified as an auditor would; where the chain stands, as far as its key and its signed
//! tree heads hold it; and the last day's calls per tool.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::control::{
    Approver, AuditHistory, AuditLogError, ChainHead, History, HistoryCalls, HistoryPage,
    PageAgainstHead, PageEnds, PendingApproval, Tallies, ToolTally,
};
use crate::results::{ApproverKeys, KeySet, ModelResult, ProtectedAudit, SecretKey, SignedReceipt};

/// Whether `approver` audits every tenant: enrolled for all of them (`"*"`). The chain and the
/// overview count every tenant's calls, so they are an auditor's pages only.
pub(super) fn is_auditor(approver: &Approver) -> bool {
    approver.tenants.iter().any(|tenant| tenant == "*")
}

/// The audit log a console reads, with what it is checked by.
pub(super) struct AuditView {
    pub(super) history: Arc<dyn AuditHistory>,
    /// The audit key the log's chain is keyed with.
    pub(super) key: SecretKey,
    /// The published keys of whoever signed the receipts and the tree heads.
    pub(super) keys: KeySet,
}

impl std::fmt::Debug for AuditView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditView").finish_non_exhaustive()
    }
}

/// The log as read whole at one moment: every chain kept where it is kept (each replica's
/// stream of a PostgreSQL table), each with its calls as far as it holds.
pub(super) struct Read {
    pub(super) chains: Vec<(History, HistoryCalls)>,
}

impl AuditView {
    /// Every chain, whole: what the audit page reads when asked to check the whole log.
    pub(super) async fn read_whole(&self) -> Result<Read, AuditLogError> {
        let histories = self.history.read_back_all().await?;
        let chains = histories
            .into_iter()
            .map(|history| {
                let calls = history.calls(&self.key);
                (history, calls)
            })
            .collect();
        Ok(Read { chains })
    }
}

/// One chain's page, its calls checked from the page's first record on and numbered.
pub(super) struct ChainPage {
    pub(super) page: HistoryPage,
    pub(super) calls: Vec<(u64, (ModelResult, ProtectedAudit))>,
    pub(super) chain: Result<ChainHead, AuditLogError>,
    /// The number of the record before the page's first.
    pub(super) begins_after: u64,
}

impl AuditView {
    /// A page of every chain: at most `records` of each, ending where `ends` says.
    pub(super) async fn page(
        &self,
        ends: &PageEnds,
        records: usize,
    ) -> Result<Vec<ChainPage>, AuditLogError> {
        let pages = self.history.read_page(ends, records).await?;
        Ok(pages
            .into_iter()
            .map(|page| {
                let (calls, chain, begins_after) = page.numbered_calls(&self.key);
                ChainPage {
                    page,
                    calls,
                    chain,
                    begins_after,
                }
            })
            .collect())
    }
}

/// Where the pages before `chains` end, if any chain has records before its page (a chain
/// with none is named with `1`, so that it gives nothing more).
pub(super) fn older(chains: &[ChainPage]) -> Option<PageEnds> {
    let ends: PageEnds = chains
        .iter()
        .map(|chain| (chain.page.log.clone(), chain.page.older().unwrap_or(1)))
        .collect();
    ends.values().any(|&end| end > 1).then_some(ends)
}

/// Where the first chain that breaks in its page does, if one does.
pub(super) fn broken_in(chains: &[ChainPage]) -> Option<String> {
    chains.iter().find_map(|chain| {
        let error = chain.chain.as_ref().err()?;
        Some(format!("{}: {error}", chain.page.log))
    })
}

/// The query of a link to the page ending where `ends` says: `before=<seq>:<chain>` per
/// chain, each encoded as a form value.
pub(super) fn page_query(ends: &PageEnds) -> String {
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    for (log, end) in ends {
        query.append_pair("before", &format!("{end}:{log}"));
    }
    query.finish()
}

/// The `name` parameters of `query` that read as `<seq>:<chain>`, by chain. Anything else
/// is left out, so that a mangled link shows the newest records.
pub(super) fn places(query: Option<&str>, name: &str) -> PageEnds {
    url::form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .filter(|(key, _)| key == name)
        .filter_map(|(_, value)| {
            let (seq, log) = value.split_once(':')?;
            Some((log.to_owned(), seq.parse().ok()?))
        })
        .collect()
}

/// A receipt a page shows, with the record that holds it.
pub(super) struct Located<'a> {
    pub(super) log: &'a str,
    pub(super) seq: u64,
    pub(super) receipt: &'a SignedReceipt,
}

/// The receipts the pages' calls carry, newest redemption first.
pub(super) fn located_receipts(chains: &[ChainPage]) -> Vec<Located<'_>> {
    let mut receipts: Vec<Located<'_>> = chains
        .iter()
        .flat_map(|chain| {
            chain.calls.iter().filter_map(|(seq, (_, audit))| {
                Some(Located {
                    log: &chain.page.log,
                    seq: *seq,
                    receipt: audit.approval.as_ref()?.receipt.as_ref()?,
                })
            })
        })
        .collect();
    // Times in one UTC spelling sort as text; chains of several replicas interleave.
    receipts.reverse();
    receipts.sort_by(|a, b| {
        b.receipt
            .receipt
            .redeemed_at
            .cmp(&a.receipt.receipt.redeemed_at)
    });
    receipts
}

/// Whether a receipt verifies as an auditor checks it offline: the service's signature with
/// the published keys, each passkey assertion with the published approver keys, the rule.
pub(super) fn verdict(
    keys: &KeySet,
    approvers: Option<&ApproverKeys>,
    receipt: &SignedReceipt,
) -> Result<(), String> {
    let text = receipt.to_json();
    let verified = match approvers {
        Some(approvers) => keys.verify_with_approvers(text.as_bytes(), approvers),
        None => keys.verify(text.as_bytes()),
    };
    verified.map(|_| ()).map_err(|error| error.to_string())
}

/// What the receipts page shows of one.
pub(super) fn receipt_view(
    receipt: &SignedReceipt,
    verdict: &Result<(), String>,
    href: String,
) -> Value {
    let receipt_ = &receipt.receipt;
    json!({
        "approval_id": receipt_.approval_id,
        "tool": receipt_.tool,
        "approvers": receipt_.approvals.iter().map(|given| given.approver.as_str()).collect::<Vec<_>>(),
        "redeemed_at": receipt_.redeemed_at,
        "edited": receipt_.edited_arguments_sha256.is_some(),
        "verified": verdict.is_ok(),
        "why": verdict.as_ref().err(),
        "href": href,
    })
}

/// What a page of each chain shows of it: its records, whether the keyed chain holds
/// through the page, from the page's first record (taken at its word) on, and how the page
/// stands against the chain's newest signed tree head (checked with `keys` and the audit
/// `key`, reading nothing more): a chain cut at either end, or records other than those the
/// head vouched for, break there.
pub(super) fn chain_page_views(chains: &[ChainPage], keys: &KeySet, key: &SecretKey) -> Vec<Value> {
    chains
        .iter()
        .map(|chain| {
            let (signed_head, signed_break) = match chain.page.against_tree_head(keys, key) {
                Ok(None) => (json!(null), None),
                Ok(Some(PageAgainstHead::Held { tree_size })) => {
                    (json!({"tree_size": tree_size, "held": true}), None)
                }
                Ok(Some(PageAgainstHead::Before { tree_size })) => {
                    (json!({"tree_size": tree_size, "held": false}), None)
                }
                Err(error) => (json!(null), Some(error.to_string())),
            };
            let (through, broken) = match &chain.chain {
                Ok(head) => (Some(head.records), None),
                // Lines count from the page's first: say which record of the chain breaks.
                Err(AuditLogError::Broken { line, link }) => match chain.page.first() {
                    Some(first) => (
                        None,
                        Some(format!("at record {}: {link}", first + line - 1)),
                    ),
                    None => (None, Some(format!("at line {line} of the page: {link}"))),
                },
                Err(error) => (None, Some(error.to_string())),
            };
            json!({
                "log": chain.page.log,
                "records": chain.page.records,
                "from": chain.begins_after + 1,
                "through": through,
                // The page's last record is not the chain's last, as the chain's head says.
                "short_of_head": through.is_some_and(|through| through < chain.page.records),
                "broken": broken,
                "signed_head": signed_head,
                "signed_break": signed_break,
            })
        })
        .collect()
}

/// Where each chain stands.
pub(super) fn chain_views(read: &Read, keys: &KeySet) -> Vec<Value> {
    read.chains
        .iter()
        .map(|(history, calls)| chain_view(history, calls, keys))
        .collect()
}

/// Where a chain stands: its records, whether the keyed chain holds through them, and up
/// to which signed tree head the published keys hold it.
fn chain_view(history: &History, calls: &HistoryCalls, keys: &KeySet) -> Value {
    let records = history.lines.len();
    let (intact, broken) = match &calls.chain {
        Ok(head) => (Some(head.records), None),
        Err(error) => (None, Some(error.to_string())),
    };
    let latest = history
        .tree_heads
        .iter()
        .max_by_key(|head| head.tree_head.tree_size);
    let (held, refused) = match history.held(keys) {
        Ok(held) => (Some(held.verified_through), None),
        Err(error) => (None, Some(error.to_string())),
    };
    json!({
        "log": history.log,
        "records": records,
        "intact_through": intact,
        // Records cut from the log's beginning: the keyed chain says nothing of them.
        "begins_after": calls.begins_after,
        "broken": broken,
        "tree_heads": history.tree_heads.len(),
        "verified_through": held,
        "tree_heads_refused": refused,
        "latest_signed_at": latest.map(|head| head.tree_head.signed_at.clone()),
        "latest_key_id": latest.map(|head| head.tree_head.key_id.clone()),
        "unsigned_tail": held.map(|through| (records as u64).saturating_sub(through)),
    })
}

/// One tool's last day: its calls as the log counts them, and the approvals pending now.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct ToolDay {
    pub(super) counts: ToolTally,
    pub(super) pending: u64,
}

/// Per tool, the last day's counts of `tallies` and the approvals pending now.
pub(super) fn overview(tallies: Tallies, pending: &[PendingApproval]) -> BTreeMap<String, ToolDay> {
    let mut days: BTreeMap<String, ToolDay> = tallies
        .into_iter()
        .map(|(tool, counts)| (tool, ToolDay { counts, pending: 0 }))
        .collect();
    for approval in pending {
        days.entry(approval.preview.tool.clone())
            .or_default()
            .pending += 1;
    }
    days
}

/// The width of the chart's bars, in its own units.
const CHART_WIDTH: u64 = 360;

/// The overview as the page draws it: per tool, each count with the length of its bar
/// (scaled to the largest count), so the template draws an SVG without arithmetic.
pub(super) fn overview_view(days: &BTreeMap<String, ToolDay>) -> Value {
    let largest = days
        .values()
        .flat_map(|day| {
            [
                day.counts.calls,
                day.pending,
                day.counts.granted,
                day.counts.rejected,
                day.counts.reconciled,
            ]
        })
        .max()
        .unwrap_or(0)
        .max(1);
    let bar = |count: u64| count * CHART_WIDTH / largest;
    let rows: Vec<Value> = days
        .iter()
        .enumerate()
        .map(|(index, (tool, day))| {
            let measures: Vec<Value> = [
                ("calls", day.counts.calls),
                ("pending", day.pending),
                ("granted", day.counts.granted),
                ("rejected", day.counts.rejected),
                ("reconciled", day.counts.reconciled),
            ]
            .iter()
            .enumerate()
            .map(|(at, (name, count))| {
                json!({"name": name, "count": count, "width": bar(*count), "y": at * 14})
            })
            .collect();
            json!({"tool": tool, "y": index * 90, "measures": measures})
        })
        .collect();
    json!({"rows": rows, "height": days.len() * 90, "width": CHART_WIDTH + 160})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_are_scaled_to_the_largest_count() {
        let days = BTreeMap::from([
            (
                "a".to_owned(),
                ToolDay {
                    counts: ToolTally {
                        calls: 4,
                        granted: 1,
                        ..ToolTally::default()
                    },
                    pending: 0,
                },
            ),
            (
                "b".to_owned(),
                ToolDay {
                    pending: 2,
                    ..ToolDay::default()
                },
            ),
        ]);
        let view = overview_view(&days);
        assert_eq!(view["rows"][0]["measures"][0]["width"], CHART_WIDTH);
        assert_eq!(view["rows"][0]["measures"][2]["width"], CHART_WIDTH / 4);
        assert_eq!(view["rows"][1]["measures"][1]["width"], CHART_WIDTH / 2);
        assert_eq!(view["rows"][1]["y"], 90);
    }

    #[test]
    fn an_empty_overview_draws_nothing_and_divides_by_nothing() {
        let view = overview_view(&BTreeMap::new());
        assert_eq!(view["rows"], json!([]));
        assert_eq!(view["height"], 0);
    }
}
