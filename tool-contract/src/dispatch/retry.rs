//! When a failed attempt is tried again: by effect, with capped exponential backoff and full
//! jitter.

use std::time::Duration;

use rand::RngExt;

use crate::vocabulary::Effect;

/// How often and how patiently a tool's transient failures are retried.
///
/// The wait before retry `n` (0 for the first retry) is uniform in
/// `[0, min(cap, base · 2ⁿ)]` ("full jitter"), raised to the server's retry-after when it gave
/// one; retries stop after `max_attempts` attempts in all, or when the next wait would take
/// the waits of this call past `max_total_wait` or the task past its deadline.
///
/// Built from [`RetryPolicy::DEFAULT`] or [`RetryPolicy::NEVER`] with the `with_*` methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Attempts in all, the first included (1 means never retry).
    pub max_attempts: u32,
    /// The first backoff ceiling.
    pub base: Duration,
    /// The largest backoff ceiling.
    pub cap: Duration,
    /// The most one call may wait between its attempts, all waits together.
    pub max_total_wait: Duration,
}

impl RetryPolicy {
    /// Three attempts, 200 ms doubling up to 10 s, at most 30 s of waiting.
    pub const DEFAULT: RetryPolicy = RetryPolicy {
        max_attempts: 3,
        base: Duration::from_millis(200),
        cap: Duration::from_secs(10),
        max_total_wait: Duration::from_secs(30),
    };

    /// One attempt, no retry.
    pub const NEVER: RetryPolicy = RetryPolicy {
        max_attempts: 1,
        ..RetryPolicy::DEFAULT
    };

    /// This policy with `max_attempts` attempts in all (1: never retry).
    #[must_use]
    pub const fn with_max_attempts(mut self, max_attempts: u32) -> Self {
        self.max_attempts = max_attempts;
        self
    }

    /// This policy with `base` as the first backoff ceiling.
    #[must_use]
    pub const fn with_base(mut self, base: Duration) -> Self {
        self.base = base;
        self
    }

    /// This policy with `cap` as the largest backoff ceiling.
    #[must_use]
    pub const fn with_cap(mut self, cap: Duration) -> Self {
        self.cap = cap;
        self
    }

    /// This policy with at most `max_total_wait` between one call's attempts.
    #[must_use]
    pub const fn with_max_total_wait(mut self, max_total_wait: Duration) -> Self {
        self.max_total_wait = max_total_wait;
        self
    }

    /// The backoff ceiling before retry `retry` (0-based): `min(cap, base · 2^retry)`.
    #[must_use]
    pub fn ceiling(&self, retry: u32) -> Duration {
        let factor = 1_u32.checked_shl(retry).unwrap_or(u32::MAX);
        self.base.saturating_mul(factor).min(self.cap)
    }

    /// The wait before retry `retry`: full jitter under the ceiling, but never less than the
    /// server's `retry_after`.
    #[must_use]
    pub fn wait(
        &self,
        retry: u32,
        retry_after: Option<Duration>,
        rng: &mut impl rand::Rng,
    ) -> Duration {
        let ceiling = u64::try_from(self.ceiling(retry).as_millis()).unwrap_or(u64::MAX);
        let jittered = Duration::from_millis(rng.random_range(0..=ceiling));
        jittered.max(retry_after.unwrap_or_default())
    }
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Why a failed attempt may or may not be tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transient {
    /// Nothing left the process: safe for every effect.
    NotSent,
    /// The remote refused for now (rate limit): nothing happened there.
    Refused,
    /// The attempt ran out of time after the request was sent.
    TimedOutAfterSend,
    /// The handler reports it may have acted.
    MayHaveActed,
}

/// Whether an attempt that failed so may be retried for a tool of `effect`.
///
/// Reads retry every transient failure. An `idempotent_write` retries under the same key,
/// since the remote applies a key once. A `non_idempotent_write` retries only what never
/// left the process: once dispatched, its only way on is reconciliation.
pub(crate) fn may_retry(effect: Effect, failure: Transient) -> bool {
    match effect {
        Effect::Pure | Effect::ReadOnly | Effect::IdempotentWrite => true,
        Effect::NonIdempotentWrite => failure == Transient::NotSent,
    }
}
