//! Waiting for a key in use instead of answering 409 (`Prefer: wait=N`, RFC 7240).
//!
//! A waiter holds no database connection and does not poll in a tight loop: an
//! execution in this instance wakes its key's waiters the moment it ends, and a waiter
//! whose key runs on another instance (or in the reaper) looks again at a slowly
//! growing interval, from 100 ms to 1 s. Waiters are parked futures: a thousand of them
//! on one key cost no thread and hold up no other request.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use actix_web::http::header;
use actix_web::HttpResponse;
use parking_lot::Mutex;
use tokio::sync::Notify;

use super::decide::{decide, Decision};
use super::engine::count_refusal;
use super::record::{Lease, RequestIdentity, STARTED};
use super::respond::respond;
use crate::db;
use crate::error::ApiError;
use crate::metrics::Outcome;
use crate::state::AppState;

/// The first and the longest pause between two looks at a key another instance holds.
const FIRST_LOOK: Duration = Duration::from_millis(100);
const LONGEST_LOOK: Duration = Duration::from_secs(1);

/// Decides `request` (see [`decide`]), waiting while its key is in use if the client
/// asked to (`Prefer: wait=N`, RFC 7240; at most until the request timeout): `Ok(lease)`
/// to execute, or the answer to send now (a replay, or the refusal; either carries
/// `Preference-Applied: wait=N` when the wait was honoured).
pub(super) async fn decide_waiting(
    state: &AppState,
    request: &RequestIdentity,
    started: std::time::Instant,
) -> Result<Result<Lease, HttpResponse>, ApiError> {
    let lease_len = state.config.lease();
    let wait = request
        .prefer_wait
        .map(|w| w.min(state.config.request_timeout()));
    let deadline = started + wait.unwrap_or_default();
    let mut pause = Waiters::first_pause();
    // Counted from the first wait until the answer, looks at the database included.
    let mut waiting: Option<Waiting> = None;
    loop {
        let identity = request.clone();
        let decided = db::run(&state.pool, move |conn| decide(conn, &identity, lease_len)).await;
        let answer = match decided {
            Ok(Decision::Execute(lease, how)) => {
                state.metrics.outcome(how);
                if lease.recovery_point != STARTED {
                    state.metrics.outcome(Outcome::Resumed);
                }
                return Ok(Ok(lease));
            }
            Ok(Decision::Replay(stored, remaining)) => {
                state.metrics.outcome(Outcome::Replayed);
                state.replays.put(request, &stored, remaining);
                respond(stored, true)
            }
            Err(ApiError::KeyInUse { .. }) if std::time::Instant::now() < deadline => {
                waiting.get_or_insert_with(|| Waiting::count(&state.metrics.key_waiters));
                let (merchant, key) = (&request.merchant_id, &request.key);
                pause = state.waiters.wait(merchant, key, pause, deadline).await;
                continue;
            }
            Err(error) if waiting.is_none() => {
                count_refusal(&state.metrics, &error);
                return Err(error);
            }
            Err(error) => {
                count_refusal(&state.metrics, &error);
                actix_web::ResponseError::error_response(&error)
            }
        };
        let mut answer = answer;
        if let (Some(_), Some(wait)) = (&waiting, wait) {
            let applied = format!("wait={}", wait.as_secs());
            let value =
                header::HeaderValue::from_str(&applied).expect("digits are a valid header value");
            answer
                .headers_mut()
                .insert(header::HeaderName::from_static("preference-applied"), value);
        }
        return Ok(Err(answer));
    }
}

/// The `wait` preference among `Prefer` header values (RFC 7240 §2, §4.3): the first
/// preference named `wait` (any case) whose value is a whole number of seconds, written
/// bare or quoted, with optional spaces around `=` and parameters after `;`. A number
/// too large for the clock means "as long as you allow" (the request timeout caps it).
/// A `wait` whose value is not a whole number is ignored, as the RFC asks.
pub fn preferred_wait<'a>(values: impl Iterator<Item = &'a str>) -> Option<Duration> {
    values
        .flat_map(|value| value.split(','))
        .filter_map(|preference| {
            let head = preference.split(';').next()?;
            let (name, value) = head.split_once('=')?;
            name.trim().eq_ignore_ascii_case("wait").then_some(value)
        })
        .find_map(|value| {
            let value = value.trim();
            let value = value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .unwrap_or(value);
            if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            Some(Duration::from_secs(value.parse().unwrap_or(u64::MAX)))
        })
}

/// The keys being waited for in this instance, by merchant and key.
#[derive(Debug, Default)]
pub struct Waiters(Mutex<HashMap<String, Weak<Notify>>>);

fn scope(merchant_id: &str, key: &str) -> String {
    format!("{merchant_id}\n{key}")
}

impl Waiters {
    /// Wakes everyone waiting for `(merchant, key)`: its execution here just ended.
    pub fn finished(&self, merchant_id: &str, key: &str) {
        let notify = self.0.lock().remove(&scope(merchant_id, key));
        if let Some(notify) = notify.and_then(|weak| weak.upgrade()) {
            notify.notify_waiters();
        }
    }

    /// Waits until `(merchant, key)` may have finished: woken by [`Self::finished`], or
    /// after `pause`, or at `deadline`, whichever comes first. Returns the next pause.
    pub async fn wait(
        &self,
        merchant_id: &str,
        key: &str,
        pause: Duration,
        deadline: Instant,
    ) -> Duration {
        let notify = {
            let mut map = self.0.lock();
            if map.len() > 1024 {
                map.retain(|_, weak| weak.strong_count() > 0);
            }
            let slot = map.entry(scope(merchant_id, key)).or_default();
            slot.upgrade().unwrap_or_else(|| {
                let fresh = Arc::new(Notify::new());
                *slot = Arc::downgrade(&fresh);
                fresh
            })
        };
        let woken = notify.notified();
        let until = deadline.min(Instant::now() + pause);
        let _ = tokio::time::timeout_at(until.into(), woken).await;
        (pause * 2).min(LONGEST_LOOK)
    }

    /// The pause before the first look again.
    pub fn first_pause() -> Duration {
        FIRST_LOOK
    }
}

/// One request counted in the waiters gauge while it lives (a client that hangs up
/// drops it too).
pub struct Waiting(prometheus::IntGauge);

impl Waiting {
    pub fn count(gauge: &prometheus::IntGauge) -> Self {
        gauge.inc();
        Self(gauge.clone())
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.dec();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wait(values: &[&str]) -> Option<u64> {
        preferred_wait(values.iter().copied()).map(|d| d.as_secs())
    }

    #[test]
    fn reads_every_form_rfc_7240_allows() {
        for (values, expected) in [
            (&["wait=5"][..], Some(5)),
            (&["Wait=5"], Some(5)),
            (&["WAIT = 5"], Some(5)),
            (&["wait=\"5\""], Some(5)),
            (&["wait=5;foo=bar"], Some(5)),
            (&["respond-async, wait=7"], Some(7)),
            (&["handling=lenient", "wait=3"], Some(3)),
            (&["wait=soon, wait=2"], Some(2)),
            (&["wait=99999999999999999999999"], Some(u64::MAX)),
            (&["wait=18446744073709551616"], Some(u64::MAX)),
        ] {
            assert_eq!(wait(values), expected, "{values:?}");
        }
    }

    #[test]
    fn ignores_what_is_not_a_whole_number_of_seconds() {
        for value in [
            "wait=+5",
            "wait=-1",
            "wait=1.5",
            "wait=",
            "wait",
            "waiting=5",
            "wait=\"\"",
        ] {
            assert_eq!(wait(&[value]), None, "{value}");
        }
    }
}
