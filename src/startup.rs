//! Start-up: the pool, migrations, the demo merchant, the reaper, and the HTTP server
//! (port 0 in tests, reported back through [`Application::port`]).

use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::Server;
use actix_web::middleware::{from_fn, ErrorHandlers};
use actix_web::{web, App, HttpServer};

use crate::config::Config;
use crate::db::{self, DbPool};
use crate::idempotency::replay_cache::ReplayCache;
use crate::limits::Limits;
use crate::metrics::Metrics;
use crate::processor::simulator::Simulator;
use crate::state::AppState;
use crate::{drain, merchants, reaper, routes, telemetry};

/// A bound, not yet running server.
pub struct Application {
    addr: std::net::SocketAddr,
    server: Server,
    state: AppState,
}

/// Endpoints whose key TTL can be overridden with `--key-ttl-override`.
pub const ENDPOINTS: &[&str] = &[
    "create_order",
    "cancel_order",
    "create_payment",
    "create_refund",
];

/// Opens the pool and migrates the database, reporting the database's own error.
pub fn prepare_database(config: &Config, metrics: &Metrics) -> Result<DbPool, String> {
    let target = config.database.target()?;
    let mut conn = db::establish_with(&target, config.statement_timeout())
        .map_err(|e| format!("cannot connect to the database: {e}"))?;
    db::run_migrations(&mut conn)?;
    if config.demo {
        merchants::ensure_demo(&mut conn)
            .map_err(|e| format!("cannot create the demo merchant: {e}"))?;
    }
    Ok(db::build_pool(
        target,
        config.database.pool_size,
        config.database.pool_timeout(),
        config.statement_timeout(),
        Box::new(metrics.pool_events()),
    ))
}

/// Validates `config`, prepares the database, and builds the shared state (pool,
/// simulator, metrics): what both the server and `idempay reap` run on.
pub fn build_state(config: Config) -> Result<AppState, String> {
    if let Some((name, _)) = config
        .key_ttl_override
        .iter()
        .find(|(n, _)| !ENDPOINTS.contains(&n.as_str()))
    {
        return Err(format!(
            "unknown endpoint `{name}` in --key-ttl-override (known: {})",
            ENDPOINTS.join(", ")
        ));
    }
    if config.slow_processor_ms + config.processor_latency_ms >= config.lease_secs * 1000 {
        return Err(
            "--slow-processor-ms plus --processor-latency-ms must stay below the lease".into(),
        );
    }
    let metrics = Metrics::new();
    let pool = prepare_database(&config, &metrics)?;
    let processor = Arc::new(Simulator::new(
        pool.clone(),
        Duration::from_millis(config.processor_latency_ms),
        Duration::from_millis(config.slow_processor_ms),
    ));
    let replays = ReplayCache::new(config.replay_cache_entries, config.replay_cache_bytes);
    let limits = Limits::new(config.rate_limit_per_key(), config.auth_failures_per_minute);
    Ok(AppState {
        pool,
        config: Arc::new(config),
        merchants: Default::default(),
        processor,
        metrics: Arc::new(metrics),
        replays: Arc::new(replays),
        limits: Arc::new(limits),
        waiters: Default::default(),
        drain: Default::default(),
    })
}

impl Application {
    /// Validates `config`, prepares the database, binds the listener and starts the
    /// background reaper (unless `--reaper-interval-secs 0`). Call inside an actix system.
    pub fn build(config: Config) -> Result<Self, String> {
        if config.demo && !config.bind.ip().is_loopback() && !config.allow_demo_on_network {
            return Err(format!(
                "--demo on {} would offer the public demo key to the network; bind a \
                 loopback address (127.0.0.1) or pass --allow-demo-on-network",
                config.bind
            ));
        }
        let state = build_state(config)?;
        let app_state = state.clone();
        let config = state.config.clone();
        let (bind, workers, body_limit) = (config.bind, config.workers, config.body_limit_bytes);
        if config.reaper_interval_secs > 0 {
            reaper::spawn(
                state.clone(),
                Duration::from_secs(config.reaper_interval_secs),
            );
        }
        let mut server = HttpServer::new(move || {
            App::new()
                .app_data(web::Data::new(state.clone()))
                .app_data(web::PayloadConfig::new(body_limit))
                .wrap(ErrorHandlers::new().default_handler(routes::problem_for_framework_errors))
                .wrap(from_fn(crate::test_faults::inject))
                .wrap(from_fn(drain::guard_requests))
                .wrap(from_fn(telemetry::request_span))
                .configure(routes::configure)
                .default_service(web::to(routes::no_route))
        });
        // Signals are ours (see `drain_on_signals`); by the time actix stops its workers
        // the drain has already waited for every execution.
        server = server
            .on_connect(crate::test_faults::remember_socket)
            .disable_signals()
            .shutdown_timeout(1);
        if workers > 0 {
            server = server.workers(workers);
        }
        let server = server
            .bind(bind)
            .map_err(|e| format!("cannot listen on {bind}: {e}"))?;
        let addr = *server
            .addrs()
            .first()
            .ok_or("the server bound no address")?;
        Ok(Self {
            addr,
            server: server.run(),
            state: app_state,
        })
    }

    /// The port actually bound (useful with port 0).
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The address actually bound.
    pub fn addr(&self) -> std::net::SocketAddr {
        self.addr
    }

    /// Runs until stopped.
    pub async fn run(self) -> std::io::Result<()> {
        self.server.await
    }

    /// The state the server runs on (for tests that drive the reaper themselves).
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// A handle that stops the server.
    pub fn handle(&self) -> actix_web::dev::ServerHandle {
        self.server.handle()
    }

    /// Drains and stops the server on the first SIGTERM or SIGINT (see [`drain`]):
    /// new requests get `503 shutting_down`, running executions get up to
    /// `--shutdown-grace-secs` to finish, then the server stops. A second signal stops
    /// it at once. Call inside the actix system that runs the server.
    pub fn drain_on_signals(&self) -> std::io::Result<()> {
        use actix_web::rt::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        let (handle, state) = (self.server.handle(), self.state.clone());
        actix_web::rt::spawn(async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
            let grace = state.config.shutdown_grace();
            tracing::info!(
                grace_ms = grace.as_millis() as u64,
                "signal received; draining"
            );
            let drained = state.drain.drain(grace);
            let left = tokio::select! {
                left = drained => left,
                _ = term.recv() => state.drain.active(),
                _ = int.recv() => state.drain.active(),
            };
            if left > 0 {
                tracing::warn!(
                    cut_off = left,
                    "drain ended with requests or executions still running; the reaper will resolve what they left"
                );
            } else {
                tracing::info!("drained; stopping");
            }
            handle.stop(left == 0).await;
        });
        Ok(())
    }
}
