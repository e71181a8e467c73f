//! Fenced writes that move a claimed record on: to a new recovery point, to a finished
//! state with its stored response, or back to the pool of work (released).
//!
//! Each statement repeats `lock_token = <ours>`; zero rows means another execution took
//! the lease over, and the caller must stop (and roll back) before doing anything else.

use chrono::{NaiveDateTime, TimeDelta};
use diesel::prelude::*;

use super::record::{status, Lease, StoredResponse};
use crate::db::schema::idempotency_records as records;
use crate::db::{self, DbConnection};
use crate::error::ApiError;

/// Turns a fenced statement's row count into a result: zero rows means the lease was
/// lost ([`ApiError::LeaseLost`]: the new owner is finishing the same request).
fn fenced(rows: usize) -> Result<(), ApiError> {
    if rows == 1 {
        Ok(())
    } else {
        tracing::warn!("lease lost: another execution took this idempotency record over");
        Err(ApiError::LeaseLost)
    }
}

/// Finishes the record with a response to replay: `succeeded` for a 2xx, `failed` for a
/// permanent failure. Expires `ttl` after now (recorded in `response.expires_at`). Call it inside the transaction that makes
/// the response true, so both commit or neither does.
pub fn finish(
    conn: &mut DbConnection,
    lease: &Lease,
    response: &mut StoredResponse,
    resource_id: Option<&str>,
    ttl: TimeDelta,
) -> Result<(), ApiError> {
    let now = db::now(conn)?;
    let final_status = if (200..300).contains(&response.status) {
        status::SUCCEEDED
    } else {
        status::FAILED
    };
    let rows = diesel::update(records::table)
        .filter(records::id.eq(&lease.record_id))
        .filter(records::lock_token.eq(&lease.lock_token))
        .filter(records::status.eq(status::PROCESSING))
        .set((
            records::status.eq(final_status),
            records::response_status.eq(i32::from(response.status)),
            records::response_body.eq(&response.body),
            records::response_content_type.eq(&response.content_type),
            records::response_location.eq(&response.location),
            records::resource_id.eq(resource_id),
            records::expires_at.eq(now + ttl),
            records::updated_at.eq(now),
        ))
        .execute(conn)?;
    fenced(rows)?;
    response.expires_at = Some(now + ttl);
    Ok(())
}

/// Records progress: the execution reached `recovery_point`, having created
/// `resource_id`. Call it in the transaction that created the resource.
pub fn advance(
    conn: &mut DbConnection,
    lease: &mut Lease,
    recovery_point: &str,
    resource_id: &str,
) -> Result<(), ApiError> {
    let now = db::now(conn)?;
    let rows = diesel::update(records::table)
        .filter(records::id.eq(&lease.record_id))
        .filter(records::lock_token.eq(&lease.lock_token))
        .set((
            records::recovery_point.eq(recovery_point),
            records::resource_id.eq(resource_id),
            records::updated_at.eq(now),
        ))
        .execute(conn)?;
    fenced(rows)?;
    lease.recovery_point = recovery_point.to_owned();
    lease.resource_id = Some(resource_id.to_owned());
    Ok(())
}

/// Releases a record on which nothing happened: `failed_retryable`, so the next retry
/// with the key takes it over and executes again. Expires `ttl` after now.
pub fn release_retryable(
    conn: &mut DbConnection,
    lease: &Lease,
    ttl: TimeDelta,
) -> Result<(), ApiError> {
    let now = db::now(conn)?;
    let rows = diesel::update(records::table)
        .filter(records::id.eq(&lease.record_id))
        .filter(records::lock_token.eq(&lease.lock_token))
        .set((
            records::status.eq(status::FAILED_RETRYABLE),
            records::locked_until.eq(now),
            records::expires_at.eq(Some(now + ttl)),
            records::updated_at.eq(now),
        ))
        .execute(conn)?;
    fenced(rows)
}

/// Ends our lease on a record whose outcome is unknown, `delay` from now (zero: at
/// once): it stays `processing` at its recovery point, and the next retry (or the
/// reaper) resumes from there. The reaper passes a back-off delay.
pub fn release_lease(
    conn: &mut DbConnection,
    lease: &Lease,
    delay: TimeDelta,
) -> Result<(), ApiError> {
    let now = db::now(conn)?;
    let rows = diesel::update(records::table)
        .filter(records::id.eq(&lease.record_id))
        .filter(records::lock_token.eq(&lease.lock_token))
        .filter(records::status.eq(status::PROCESSING))
        .set((
            records::locked_until.eq(now + delay),
            records::updated_at.eq(now),
        ))
        .execute(conn)?;
    fenced(rows)
}

/// Renews our lease for `lease_len` from now, proving in the same statement that we still
/// hold it. Call it first in every transaction after the claim that does not already end
/// with a fenced write, and right before a processor call, so the call has a whole lease
/// to finish in and a stale execution stops before it. Returns the lease's new end: the
/// deadline a processor call must land by. Errors: [`ApiError::LeaseLost`].
pub fn renew(
    conn: &mut DbConnection,
    lease: &Lease,
    lease_len: TimeDelta,
) -> Result<NaiveDateTime, ApiError> {
    let now = db::now(conn)?;
    let rows = diesel::update(records::table)
        .filter(records::id.eq(&lease.record_id))
        .filter(records::lock_token.eq(&lease.lock_token))
        .filter(records::status.eq(status::PROCESSING))
        .set((
            records::locked_until.eq(now + lease_len),
            records::updated_at.eq(now),
        ))
        .execute(conn)?;
    fenced(rows).map(|()| now + lease_len)
}

/// Proves we still hold the lease and locks the record for the rest of the transaction
/// (a no-op fenced write). Phase 3 starts with it, so a stale execution stops before it
/// touches a payment, an order or a reservation. Errors: [`ApiError::LeaseLost`].
pub fn hold(conn: &mut DbConnection, lease: &Lease) -> Result<(), ApiError> {
    let rows = diesel::update(records::table)
        .filter(records::id.eq(&lease.record_id))
        .filter(records::lock_token.eq(&lease.lock_token))
        .filter(records::status.eq(status::PROCESSING))
        .set(records::updated_at.eq(records::updated_at))
        .execute(conn)?;
    fenced(rows)
}
