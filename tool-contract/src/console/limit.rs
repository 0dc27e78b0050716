//! The sign-in rate limit: so many attempts per approver id in a window, so that nobody
//! learns which ids exist, or wears an authenticator's patience, by trying fast.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How many ids are tracked at most: past it, the oldest windows are forgotten first.
const TRACKED: usize = 10_000;

/// Attempts per key in fixed windows.
#[derive(Debug)]
pub(super) struct AttemptLimit {
    max: u32,
    window: Duration,
    attempts: Mutex<HashMap<String, (Instant, u32)>>,
}

impl AttemptLimit {
    pub fn new(max: u32, window: Duration) -> AttemptLimit {
        AttemptLimit {
            max,
            window,
            attempts: Mutex::new(HashMap::new()),
        }
    }

    /// Counts an attempt for `key` at `now`: whether it is within the limit.
    pub fn attempt(&self, key: &str, now: Instant) -> bool {
        let mut attempts = self
            .attempts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if attempts.len() >= TRACKED {
            let window = self.window;
            attempts.retain(|_, (started, _)| now.duration_since(*started) < window);
            if attempts.len() >= TRACKED && !attempts.contains_key(key) {
                // Every window is still open: refuse a new id rather than forget one.
                return false;
            }
        }
        let entry = attempts.entry(key.to_owned()).or_insert((now, 0));
        if now.duration_since(entry.0) >= self.window {
            *entry = (now, 0);
        }
        entry.1 += 1;
        entry.1 <= self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempts_past_the_limit_are_refused_until_the_window_ends() {
        let limit = AttemptLimit::new(3, Duration::from_secs(60));
        let start = Instant::now();
        assert!((0..3).all(|_| limit.attempt("sup-ana", start)));
        assert!(!limit.attempt("sup-ana", start + Duration::from_secs(59)));
        assert!(
            limit.attempt("sup-bo", start),
            "another id has its own window"
        );
        assert!(limit.attempt("sup-ana", start + Duration::from_secs(60)));
    }
}
