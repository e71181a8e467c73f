//! The reaper's expiry work: deleting finished records past `expires_at` in batches, and
//! closing the payments and refunds of `failed_retryable` records that expired unretried.
//!
//! A parked payment or refund is closed by the processor's own ledger: if, after all, it
//! moved money (a late call of an execution that lost its lease), the record is taken
//! over and resumed exactly like a client's retry, which completes it; otherwise it is
//! abandoned (failed, reservation released) and the record deleted.

use super::{fail, recover, Report};
use crate::db::{self, DbConnection};
use crate::error::ApiError;
use crate::idempotency::record::{self, Record};
use crate::idempotency::recovery::{self, Stuck};
use crate::processor::{Outcome, PaymentProcessor};
use crate::refunds::REFUND_CREATED;
use crate::state::AppState;
use crate::{payments, refunds};

/// Deletes expired records in batches, then closes expired open ones.
pub(super) async fn purge(state: &AppState, report: &mut Report) {
    let batch = state.config.reaper_batch_size;
    loop {
        match db::run(&state.pool, move |conn| {
            Ok(recovery::purge_expired(conn, batch)?)
        })
        .await
        {
            Ok(n) => {
                report.purged += n as u64;
                state.metrics.reaper_purged.inc_by(n as u64);
                if (n as i64) < batch {
                    break;
                }
            }
            Err(e) => return fail(state, report, "could not purge expired records", &e),
        }
    }
    match db::run(&state.pool, move |conn| {
        Ok(recovery::expired_open(conn, batch)?)
    })
    .await
    {
        Ok(open) => {
            for record in open {
                close(state, record, report).await;
            }
        }
        Err(e) => fail(state, report, "could not read expired open records", &e),
    }
}

/// The processor key of the record's payment or refund.
fn processor_key(conn: &mut DbConnection, record: &Record) -> Result<String, ApiError> {
    let id = record.resource_id.as_deref().unwrap_or_default();
    Ok(match record.recovery_point.as_str() {
        REFUND_CREATED => db::refunds::find_by_id(conn, id)?.processor_key,
        _ => db::payments::find_by_id(conn, id)?.processor_key,
    })
}

async fn close(state: &AppState, record: Record, report: &mut Report) {
    let seen = record.clone();
    let key = match db::run(&state.pool, move |conn| processor_key(conn, &seen)).await {
        Ok(key) => key,
        Err(e) => {
            return fail(
                state,
                report,
                "could not read an expired payment or refund",
                &e,
            )
        }
    };
    let found = state.processor.lookup(key).await;
    let outcome = match &found {
        Ok(Some(Outcome::Succeeded)) => "succeeded",
        Ok(Some(Outcome::Declined { .. })) => "declined",
        Ok(None) => "not_found",
        Err(_) => "unavailable",
    };
    let calls = &state.metrics.processor_calls;
    calls.with_label_values(&["lookup", outcome]).inc();
    match found {
        Ok(Some(Outcome::Succeeded)) => resume(state, record, report).await,
        Ok(_) => abandon(state, record, report).await,
        Err(e) => tracing::warn!(error = %e, "reaper: processor lookup failed; next pass"),
    }
}

/// Money moved after all: take the record over and resume it like a retry.
async fn resume(state: &AppState, record: Record, report: &mut Report) {
    // Only a late call of an execution that lost its lease can get here: money moved
    // after its payment or refund was parked. Complete it, and have an operator look.
    tracing::error!(record = %record.id, "reaper: an expired parked execution moved money; completing it");
    state.metrics.reaper_flagged.inc();
    let lease_len = state.config.lease();
    let endpoint = match record.recovery_point.as_str() {
        REFUND_CREATED => "create_refund",
        _ => "create_payment",
    };
    match db::run(&state.pool, move |conn| {
        Ok(record::take_over(conn, &record, lease_len)?)
    })
    .await
    {
        Ok(Some(lease)) => recover(state, Stuck { lease, endpoint }, report).await,
        Ok(None) => {} // a client's retry got there first
        Err(e) => fail(state, report, "could not take over an expired record", &e),
    }
}

async fn abandon(state: &AppState, record: Record, report: &mut Report) {
    let result = db::run(&state.pool, move |conn| {
        match record.recovery_point.as_str() {
            REFUND_CREATED => refunds::abandon(conn, &record),
            _ => payments::abandon(conn, &record),
        }
    })
    .await;
    match result {
        Ok(true) => {
            report.abandoned += 1;
            state.metrics.reaper_purged.inc();
        }
        Ok(false) => {}
        Err(e) => fail(
            state,
            report,
            "could not abandon an expired payment or refund",
            &e,
        ),
    }
}
