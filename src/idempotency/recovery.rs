//! The record store's side of recovery: claiming stuck `processing` records for the
//! reaper, backing off ones that keep failing, and purging expired records in batches.

use chrono::TimeDelta;
use diesel::prelude::*;

use super::record::{self, status, Lease, Record, STARTED};
use crate::db::schema::idempotency_records as records;
use crate::db::{self, DbConnection};

/// A record the reaper now holds, with the endpoint it answers (for its TTL).
#[derive(Debug, Clone)]
pub struct Stuck {
    pub lease: Lease,
    pub endpoint: &'static str,
}

/// Takes over up to `batch` `processing` records whose lease has lapsed (the reaper asks
/// for one at a time, so each recovery starts with a whole lease). On PostgreSQL
/// the rows are read `FOR UPDATE SKIP LOCKED`, so reapers of other instances pass over
/// them; everywhere, the takeover is a compare-and-set on `lock_token`.
pub fn claim_stuck(
    conn: &mut DbConnection,
    batch: i64,
    lease: TimeDelta,
) -> QueryResult<Vec<Stuck>> {
    db::write_transaction(conn, |conn| {
        let now = db::now(conn)?;
        macro_rules! lapsed {
            () => {
                records::table
                    .filter(records::status.eq(status::PROCESSING))
                    .filter(records::locked_until.le(now))
                    .order(records::locked_until.asc())
                    .limit(batch)
                    .select((Record::as_select(), records::path))
            };
        }
        let rows: Vec<(Record, String)> = match conn {
            DbConnection::Postgresql(c) => lapsed!().for_update().skip_locked().load(c)?,
            DbConnection::Sqlite(c) => lapsed!().load(c)?,
        };
        let mut stuck = Vec::with_capacity(rows.len());
        for (row, path) in rows {
            if let Some(lease) = record::take_over(conn, &row, lease)? {
                let endpoint = crate::config::endpoint_for_path(&path);
                stuck.push(Stuck { lease, endpoint });
            }
        }
        Ok(stuck)
    })
}

/// Deletes up to `batch` expired records: it reads their ids, then deletes with a
/// statement that repeats the condition (`status <> 'processing' AND expires_at <= now`),
/// so a record taken over or renewed between the two statements survives. Records whose resource is still open (a
/// `failed_retryable` record past its recovery point) are left to `expired_open`.
pub fn purge_expired(conn: &mut DbConnection, batch: i64) -> QueryResult<usize> {
    let now = db::now(conn)?;
    let closed = records::status
        .ne(status::PROCESSING)
        .and(records::expires_at.le(now))
        .and(
            records::status
                .ne(status::FAILED_RETRYABLE)
                .or(records::recovery_point.eq(STARTED)),
        );
    let ids: Vec<String> = records::table
        .filter(closed)
        .select(records::id)
        .limit(batch)
        .load(conn)?;
    if ids.is_empty() {
        return Ok(0);
    }
    diesel::delete(
        records::table
            .filter(records::id.eq_any(ids))
            .filter(closed),
    )
    .execute(conn)
}

/// Expired `failed_retryable` records that created a payment or refund which never
/// completed (the client stopped retrying): up to `batch`, as (lease, path) to abandon.
pub fn expired_open(conn: &mut DbConnection, batch: i64) -> QueryResult<Vec<Record>> {
    let now = db::now(conn)?;
    records::table
        .filter(records::status.eq(status::FAILED_RETRYABLE))
        .filter(records::recovery_point.ne(STARTED))
        .filter(records::expires_at.le(now))
        .limit(batch)
        .select(Record::as_select())
        .load(conn)
}

/// Deletes one expired record if it is unchanged since it was read (same `lock_token`,
/// still `failed_retryable`). Returns whether it was deleted.
pub fn delete_if_unchanged(conn: &mut DbConnection, seen: &Record) -> QueryResult<bool> {
    let now = db::now(conn)?;
    let rows = diesel::delete(records::table)
        .filter(records::id.eq(&seen.id))
        .filter(records::lock_token.eq(&seen.lock_token))
        .filter(records::status.eq(status::FAILED_RETRYABLE))
        .filter(records::expires_at.le(now))
        .execute(conn)?;
    Ok(rows == 1)
}
