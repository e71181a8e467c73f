//! The state every request handler shares: the pool, the configuration and the
//! merchant cache, the payment processor and the metrics.

use std::sync::Arc;

use crate::auth::MerchantCache;
use crate::config::Config;
use crate::db::DbPool;
use crate::drain::Drain;
use crate::idempotency::replay_cache::ReplayCache;
use crate::idempotency::waiters::Waiters;
use crate::limits::Limits;
use crate::metrics::Metrics;
use crate::processor::simulator::Simulator;

/// Shared, cheaply cloned application state.
#[derive(Clone)]
pub struct AppState {
    pub pool: DbPool,
    pub config: Arc<Config>,
    pub merchants: MerchantCache,
    /// The payment processor (the built-in simulator).
    pub processor: Arc<Simulator>,
    /// Counters for `GET /metrics`.
    pub metrics: Arc<Metrics>,
    /// Finished records' responses, for replays without a database round trip.
    pub replays: Arc<ReplayCache>,
    /// Requests waiting for a key in use (`Prefer: wait`).
    pub waiters: Arc<Waiters>,
    /// Rate limits per API key and per client address.
    pub limits: Arc<Limits>,
    /// Whether the instance is draining, and what it waits for.
    pub drain: Arc<Drain>,
}
