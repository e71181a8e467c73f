//! HTTP-level tests: each starts a real server on port 0 and runs on SQLite and on
//! PostgreSQL (when `TEST_DATABASE_URL` is set).

mod client;
mod cluster;
mod helpers;
mod pause;
mod pg;
mod raw;

mod auth_and_errors;
mod bounds;
mod cases;
mod concurrency;
mod crash;
mod drain;
mod key_inspection;
mod keys;
mod leases;
mod limits;
mod metrics;
mod multi_instance;
mod observability;
mod orders;
mod outage;
mod payment_failures;
mod payments;
mod process;
mod reaper;
mod recovery;
mod refunds;
mod replay_cache;
mod spec;
mod sqlite;
mod stale;
mod test_faults;
mod validation;
mod waiting;
