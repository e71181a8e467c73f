//! The idempotency record store: one row per `(merchant, idempotency key)` and every
//! statement that reads or changes it.
//!
//! After the claim, every write is fenced by `lock_token`: it names the token its
//! writer holds, and zero rows changed means the lease was taken over (DESIGN §3).

use chrono::{NaiveDateTime, TimeDelta};
use diesel::prelude::*;

use crate::db::schema::idempotency_records as records;
use crate::db::{self, DbConnection, DbNow};

/// The lifecycle of a record (DESIGN §2).
pub mod status {
    /// Claimed; an execution holds (or held) the lease.
    pub const PROCESSING: &str = "processing";
    /// Finished with a success response, which is replayed.
    pub const SUCCEEDED: &str = "succeeded";
    /// Finished with a permanent failure, whose response is replayed.
    pub const FAILED: &str = "failed";
    /// Nothing happened; the next retry executes again on the same record.
    pub const FAILED_RETRYABLE: &str = "failed_retryable";
}

/// The first recovery point of every record: claimed, nothing done yet.
pub const STARTED: &str = "started";

/// A stored idempotency record.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = records)]
pub struct Record {
    pub id: String,
    pub fingerprint: String,
    pub status: String,
    pub recovery_point: String,
    pub lock_token: String,
    pub locked_until: NaiveDateTime,
    pub attempts: i32,
    pub response_status: Option<i32>,
    pub response_body: Option<Vec<u8>>,
    pub response_content_type: Option<String>,
    pub response_location: Option<String>,
    pub resource_id: Option<String>,
    pub expires_at: Option<NaiveDateTime>,
}

impl Record {
    /// An expired record is treated as absent, whether or not the reaper deleted it.
    pub fn is_expired(&self, now: NaiveDateTime) -> bool {
        self.status != status::PROCESSING && self.expires_at.is_some_and(|at| at <= now)
    }
}

/// A response kept for replay: status, body bytes, `Content-Type`, `Location`, and when
/// its record stops replaying (UTC, the database's clock; set once the record finished).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredResponse {
    pub status: u16,
    pub body: Vec<u8>,
    pub content_type: String,
    pub location: Option<String>,
    pub expires_at: Option<NaiveDateTime>,
}

/// The right to execute a claimed record, held until `lock_token` changes.
#[derive(Debug, Clone)]
pub struct Lease {
    pub record_id: String,
    pub lock_token: String,
    pub recovery_point: String,
    /// Executions so far, this one included.
    pub attempts: i32,
    /// The resource created by an earlier attempt, if it got that far.
    pub resource_id: Option<String>,
}

/// What identifies a request for the idempotency engine.
#[derive(Debug, Clone)]
pub struct RequestIdentity {
    pub merchant_id: String,
    pub key: String,
    pub method: String,
    pub path: String,
    pub fingerprint: String,
    /// SHA-256 of the request's exact bytes (method, path, body): lets the replay cache
    /// answer a byte-for-byte retry before its body is parsed.
    pub raw_digest: [u8; 32],
    /// How long the client would rather wait than get `409 idempotency_key_in_use`
    /// (`Prefer: wait=N`, RFC 7240). Not part of what identifies the request.
    pub prefer_wait: Option<std::time::Duration>,
}

/// Reads the record of `(merchant, key)`: one indexed read.
pub fn find(conn: &mut DbConnection, merchant_id: &str, key: &str) -> QueryResult<Option<Record>> {
    records::table
        .filter(records::merchant_id.eq(merchant_id))
        .filter(records::idempotency_key.eq(key))
        .select(Record::as_select())
        .first(conn)
        .optional()
}

/// Reads the record of `(merchant, key)` together with the database clock (a miss needs
/// no clock: the claim reads it). On PostgreSQL the clock comes in the same statement,
/// so a replay, like a miss, costs one indexed read.
pub fn lookup(
    conn: &mut DbConnection,
    merchant_id: &str,
    key: &str,
) -> QueryResult<Option<(Record, NaiveDateTime)>> {
    if let DbConnection::Sqlite(_) = conn {
        let Some(record) = find(conn, merchant_id, key)? else {
            return Ok(None);
        };
        return Ok(Some((record, db::now(conn)?)));
    }
    let clock = diesel::dsl::sql::<diesel::sql_types::Timestamp>(db::PG_NOW);
    let found: Option<(Record, NaiveDateTime)> = records::table
        .filter(records::merchant_id.eq(merchant_id))
        .filter(records::idempotency_key.eq(key))
        .select((Record::as_select(), clock))
        .first(conn)
        .optional()?;
    Ok(found.map(|(record, now)| (record, db::to_micros(now))))
}

fn new_token() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// Claims `(merchant, key)` with a new `processing` record: one `INSERT … ON CONFLICT DO
/// NOTHING` whose times come from the database's clock inside the statement, after
/// deleting `expired` (an expired record we saw) if it is still expired. `None` when
/// another request holds the key.
pub fn claim(
    conn: &mut DbConnection,
    request: &RequestIdentity,
    expired: Option<&str>,
    lease: TimeDelta,
) -> QueryResult<Option<Lease>> {
    let Some(expired_id) = expired else {
        return insert_claim(conn, request, lease);
    };
    db::write_transaction(conn, |conn| {
        let now = db::now(conn)?;
        diesel::delete(records::table)
            .filter(records::id.eq(expired_id))
            .filter(records::status.ne(status::PROCESSING))
            .filter(records::expires_at.le(now))
            .execute(conn)?;
        insert_claim(conn, request, lease)
    })
}

fn insert_claim(
    conn: &mut DbConnection,
    request: &RequestIdentity,
    lease: TimeDelta,
) -> QueryResult<Option<Lease>> {
    let id = format!("ikey_{}", uuid::Uuid::now_v7().simple());
    let token = new_token();
    let now = DbNow::now();
    let row = (
        records::id.eq(&id),
        records::merchant_id.eq(&request.merchant_id),
        records::idempotency_key.eq(&request.key),
        records::method.eq(&request.method),
        records::path.eq(&request.path),
        records::fingerprint.eq(&request.fingerprint),
        records::status.eq(status::PROCESSING),
        records::recovery_point.eq(STARTED),
        records::lock_token.eq(&token),
        records::locked_until.eq(DbNow::plus(lease)),
        records::attempts.eq(1),
        records::created_at.eq(now),
        records::updated_at.eq(now),
    );
    let inserted = crate::per_backend!(conn, |c| diesel::insert_into(records::table)
        .values(row)
        .on_conflict((records::merchant_id, records::idempotency_key))
        .do_nothing()
        .execute(c))?;
    Ok((inserted == 1).then(|| Lease {
        record_id: id,
        lock_token: token,
        recovery_point: STARTED.to_owned(),
        attempts: 1,
        resource_id: None,
    }))
}

/// Inserts the record of a key seen for the first time, already finished with
/// `response` for `resource_id` at `now` (the database's clock), expiring `ttl` later:
/// for work that commits in the same transaction, so no lease is ever needed (see
/// `orders::create_fresh`). `false` when the key has a record already.
pub fn insert_finished(
    conn: &mut DbConnection,
    request: &RequestIdentity,
    response: &mut StoredResponse,
    resource_id: &str,
    now: NaiveDateTime,
    ttl: TimeDelta,
) -> QueryResult<bool> {
    let final_status = match response.status {
        200..=299 => status::SUCCEEDED,
        _ => status::FAILED,
    };
    let row = (
        (
            records::id.eq(format!("ikey_{}", uuid::Uuid::now_v7().simple())),
            records::merchant_id.eq(&request.merchant_id),
            records::idempotency_key.eq(&request.key),
            records::method.eq(&request.method),
            records::path.eq(&request.path),
            records::fingerprint.eq(&request.fingerprint),
            records::status.eq(final_status),
            records::recovery_point.eq(STARTED),
            records::lock_token.eq(new_token()),
            records::locked_until.eq(now),
        ),
        (
            records::attempts.eq(1),
            records::response_status.eq(i32::from(response.status)),
            records::response_body.eq(&response.body),
            records::response_content_type.eq(&response.content_type),
            records::response_location.eq(&response.location),
            records::resource_id.eq(resource_id),
            records::created_at.eq(now),
            records::updated_at.eq(now),
            records::expires_at.eq(now + ttl),
        ),
    );
    response.expires_at = Some(now + ttl);
    let inserted = crate::per_backend!(conn, |c| diesel::insert_into(records::table)
        .values(row)
        .on_conflict((records::merchant_id, records::idempotency_key))
        .do_nothing()
        .execute(c))?;
    Ok(inserted == 1)
}

/// Takes over a record whose owner died (lease expired) or that failed retryably:
/// compare-and-set on the `lock_token` we read. `None` when someone else won.
pub fn take_over(
    conn: &mut DbConnection,
    seen: &Record,
    lease: TimeDelta,
) -> QueryResult<Option<Lease>> {
    let now = db::now(conn)?;
    let token = new_token();
    let taken = diesel::update(records::table)
        .filter(records::id.eq(&seen.id))
        .filter(records::lock_token.eq(&seen.lock_token))
        .filter(
            records::status
                .eq(status::FAILED_RETRYABLE)
                .or(records::status
                    .eq(status::PROCESSING)
                    .and(records::locked_until.le(now))),
        )
        .set((
            records::status.eq(status::PROCESSING),
            records::lock_token.eq(&token),
            records::locked_until.eq(now + lease),
            records::attempts.eq(records::attempts + 1),
            records::expires_at.eq(None::<NaiveDateTime>),
            records::updated_at.eq(now),
        ))
        .execute(conn)?;
    Ok((taken == 1).then(|| Lease {
        record_id: seen.id.clone(),
        lock_token: token,
        recovery_point: seen.recovery_point.clone(),
        attempts: seen.attempts + 1,
        resource_id: seen.resource_id.clone(),
    }))
}
