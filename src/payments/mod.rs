//! Paying an order, in the atomic phases of DESIGN §3:
//!
//! 1. `started` → one transaction locks the order, checks it is payable, inserts the
//!    payment (`processing`) and moves the record to `payment_created`.
//! 2. The charge is sent with the payment's processor key (derived from the record).
//! 3. One transaction settles the payment, the order and the record.
//!
//! A retry or a recovery enters at the record's recovery point and re-sends the same
//! charge with the same key; the processor answers with the first result.

use actix_web::http::StatusCode;
use chrono::TimeDelta;

use crate::db::orders::{self as order_rows, OrderRow};
use crate::db::payments::{self as rows, PaymentRow};
use crate::db::{self, DbConnection};
use crate::domain::ids;
use crate::domain::order::status as order_status;
use crate::domain::payment::{status, NewPayment};
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
pub const PAYMENT_CREATED: &str = "payment_created";
/// The failure code of a payment or refund the processor did not attempt.
pub const UNAVAILABLE: &str = "processor_unavailable";

mod parked;
pub use parked::abandon;
use parked::{park, reopen};

/// Runs (or resumes) the payment of `new` under `lease`; see the module docs.
pub async fn pay(
    state: AppState,
    merchant_id: String,
    new: NewPayment,
    lease: Lease,
    ttl: TimeDelta,
) -> Result<StoredResponse, ApiError> {
    movement::execute::<PaymentRow>(state, lease, ttl, move |conn, lease| {
        create_payment(conn, &merchant_id, &new, lease)
    })
    .await
}

/// A payment's charge, driven through phases 2 and 3 by [`movement`].
impl Movement for PaymentRow {
    const CREATED: &'static str = PAYMENT_CREATED;
    const CALL: &'static str = "charge";
    const BEFORE_CALL: &'static str = "before_charge";

    fn reopen(
        conn: &mut DbConnection,
        lease: &Lease,
        lease_len: TimeDelta,
        id: &str,
    ) -> Result<(Self, Operation), ApiError> {
        let (payment, deadline) = reopen(conn, lease, lease_len, id)?;
        let operation = Operation {
            processor_key: payment.processor_key.clone(),
            amount: payment.amount,
            currency: payment.currency.clone(),
            payment_method: payment.payment_method.clone(),
            deadline,
        };
        Ok((payment, operation))
    }

    fn call(
        processor: &Simulator,
        operation: Operation,
    ) -> impl std::future::Future<Output = Result<Outcome, ProcessorError>> {
        processor.charge(operation)
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
        park(conn, lease, lease_len, &self.id)
    }
}

/// Phase 1: validate against the order and create the `processing` payment.
fn create_payment(
    conn: &mut DbConnection,
    merchant_id: &str,
    new: &NewPayment,
    mut lease: Lease,
) -> Result<Lease, ApiError> {
    db::write_transaction(conn, |conn| {
        let order = lock_payable_order(conn, merchant_id, &new.order_id)?;
        let outstanding = order.amount - order.amount_paid;
        if new.amount.is_some_and(|a| a != outstanding) {
            return Err(ApiError::PaymentMismatch {
                param: "amount",
                message: format!("must equal the order's outstanding amount, {outstanding}"),
            });
        }
        if new.currency.as_ref().is_some_and(|c| *c != order.currency) {
            return Err(ApiError::PaymentMismatch {
                param: "currency",
                message: format!("must equal the order's currency, {}", order.currency),
            });
        }
        let now = db::now(conn)?;
        let row = PaymentRow {
            id: ids::new_id(ids::PAYMENT),
            merchant_id: merchant_id.to_owned(),
            order_id: order.id,
            amount: outstanding,
            currency: order.currency,
            status: status::PROCESSING.to_owned(),
            payment_method: new.payment_method.clone(),
            failure_code: None,
            failure_message: None,
            amount_refunded: 0,
            amount_reserved: 0,
            processor_key: format!("pk_{}_charge", lease.record_id),
            created_at: now,
            updated_at: now,
        };
        rows::insert(conn, &row)?;
        advance(conn, &mut lease, PAYMENT_CREATED, &row.id)?;
        Ok(lease)
    })
}

/// Phase 3 moves a payment out of `processing` exactly once; anything else means a
/// stale execution got here, and the transaction must roll back.
fn settled(moved: bool, payment_id: &str) -> Result<(), ApiError> {
    match moved {
        true => Ok(()),
        false => Err(ApiError::Database(format!(
            "payment {payment_id} was not processing at settlement"
        ))),
    }
}

/// Locks the merchant's order and checks that a payment may start: the order awaits
/// payment and has no payment `processing` or `succeeded` (the partial unique index
/// enforces the same). Phase 1 and a reopen both call it, holding the lock to commit.
/// Errors: 404 unknown order; 409 `payment_in_progress` (retryable) or
/// `order_not_payable` (permanent).
fn lock_payable_order(
    conn: &mut DbConnection,
    merchant_id: &str,
    order_id: &str,
) -> Result<OrderRow, ApiError> {
    let not_found = || ApiError::NotFound {
        resource: "order",
        id: order_id.to_owned(),
    };
    if !order_rows::lock(conn, merchant_id, order_id)? {
        return Err(not_found());
    }
    let order = order_rows::find(conn, merchant_id, order_id)?.ok_or_else(not_found)?;
    if let Some(live) = rows::live_for_order(conn, &order.id)? {
        return Err(match live.status.as_str() {
            status::PROCESSING => ApiError::PaymentInProgress,
            _ => ApiError::OrderNotPayable {
                status: order.status,
            },
        });
    }
    if order.status != order_status::AWAITING_PAYMENT {
        return Err(ApiError::OrderNotPayable {
            status: order.status,
        });
    }
    Ok(order)
}

/// Phase 3: settle the payment and the order, and finish the record, in one transaction.
/// A decline is a stored 402 naming the failed payment.
fn settle(
    conn: &mut DbConnection,
    payment: PaymentRow,
    outcome: Outcome,
    lease: &Lease,
    ttl: TimeDelta,
) -> Result<StoredResponse, ApiError> {
    db::write_transaction(conn, |conn| {
        hold(conn, lease)?;
        let now = db::now(conn)?;
        let mut response = match outcome {
            Outcome::Succeeded => {
                settled(
                    rows::settle(conn, &payment.id, status::SUCCEEDED, None, now)?,
                    &payment.id,
                )?;
                if !order_rows::record_payment(conn, &payment.order_id, payment.amount, now)? {
                    return Err(ApiError::Database(format!(
                        "order {} left awaiting_payment during payment",
                        payment.order_id
                    )));
                }
                let view = rows::find_by_id(conn, &payment.id)?.view();
                json_response(
                    StatusCode::CREATED,
                    &view,
                    Some(format!("/payments/{}", payment.id)),
                )
            }
            Outcome::Declined { code, message } => {
                rows::settle(
                    conn,
                    &payment.id,
                    status::FAILED,
                    Some((&code, &message)),
                    now,
                )?;
                problem_response(&ApiError::Declined {
                    code,
                    message,
                    payment_id: payment.id.clone(),
                })
            }
        };
        finish(conn, lease, &mut response, Some(&payment.id), ttl)?;
        Ok(response)
    })
}
