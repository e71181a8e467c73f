//! SQLite's WAL checkpoints, moved off the request path.
//!
//! By default SQLite checkpoints inside the commit that fills the WAL past 1,000 pages:
//! that commit copies the WAL into the database and waits for the disk's fsync while it
//! holds the write lock, and every writer queued behind it waits too (measured here: it
//! halved one thread's new-key orders per second, and cost the server a quarter of its
//! new-key throughput). Pooled connections therefore never checkpoint
//! (`wal_autocheckpoint = 0`); a background thread of the pool runs a `PASSIVE`
//! checkpoint every [`INTERVAL`] instead, which blocks neither readers nor writers. The
//! thread ends when its pool is dropped.

use std::sync::Weak;
use std::time::Duration;

use diesel::connection::SimpleConnection;

use super::pool::Health;
use super::{establish, Target};

/// How often the WAL is copied into the database.
pub const INTERVAL: Duration = Duration::from_millis(250);

/// Run on each pooled SQLite connection: no checkpoint at commit, and a WAL file cut
/// back to 64 MiB once it has been checkpointed.
pub const DEFERRED: &str = "PRAGMA wal_autocheckpoint = 0; PRAGMA journal_size_limit = 67108864;";

/// Starts the checkpointer of the pool whose health record is `pool`; `false` if no
/// thread could be started (then commits must keep checkpointing).
pub fn spawn(target: Target, pool: Weak<Health>) -> bool {
    let spawned = std::thread::Builder::new()
        .name("sqlite-checkpoint".into())
        .spawn(move || {
            let mut conn = None;
            while pool.strong_count() > 0 {
                std::thread::sleep(INTERVAL);
                if conn.is_none() {
                    conn = establish(&target).ok();
                }
                let Some(c) = conn.as_mut() else {
                    continue;
                };
                if let Err(e) = c.batch_execute("PRAGMA wal_checkpoint(PASSIVE)") {
                    tracing::warn!(error = %e, "SQLite checkpoint failed; retrying");
                    conn = None;
                }
            }
        });
    if let Err(e) = &spawned {
        tracing::warn!(error = %e, "no SQLite checkpointer thread: commits will checkpoint");
    }
    spawned.is_ok()
}
