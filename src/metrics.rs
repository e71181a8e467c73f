//! The instance's metrics, served at `GET /metrics` in Prometheus's text exposition
//! format through the `prometheus` crate. Every instance (and every test server in one
//! process) has a registry of its own; sum across instances.
//!
//! Counters are bumped where the event happens; the pool's and the replay cache's sizes
//! are read when scraped.

use prometheus::{
    Encoder, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, Opts,
    Registry, TextEncoder,
};

/// What the idempotency engine did with a keyed request (the `outcome` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A key seen for the first time executed.
    Executed,
    /// A finished key's stored response was replayed.
    Replayed,
    /// 409 `idempotency_key_reused`: another request under a used key.
    ReusedConflict,
    /// 409 `idempotency_key_in_use`: the key's execution still holds its lease.
    InUse,
    /// A record whose owner died, or that failed retryably, was taken over.
    TakenOver,
    /// An expired record was replaced by a new claim.
    ExpiredReclaimed,
    /// An execution resumed from a recovery point past `started` (a retry after an
    /// unknown outcome, or after its owner died).
    Resumed,
}

impl Outcome {
    fn label(self) -> &'static str {
        match self {
            Self::Executed => "executed",
            Self::Replayed => "replayed",
            Self::ReusedConflict => "reused_conflict",
            Self::InUse => "in_use",
            Self::TakenOver => "taken_over",
            Self::ExpiredReclaimed => "expired_reclaimed",
            Self::Resumed => "resumed",
        }
    }
}

/// Every metric of one instance.
#[derive(Clone)]
pub struct Metrics {
    registry: Registry,
    /// `idempay_http_requests_total{route, method, status}`.
    pub http_requests: IntCounterVec,
    /// `idempay_http_request_duration_seconds{route, method}`.
    pub http_duration: HistogramVec,
    idempotency: IntCounterVec,
    /// `idempay_processor_calls_total{method, outcome}`: `charge`/`refund`/`lookup`;
    /// `succeeded`, `declined`, `unavailable`, `timeout`, `not_found`.
    pub processor_calls: IntCounterVec,
    pub reaper_passes: IntCounter,
    pub reaper_released: IntCounter,
    pub reaper_recovered: IntCounter,
    pub reaper_purged: IntCounter,
    pub reaper_errors: IntCounter,
    pub reaper_flagged: IntCounter,
    pub leases_lost: IntCounter,
    /// Time spent waiting for a pooled connection, per checkout.
    pub pool_checkout_wait: Histogram,
    /// Checkouts that gave up (answered 503).
    pub pool_checkout_timeouts: IntCounter,
    /// Requests refused with 429, by `reason` (`api_key`, `failed_auth`).
    pub rate_limited: IntCounterVec,
    /// `idempay_key_waiters`: requests waiting (`Prefer: wait`) for a key in use.
    pub key_waiters: IntGauge,
    pool_connections: IntGauge,
    pool_idle: IntGauge,
    pool_discarded: IntGauge,
    replay_cache_entries: IntGauge,
    replay_cache_bytes: IntGauge,
}

/// Sizes read at scrape time.
pub struct Sizes {
    pub pool_connections: u32,
    pub pool_idle: u32,
    pub pool_discarded: u64,
    pub replay_cache: (usize, usize),
}

fn counter(registry: &Registry, name: &str, help: &str) -> IntCounter {
    let counter = IntCounter::new(name, help).expect("a valid metric name");
    registry
        .register(Box::new(counter.clone()))
        .expect("registered once");
    counter
}

fn gauge(registry: &Registry, name: &str, help: &str) -> IntGauge {
    let gauge = IntGauge::new(name, help).expect("a valid metric name");
    registry
        .register(Box::new(gauge.clone()))
        .expect("registered once");
    gauge
}

fn counters(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    let vec = IntCounterVec::new(Opts::new(name, help), labels).expect("a valid metric name");
    registry
        .register(Box::new(vec.clone()))
        .expect("registered once");
    vec
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A fresh registry with every metric at zero.
    pub fn new() -> Self {
        let r = Registry::new();
        let duration = HistogramOpts::new(
            "idempay_http_request_duration_seconds",
            "Time to answer a request, by route template.",
        )
        .buckets(vec![
            0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
        ]);
        let http_duration = HistogramVec::new(duration, &["route", "method"]).expect("valid");
        r.register(Box::new(http_duration.clone()))
            .expect("registered once");
        let wait = HistogramOpts::new(
            "idempay_db_pool_checkout_wait_seconds",
            "Time a checkout waited for a pooled database connection.",
        )
        .buckets(vec![0.0001, 0.001, 0.01, 0.1, 0.5, 1.0, 2.0, 5.0]);
        let pool_checkout_wait = Histogram::with_opts(wait).expect("valid");
        r.register(Box::new(pool_checkout_wait.clone()))
            .expect("registered once");
        Self {
            http_requests: counters(
                &r,
                "idempay_http_requests_total",
                "Requests answered, by route template, method and status.",
                &["route", "method", "status"],
            ),
            http_duration,
            idempotency: counters(
                &r,
                "idempay_idempotency_outcomes_total",
                "What the idempotency engine did with keyed requests.",
                &["outcome"],
            ),
            processor_calls: counters(
                &r,
                "idempay_processor_calls_total",
                "Calls to the payment processor, by method and outcome.",
                &["method", "outcome"],
            ),
            reaper_passes: counter(&r, "idempay_reaper_passes_total", "Reaper passes run."),
            reaper_released: counter(
                &r,
                "idempay_reaper_released_total",
                "Stuck records at `started` released for retry.",
            ),
            reaper_recovered: counter(
                &r,
                "idempay_reaper_recovered_total",
                "Stuck records resumed from a recovery point.",
            ),
            reaper_purged: counter(
                &r,
                "idempay_reaper_purged_total",
                "Expired idempotency records deleted.",
            ),
            reaper_errors: counter(
                &r,
                "idempay_reaper_errors_total",
                "Recoveries that failed and were backed off.",
            ),
            reaper_flagged: counter(
                &r,
                "idempay_reaper_flagged_total",
                "Recoveries failing repeatedly; operator attention needed.",
            ),
            leases_lost: counter(
                &r,
                "idempay_leases_lost_total",
                "Executions fenced off: their lease was taken over.",
            ),
            pool_checkout_wait,
            pool_checkout_timeouts: counter(
                &r,
                "idempay_db_pool_checkout_timeouts_total",
                "Checkouts that found no connection in time (answered 503).",
            ),
            rate_limited: counters(
                &r,
                "idempay_rate_limited_total",
                "Requests refused with 429, by reason.",
                &["reason"],
            ),
            key_waiters: gauge(
                &r,
                "idempay_key_waiters",
                "Requests waiting (Prefer: wait) for an idempotency key in use.",
            ),
            pool_connections: gauge(
                &r,
                "idempay_db_pool_connections",
                "Database connections open in the pool.",
            ),
            pool_idle: gauge(
                &r,
                "idempay_db_pool_idle_connections",
                "Pooled connections not in use.",
            ),
            pool_discarded: gauge(
                &r,
                "idempay_db_connections_discarded",
                "Pooled connections found dead and discarded since start.",
            ),
            replay_cache_entries: gauge(
                &r,
                "idempay_replay_cache_entries",
                "Finished responses held for replays.",
            ),
            replay_cache_bytes: gauge(
                &r,
                "idempay_replay_cache_bytes",
                "Bytes of keys and responses held for replays.",
            ),
            registry: r,
        }
        .with_known_series()
    }

    /// Starts every series of a known label set at zero, so each appears from the
    /// first scrape (a series is only exposed once it exists).
    fn with_known_series(self) -> Self {
        for outcome in [
            Outcome::Executed,
            Outcome::Replayed,
            Outcome::ReusedConflict,
            Outcome::InUse,
            Outcome::TakenOver,
            Outcome::ExpiredReclaimed,
            Outcome::Resumed,
        ] {
            self.idempotency.with_label_values(&[outcome.label()]);
        }
        for method in ["charge", "refund", "lookup"] {
            for outcome in [
                "succeeded",
                "declined",
                "unavailable",
                "timeout",
                "not_found",
            ] {
                self.processor_calls.with_label_values(&[method, outcome]);
            }
        }
        for reason in ["api_key", "failed_auth"] {
            self.rate_limited.with_label_values(&[reason]);
        }
        self
    }

    /// Counts what the engine did with a keyed request.
    pub fn outcome(&self, outcome: Outcome) {
        self.idempotency.with_label_values(&[outcome.label()]).inc();
    }

    /// Every metric as Prometheus text, with the sizes read now.
    pub fn render(&self, sizes: Sizes) -> String {
        self.pool_connections.set(i64::from(sizes.pool_connections));
        self.pool_idle.set(i64::from(sizes.pool_idle));
        self.pool_discarded.set(sizes.pool_discarded as i64);
        self.replay_cache_entries.set(sizes.replay_cache.0 as i64);
        self.replay_cache_bytes.set(sizes.replay_cache.1 as i64);
        let mut out = Vec::new();
        TextEncoder::new()
            .encode(&self.registry.gather(), &mut out)
            .expect("the text encoder writes to memory");
        String::from_utf8(out).expect("the text format is UTF-8")
    }
}

/// Feeds the pool's checkout waits and timeouts into [`Metrics`] (an r2d2 event handler).
#[derive(Debug)]
pub struct PoolEvents {
    wait: Histogram,
    timeouts: IntCounter,
}

impl Metrics {
    /// The r2d2 event handler that records this instance's checkouts.
    pub fn pool_events(&self) -> PoolEvents {
        PoolEvents {
            wait: self.pool_checkout_wait.clone(),
            timeouts: self.pool_checkout_timeouts.clone(),
        }
    }
}

impl diesel::r2d2::HandleEvent for PoolEvents {
    fn handle_checkout(&self, event: diesel::r2d2::event::CheckoutEvent) {
        self.wait.observe(event.duration().as_secs_f64());
    }

    fn handle_timeout(&self, _: diesel::r2d2::event::TimeoutEvent) {
        self.timeouts.inc();
    }
}
