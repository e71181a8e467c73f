//! Database access: one connection type over PostgreSQL and SQLite, the r2d2 pool,
//! write transactions, the database clock, and migrations.
//!
//! The backend is chosen by the URL scheme (`postgres://`, `postgresql://`, `sqlite://`).
//! Our own [`ConnectionManager`] connects to exactly that backend, so a failure reports
//! libpq's or SQLite's real message instead of diesel's generic multi-connection error.

pub mod orders;
pub mod payments;
pub mod refunds;
pub mod schema;

use std::time::Duration;

use chrono::{DurationRound, NaiveDateTime, TimeDelta, Utc};
use diesel::connection::{AnsiTransactionManager, SimpleConnection, TransactionManager};
use diesel::prelude::*;
use diesel::r2d2::{ManageConnection, Pool};
use diesel::sql_types::Timestamp;
use diesel_migrations::{embed_migrations, EmbeddedMigrations, MigrationHarness};

/// A connection to either backend; queries written once against it run on both.
#[derive(diesel::MultiConnection)]
pub enum DbConnection {
    Postgresql(PgConnection),
    Sqlite(SqliteConnection),
}

/// The shared connection pool.
pub type DbPool = Pool<ConnectionManager>;

/// Runs `$body` with `$c` bound to the concrete connection of either backend: for the
/// few queries (such as `ON CONFLICT DO NOTHING`) that the multi-connection cannot build.
#[macro_export]
macro_rules! per_backend {
    ($conn:expr, |$c:ident| $body:expr) => {
        match $conn {
            $crate::db::DbConnection::Postgresql($c) => $body,
            $crate::db::DbConnection::Sqlite($c) => $body,
        }
    };
}

const POSTGRES_MIGRATIONS: EmbeddedMigrations = embed_migrations!("migrations/postgres");
const SQLITE_MIGRATIONS: EmbeddedMigrations = embed_migrations!("migrations/sqlite");

/// Where a `DATABASE_URL` points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Postgres(String),
    /// A file path: `sqlite://relative.db` → `relative.db`, `sqlite:///abs.db` → `/abs.db`.
    Sqlite(String),
}

impl Target {
    /// Parses `postgres://…`, `postgresql://…` or `sqlite://PATH`; anything else is an error.
    pub fn parse(url: &str) -> Result<Self, String> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Ok(Self::Postgres(url.to_owned()))
        } else if let Some(path) = url.strip_prefix("sqlite://") {
            match path {
                "" => Err("sqlite:// URL needs a file path, e.g. sqlite://idempay.db".into()),
                ":memory:" => {
                    Err("an in-memory SQLite database cannot be pooled; use a file".into())
                }
                _ => Ok(Self::Sqlite(path.to_owned())),
            }
        } else {
            Err(format!(
                "unsupported DATABASE_URL `{url}`: use sqlite://PATH or postgres://USER@HOST:PORT/DB"
            ))
        }
    }
}

/// An r2d2 manager that connects to the backend named by the URL scheme.
#[derive(Debug, Clone)]
pub struct ConnectionManager {
    target: Target,
}

impl ConnectionManager {
    pub fn new(target: Target) -> Self {
        Self { target }
    }
}

/// Opens one connection, with the SQLite pragmas idempay relies on (WAL, a busy
/// timeout, foreign keys; `synchronous=NORMAL` survives a killed process, not a power
/// cut) or the PostgreSQL session time zone set to UTC.
pub fn establish(target: &Target) -> ConnectionResult<DbConnection> {
    match target {
        Target::Postgres(url) => {
            let mut conn = PgConnection::establish(url)?;
            conn.batch_execute("SET TIME ZONE 'UTC'")
                .map_err(|e| ConnectionError::BadConnection(e.to_string()))?;
            Ok(DbConnection::Postgresql(conn))
        }
        Target::Sqlite(path) => {
            let mut conn = SqliteConnection::establish(path)?;
            conn.batch_execute(
                "PRAGMA busy_timeout = 5000; PRAGMA journal_mode = WAL; \
                 PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;",
            )
            .map_err(|e| ConnectionError::BadConnection(e.to_string()))?;
            Ok(DbConnection::Sqlite(conn))
        }
    }
}

impl ManageConnection for ConnectionManager {
    type Connection = DbConnection;
    type Error = ConnectionError;

    fn connect(&self) -> Result<DbConnection, ConnectionError> {
        establish(&self.target)
    }

    fn is_valid(&self, conn: &mut DbConnection) -> Result<(), ConnectionError> {
        conn.batch_execute("SELECT 1")
            .map_err(|e| ConnectionError::BadConnection(e.to_string()))
    }

    fn has_broken(&self, _conn: &mut DbConnection) -> bool {
        false
    }
}

/// Builds the pool: `size` connections at most, `checkout_timeout` to wait for one
/// (a timeout becomes a 503 with `Retry-After`). Connects lazily.
pub fn build_pool(target: Target, size: u32, checkout_timeout: Duration) -> DbPool {
    Pool::builder()
        .max_size(size)
        .min_idle(Some(0))
        .connection_timeout(checkout_timeout)
        .test_on_check_out(false)
        .build_unchecked(ConnectionManager::new(target))
}

/// Runs every pending migration of the connection's backend.
pub fn run_migrations(conn: &mut DbConnection) -> Result<(), String> {
    let result = match conn {
        DbConnection::Postgresql(c) => c.run_pending_migrations(POSTGRES_MIGRATIONS).map(|_| ()),
        DbConnection::Sqlite(c) => c.run_pending_migrations(SQLITE_MIGRATIONS).map(|_| ()),
    };
    result.map_err(|e| format!("migration failed: {e}"))
}

/// Runs `f` in a transaction that may read and then write. On SQLite it is
/// `BEGIN IMMEDIATE`, so it takes the write lock up front and waits for it under the busy
/// timeout instead of failing with "database is locked" when it upgrades a read.
pub fn write_transaction<T, E, F>(conn: &mut DbConnection, f: F) -> Result<T, E>
where
    F: FnOnce(&mut DbConnection) -> Result<T, E>,
    E: From<diesel::result::Error>,
{
    let DbConnection::Sqlite(sqlite) = conn else {
        return conn.transaction(f);
    };
    AnsiTransactionManager::begin_transaction_sql(sqlite, "BEGIN IMMEDIATE")?;
    match f(conn) {
        Ok(value) => {
            <DbConnection as Connection>::TransactionManager::commit_transaction(conn)?;
            Ok(value)
        }
        Err(e) => {
            <DbConnection as Connection>::TransactionManager::rollback_transaction(conn)?;
            Err(e)
        }
    }
}

/// The database's clock in UTC, to the microsecond: every lease and expiry is computed
/// and compared against it, so instances with skewed clocks still agree. (SQLite is a
/// local file, so its clock is this machine's.)
pub fn now(conn: &mut DbConnection) -> QueryResult<NaiveDateTime> {
    let now = match conn {
        DbConnection::Postgresql(_) => {
            diesel::select(diesel::dsl::sql::<Timestamp>(PG_NOW)).get_result(conn)?
        }
        DbConnection::Sqlite(_) => Utc::now().naive_utc(),
    };
    Ok(to_micros(now))
}

/// PostgreSQL's clock in UTC, as a SQL expression of type `timestamp`.
pub const PG_NOW: &str = "CAST(clock_timestamp() AT TIME ZONE 'UTC' AS timestamp)";

/// A timestamp truncated to microseconds, the precision both backends keep.
pub fn to_micros(at: NaiveDateTime) -> NaiveDateTime {
    at.duration_trunc(TimeDelta::microseconds(1)).unwrap_or(at)
}

/// Runs blocking database work on the blocking pool (never on an async worker), with a
/// pooled connection, inside the caller's tracing span. A pool timeout is 503.
pub async fn run<T, F>(pool: &DbPool, f: F) -> Result<T, crate::error::ApiError>
where
    F: FnOnce(&mut DbConnection) -> Result<T, crate::error::ApiError> + Send + 'static,
    T: Send + 'static,
{
    let pool = pool.clone();
    let span = tracing::Span::current();
    actix_web::web::block(move || {
        let _entered = span.enter();
        let mut conn = pool.get()?;
        f(&mut conn)
    })
    .await
    .map_err(|e| crate::error::ApiError::Database(format!("blocking task failed: {e}")))?
}
