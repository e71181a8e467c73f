//! Refunding a payment, in the same phases as paying:
//!
//! 1. `started` → one transaction reserves the amount on the payment with a conditional
//!    UPDATE (refunded + reserved + amount ≤ captured, else 409
//!    `refund_exceeds_payment`), inserts the refund (`processing`) and moves the record
//!    to `refund_created`.
//! 2. The refund is sent with its processor key.
//! 3. One transaction settles the refund, the payment's reservation, the order's
//!    refunded total and status, and the record. A failed refund releases its reservation.

use actix_web::http::StatusCode;
use chrono::TimeDelta;

use crate::db::orders as order_rows;
use crate::db::payments::{self as payment_rows, PaymentRow};
use crate::db::refunds::{self as rows, RefundRow};
use crate::db::{self, DbConnection};
use crate::domain::ids;
use crate::domain::payment::{status, NewRefund};
use crate::error::ApiError;
use crate::idempotency::engine::problem_response;
use crate::idempotency::finish::{advance, finish, hold};
use crate::idempotency::{Lease, StoredResponse};
use crate::movement::{self, Movement};
use crate::orders::json_response;
use crate::processor::simulator::Simulator;
use crate::processor::{Operation, Outcome, PaymentProcessor, ProcessorError};
use crate::state::AppState;

/// The recovery point after phase 1.
pub const REFUND_CREATED: &str = "refund_created";

mod parked;
pub use parked::abandon;
use parked::{park, reopen};

/// Runs (or resumes) a refund of payment `payment_id` under `lease`.
pub async fn refund(
    state: AppState,
    merchant_id: String,
    payment_id: String,
    new: NewRefund,
    lease: Lease,
    ttl: TimeDelta,
) -> Result<StoredResponse, ApiError> {
    movement::execute::<RefundRow>(state, lease, ttl, move |conn, lease| {
        create_refund(conn, &merchant_id, &payment_id, &new, lease)
    })
    .await
}

/// A refund, driven through phases 2 and 3 by [`movement`]. It is sent with the
/// payment method of the payment it refunds.
impl Movement for RefundRow {
    const CREATED: &'static str = REFUND_CREATED;
    const CALL: &'static str = "refund";
    const BEFORE_CALL: &'static str = "before_refund";

    fn reopen(
        conn: &mut DbConnection,
        lease: &Lease,
        lease_len: TimeDelta,
        id: &str,
    ) -> Result<(Self, Operation), ApiError> {
        let (refund, payment_method, deadline) = reopen(conn, lease, lease_len, id)?;
        let operation = Operation {
            processor_key: refund.processor_key.clone(),
            amount: refund.amount,
            currency: refund.currency.clone(),
            payment_method,
            deadline,
        };
        Ok((refund, operation))
    }

    fn call(
        processor: &Simulator,
        operation: Operation,
    ) -> impl std::future::Future<Output = Result<Outcome, ProcessorError>> {
        processor.refund(operation)
    }

    fn settle(
        self,
        conn: &mut DbConnection,
        outcome: Outcome,
        lease: &Lease,
        ttl: TimeDelta,
    ) -> Result<StoredResponse, ApiError> {
        settle(conn, self, outcome, lease, ttl)
    }

    fn park(
        &self,
        conn: &mut DbConnection,
        lease: &Lease,
        lease_len: TimeDelta,
    ) -> Result<(), ApiError> {
        park(conn, lease, lease_len, self)
    }
}

/// Phase 1: reserve the amount and create the `processing` refund.
fn create_refund(
    conn: &mut DbConnection,
    merchant_id: &str,
    payment_id: &str,
    new: &NewRefund,
    mut lease: Lease,
) -> Result<Lease, ApiError> {
    db::write_transaction(conn, |conn| {
        let payment = payment_rows::find(conn, merchant_id, payment_id)?.ok_or_else(|| {
            ApiError::NotFound {
                resource: "payment",
                id: payment_id.to_owned(),
            }
        })?;
        match payment.status.as_str() {
            status::SUCCEEDED => {}
            status::PROCESSING => return Err(ApiError::PaymentInProgress),
            _ => {
                return Err(ApiError::PaymentNotRefundable {
                    status: payment.status,
                })
            }
        }
        let amount = new.amount.unwrap_or_else(|| payment.refundable());
        let now = db::now(conn)?;
        if amount <= 0 || !payment_rows::reserve(conn, &payment.id, amount, now)? {
            let now_held = payment_rows::find_by_id(conn, &payment.id)?;
            return Err(no_room(&now_held, new.amount));
        }
        let row = RefundRow {
            id: ids::new_id(ids::REFUND),
            merchant_id: merchant_id.to_owned(),
            payment_id: payment.id,
            amount,
            currency: payment.currency,
            status: status::PROCESSING.to_owned(),
            reason: new.reason.clone(),
            failure_code: None,
            processor_key: format!("pk_{}_refund", lease.record_id),
            created_at: now,
            updated_at: now,
        };
        rows::insert(conn, &row)?;
        advance(conn, &mut lease, REFUND_CREATED, &row.id)?;
        Ok(lease)
    })
}

/// Why a refund of `amount` (`None`: all that is left) found no room on `payment`:
/// permanently (409 `refund_exceeds_payment`, stored) when it would not fit even if
/// every refund of the payment still in flight failed; otherwise only for now (409
/// `refund_in_progress`, retryable, not stored), since one of those may yet fail and
/// give its amount back.
pub(crate) fn no_room(payment: &PaymentRow, amount: Option<i64>) -> ApiError {
    let left_if_all_fail = payment.amount - payment.amount_refunded;
    let fits_then = amount.map_or(left_if_all_fail > 0, |a| a <= left_if_all_fail);
    match payment.amount_reserved > 0 && fits_then {
        true => ApiError::RefundInProgress,
        false => ApiError::RefundExceedsPayment {
            available: payment.refundable(),
        },
    }
}

/// Phase 3: settle the refund, the reservation, the order and the record together.
fn settle(
    conn: &mut DbConnection,
    refund: RefundRow,
    outcome: Outcome,
    lease: &Lease,
    ttl: TimeDelta,
) -> Result<StoredResponse, ApiError> {
    db::write_transaction(conn, |conn| {
        hold(conn, lease)?;
        let now = db::now(conn)?;
        let succeeded = outcome == Outcome::Succeeded;
        let final_status = if succeeded {
            status::SUCCEEDED
        } else {
            status::FAILED
        };
        let failure = match &outcome {
            Outcome::Declined { code, .. } => Some(code.as_str()),
            Outcome::Succeeded => None,
        };
        if !rows::settle(conn, &refund.id, final_status, failure, now)? {
            // Only a stale execution finds the refund settled already: roll back.
            return Err(ApiError::Database(format!(
                "refund {} was not processing at settlement",
                refund.id
            )));
        }
        payment_rows::end_reservation(conn, &refund.payment_id, refund.amount, succeeded, now)?;
        let mut response = match outcome {
            Outcome::Succeeded => {
                let order_id = payment_rows::find_by_id(conn, &refund.payment_id)?.order_id;
                order_rows::record_refund(conn, &order_id, refund.amount, now)?;
                let view = rows::find_by_id(conn, &refund.id)?.view();
                json_response(
                    StatusCode::CREATED,
                    &view,
                    Some(format!("/refunds/{}", refund.id)),
                )
            }
            Outcome::Declined { code, message } => problem_response(&ApiError::Declined {
                code,
                message,
                payment_id: refund.payment_id.clone(),
            }),
        };
        finish(conn, lease, &mut response, Some(&refund.id), ttl)?;
        Ok(response)
    })
}
