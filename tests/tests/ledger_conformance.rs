//! Issue 4, point 5: one conformance suite every ledger store passes, run on the in-memory
//! store and on SQLite (reopened from its file for every "restart").

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use tool_contract::dispatch::ledger::{Advance, Advanced, Claim, Claimed, SqliteLedger};
use tool_contract::dispatch::{Ledger, LedgerError, MemoryLedger, WriteEvent, WriteState};

const LEASE: u64 = 60_000;
const RETENTION: u64 = 3_600_000;
const T0: u64 = 1_787_392_800_000;

/// A store under test: opened once, and opened again as after a restart.
trait Store {
    fn open(&self) -> Arc<dyn Ledger>;
    fn reopen(&self) -> Arc<dyn Ledger>;
}

struct Memory(MemoryLedger);

impl Store for Memory {
    fn open(&self) -> Arc<dyn Ledger> {
        Arc::new(self.0.clone())
    }
    // Memory cannot outlive its process; a clone over the same map stands for a second
    // dispatcher in it.
    fn reopen(&self) -> Arc<dyn Ledger> {
        Arc::new(self.0.clone())
    }
}

struct Sqlite(PathBuf);

impl Store for Sqlite {
    fn open(&self) -> Arc<dyn Ledger> {
        Arc::new(SqliteLedger::open(&self.0).expect("the ledger file opens"))
    }
    fn reopen(&self) -> Arc<dyn Ledger> {
        self.open()
    }
}

impl Drop for Sqlite {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let mut path = self.0.clone().into_os_string();
            path.push(suffix);
            let _ = std::fs::remove_file(path);
        }
    }
}

fn sqlite_file() -> Sqlite {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let name = format!(
        "tool-contract-ledger-{}-{}.sqlite",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    Sqlite(std::env::temp_dir().join(name))
}

fn claim(key: &str, request: &str, owner: &str, now_ms: u64) -> Claim {
    Claim {
        key: key.to_owned(),
        request_sha256: request.to_owned(),
        tool: "create_issue".to_owned(),
        owner: owner.to_owned(),
        now_ms,
        lease_ms: LEASE,
        retention_ms: RETENTION,
    }
}

fn step(
    key: &str,
    owner: &str,
    from: WriteState,
    event: WriteEvent,
    result: Option<&str>,
    now_ms: u64,
) -> Advance {
    Advance {
        key: key.to_owned(),
        owner: owner.to_owned(),
        from,
        event,
        result: result.map(str::to_owned),
        now_ms,
        retention_ms: RETENTION,
    }
}

/// Claims `key` for request `r1` as `owner` at `T0` and moves it by `event` at once.
async fn finished(
    ledger: &dyn Ledger,
    key: &str,
    owner: &str,
    event: WriteEvent,
    result: Option<&str>,
) {
    assert_eq!(
        ledger.claim(&claim(key, "r1", owner, T0)).await.unwrap(),
        Claimed::Fresh
    );
    let moved = ledger
        .advance(&step(key, owner, WriteState::Executing, event, result, T0))
        .await
        .unwrap();
    assert!(matches!(moved, Advanced::Applied(_)), "{moved:?}");
}

/// Moves the record at `k` as `owner`, from `from`, by `event`, at `T0`.
async fn move_k(
    ledger: &dyn Ledger,
    owner: &str,
    from: WriteState,
    event: WriteEvent,
    result: Option<&str>,
) -> Result<Advanced, LedgerError> {
    ledger
        .advance(&step("k", owner, from, event, result, T0))
        .await
}

async fn state_of(ledger: &dyn Ledger, key: &str) -> Option<WriteState> {
    ledger.get(key).await.unwrap().map(|record| record.state)
}

async fn a_fresh_key_is_claimed_once_and_replayed_after_its_outcome(store: &dyn Store) {
    let ledger = store.open();
    assert_eq!(
        ledger.claim(&claim("k", "r1", "a", T0)).await.unwrap(),
        Claimed::Fresh
    );
    assert_eq!(state_of(&*ledger, "k").await, Some(WriteState::Executing));
    let done = ledger
        .advance(&step(
            "k",
            "a",
            WriteState::Executing,
            WriteEvent::Commit,
            Some("{\"stored\":1}"),
            T0 + 5,
        ))
        .await
        .unwrap();
    assert!(matches!(done, Advanced::Applied(ref record) if record.state == WriteState::Succeeded));
    match ledger.claim(&claim("k", "r1", "b", T0 + 10)).await.unwrap() {
        Claimed::Replay(record) => {
            assert_eq!(record.result.as_deref(), Some("{\"stored\":1}"));
            assert_eq!(record.owner, "a");
        }
        other => panic!("expected a replay, got {other:?}"),
    }
}

async fn the_same_key_with_another_request_conflicts_in_every_state(store: &dyn Store) {
    let ledger = store.open();
    ledger.claim(&claim("k", "r1", "a", T0)).await.unwrap();
    assert!(matches!(
        ledger.claim(&claim("k", "r2", "b", T0)).await.unwrap(),
        Claimed::Conflict(_)
    ));
    move_k(
        &*ledger,
        "a",
        WriteState::Executing,
        WriteEvent::Commit,
        Some("{}"),
    )
    .await
    .unwrap();
    assert!(matches!(
        ledger.claim(&claim("k", "r2", "b", T0)).await.unwrap(),
        Claimed::Conflict(_)
    ));
}

async fn a_key_in_flight_is_refused_while_its_lease_runs(store: &dyn Store) {
    let ledger = store.open();
    ledger.claim(&claim("k", "r1", "a", T0)).await.unwrap();
    let again = ledger
        .claim(&claim("k", "r1", "b", T0 + LEASE - 1))
        .await
        .unwrap();
    assert!(matches!(again, Claimed::InFlight(ref record) if record.owner == "a"));
    assert_eq!(state_of(&*ledger, "k").await, Some(WriteState::Executing));
}

async fn a_restart_between_executing_and_the_outcome_leaves_the_operation_unknown(
    store: &dyn Store,
) {
    {
        let ledger = store.open();
        assert_eq!(
            ledger.claim(&claim("k", "r1", "a", T0)).await.unwrap(),
            Claimed::Fresh
        );
        // The process dies here: no outcome is ever recorded.
    }
    let ledger = store.reopen();
    // Until the lease lapses, the first owner may still be running.
    assert!(matches!(
        ledger.claim(&claim("k", "r1", "b", T0 + 1)).await.unwrap(),
        Claimed::InFlight(_)
    ));
    // Then it is unknown: not failed, and not free to run again.
    let after = ledger
        .claim(&claim("k", "r1", "b", T0 + LEASE))
        .await
        .unwrap();
    assert!(matches!(after, Claimed::Unknown(ref record) if record.state == WriteState::Unknown));
    assert_eq!(state_of(&*ledger, "k").await, Some(WriteState::Unknown));
    let later = ledger
        .claim(&claim("k", "r1", "c", T0 + 10 * LEASE))
        .await
        .unwrap();
    assert!(matches!(later, Claimed::Unknown(_)), "{later:?}");
}

async fn a_lapsed_lease_turns_unknown_whoever_asks(store: &dyn Store) {
    let ledger = store.open();
    ledger.claim(&claim("k", "r1", "a", T0)).await.unwrap();
    let other = ledger
        .claim(&claim("k", "r2", "b", T0 + LEASE))
        .await
        .unwrap();
    assert!(matches!(other, Claimed::Conflict(ref record) if record.state == WriteState::Unknown));
    assert_eq!(state_of(&*ledger, "k").await, Some(WriteState::Unknown));
}

async fn only_the_owner_moves_a_write_in_flight(store: &dyn Store) {
    let ledger = store.open();
    ledger.claim(&claim("k", "r1", "a", T0)).await.unwrap();
    let intruder = move_k(
        &*ledger,
        "b",
        WriteState::Executing,
        WriteEvent::Commit,
        Some("{}"),
    )
    .await
    .unwrap();
    assert!(
        matches!(intruder, Advanced::Stale(Some(ref record)) if record.state == WriteState::Executing)
    );
    let wrong_state = move_k(
        &*ledger,
        "a",
        WriteState::CancelRequested,
        WriteEvent::Commit,
        Some("{}"),
    )
    .await
    .unwrap();
    assert!(matches!(wrong_state, Advanced::Stale(_)));
    assert_eq!(state_of(&*ledger, "k").await, Some(WriteState::Executing));
}

async fn an_event_without_a_move_is_refused(store: &dyn Store) {
    let ledger = store.open();
    ledger.claim(&claim("k", "r1", "a", T0)).await.unwrap();
    let refused = move_k(
        &*ledger,
        "a",
        WriteState::Executing,
        WriteEvent::Approve,
        None,
    )
    .await;
    assert!(
        matches!(refused, Err(LedgerError::Illegal(_))),
        "{refused:?}"
    );
    assert_eq!(state_of(&*ledger, "k").await, Some(WriteState::Executing));
}

async fn finished_records_absorb_every_event(store: &dyn Store) {
    let ledger = store.open();
    finished(
        &*ledger,
        "k",
        "a",
        WriteEvent::ConfirmNothingHappened,
        Some("{}"),
    )
    .await;
    for event in [
        WriteEvent::Commit,
        WriteEvent::LoseTrack,
        WriteEvent::Execute,
        WriteEvent::ReconcileFound,
    ] {
        let refused = move_k(&*ledger, "a", WriteState::Failed, event, None).await;
        assert!(
            matches!(refused, Err(LedgerError::Illegal(_))),
            "{event:?}: {refused:?}"
        );
    }
    assert_eq!(state_of(&*ledger, "k").await, Some(WriteState::Failed));
}

async fn an_unknown_write_is_settled_only_by_reconciliation(store: &dyn Store) {
    let ledger = store.open();
    finished(&*ledger, "k", "a", WriteEvent::LoseTrack, None).await;
    let rerun = move_k(
        &*ledger,
        "a",
        WriteState::Unknown,
        WriteEvent::Execute,
        None,
    )
    .await;
    assert!(matches!(rerun, Err(LedgerError::Illegal(_))));
    // Any worker may reconcile: the status query is a read.
    let settled = ledger
        .advance(&step(
            "k",
            "z",
            WriteState::Unknown,
            WriteEvent::ReconcileFound,
            Some("{\"n\":241}"),
            T0 + 1,
        ))
        .await
        .unwrap();
    assert!(
        matches!(settled, Advanced::Applied(ref record) if record.state == WriteState::Succeeded)
    );
    assert!(matches!(
        ledger.claim(&claim("k", "r1", "b", T0 + 2)).await.unwrap(),
        Claimed::Replay(_)
    ));
}

async fn a_claim_is_released_only_by_its_owner_before_anything_was_sent(store: &dyn Store) {
    let ledger = store.open();
    ledger.claim(&claim("k", "r1", "a", T0)).await.unwrap();
    assert!(!ledger.release("k", "b").await.unwrap());
    assert!(ledger.release("k", "a").await.unwrap());
    assert_eq!(state_of(&*ledger, "k").await, None);
    assert_eq!(
        ledger.claim(&claim("k", "r1", "b", T0)).await.unwrap(),
        Claimed::Fresh
    );
    move_k(
        &*ledger,
        "b",
        WriteState::Executing,
        WriteEvent::Commit,
        Some("{}"),
    )
    .await
    .unwrap();
    assert!(
        !ledger.release("k", "b").await.unwrap(),
        "a finished record is never released"
    );
}

async fn keys_expire_after_the_retention_and_unknown_ones_never_do(store: &dyn Store) {
    let ledger = store.open();
    finished(&*ledger, "done", "a", WriteEvent::Commit, Some("{}")).await;
    finished(&*ledger, "lost", "a", WriteEvent::LoseTrack, None).await;
    assert!(matches!(
        ledger
            .claim(&claim("done", "r1", "b", T0 + RETENTION - 1))
            .await
            .unwrap(),
        Claimed::Replay(_)
    ));
    // Past the retention the key is free for a new intent.
    assert_eq!(
        ledger
            .claim(&claim("done", "r2", "b", T0 + RETENTION))
            .await
            .unwrap(),
        Claimed::Fresh
    );
    assert_eq!(
        ledger.purge_expired(T0 + 100 * RETENTION).await.unwrap(),
        0,
        "nothing finished is left"
    );
    assert!(matches!(
        ledger
            .claim(&claim("lost", "r1", "b", T0 + 100 * RETENTION))
            .await
            .unwrap(),
        Claimed::Unknown(_)
    ));
}

async fn purge_removes_only_finished_records_past_their_retention(store: &dyn Store) {
    let ledger = store.open();
    for key in ["a", "b"] {
        finished(&*ledger, key, "o", WriteEvent::Commit, Some("{}")).await;
    }
    ledger
        .claim(&claim("running", "r1", "o", T0))
        .await
        .unwrap();
    assert_eq!(ledger.purge_expired(T0 + RETENTION - 1).await.unwrap(), 0);
    assert_eq!(ledger.purge_expired(T0 + RETENTION).await.unwrap(), 2);
    assert_eq!(state_of(&*ledger, "a").await, None);
    assert_eq!(
        state_of(&*ledger, "running").await,
        Some(WriteState::Executing)
    );
}

async fn concurrent_claims_of_one_key_give_exactly_one_fresh(store: &dyn Store) {
    let ledgers: Vec<Arc<dyn Ledger>> = (0..8).map(|_| store.reopen()).collect();
    let answers: Vec<Claimed> = std::thread::scope(|scope| {
        let handles: Vec<_> = ledgers
            .iter()
            .enumerate()
            .map(|(index, ledger)| {
                scope.spawn(move || {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .build()
                        .unwrap();
                    runtime
                        .block_on(ledger.claim(&claim("k", "r1", &format!("o{index}"), T0)))
                        .unwrap()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().unwrap())
            .collect()
    });
    let fresh = answers
        .iter()
        .filter(|answer| **answer == Claimed::Fresh)
        .count();
    assert_eq!(fresh, 1, "{answers:?}");
    assert!(
        answers
            .iter()
            .all(|answer| matches!(answer, Claimed::Fresh | Claimed::InFlight(_)))
    );
}

macro_rules! conformance {
    ($($case:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test]
                async fn $case() {
                    super::$case(&super::Memory(super::MemoryLedger::new())).await;
                }
            )*
        }
        mod sqlite {
            $(
                #[tokio::test]
                async fn $case() {
                    super::$case(&super::sqlite_file()).await;
                }
            )*
        }
    };
}

conformance!(
    a_fresh_key_is_claimed_once_and_replayed_after_its_outcome,
    the_same_key_with_another_request_conflicts_in_every_state,
    a_key_in_flight_is_refused_while_its_lease_runs,
    a_restart_between_executing_and_the_outcome_leaves_the_operation_unknown,
    a_lapsed_lease_turns_unknown_whoever_asks,
    only_the_owner_moves_a_write_in_flight,
    an_event_without_a_move_is_refused,
    finished_records_absorb_every_event,
    an_unknown_write_is_settled_only_by_reconciliation,
    a_claim_is_released_only_by_its_owner_before_anything_was_sent,
    keys_expire_after_the_retention_and_unknown_ones_never_do,
    purge_removes_only_finished_records_past_their_retention,
    concurrent_claims_of_one_key_give_exactly_one_fresh,
);

#[test]
fn a_corrupt_row_is_an_error_not_a_panic() {
    let store = sqlite_file();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    {
        let ledger = SqliteLedger::open(&store.0).unwrap();
        runtime
            .block_on(ledger.claim(&claim("k", "r1", "a", T0)))
            .unwrap();
    }
    let edit = rusqlite::Connection::open(&store.0).unwrap();
    let edited = edit
        .execute(
            "UPDATE tool_contract_ledger SET state = 'exploded' WHERE key = 'k'",
            [],
        )
        .unwrap();
    assert_eq!(edited, 1);
    drop(edit);
    let ledger = SqliteLedger::open(&store.0).unwrap();
    let read = runtime.block_on(ledger.get("k"));
    assert!(matches!(read, Err(LedgerError::Corrupt(_))), "{read:?}");
    let claimed = runtime.block_on(ledger.claim(&claim("k", "r1", "b", T0)));
    assert!(
        matches!(claimed, Err(LedgerError::Corrupt(_))),
        "{claimed:?}"
    );
}
