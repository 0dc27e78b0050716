//! A page of an audit log: each log reads the page alone (memory under its lock, a file from
//! its end across segments, PostgreSQL in one query), and each page is what the whole log
//! cut at the same place holds; a page's records are checked from its first on.

use std::sync::Arc;

use tool_contract::control::{
    AuditHistory, HistoriesFuture, HistoryFuture, HistoryPage, JsonLinesAuditLog, MemoryAuditLog,
    PageEnds,
};
use tool_contract_tests::tracker::{audit_key, dispatch_reads};

/// A log read back whole only: its pages are the trait's default, cut from the whole.
struct WholeOnly<'a>(&'a dyn AuditHistory);

impl AuditHistory for WholeOnly<'_> {
    fn read_back(&self) -> HistoryFuture<'_> {
        self.0.read_back()
    }

    fn read_back_all(&self) -> HistoriesFuture<'_> {
        self.0.read_back_all()
    }
}

/// Every page of `log` (each end, a few sizes) is the page cut from the whole log.
async fn pages_agree_with_the_whole(log: &dyn AuditHistory, records: u64) {
    let whole = WholeOnly(log);
    let chains: Vec<String> = log
        .read_back_all()
        .await
        .unwrap()
        .into_iter()
        .map(|history| history.log)
        .collect();
    assert!(!chains.is_empty());
    for end in 1..=records + 2 {
        for size in [1, 2, 5, 100] {
            let ends: PageEnds = chains.iter().map(|chain| (chain.clone(), end)).collect();
            let read = log.read_page(&ends, size).await.unwrap();
            let cut = whole.read_page(&ends, size).await.unwrap();
            assert_eq!(read, cut, "end {end}, size {size}");
        }
    }
    let newest = log.read_page(&PageEnds::new(), 3).await.unwrap();
    assert_eq!(newest, whole.read_page(&PageEnds::new(), 3).await.unwrap());
    assert!(newest.iter().all(|page| page.records == records));
}

#[tokio::test]
async fn a_memory_logs_pages_are_its_whole_log_cut() {
    let log = Arc::new(MemoryAuditLog::new(audit_key()));
    dispatch_reads(log.clone(), 7).await;
    pages_agree_with_the_whole(log.as_ref(), 7).await;
}

#[tokio::test]
async fn a_files_pages_are_its_whole_log_cut_across_its_segments() {
    let directory =
        std::env::temp_dir().join(format!("tool-contract-audit-pages-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&directory);
    std::fs::create_dir_all(&directory).unwrap();
    let log =
        Arc::new(JsonLinesAuditLog::open(directory.join("audit.jsonl"), audit_key()).unwrap());
    // Three segments: 3 calls, a segment start and 2 calls, a segment start and 2 calls.
    dispatch_reads(log.clone(), 3).await;
    log.rotate().unwrap();
    dispatch_reads(log.clone(), 2).await;
    log.rotate().unwrap();
    dispatch_reads(log.clone(), 2).await;
    pages_agree_with_the_whole(log.as_ref(), 9).await;
    let _ = std::fs::remove_dir_all(&directory);
}

#[tokio::test]
async fn a_postgresql_tables_pages_are_every_streams_whole_log_cut() {
    use tool_contract::control::PostgresAuditLog;
    use tool_contract_tests::postgres::Schema;

    let Some(schema) = Schema::new("a_postgresql_tables_pages") else {
        return;
    };
    let store = schema.store().await;
    let (a, b) = (
        Arc::new(PostgresAuditLog::new(&store, audit_key())),
        Arc::new(PostgresAuditLog::new(&store, audit_key())),
    );
    dispatch_reads(a.clone(), 6).await;
    dispatch_reads(b.clone(), 6).await;
    pages_agree_with_the_whole(a.as_ref(), 6).await;
    // Each stream ends where its own end says.
    let ends = PageEnds::from([(a.stream().to_owned(), 3), (b.stream().to_owned(), 6)]);
    let pages = a.read_page(&ends, 10).await.unwrap();
    let firsts: Vec<_> = pages
        .iter()
        .map(|page| (page.first(), page.through()))
        .collect();
    assert_eq!(firsts.len(), 2);
    let of = |stream: &str| {
        let page: &HistoryPage = pages.iter().find(|page| page.log == stream).unwrap();
        (page.first(), page.through())
    };
    assert_eq!(of(a.stream()), (Some(1), Some(2)));
    assert_eq!(of(b.stream()), (Some(1), Some(5)));
}

#[tokio::test]
async fn a_page_from_the_middle_of_a_chain_holds_from_its_first_record_on() {
    let log = Arc::new(MemoryAuditLog::new(audit_key()));
    dispatch_reads(log.clone(), 6).await;
    let ends = PageEnds::from([("memory".to_owned(), 5)]);
    let page = &log.read_page(&ends, 2).await.unwrap()[0];
    assert_eq!(
        (page.first(), page.through(), page.older()),
        (Some(3), Some(4), Some(3))
    );
    let calls = page.calls(&audit_key());
    assert_eq!(calls.calls.len(), 2);
    assert_eq!(calls.begins_after, 2);
    assert_eq!(calls.chain.unwrap().records, 4);

    // The same page under another key: its first record's own digest does not hold.
    let other = tool_contract::SecretKey::new([0x99; 32]).unwrap();
    assert!(page.calls(&other).chain.is_err());
    // Its records out of order: the second does not follow the first.
    let mut swapped = page.clone();
    swapped.lines.reverse();
    assert!(swapped.calls(&audit_key()).chain.is_err());

    let first = &log
        .read_page(&PageEnds::from([("memory".to_owned(), 2)]), 5)
        .await
        .unwrap()[0];
    assert_eq!((first.first(), first.older()), (Some(1), None));
}
