//! Database access: one connection type over PostgreSQL and SQLite, the r2d2 pool,
//! write transactions, the database clock, and migrations.
//!
//! The backend is chosen by the URL scheme (`postgres://`, `postgresql://`, `sqlite://`).
//! Our own [`ConnectionManager`] connects to exactly that backend, so a failure reports
//! libpq's or SQLite's real message instead of diesel's generic multi-connection error.

mod checkpoint;
mod clock;
pub mod orders;
pub mod payments;
mod pool;
pub mod refunds;
pub mod schema;

pub use clock::{now, to_micros, DbNow, PG_NOW};
pub use pool::{build_pool, ping, read, run, ConnectionManager, DbPool};

use std::time::Duration;

use diesel::connection::{AnsiTransactionManager, SimpleConnection, TransactionManager};
use diesel::prelude::*;
use diesel_migrations::{embed_migrations, EmbeddedMigrations, MigrationHarness};

/// A connection to either backend; queries written once against it run on both.
#[derive(diesel::MultiConnection)]
pub enum DbConnection {
    Postgresql(PgConnection),
    Sqlite(SqliteConnection),
}

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

/// How long one statement may wait (for a lock, or for SQLite's write lock) unless the
/// caller says otherwise: PostgreSQL's `statement_timeout`, SQLite's busy timeout.
pub const DEFAULT_STATEMENT_TIMEOUT: Duration = Duration::from_secs(5);

/// Opens one connection with [`DEFAULT_STATEMENT_TIMEOUT`]; see [`establish_with`].
pub fn establish(target: &Target) -> ConnectionResult<DbConnection> {
    establish_with(target, DEFAULT_STATEMENT_TIMEOUT)
}

/// Opens one connection whose every wait is bounded. PostgreSQL: the session in UTC,
/// `statement_timeout` and `lock_timeout` set to `statement_timeout`, and libpq's
/// `connect_timeout` and TCP keepalives added to the URL unless it sets them (so a
/// database that vanished without closing the socket is noticed). SQLite: WAL, the busy
/// timeout, foreign keys, and `synchronous=NORMAL` (survives a killed process, not a
/// power cut).
pub fn establish_with(
    target: &Target,
    statement_timeout: Duration,
) -> ConnectionResult<DbConnection> {
    let ms = statement_timeout.as_millis();
    let setup_failed = |e: diesel::result::Error| ConnectionError::BadConnection(e.to_string());
    match target {
        Target::Postgres(url) => {
            let mut conn = PgConnection::establish(&with_connection_bounds(url))?;
            conn.batch_execute(&format!(
                "SET TIME ZONE 'UTC'; SET statement_timeout = {ms}; SET lock_timeout = {ms}"
            ))
            .map_err(setup_failed)?;
            Ok(DbConnection::Postgresql(conn))
        }
        Target::Sqlite(path) => {
            let mut conn = SqliteConnection::establish(path)?;
            conn.batch_execute(&format!(
                "PRAGMA busy_timeout = {ms}; PRAGMA journal_mode = WAL; \
                 PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;"
            ))
            .map_err(setup_failed)?;
            Ok(DbConnection::Sqlite(conn))
        }
    }
}

/// libpq settings that bound the waits of a connection: at most 5 s to connect, and
/// keepalives that notice a silent peer within about 11 s. Settings already in the
/// URL win.
fn with_connection_bounds(url: &str) -> String {
    let mut url = url.to_owned();
    for (name, value) in [
        ("connect_timeout", "5"),
        ("keepalives_idle", "5"),
        ("keepalives_interval", "2"),
        ("keepalives_count", "3"),
    ] {
        if !url.contains(&format!("{name}=")) {
            let separator = if url.contains('?') { '&' } else { '?' };
            url = format!("{url}{separator}{name}={value}");
        }
    }
    url
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
