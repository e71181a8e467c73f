//! The connection pool (r2d2) and its health rules: how idempay outlives a database
//! restart or failover without being restarted itself.
//!
//! diesel reports a connection as broken only when its transaction state is; a socket
//! whose server went away looks healthy until it is used (see shared/notes/pool-health).
//! So the pool keeps three rules, and pays a round trip only after a failure:
//!
//! 1. A connection whose work failed with a database error is tested (`SELECT 1`)
//!    before it goes back; if the test fails, it is marked broken and r2d2 discards it.
//! 2. Each such discovery starts a new *generation*. A connection made before the
//!    latest failure is tested once at its next checkout, so after a restart the dead
//!    connections idling in the pool are weeded out before a request gets one.
//! 3. Checkout waits at most the pool timeout, and every statement at most the statement
//!    timeout, so a database that is down means a prompt 503, never a hang.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use diesel::connection::SimpleConnection;
use diesel::r2d2::{ManageConnection, Pool, PooledConnection, R2D2Connection};
use diesel::ConnectionError;

use super::{checkpoint, establish_with, DbConnection, Target};
use crate::error::ApiError;
use crate::telemetry;

/// The shared connection pool: r2d2's, with the health record its rules need, and on
/// SQLite the in-process writer lock.
#[derive(Clone)]
pub struct DbPool {
    pool: Pool<ConnectionManager>,
    health: Arc<Health>,
    /// SQLite allows one writer at a time. Work that may write takes this lock first,
    /// waiting for it as for a pooled connection (the pool timeout: it is the pool's one
    /// write connection), so writers queue here, in process and (eventually) fairly,
    /// instead of sleeping in SQLite's busy handler; readers (WAL) never wait for it.
    /// `None` on PostgreSQL.
    writer: Option<Arc<parking_lot::Mutex<()>>>,
}

/// What the pool knows about its connections' health.
#[derive(Debug, Default)]
struct Health {
    /// Bumped whenever a connection is found dead: older connections are suspect.
    generation: AtomicU64,
    /// Connections found dead and discarded.
    discarded: AtomicU64,
}

impl Health {
    fn current(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Tests `conn`; a dead one is marked broken (r2d2 drops it when it comes back) and
    /// starts a new generation.
    fn prove_alive(&self, conn: &mut Tracked) -> bool {
        if !conn.conn.is_broken() && conn.conn.batch_execute("SELECT 1").is_ok() {
            conn.generation = self.current();
            return true;
        }
        conn.broken = true;
        self.discarded.fetch_add(1, Ordering::Relaxed);
        self.generation.fetch_add(1, Ordering::SeqCst);
        tracing::warn!("discarding a dead database connection");
        false
    }
}

/// A pooled connection with what the pool's health rules need to know about it.
pub struct Tracked {
    conn: DbConnection,
    /// The generation it was made in, or last proved alive in.
    generation: u64,
    /// Failed its test after a database error: r2d2 discards it when it comes back.
    broken: bool,
}

/// An r2d2 manager that connects to the backend named by the URL scheme, with every
/// statement bounded by `statement_timeout`.
#[derive(Debug)]
pub struct ConnectionManager {
    target: Target,
    statement_timeout: Duration,
    health: Arc<Health>,
    /// SQLite: the pool's checkpointer runs, so connections leave checkpoints to it.
    defer_checkpoints: bool,
}

impl ManageConnection for ConnectionManager {
    type Connection = Tracked;
    type Error = ConnectionError;

    fn connect(&self) -> Result<Tracked, ConnectionError> {
        let generation = self.health.current();
        let mut conn = establish_with(&self.target, self.statement_timeout)?;
        if self.defer_checkpoints {
            // Checkpoints are the pool's checkpointer's, never a commit's (see there).
            conn.batch_execute(checkpoint::DEFERRED)
                .map_err(|e| ConnectionError::BadConnection(e.to_string()))?;
        }
        Ok(Tracked {
            conn,
            generation,
            broken: false,
        })
    }

    fn is_valid(&self, conn: &mut Tracked) -> Result<(), ConnectionError> {
        conn.conn
            .batch_execute("SELECT 1")
            .map_err(|e| ConnectionError::BadConnection(e.to_string()))
    }

    fn has_broken(&self, conn: &mut Tracked) -> bool {
        conn.broken || conn.conn.is_broken()
    }
}

/// Builds the pool: `size` connections at most, `checkout_timeout` to wait for one
/// (a timeout becomes a 503 with `Retry-After`), `statement_timeout` for every
/// statement. Connects lazily, so it starts while the database is still down.
pub fn build_pool(
    target: Target,
    size: u32,
    checkout_timeout: Duration,
    statement_timeout: Duration,
    events: Box<dyn diesel::r2d2::HandleEvent>,
) -> DbPool {
    let health = Arc::new(Health::default());
    let writer: Option<Arc<parking_lot::Mutex<()>>> =
        matches!(target, Target::Sqlite(_)).then(Default::default);
    let defer_checkpoints = writer
        .as_ref()
        .is_some_and(|lock| checkpoint::spawn(target.clone(), Arc::downgrade(lock)));
    let manager = ConnectionManager {
        target,
        statement_timeout,
        health: health.clone(),
        defer_checkpoints,
    };
    let pool = Pool::builder()
        .max_size(size)
        .min_idle(Some(0))
        .connection_timeout(checkout_timeout)
        .test_on_check_out(false)
        .event_handler(events)
        .build_unchecked(manager);
    DbPool {
        pool,
        health,
        writer,
    }
}

impl DbPool {
    /// How many pooled connections were found dead and discarded so far.
    pub fn discarded(&self) -> u64 {
        self.health.discarded.load(Ordering::Relaxed)
    }

    /// Connections open in the pool, and how many of them are idle.
    pub fn size(&self) -> (u32, u32) {
        let state = self.pool.state();
        (state.connections, state.idle_connections)
    }

    /// A connection for one unit of work, waiting at most `timeout`. A connection older
    /// than the latest failure is tested first (rule 2). Errors: 503
    /// `database_unavailable`.
    fn checkout(&self, timeout: Duration) -> Result<PooledConnection<ConnectionManager>, ApiError> {
        // Each pass discards one dead connection; the pool holds at most `max_size`.
        for _ in 0..=self.pool.max_size() {
            let mut conn = self.pool.get_timeout(timeout)?;
            if conn.generation == self.health.current() || self.health.prove_alive(&mut conn) {
                return Ok(conn);
            }
        }
        Err(ApiError::Database(
            "no live database connection could be made".into(),
        ))
    }

    /// Runs `f`, which may write, on a checked-out connection, on the calling
    /// (blocking) thread: on SQLite after taking the writer lock. A database error has
    /// its connection tested before it is reused (rule 1).
    pub fn with_connection<T>(
        &self,
        f: impl FnOnce(&mut DbConnection) -> Result<T, ApiError>,
    ) -> Result<T, ApiError> {
        let _writing = match &self.writer {
            Some(lock) => Some(
                lock.try_lock_for(self.pool.connection_timeout())
                    .ok_or_else(|| {
                        ApiError::Database("the database is busy with other writes".into())
                    })?,
            ),
            None => None,
        };
        self.reading(f)
    }

    /// Runs `f`, which only reads, on a checked-out connection (never waits for writers).
    pub fn reading<T>(
        &self,
        f: impl FnOnce(&mut DbConnection) -> Result<T, ApiError>,
    ) -> Result<T, ApiError> {
        let mut conn = self.checkout(self.pool.connection_timeout())?;
        let result = f(&mut conn.conn);
        if let Err(ApiError::Database(_)) = &result {
            self.health.prove_alive(&mut conn);
        }
        result
    }
}

/// Runs blocking database work on the blocking pool (never on an async worker), with a
/// pooled connection, inside the caller's tracing span and request. A pool timeout is 503; a
/// database error has its connection tested before it is reused (rule 1).
pub async fn run<T, F>(pool: &DbPool, f: F) -> Result<T, ApiError>
where
    F: FnOnce(&mut DbConnection) -> Result<T, ApiError> + Send + 'static,
    T: Send + 'static,
{
    let (pool, request) = (pool.clone(), telemetry::current_request_id());
    let span = tracing::Span::current();
    actix_web::web::block(move || {
        let _entered = span.enter();
        telemetry::with_request_id(request, || pool.with_connection(f))
    })
    .await
    .map_err(|e| ApiError::Database(format!("blocking task failed: {e}")))?
}

/// Like [`run`], for work that only reads: on SQLite it does not queue behind writers.
pub async fn read<T, F>(pool: &DbPool, f: F) -> Result<T, ApiError>
where
    F: FnOnce(&mut DbConnection) -> Result<T, ApiError> + Send + 'static,
    T: Send + 'static,
{
    let (pool, request) = (pool.clone(), telemetry::current_request_id());
    let span = tracing::Span::current();
    actix_web::web::block(move || {
        let _entered = span.enter();
        telemetry::with_request_id(request, || pool.reading(f))
    })
    .await
    .map_err(|e| ApiError::Database(format!("blocking task failed: {e}")))?
}

/// Proves the database answers: a checkout (at most `timeout`) and `SELECT 1`, tried
/// twice so that one dead connection left from before a restart does not make a live
/// database look down. For readiness. Errors: 503 `database_unavailable`.
pub async fn ping(pool: &DbPool, timeout: Duration) -> Result<(), ApiError> {
    let pool = pool.clone();
    actix_web::web::block(move || {
        for _ in 0..2 {
            let mut conn = pool.checkout(timeout)?;
            if pool.health.prove_alive(&mut conn) {
                return Ok(());
            }
        }
        Err(ApiError::Database("the database did not answer".into()))
    })
    .await
    .map_err(|e| ApiError::Database(format!("blocking task failed: {e}")))?
}
