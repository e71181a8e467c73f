//! Order rows: insert, read, list and status changes, always scoped to a merchant.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::schema::orders;
use super::{DbConnection, DbNow};
use crate::domain::order::{NewOrder, Order};

/// An order as stored.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = orders)]
pub struct OrderRow {
    pub id: String,
    pub merchant_id: String,
    pub amount: i64,
    pub currency: String,
    pub status: String,
    pub amount_paid: i64,
    pub amount_refunded: i64,
    pub description: Option<String>,
    pub metadata: String,
    pub created_at: NaiveDateTime,
    pub updated_at: NaiveDateTime,
}

impl OrderRow {
    /// A new order awaiting payment, created at `now`.
    pub fn new(id: String, merchant_id: &str, new: &NewOrder, now: NaiveDateTime) -> Self {
        Self {
            id,
            merchant_id: merchant_id.to_owned(),
            amount: new.amount,
            currency: new.currency.clone(),
            status: crate::domain::order::status::AWAITING_PAYMENT.to_owned(),
            amount_paid: 0,
            amount_refunded: 0,
            description: new.description.clone(),
            metadata: serde_json::Value::Object(new.metadata.clone()).to_string(),
            created_at: now,
            updated_at: now,
        }
    }

    /// The API view of the order.
    pub fn view(self) -> Order {
        Order {
            id: self.id,
            object: "order",
            amount: self.amount,
            currency: self.currency,
            status: self.status,
            amount_paid: self.amount_paid,
            amount_refunded: self.amount_refunded,
            description: self.description,
            metadata: serde_json::from_str(&self.metadata).unwrap_or_default(),
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}

/// Inserts a new order.
pub fn insert(conn: &mut DbConnection, row: &OrderRow) -> QueryResult<()> {
    diesel::insert_into(orders::table)
        .values(row.clone())
        .execute(conn)
        .map(drop)
}

/// Inserts a new order awaiting payment, stamped with the database's clock inside the
/// statement; returns that instant (its `created_at`).
pub fn insert_now(
    conn: &mut DbConnection,
    id: &str,
    merchant_id: &str,
    new: &NewOrder,
) -> QueryResult<NaiveDateTime> {
    let now = DbNow::now();
    let metadata = serde_json::Value::Object(new.metadata.clone()).to_string();
    let row = (
        orders::id.eq(id),
        orders::merchant_id.eq(merchant_id),
        orders::amount.eq(new.amount),
        orders::currency.eq(&new.currency),
        orders::status.eq(crate::domain::order::status::AWAITING_PAYMENT),
        orders::amount_paid.eq(0),
        orders::amount_refunded.eq(0),
        orders::description.eq(&new.description),
        orders::metadata.eq(&metadata),
        orders::created_at.eq(now),
        orders::updated_at.eq(now),
    );
    crate::per_backend!(conn, |c| diesel::insert_into(orders::table)
        .values(row)
        .returning(orders::created_at)
        .get_result(c))
}

/// The merchant's order `id`, if it exists.
pub fn find(conn: &mut DbConnection, merchant_id: &str, id: &str) -> QueryResult<Option<OrderRow>> {
    orders::table
        .filter(orders::merchant_id.eq(merchant_id))
        .filter(orders::id.eq(id))
        .select(OrderRow::as_select())
        .first(conn)
        .optional()
}

/// Up to `limit` of the merchant's orders older than `starting_after` (an id), newest
/// first.
pub fn list(
    conn: &mut DbConnection,
    merchant_id: &str,
    starting_after: Option<&str>,
    limit: i64,
) -> QueryResult<Vec<OrderRow>> {
    let mut query = orders::table
        .filter(orders::merchant_id.eq(merchant_id))
        .select(OrderRow::as_select())
        .order(orders::id.desc())
        .limit(limit)
        .into_boxed();
    if let Some(cursor) = starting_after {
        query = query.filter(orders::id.lt(cursor.to_owned()));
    }
    query.load(conn)
}

/// Moves the order to `to` if it is still in `from`; returns whether it moved.
pub fn transition(
    conn: &mut DbConnection,
    id: &str,
    from: &str,
    to: &str,
    now: NaiveDateTime,
) -> QueryResult<bool> {
    let rows = diesel::update(orders::table)
        .filter(orders::id.eq(id))
        .filter(orders::status.eq(from))
        .set((orders::status.eq(to), orders::updated_at.eq(now)))
        .execute(conn)?;
    Ok(rows == 1)
}

/// Locks the merchant's order row for the rest of the transaction (a no-op update, so
/// it works on both backends: a row lock on PostgreSQL; SQLite's IMMEDIATE transaction
/// already holds the write lock). Payment and cancel take it first, so they serialise.
/// Returns whether the order exists.
pub fn lock(conn: &mut DbConnection, merchant_id: &str, id: &str) -> QueryResult<bool> {
    let rows = diesel::update(orders::table)
        .filter(orders::merchant_id.eq(merchant_id))
        .filter(orders::id.eq(id))
        .set(orders::updated_at.eq(orders::updated_at))
        .execute(conn)?;
    Ok(rows == 1)
}

/// Records a captured payment of `amount`: the order becomes `paid`.
pub fn record_payment(
    conn: &mut DbConnection,
    id: &str,
    amount: i64,
    now: NaiveDateTime,
) -> QueryResult<bool> {
    use crate::domain::order::status;
    let rows = diesel::update(orders::table)
        .filter(orders::id.eq(id))
        .filter(orders::status.eq(status::AWAITING_PAYMENT))
        .set((
            orders::amount_paid.eq(orders::amount_paid + amount),
            orders::status.eq(status::PAID),
            orders::updated_at.eq(now),
        ))
        .execute(conn)?;
    Ok(rows == 1)
}

/// Records a refund of `amount`: the order becomes `refunded` once everything paid was
/// refunded, else `partially_refunded`. The increment comes first and locks the row, so
/// concurrent refunds never lose an update.
pub fn record_refund(
    conn: &mut DbConnection,
    id: &str,
    amount: i64,
    now: NaiveDateTime,
) -> QueryResult<()> {
    use crate::domain::order::status;
    diesel::update(orders::table)
        .filter(orders::id.eq(id))
        .set((
            orders::amount_refunded.eq(orders::amount_refunded + amount),
            orders::updated_at.eq(now),
        ))
        .execute(conn)?;
    let (paid, refunded): (i64, i64) = orders::table
        .find(id)
        .select((orders::amount_paid, orders::amount_refunded))
        .first(conn)?;
    let to = if refunded >= paid {
        status::REFUNDED
    } else {
        status::PARTIALLY_REFUNDED
    };
    diesel::update(orders::table)
        .filter(orders::id.eq(id))
        .set(orders::status.eq(to))
        .execute(conn)
        .map(drop)
}
