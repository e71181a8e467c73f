//! Parked refunds: ones the processor did not attempt. A parked refund is `failed` with
//! `processor_unavailable` and has given back its reservation; a retry with its key
//! reopens it (reserving again), and the reaper abandons it when its key expires.
//! Every write here is by the lease holder only.

use chrono::{NaiveDateTime, TimeDelta};

use crate::db::payments as payment_rows;
use crate::db::refunds::{self as rows, RefundRow};
use crate::db::{self, DbConnection};
use crate::domain::payment::status;
use crate::error::ApiError;
use crate::idempotency::finish::renew;
use crate::idempotency::record::Record;
use crate::idempotency::recovery::delete_if_unchanged;
use crate::idempotency::Lease;
use crate::payments::UNAVAILABLE;

/// The refund a resume sends, the refunded payment's method and the deadline the call
/// must land by, with our lease renewed for the processor call (a stale execution stops here): as stored, or, if it
/// was parked after the processor said it was unavailable, back to `processing` with
/// its amount reserved again (409 `refund_exceeds_payment` if that no longer fits).
pub(super) fn reopen(
    conn: &mut DbConnection,
    lease: &Lease,
    lease_len: TimeDelta,
    refund_id: &str,
) -> Result<(RefundRow, String, NaiveDateTime), ApiError> {
    db::write_transaction(conn, |conn| {
        let deadline = renew(conn, lease, lease_len)?;
        let refund = rows::find_by_id(conn, refund_id)?;
        let payment = payment_rows::find_by_id(conn, &refund.payment_id)?;
        if refund.status != status::FAILED || refund.failure_code.as_deref() != Some(UNAVAILABLE) {
            return Ok((refund, payment.payment_method, deadline));
        }
        let now = db::now(conn)?;
        if !payment_rows::reserve(conn, &payment.id, refund.amount, now)? {
            let now_held = payment_rows::find_by_id(conn, &payment.id)?;
            return Err(super::no_room(&now_held, Some(refund.amount)));
        }
        rows::reopen(conn, refund_id, now)?;
        Ok((
            rows::find_by_id(conn, refund_id)?,
            payment.payment_method,
            deadline,
        ))
    })
}

/// Parks a refund the processor did not attempt: `failed` with `processor_unavailable`
/// and its reservation released; a retry with its key reopens it.
pub(super) fn park(
    conn: &mut DbConnection,
    lease: &Lease,
    lease_len: TimeDelta,
    refund: &RefundRow,
) -> Result<(), ApiError> {
    db::write_transaction(conn, |conn| {
        renew(conn, lease, lease_len)?;
        let now = db::now(conn)?;
        if rows::settle(conn, &refund.id, status::FAILED, Some(UNAVAILABLE), now)? {
            payment_rows::end_reservation(conn, &refund.payment_id, refund.amount, false, now)?;
        }
        Ok(())
    })
}

/// Abandons a refund whose idempotency record expired as `failed_retryable`: the refund
/// fails and releases its reservation, and the record is deleted. Returns false when
/// the record changed meanwhile.
pub fn abandon(conn: &mut DbConnection, record: &Record) -> Result<bool, ApiError> {
    db::write_transaction(conn, |conn| {
        if !delete_if_unchanged(conn, record)? {
            return Ok(false);
        }
        if let Some(id) = &record.resource_id {
            let now = db::now(conn)?;
            let refund = rows::find_by_id(conn, id)?;
            if rows::settle(conn, id, status::FAILED, Some(UNAVAILABLE), now)? {
                payment_rows::end_reservation(conn, &refund.payment_id, refund.amount, false, now)?;
            }
        }
        Ok(true)
    })
}
