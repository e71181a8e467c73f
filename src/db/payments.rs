//! Payment rows: insert, read, list, and the conditional updates that settle a payment
//! and reserve or release refund amounts.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::schema::payments;
use super::DbConnection;
use crate::domain::payment::{status, Payment};

/// A payment as stored.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = payments)]
pub struct PaymentRow {
    pub id: String,
    pub merchant_id: String,
    pub order_id: String,
    pub amount: i64,
    pub currency: String,
    pub status: String,
    pub payment_method: String,
    pub failure_code: Option<String>,
    pub failure_message: Option<String>,
    pub amount_refunded: i64,
    pub amount_reserved: i64,
    pub processor_key: String,
    pub created_at: NaiveDateTime,
    pub updated_at: NaiveDateTime,
}

impl PaymentRow {
    /// The API view of the payment.
    pub fn view(self) -> Payment {
        Payment {
            id: self.id,
            object: "payment",
            order_id: self.order_id,
            amount: self.amount,
            currency: self.currency,
            status: self.status,
            payment_method: self.payment_method,
            failure_code: self.failure_code,
            failure_message: self.failure_message,
            amount_refunded: self.amount_refunded,
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }

    /// What is left to refund: captured, less refunded, less reserved by refunds in flight.
    pub fn refundable(&self) -> i64 {
        self.amount - self.amount_refunded - self.amount_reserved
    }
}

/// Inserts a new payment.
pub fn insert(conn: &mut DbConnection, row: &PaymentRow) -> QueryResult<()> {
    diesel::insert_into(payments::table)
        .values(row.clone())
        .execute(conn)
        .map(drop)
}

/// The merchant's payment `id`, if it exists.
pub fn find(
    conn: &mut DbConnection,
    merchant_id: &str,
    id: &str,
) -> QueryResult<Option<PaymentRow>> {
    payments::table
        .filter(payments::merchant_id.eq(merchant_id))
        .filter(payments::id.eq(id))
        .select(PaymentRow::as_select())
        .first(conn)
        .optional()
}

/// The order's payment in `processing` or `succeeded`, if any (at most one exists).
pub fn live_for_order(conn: &mut DbConnection, order_id: &str) -> QueryResult<Option<PaymentRow>> {
    payments::table
        .filter(payments::order_id.eq(order_id))
        .filter(payments::status.eq_any([status::PROCESSING, status::SUCCEEDED]))
        .select(PaymentRow::as_select())
        .first(conn)
        .optional()
}

/// Up to `limit` of the merchant's payments (of one order, if given) older than
/// `starting_after`, newest first.
pub fn list(
    conn: &mut DbConnection,
    merchant_id: &str,
    order_id: Option<&str>,
    starting_after: Option<&str>,
    limit: i64,
) -> QueryResult<Vec<PaymentRow>> {
    let mut query = payments::table
        .filter(payments::merchant_id.eq(merchant_id))
        .select(PaymentRow::as_select())
        .order(payments::id.desc())
        .limit(limit)
        .into_boxed();
    if let Some(order_id) = order_id {
        query = query.filter(payments::order_id.eq(order_id.to_owned()));
    }
    if let Some(cursor) = starting_after {
        query = query.filter(payments::id.lt(cursor.to_owned()));
    }
    query.load(conn)
}

/// Moves a `processing` payment to its final status; returns whether it moved.
pub fn settle(
    conn: &mut DbConnection,
    id: &str,
    to: &str,
    failure: Option<(&str, &str)>,
    now: NaiveDateTime,
) -> QueryResult<bool> {
    let rows = diesel::update(payments::table)
        .filter(payments::id.eq(id))
        .filter(payments::status.eq(status::PROCESSING))
        .set((
            payments::status.eq(to),
            payments::failure_code.eq(failure.map(|f| f.0)),
            payments::failure_message.eq(failure.map(|f| f.1)),
            payments::updated_at.eq(now),
        ))
        .execute(conn)?;
    Ok(rows == 1)
}

/// Reserves `amount` for a refund with one conditional UPDATE: only on a succeeded
/// payment and only while refunded + reserved + amount ≤ captured. Returns whether the
/// reservation was made; concurrent refunds can never together exceed the payment.
pub fn reserve(
    conn: &mut DbConnection,
    id: &str,
    amount: i64,
    now: NaiveDateTime,
) -> QueryResult<bool> {
    let rows = diesel::update(payments::table)
        .filter(payments::id.eq(id))
        .filter(payments::status.eq(status::SUCCEEDED))
        .filter(
            (payments::amount_refunded + payments::amount_reserved + amount).le(payments::amount),
        )
        .set((
            payments::amount_reserved.eq(payments::amount_reserved + amount),
            payments::updated_at.eq(now),
        ))
        .execute(conn)?;
    Ok(rows == 1)
}

/// Ends a reservation of `amount`: counted as refunded when `refunded`, else released.
pub fn end_reservation(
    conn: &mut DbConnection,
    id: &str,
    amount: i64,
    refunded: bool,
    now: NaiveDateTime,
) -> QueryResult<()> {
    let moved = if refunded { amount } else { 0 };
    diesel::update(payments::table)
        .filter(payments::id.eq(id))
        .set((
            payments::amount_reserved.eq(payments::amount_reserved - amount),
            payments::amount_refunded.eq(payments::amount_refunded + moved),
            payments::updated_at.eq(now),
        ))
        .execute(conn)
        .map(drop)
}

/// A payment by id, whichever merchant owns it (for resuming an execution that holds
/// its lease).
pub fn find_by_id(conn: &mut DbConnection, id: &str) -> QueryResult<PaymentRow> {
    payments::table
        .find(id)
        .select(PaymentRow::as_select())
        .first(conn)
}

/// Moves a parked (`failed`) payment back to `processing` for a retry; the caller holds
/// the order's lock and has checked no other payment is live.
pub fn reopen(conn: &mut DbConnection, id: &str, now: NaiveDateTime) -> QueryResult<bool> {
    let rows = diesel::update(payments::table)
        .filter(payments::id.eq(id))
        .filter(payments::status.eq(status::FAILED))
        .set((
            payments::status.eq(status::PROCESSING),
            payments::failure_code.eq(None::<String>),
            payments::failure_message.eq(None::<String>),
            payments::updated_at.eq(now),
        ))
        .execute(conn)?;
    Ok(rows == 1)
}
