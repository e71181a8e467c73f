//! Refund rows: insert, read, and settlement.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::schema::refunds;
use super::DbConnection;
use crate::domain::payment::{status, Refund};

/// A refund as stored.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = refunds)]
pub struct RefundRow {
    pub id: String,
    pub merchant_id: String,
    pub payment_id: String,
    pub amount: i64,
    pub currency: String,
    pub status: String,
    pub reason: Option<String>,
    pub failure_code: Option<String>,
    pub processor_key: String,
    pub created_at: NaiveDateTime,
    pub updated_at: NaiveDateTime,
}

impl RefundRow {
    /// The API view of the refund.
    pub fn view(self) -> Refund {
        Refund {
            id: self.id,
            object: "refund",
            payment_id: self.payment_id,
            amount: self.amount,
            currency: self.currency,
            status: self.status,
            reason: self.reason,
            failure_code: self.failure_code,
            created_at: self.created_at,
        }
    }
}

/// Inserts a new refund.
pub fn insert(conn: &mut DbConnection, row: &RefundRow) -> QueryResult<()> {
    diesel::insert_into(refunds::table)
        .values(row.clone())
        .execute(conn)
        .map(drop)
}

/// The merchant's refund `id`, if it exists.
pub fn find(
    conn: &mut DbConnection,
    merchant_id: &str,
    id: &str,
) -> QueryResult<Option<RefundRow>> {
    refunds::table
        .filter(refunds::merchant_id.eq(merchant_id))
        .filter(refunds::id.eq(id))
        .select(RefundRow::as_select())
        .first(conn)
        .optional()
}

/// Moves a `processing` refund to its final status; returns whether it moved.
pub fn settle(
    conn: &mut DbConnection,
    id: &str,
    to: &str,
    failure_code: Option<&str>,
    now: NaiveDateTime,
) -> QueryResult<bool> {
    let rows = diesel::update(refunds::table)
        .filter(refunds::id.eq(id))
        .filter(refunds::status.eq(status::PROCESSING))
        .set((
            refunds::status.eq(to),
            refunds::failure_code.eq(failure_code),
            refunds::updated_at.eq(now),
        ))
        .execute(conn)?;
    Ok(rows == 1)
}

/// A refund by id, whichever merchant owns it (for resuming an execution that holds
/// its lease).
pub fn find_by_id(conn: &mut DbConnection, id: &str) -> QueryResult<RefundRow> {
    refunds::table
        .find(id)
        .select(RefundRow::as_select())
        .first(conn)
}

/// Moves a parked (`failed`) refund back to `processing` for a retry; the caller has
/// reserved its amount again.
pub fn reopen(conn: &mut DbConnection, id: &str, now: NaiveDateTime) -> QueryResult<bool> {
    let rows = diesel::update(refunds::table)
        .filter(refunds::id.eq(id))
        .filter(refunds::status.eq(status::FAILED))
        .set((
            refunds::status.eq(status::PROCESSING),
            refunds::failure_code.eq(None::<String>),
            refunds::updated_at.eq(now),
        ))
        .execute(conn)?;
    Ok(rows == 1)
}
