//! Key inspection, for client developers: what the server holds for a key. A record is
//! shown only to its merchant, never with its stored body or its lock token, and an
//! expired record is gone (404) whether or not the reaper has deleted it yet.

use chrono::NaiveDateTime;
use diesel::prelude::*;
use serde::Serialize;

use super::record::status;
use crate::db::schema::idempotency_records as records;
use crate::db::{self, DbConnection};

/// An idempotency record as `GET /idempotency_keys/{key}` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct KeyView {
    /// `idempotency_key`.
    pub object: &'static str,
    /// The record's id (`ikey_…`), the cursor of lists.
    pub id: String,
    pub key: String,
    /// `processing`, `succeeded`, `failed` or `failed_retryable`.
    pub status: String,
    /// How far its execution got: `started`, `payment_created`, `refund_created`.
    pub recovery_point: String,
    /// Executions so far.
    pub attempts: i32,
    pub method: String,
    pub path: String,
    /// Lowercase hex SHA-256 of the request (DESIGN §2).
    pub fingerprint: String,
    #[serde(serialize_with = "crate::domain::rfc3339")]
    pub created_at: NaiveDateTime,
    /// When the key stops replaying; `null` while processing.
    #[serde(serialize_with = "optional_rfc3339")]
    pub expires_at: Option<NaiveDateTime>,
    /// While `processing`: when its lease ends (then a retry takes it over).
    #[serde(serialize_with = "optional_rfc3339")]
    pub locked_until: Option<NaiveDateTime>,
    /// Once finished (`succeeded` or `failed`): what it answers.
    pub response: Option<ResponseSummary>,
}

/// The stored answer of a finished key: its status and the resource it created.
#[derive(Debug, Clone, Serialize)]
pub struct ResponseSummary {
    pub status: i32,
    pub resource_id: Option<String>,
    /// The resource's path (the stored `Location`), when it created one.
    pub url: Option<String>,
}

fn optional_rfc3339<S: serde::Serializer>(
    at: &Option<NaiveDateTime>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match at {
        Some(at) => crate::domain::rfc3339(at, s),
        None => s.serialize_none(),
    }
}

type Row = (
    (String, String, String, String, i32, String, String, String),
    (NaiveDateTime, Option<NaiveDateTime>, NaiveDateTime),
    (Option<i32>, Option<String>, Option<String>),
);

/// Not expired at `now`: processing, or finished with its expiry not yet reached.
macro_rules! live {
    ($now:expr) => {
        records::status
            .eq(status::PROCESSING)
            .or(records::expires_at.is_null())
            .or(records::expires_at.gt($now))
    };
}

macro_rules! columns {
    () => {
        (
            (
                records::id,
                records::idempotency_key,
                records::status,
                records::recovery_point,
                records::attempts,
                records::method,
                records::path,
                records::fingerprint,
            ),
            (
                records::created_at,
                records::expires_at,
                records::locked_until,
            ),
            (
                records::response_status,
                records::resource_id,
                records::response_location,
            ),
        )
    };
}

fn view(row: Row) -> KeyView {
    let ((id, key, status, recovery_point, attempts, method, path, fingerprint), times, answer) =
        row;
    let (created_at, expires_at, locked_until) = times;
    let finished = matches!(status.as_str(), status::SUCCEEDED | status::FAILED);
    let processing = status == status::PROCESSING;
    KeyView {
        object: "idempotency_key",
        id,
        key,
        recovery_point,
        attempts,
        method,
        path,
        fingerprint,
        created_at,
        expires_at,
        locked_until: processing.then_some(locked_until),
        response: answer.0.filter(|_| finished).map(|status| ResponseSummary {
            status,
            resource_id: answer.1,
            url: answer.2,
        }),
        status,
    }
}

/// The merchant's record of `key`, unless there is none or it expired.
pub fn find(conn: &mut DbConnection, merchant_id: &str, key: &str) -> QueryResult<Option<KeyView>> {
    let now = db::now(conn)?;
    let row: Option<Row> = records::table
        .filter(records::merchant_id.eq(merchant_id))
        .filter(records::idempotency_key.eq(key))
        .filter(live!(now))
        .select(columns!())
        .first(conn)
        .optional()?;
    Ok(row.map(view))
}

/// Up to `limit` of the merchant's live records older than `starting_after` (a record
/// id), newest first, in `only` status if given.
pub fn list(
    conn: &mut DbConnection,
    merchant_id: &str,
    only: Option<&str>,
    starting_after: Option<&str>,
    limit: i64,
) -> QueryResult<Vec<KeyView>> {
    let now = db::now(conn)?;
    let mut query = records::table
        .filter(records::merchant_id.eq(merchant_id))
        .filter(live!(now))
        .select(columns!())
        .order(records::id.desc())
        .limit(limit)
        .into_boxed();
    if let Some(status) = only {
        query = query.filter(records::status.eq(status.to_owned()));
    }
    if let Some(cursor) = starting_after {
        query = query.filter(records::id.lt(cursor.to_owned()));
    }
    Ok(query.load::<Row>(conn)?.into_iter().map(view).collect())
}
