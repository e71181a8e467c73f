//! Rate limits, as token buckets (the `governor` crate): requests per API key, and
//! failed authentications per client address. Over a limit the answer is
//! `429 rate_limited` with `Retry-After`, and nothing is stored.
//!
//! A client address that spent its failed-authentication budget is refused before its
//! credentials are even looked at, until the bucket refills: guessing keys costs the
//! same whether the guess is right or wrong.

use std::collections::HashMap;
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::time::{Duration, Instant};

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use parking_lot::Mutex;

use crate::error::ApiError;

/// Keyed limiters prune keys they have not seen lately beyond this many.
const PRUNE_ABOVE: usize = 10_000;

/// The instance's rate limiters.
pub struct Limits {
    per_key: Option<DefaultKeyedRateLimiter<String>>,
    failures: DefaultKeyedRateLimiter<IpAddr>,
    /// Addresses refused until the instant, having spent their failure budget.
    throttled: Mutex<HashMap<IpAddr, Instant>>,
}

fn refused(wait: Duration) -> ApiError {
    ApiError::RateLimited {
        retry_after_secs: wait.as_secs_f64().ceil().max(1.0) as u64,
    }
}

fn keyed<K: std::hash::Hash + Eq + Clone>(
    per_second: u32,
    burst: u32,
) -> DefaultKeyedRateLimiter<K> {
    let rate = NonZeroU32::new(per_second.max(1)).expect("at least 1");
    let burst = NonZeroU32::new(burst.max(1)).expect("at least 1");
    RateLimiter::keyed(Quota::per_second(rate).allow_burst(burst))
}

impl Limits {
    /// `per_key`: requests per second per API key, bursts of twice that (0: no limit);
    /// `failures_per_minute`: failed authentications per client address, all at once.
    pub fn new(per_key: u32, failures_per_minute: u32) -> Self {
        let failures = NonZeroU32::new(failures_per_minute.max(1)).expect("at least 1");
        Self {
            per_key: (per_key > 0).then(|| keyed(per_key, per_key.saturating_mul(2))),
            failures: RateLimiter::keyed(Quota::per_minute(failures)),
            throttled: Mutex::default(),
        }
    }

    /// Counts one request of the key whose hash is `key_hash`. Errors: 429 over its rate.
    pub fn request(&self, key_hash: &str) -> Result<(), ApiError> {
        let Some(limiter) = &self.per_key else {
            return Ok(());
        };
        if limiter.len() > PRUNE_ABOVE {
            limiter.retain_recent();
        }
        limiter
            .check_key(&key_hash.to_owned())
            .map_err(|not_until| refused(not_until.wait_time_from(DefaultClock::default().now())))
    }

    /// Before credentials are looked at. Errors: 429 while `address` is throttled.
    pub fn admit(&self, address: IpAddr) -> Result<(), ApiError> {
        let mut throttled = self.throttled.lock();
        let Some(until) = throttled.get(&address).copied() else {
            return Ok(());
        };
        match until.checked_duration_since(Instant::now()) {
            Some(wait) => Err(refused(wait)),
            None => {
                throttled.remove(&address);
                Ok(())
            }
        }
    }

    /// Counts a failed authentication from `address`. Errors: 429 when it went over
    /// the budget (the address is then throttled until the bucket refills).
    pub fn failed(&self, address: IpAddr) -> Result<(), ApiError> {
        if self.failures.len() > PRUNE_ABOVE {
            self.failures.retain_recent();
        }
        let Err(not_until) = self.failures.check_key(&address) else {
            return Ok(());
        };
        let wait = not_until.wait_time_from(DefaultClock::default().now());
        let mut throttled = self.throttled.lock();
        throttled.retain(|_, until| *until > Instant::now());
        throttled.insert(address, Instant::now() + wait);
        Err(refused(wait))
    }
}
