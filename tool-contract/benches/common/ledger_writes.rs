//! One write's steps through the ledger as the dispatcher takes them (a fresh claim, then its
//! committed outcome), for the benches that load a store with writes.

use std::sync::atomic::{AtomicU64, Ordering};

use time::OffsetDateTime;
use tool_contract::control::{
    Advance, Claim, Claimed, ControlStore, IfAbsent, Lease, RowSeal, WriteEvent, WriteState,
};
use tool_contract::{AuditKeys, SecretKey};

/// The benches' clock: every write is made at this time.
pub const T0: u64 = 1_787_392_800_000;

/// The next write's key.
pub static KEYS: AtomicU64 = AtomicU64::new(0);

/// The store's steps of one write under a fresh key, as the dispatcher takes them.
pub async fn one_write(store: &dyn ControlStore, owner: &str) {
    let n = KEYS.fetch_add(1, Ordering::Relaxed);
    let key = format!("bench:{n}");
    let lease = Lease {
        owner: owner.to_owned(),
        generation: n,
    };
    let claim = Claim {
        key: key.clone(),
        request_sha256: "r".repeat(64),
        tool: "note_order".to_owned(),
        lease: lease.clone(),
        now_ms: T0,
        lease_ms: 60_000,
        retention_ms: 3_600_000,
        kept: false,
        redeem: None,
        seal: seal(),
        call: None,
    };
    assert_eq!(
        store.claim_if_absent(&claim).await.unwrap(),
        IfAbsent::Claimed(Claimed::Fresh)
    );
    record_outcome(store, key, lease).await;
}

/// The outcome of the write claimed at `key` under `lease`: committed.
pub async fn record_outcome(store: &dyn ControlStore, key: String, lease: Lease) {
    let step = Advance {
        key,
        lease,
        from: WriteState::Executing,
        event: WriteEvent::Commit,
        result: Some("s".repeat(64) + "\n{\"status\":\"succeeded\"}"),
        now_ms: T0 + 1,
        retention_ms: 3_600_000,
    };
    store.advance(&step).await.unwrap();
}

/// The seal of the bench's approval rows.
pub fn seal() -> RowSeal {
    RowSeal::new(&AuditKeys::new(SecretKey::from([7; 32])))
}

pub fn at(ms: u64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000).expect("a time in range")
}
