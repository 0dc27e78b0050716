//! The sign-in limit: so many failed sign-ins per browser visit in a window. It counts
//! failures and the client that made them, never a name: an id anyone can type locks nobody
//! out, and every id answers alike, so there is nothing to learn by trying fast.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How many clients are tracked at most: past it, the oldest window is forgotten first, so
/// that clients no one has seen fail are never refused.
const TRACKED: usize = 10_000;

/// Failures per key in fixed windows.
#[derive(Debug)]
pub(super) struct FailureLimit {
    max: u32,
    window: Duration,
    failures: Mutex<HashMap<String, (Instant, u32)>>,
}

impl FailureLimit {
    pub fn new(max: u32, window: Duration) -> FailureLimit {
        FailureLimit {
            max,
            window,
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// Whether `key` may try again at `now`: fewer than the limit's failures in its window.
    pub fn allows(&self, key: &str, now: Instant) -> bool {
        let failures = self.lock();
        failures.get(key).is_none_or(|&(started, count)| {
            now.duration_since(started) >= self.window || count < self.max
        })
    }

    /// Counts a failure of `key` at `now`.
    pub fn failed(&self, key: &str, now: Instant) {
        let mut failures = self.lock();
        if failures.len() >= TRACKED && !failures.contains_key(key) {
            let window = self.window;
            failures.retain(|_, (started, _)| now.duration_since(*started) < window);
            if failures.len() >= TRACKED {
                let oldest = failures
                    .iter()
                    .min_by_key(|(_, (started, _))| *started)
                    .map(|(oldest, _)| oldest.clone());
                if let Some(oldest) = oldest {
                    failures.remove(&oldest);
                }
            }
        }
        let entry = failures.entry(key.to_owned()).or_insert((now, 0));
        if now.duration_since(entry.0) >= self.window {
            *entry = (now, 0);
        }
        entry.1 = entry.1.saturating_add(1);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Instant, u32)>> {
        self.failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_past_the_limit_are_refused_until_the_window_ends() {
        let limit = FailureLimit::new(3, Duration::from_secs(60));
        let start = Instant::now();
        for _ in 0..3 {
            assert!(limit.allows("visit-1", start));
            limit.failed("visit-1", start);
        }
        assert!(!limit.allows("visit-1", start + Duration::from_secs(59)));
        assert!(limit.allows("visit-2", start), "another client has its own");
        assert!(limit.allows("visit-1", start + Duration::from_secs(60)));
    }

    #[test]
    fn a_full_table_forgets_its_oldest_client_and_refuses_no_new_one() {
        let limit = FailureLimit::new(1, Duration::from_secs(60));
        let start = Instant::now();
        for client in 0..TRACKED {
            limit.failed(&format!("client-{client}"), start);
        }
        limit.failed("client-new", start + Duration::from_secs(1));
        assert!(!limit.allows("client-new", start + Duration::from_secs(1)));
        assert!(limit.allows("someone-else", start + Duration::from_secs(1)));
        assert_eq!(limit.lock().len(), TRACKED);
    }
}
