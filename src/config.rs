//! Command line and environment: every flag is also an environment variable, and the
//! values are validated before the server starts.

use std::net::SocketAddr;
use std::time::Duration;

use chrono::TimeDelta;
use clap::{Args, Parser, Subcommand};

use crate::db::Target;
pub use crate::faults::Faults;

/// `idempay`: a payments/orders API whose money-moving endpoints are safe to retry.
#[derive(Debug, Parser)]
#[command(name = "idempay", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Log lines as `text` or `json` (one object per line).
    #[arg(
        long,
        global = true,
        env = "IDEMPAY_LOG_FORMAT",
        value_enum,
        default_value_t
    )]
    pub log_format: crate::telemetry::LogFormat,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the HTTP API (migrations are applied first).
    Serve(Config),
    /// Recover stuck records and delete expired ones without serving HTTP: one pass with
    /// `--once` (for cron), else every `--reaper-interval-secs`.
    Reap {
        /// Run one pass and exit.
        #[arg(long)]
        once: bool,
        #[command(flatten)]
        config: Config,
    },
    /// Apply pending database migrations and exit.
    Migrate(DatabaseArgs),
    /// Manage merchants.
    #[command(subcommand)]
    Merchants(MerchantsCommand),
    /// Manage API keys: a merchant may hold several, so keys can be rotated.
    #[command(subcommand, name = "api-keys")]
    ApiKeys(ApiKeysCommand),
}

/// `idempay merchants …`.
#[derive(Debug, Subcommand)]
pub enum MerchantsCommand {
    /// Create a merchant with a first API key: the key is the last line of standard
    /// output, shown once.
    Create {
        /// The merchant's display name.
        #[arg(long)]
        name: String,
        /// Make the first key a test key (`sk_test_…`) instead of a live one.
        #[arg(long)]
        test: bool,
        #[command(flatten)]
        database: DatabaseArgs,
    },
    /// List merchants with their number of active keys.
    List {
        #[command(flatten)]
        database: DatabaseArgs,
    },
}

/// `idempay api-keys …`.
#[derive(Debug, Subcommand)]
pub enum ApiKeysCommand {
    /// Create a key for a merchant: the key is the last line of standard output, shown
    /// once (only its hash is stored).
    Create {
        /// The merchant's id (`mer_…`).
        #[arg(long)]
        merchant: String,
        /// A test key (`sk_test_…`; test features accept only these) instead of live.
        #[arg(long)]
        test: bool,
        #[command(flatten)]
        database: DatabaseArgs,
    },
    /// List a merchant's keys (ids and first characters, never the keys).
    List {
        /// The merchant's id (`mer_…`).
        #[arg(long)]
        merchant: String,
        #[command(flatten)]
        database: DatabaseArgs,
    },
    /// Revoke a key by its id (`key_…`): every instance refuses it within 4 s.
    Revoke {
        /// The key's id.
        key_id: String,
        #[command(flatten)]
        database: DatabaseArgs,
    },
}

/// Where the data lives and how many connections to keep.
#[derive(Debug, Clone, Args)]
pub struct DatabaseArgs {
    /// `sqlite://relative.db`, `sqlite:///absolute.db` or `postgres://user@host:port/db`.
    #[arg(long, env = "DATABASE_URL", default_value = "sqlite://idempay.db")]
    pub database_url: String,
    /// Most connections in the pool.
    #[arg(long, env = "IDEMPAY_POOL_SIZE", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub pool_size: u32,
    /// Milliseconds to wait for a free connection before answering 503.
    #[arg(long, env = "IDEMPAY_POOL_TIMEOUT_MS", default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub pool_timeout_ms: u64,
    /// Milliseconds one database statement may wait (PostgreSQL `statement_timeout` and
    /// `lock_timeout`; SQLite's busy timeout for the write lock).
    #[arg(long, env = "IDEMPAY_STATEMENT_TIMEOUT_MS", default_value_t = 5000, value_parser = clap::value_parser!(u64).range(100..=600_000))]
    pub statement_timeout_ms: u64,
}

impl DatabaseArgs {
    /// The parsed `DATABASE_URL`.
    pub fn target(&self) -> Result<Target, String> {
        Target::parse(&self.database_url)
    }

    /// How long a request waits for a pooled connection.
    pub fn pool_timeout(&self) -> Duration {
        Duration::from_millis(self.pool_timeout_ms)
    }

    /// How long one database statement may wait.
    pub fn statement_timeout(&self) -> Duration {
        Duration::from_millis(self.statement_timeout_ms)
    }
}

/// Settings of `idempay serve`.
#[derive(Debug, Clone, Args)]
pub struct Config {
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// Address to listen on; port 0 picks a free port (printed at start).
    #[arg(long, env = "IDEMPAY_BIND", default_value = "127.0.0.1:8080")]
    pub bind: SocketAddr,
    /// Create the demo merchant (API key `sk_test_demo`) if absent, and print how to call the API.
    #[arg(long, env = "IDEMPAY_DEMO", action = clap::ArgAction::SetTrue, value_parser = clap::builder::BoolishValueParser::new())]
    pub demo: bool,
    /// Seconds an execution holds an idempotency key before another may take it over.
    #[arg(long, env = "IDEMPAY_LEASE_SECS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub lease_secs: u64,
    /// Seconds a handler waits for its execution before answering 503 `still_processing`
    /// (the execution goes on; a retry gets its result). Must stay below the lease.
    #[arg(long, env = "IDEMPAY_REQUEST_TIMEOUT_SECS", default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub request_timeout_secs: u64,
    /// Seconds a finished idempotency record is kept for replay (default 24 h).
    #[arg(long, env = "IDEMPAY_KEY_TTL_SECS", default_value_t = 86_400, value_parser = clap::value_parser!(u64).range(1..=31_536_000))]
    pub key_ttl_secs: u64,
    /// Per-endpoint TTL overrides, `ENDPOINT=SECS` (endpoints: create_order,
    /// cancel_order, create_payment, create_refund), comma-separated.
    #[arg(long, env = "IDEMPAY_KEY_TTL_OVERRIDES", value_delimiter = ',', value_parser = parse_ttl_override)]
    pub key_ttl_override: Vec<(String, u64)>,
    /// Finished keys whose responses are kept in memory for replays without a database
    /// round trip (0: no replay cache).
    #[arg(long, env = "IDEMPAY_REPLAY_CACHE_ENTRIES", default_value_t = 10_000)]
    pub replay_cache_entries: usize,
    /// Most bytes of keys and responses the replay cache holds.
    #[arg(long, env = "IDEMPAY_REPLAY_CACHE_BYTES", default_value_t = 8 << 20)]
    pub replay_cache_bytes: usize,
    /// Requests per second each API key may send (bursts of twice that); over it,
    /// `429 rate_limited`. Default 100, and no limit in `--demo`; 0 turns it off.
    #[arg(long, env = "IDEMPAY_RATE_LIMIT_PER_KEY")]
    pub rate_limit_per_key: Option<u32>,
    /// Failed authentications per minute a client address may make before it is
    /// refused (`429`) until its budget refills; in every mode, demo included.
    #[arg(long, env = "IDEMPAY_AUTH_FAILURES_PER_MINUTE", default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub auth_failures_per_minute: u32,
    /// Let `--demo` listen on an address other than loopback (its key is public).
    #[arg(long, env = "IDEMPAY_ALLOW_DEMO_ON_NETWORK", action = clap::ArgAction::SetTrue, value_parser = clap::builder::BoolishValueParser::new())]
    pub allow_demo_on_network: bool,
    /// Milliseconds the simulated processor takes for every call.
    #[arg(long, env = "IDEMPAY_PROCESSOR_LATENCY_MS", default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=10_000))]
    pub processor_latency_ms: u64,
    /// Milliseconds `pm_card_slow` takes (kept below the lease).
    #[arg(long, env = "IDEMPAY_SLOW_PROCESSOR_MS", default_value_t = 2000, value_parser = clap::value_parser!(u64).range(0..=600_000))]
    pub slow_processor_ms: u64,
    /// Milliseconds a processor call may take; past it the outcome is unknown (503
    /// `processor_timeout`) and a retry with the same key resumes it.
    #[arg(long, env = "IDEMPAY_PROCESSOR_TIMEOUT_MS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=600_000))]
    pub processor_timeout_ms: u64,
    /// Milliseconds to receive a request's whole body once its headers arrived (a body
    /// shorter than its `Content-Length` gets `408 request_timeout`).
    #[arg(long, env = "IDEMPAY_BODY_TIMEOUT_MS", default_value_t = 5000, value_parser = clap::value_parser!(u64).range(1..=600_000))]
    pub body_timeout_ms: u64,
    /// Seconds a drain (on SIGTERM or SIGINT) waits for running executions before the
    /// process exits; anything cut off is left at its recovery point for the reaper.
    /// At most three quarters of the lease.
    #[arg(long, env = "IDEMPAY_SHUTDOWN_GRACE_SECS", default_value_t = 20, value_parser = clap::value_parser!(u64).range(0..=3600))]
    pub shutdown_grace_secs: u64,
    /// Seconds between reaper passes (0: no background reaper in this instance).
    #[arg(long, env = "IDEMPAY_REAPER_INTERVAL_SECS", default_value_t = 5, value_parser = clap::value_parser!(u64).range(0..=86_400))]
    pub reaper_interval_secs: u64,
    /// Records a reaper pass takes over or deletes per batch.
    #[arg(long, env = "IDEMPAY_REAPER_BATCH_SIZE", default_value_t = 1000, value_parser = clap::value_parser!(i64).range(1..=100_000))]
    pub reaper_batch_size: i64,
    /// Largest request body in bytes (larger → 413).
    #[arg(long, env = "IDEMPAY_BODY_LIMIT_BYTES", default_value_t = 65_536)]
    pub body_limit_bytes: usize,
    /// HTTP worker threads (0: one per core).
    #[arg(long, env = "IDEMPAY_WORKERS", default_value_t = 0)]
    pub workers: usize,
    /// Test-only fault injection; off unless a test sets it.
    #[command(flatten)]
    pub faults: Faults,
}

fn parse_ttl_override(s: &str) -> Result<(String, u64), String> {
    let (endpoint, secs) = s.split_once('=').ok_or("expected ENDPOINT=SECS")?;
    let secs: u64 = secs
        .parse()
        .map_err(|_| format!("`{secs}` is not a number of seconds"))?;
    if secs == 0 {
        return Err("a TTL must be at least 1 second".into());
    }
    Ok((endpoint.to_owned(), secs))
}

impl Config {
    /// The lease an execution holds on its idempotency key.
    pub fn lease(&self) -> TimeDelta {
        TimeDelta::seconds(self.lease_secs as i64)
    }

    /// How long a handler waits for its execution: the request timeout, kept below the
    /// lease (at most three quarters of it; a short lease shortens it).
    pub fn request_timeout(&self) -> std::time::Duration {
        let lease = std::time::Duration::from_secs(self.lease_secs);
        std::time::Duration::from_secs(self.request_timeout_secs).min(lease * 3 / 4)
    }

    /// Requests per second per API key: `--rate-limit-per-key`, else 100, or none in
    /// `--demo` (0: none).
    pub fn rate_limit_per_key(&self) -> u32 {
        self.rate_limit_per_key
            .unwrap_or(if self.demo { 0 } else { 100 })
    }

    /// How long a drain waits for running executions: `--shutdown-grace-secs`, kept
    /// below the lease like the request timeout.
    pub fn shutdown_grace(&self) -> Duration {
        let lease = Duration::from_secs(self.lease_secs);
        Duration::from_secs(self.shutdown_grace_secs).min(lease * 3 / 4)
    }

    /// How long a processor call may take: `--processor-timeout-ms`, kept below the
    /// lease (a call cannot land after the lease's end anyway).
    pub fn processor_timeout(&self) -> Duration {
        let lease = Duration::from_secs(self.lease_secs);
        Duration::from_millis(self.processor_timeout_ms).min(lease * 3 / 4)
    }

    /// How long one database statement may wait: `--statement-timeout-ms`, kept at
    /// most the request timeout, so a locked row never holds a request past it.
    pub fn statement_timeout(&self) -> Duration {
        self.database
            .statement_timeout()
            .min(self.request_timeout())
    }

    /// How long receiving a request body may take.
    pub fn body_timeout(&self) -> Duration {
        Duration::from_millis(self.body_timeout_ms)
    }

    /// How long a finished record of `endpoint` is kept for replay.
    pub fn key_ttl(&self, endpoint: &str) -> TimeDelta {
        let secs = self
            .key_ttl_override
            .iter()
            .find(|(name, _)| name == endpoint)
            .map_or(self.key_ttl_secs, |(_, secs)| *secs);
        TimeDelta::seconds(secs as i64)
    }

    /// A configuration with every default, for `database_url` on an ephemeral port.
    /// The environment is ignored (no `IDEMPAY_*` variable of the caller leaks in), so
    /// what a test or a benchmark sets is all there is.
    pub fn for_database(database_url: &str) -> Self {
        use clap::{CommandFactory, FromArgMatches};
        let without_env = |arg: clap::Arg| arg.env(None::<&'static str>);
        let command = Cli::command().mut_subcommand("serve", |serve| serve.mut_args(without_env));
        let matches = command.get_matches_from([
            "idempay",
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--database-url",
            database_url,
        ]);
        match Cli::from_arg_matches(&matches).map(|cli| cli.command) {
            Ok(Command::Serve(config)) => config,
            _ => unreachable!("the arguments above name the serve command"),
        }
    }
}

/// The endpoint name (for `--key-ttl-override`) of a keyed request path.
pub fn endpoint_for_path(path: &str) -> &'static str {
    if path.ends_with("/refunds") {
        "create_refund"
    } else if path.ends_with("/cancel") {
        "cancel_order"
    } else if path.starts_with("/payments") {
        "create_payment"
    } else {
        "create_order"
    }
}
