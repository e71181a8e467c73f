//! Parked payments: ones the processor did not attempt (it said it was unavailable).
//! A parked payment is `failed` with `processor_unavailable`, so it blocks neither the
//! order nor a cancel; a retry with its key reopens it (same payment, same processor
//! key), and the reaper abandons it when its key expires unretried.

use super::UNAVAILABLE;
use crate::db::payments::{self as rows, PaymentRow};
use crate::db::{self, DbConnection};
use crate::domain::payment::status;
use crate::error::ApiError;
use crate::idempotency::finish::renew;
use crate::idempotency::record::Record;
use crate::idempotency::recovery::delete_if_unchanged;
use crate::idempotency::Lease;
use chrono::{NaiveDateTime, TimeDelta};

/// The payment a resume charges and the deadline its charge must land by, with our lease
/// renewed for the processor call (a stale execution stops here): as stored, or, if it was parked after the processor said it
/// was unavailable, back to `processing`, provided the order is still payable (under
/// the order's lock, as in phase 1). Errors: 409 `order_not_payable` (permanent) or
/// `payment_in_progress` (retryable) when another payment got there first; lease lost.
pub(super) fn reopen(
    conn: &mut DbConnection,
    lease: &Lease,
    lease_len: TimeDelta,
    payment_id: &str,
) -> Result<(PaymentRow, NaiveDateTime), ApiError> {
    db::write_transaction(conn, |conn| {
        let deadline = renew(conn, lease, lease_len)?;
        let payment = rows::find_by_id(conn, payment_id)?;
        if payment.status != status::FAILED || payment.failure_code.as_deref() != Some(UNAVAILABLE)
        {
            return Ok((payment, deadline));
        }
        super::lock_payable_order(conn, &payment.merchant_id, &payment.order_id)?;
        let now = db::now(conn)?;
        rows::reopen(conn, payment_id, now)?;
        Ok((rows::find_by_id(conn, payment_id)?, deadline))
    })
}

/// Parks a payment the processor did not attempt: `failed` with `processor_unavailable`,
/// so it blocks neither the order nor a cancel; a retry with its key reopens it. Only
/// the lease holder may park (a stale execution's "unavailable" is not the last word).
pub(super) fn park(
    conn: &mut DbConnection,
    lease: &Lease,
    lease_len: TimeDelta,
    payment_id: &str,
) -> Result<(), ApiError> {
    db::write_transaction(conn, |conn| {
        renew(conn, lease, lease_len)?;
        let now = db::now(conn)?;
        let failure = (
            UNAVAILABLE,
            "the payment processor was unavailable; nothing was charged",
        );
        rows::settle(conn, payment_id, status::FAILED, Some(failure), now)?;
        Ok(())
    })
}

/// Abandons a payment whose idempotency record expired as `failed_retryable`: the
/// processor last said nothing happened and the client stopped retrying, so the payment
/// fails with `processor_unavailable` (the order can be paid again) and the record is
/// deleted. Returns false when the record changed meanwhile (a retry took it over).
pub fn abandon(conn: &mut DbConnection, record: &Record) -> Result<bool, ApiError> {
    db::write_transaction(conn, |conn| {
        if !delete_if_unchanged(conn, record)? {
            return Ok(false);
        }
        if let Some(id) = &record.resource_id {
            let now = db::now(conn)?;
            let failure = (
                "processor_unavailable",
                "the processor was unavailable and the payment was not retried",
            );
            rows::settle(conn, id, status::FAILED, Some(failure), now)?;
        }
        Ok(true)
    })
}
