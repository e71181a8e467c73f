//! The reaper: a background task in every instance (and `idempay reap --once`) that
//! keeps no record stuck and no key forever (DESIGN §5).
//!
//! Each pass takes over `processing` records whose lease lapsed (their owner died):
//! at `started` nothing happened, so they become `failed_retryable`; at
//! `payment_created`/`refund_created` they are resumed through the same code path as a
//! client's retry (re-send with the same processor key, then settle). A recovery that
//! fails again backs off (`lease × 2^attempts`, capped) and, after repeated failures, is
//! flagged for an operator, never silently marked failed. Then expired records are
//! deleted in batches. Safe with many instances: `FOR UPDATE SKIP LOCKED` and
//! compare-and-set on `lock_token`.

use std::time::Duration;

mod expiry;

use chrono::TimeDelta;

use crate::db;
use crate::db::payments::PaymentRow;
use crate::db::refunds::RefundRow;
use crate::error::ApiError;
use crate::idempotency::engine::settle;
use crate::idempotency::finish::release_retryable;
use crate::idempotency::record::STARTED;
use crate::idempotency::recovery::{self, Stuck};
use crate::movement;
use crate::payments::PAYMENT_CREATED;
use crate::refunds::REFUND_CREATED;
use crate::state::AppState;

/// Longest back-off between recoveries of one record.
const MAX_BACKOFF: TimeDelta = TimeDelta::minutes(10);
/// Executions after which a failing recovery is flagged for an operator.
const FLAG_AFTER_ATTEMPTS: i32 = 5;

/// What one pass did. The metrics count the same events as they happen.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Report {
    pub released: u64,
    pub recovered: u64,
    pub purged: u64,
    pub abandoned: u64,
    pub errors: u64,
}

/// Runs one pass; never fails (errors are counted and logged).
pub async fn reap_once(state: &AppState) -> Report {
    let mut report = Report::default();
    // A drain waits for the pass; none starts once it has begun.
    let Some(_guard) = state.drain.enter() else {
        return report;
    };
    let (batch, lease) = (state.config.reaper_batch_size, state.config.lease());
    for _ in 0..batch {
        match db::run(&state.pool, move |conn| {
            Ok(recovery::claim_stuck(conn, 1, lease)?)
        })
        .await
        {
            Ok(mut claimed) => match claimed.pop() {
                Some(stuck) => recover(state, stuck, &mut report).await,
                None => break,
            },
            Err(e) => {
                fail(state, &mut report, "could not claim stuck records", &e);
                break;
            }
        }
    }
    expiry::purge(state, &mut report).await;
    state.metrics.reaper_passes.inc();
    if report != Report::default() {
        tracing::info!(?report, "reaper pass");
    }
    report
}

/// Counts a failure of the pass (in its report and, at once, in the metrics).
pub(crate) fn fail(state: &AppState, report: &mut Report, what: &str, error: &ApiError) {
    report.errors += 1;
    state.metrics.reaper_errors.inc();
    tracing::warn!(error = %error, "reaper: {what}");
}

/// Resumes (or releases) one record the reaper holds; a failure backs off and, after
/// repeated failures, is flagged.
pub(crate) async fn recover(state: &AppState, stuck: Stuck, report: &mut Report) {
    let ttl = state.config.key_ttl(stuck.endpoint);
    let lease = stuck.lease;
    let result = match lease.recovery_point.as_str() {
        STARTED => {
            let lease = lease.clone();
            match db::run(&state.pool, move |conn| {
                release_retryable(conn, &lease, ttl)
            })
            .await
            {
                Ok(()) => {
                    report.released += 1;
                    state.metrics.reaper_released.inc();
                }
                Err(e) => fail(state, report, "could not release a stuck record", &e),
            }
            return;
        }
        PAYMENT_CREATED => movement::resume::<PaymentRow>(state.clone(), lease.clone(), ttl).await,
        REFUND_CREATED => movement::resume::<RefundRow>(state.clone(), lease.clone(), ttl).await,
        other => Err(ApiError::Database(format!(
            "unknown recovery point `{other}`"
        ))),
    };
    let Err(error) = result else {
        report.recovered += 1;
        state.metrics.reaper_recovered.inc();
        return;
    };
    let exponent = lease.attempts.clamp(0, 16) as u32;
    let backoff = (state.config.lease() * 2i32.pow(exponent)).min(MAX_BACKOFF);
    fail(state, report, "recovery failed; backing off", &error);
    if lease.attempts >= FLAG_AFTER_ATTEMPTS {
        state.metrics.reaper_flagged.inc();
        tracing::error!(record = %lease.record_id, attempts = lease.attempts, error = %error,
            "reaper: record keeps failing recovery; operator attention needed");
    }
    settle(&state.pool, &state.metrics, lease, &error, ttl, backoff).await;
}

/// Runs the reaper in the background every `interval` (±20 % jitter, so instances
/// drift apart).
pub fn spawn(state: AppState, interval: Duration) {
    actix_web::rt::spawn(async move {
        loop {
            let draw = uuid::Uuid::new_v4().as_u128() as u64;
            tokio::time::sleep(jittered(interval, draw)).await;
            reap_once(&state).await;
        }
    });
}

/// `interval` ±20 %, picked by the random `draw`: from 0.8 to 1.2 times `interval`.
fn jittered(interval: Duration, draw: u64) -> Duration {
    let per_mille = (draw % 401) as f64; // 0..=400
    interval.mul_f64(0.8 + per_mille / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_are_spaced_within_20_percent_of_the_interval() {
        let interval = Duration::from_secs(10);
        assert_eq!(jittered(interval, 0), Duration::from_secs(8));
        assert_eq!(jittered(interval, 400), Duration::from_secs(12));
        assert_eq!(jittered(interval, 401), Duration::from_secs(8));
        assert_eq!(jittered(interval, 200), Duration::from_secs(10));
    }
}
