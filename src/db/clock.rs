//! The database's clock: every lease and expiry is computed and compared against it, so
//! instances with skewed clocks still agree. PostgreSQL's clock is read in SQL; SQLite is
//! a local file, so its clock is this machine's. Timestamps are UTC `timestamp`s kept to
//! the microsecond on both backends.

use chrono::{DurationRound, NaiveDateTime, TimeDelta, Utc};
use diesel::expression::{is_aggregate, AppearsOnTable, Expression, ValidGrouping};
use diesel::pg::Pg;
use diesel::prelude::*;
use diesel::query_builder::{AstPass, QueryFragment, QueryId};
use diesel::sql_types::{BigInt, Timestamp};
use diesel::sqlite::Sqlite;

use super::DbConnection;

/// PostgreSQL's clock in UTC, as a SQL expression of type `timestamp`.
pub const PG_NOW: &str = "CAST(clock_timestamp() AT TIME ZONE 'UTC' AS timestamp)";

/// The database's clock now, in UTC, to the microsecond (one round trip on PostgreSQL).
pub fn now(conn: &mut DbConnection) -> QueryResult<NaiveDateTime> {
    let now = match conn {
        DbConnection::Postgresql(_) => {
            diesel::select(diesel::dsl::sql::<Timestamp>(PG_NOW)).get_result(conn)?
        }
        DbConnection::Sqlite(_) => Utc::now().naive_utc(),
    };
    Ok(to_micros(now))
}

/// A timestamp truncated to microseconds, the precision both backends keep.
pub fn to_micros(at: NaiveDateTime) -> NaiveDateTime {
    at.duration_trunc(TimeDelta::microseconds(1)).unwrap_or(at)
}

/// The database's clock as a value inside a statement, `offset` later: on PostgreSQL
/// `statement_timestamp()` in UTC (one instant for the whole statement, so no round trip
/// of its own), on SQLite the host clock bound as a parameter. Use it in `INSERT` and
/// `UPDATE` values, and read it back with `RETURNING` when the caller needs it.
#[derive(Debug, Clone, Copy)]
pub struct DbNow {
    host: NaiveDateTime,
    offset_micros: i64,
}

impl DbNow {
    /// The database's clock, now.
    pub fn now() -> Self {
        Self::plus(TimeDelta::zero())
    }

    /// The database's clock `offset` from now.
    pub fn plus(offset: TimeDelta) -> Self {
        let offset_micros = offset.num_microseconds().unwrap_or(i64::MAX);
        let host = to_micros(Utc::now().naive_utc()) + TimeDelta::microseconds(offset_micros);
        Self {
            host,
            offset_micros,
        }
    }
}

impl Expression for DbNow {
    type SqlType = Timestamp;
}

impl<QS> AppearsOnTable<QS> for DbNow {}

impl<QS> SelectableExpression<QS> for DbNow {}

impl ValidGrouping<()> for DbNow {
    type IsAggregate = is_aggregate::Never;
}

impl QueryId for DbNow {
    type QueryId = Self;
    // The SQL is the same for every value, so statements using it stay prepared.
    const HAS_STATIC_QUERY_ID: bool = true;
}

impl QueryFragment<Pg> for DbNow {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_sql("(CAST(statement_timestamp() AT TIME ZONE 'UTC' AS timestamp) + ");
        out.push_bind_param::<BigInt, _>(&self.offset_micros)?;
        out.push_sql(" * interval '1 microsecond')");
        Ok(())
    }
}

impl QueryFragment<Sqlite> for DbNow {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Sqlite>) -> QueryResult<()> {
        out.push_bind_param::<Timestamp, _>(&self.host)
    }
}
