//! Helpers of `scripts/bench.sh` (run it, not this), each a ceiling or a preparation:
//!
//!   bench trivial PORT WORKERS        a trivial actix-web route (GET / → "ok"): the HTTP
//!                                     ceiling, measured with the same load generator
//!   bench ceiling URL SECONDS         a new-key order through idempay's own store
//!                                     functions (the statements the server runs for load
//!                                     A), from ONE thread, no HTTP, no pool: orders/s
//!   bench orders URL N                N orders awaiting payment for the demo merchant,
//!                                     ids `ord_` + the number in 32 hex digits (load D)
//!   bench fill URL N                  N finished idempotency records (the 1M-record run)
//!   bench purge URL                   one reaper pass over expired records: records/s

use std::time::{Duration, Instant};

use diesel::connection::SimpleConnection;
use idempay::config::Config;
use idempay::db::{self, Target};
use idempay::domain::order::NewOrder;
use idempay::idempotency::RequestIdentity;

/// Leaves a SQLite database as a server expects to find it: its WAL copied into the
/// database and emptied (the bulk work here wrote a lot of it).
fn settle_wal(url: &str) {
    if !is_postgres(url) {
        connect(url)
            .batch_execute("PRAGMA wal_checkpoint(TRUNCATE)")
            .expect("checkpoint");
    }
}

/// A connection for bulk work: statements may take minutes.
fn connect(url: &str) -> db::DbConnection {
    let target = Target::parse(url).expect("a database URL");
    db::establish_with(&target, Duration::from_secs(600)).expect("the database connects")
}

fn is_postgres(url: &str) -> bool {
    url.starts_with("postgres")
}

fn trivial(port: u16, workers: usize) {
    use actix_web::{web, App, HttpResponse, HttpServer};
    actix_web::rt::System::new().block_on(async move {
        HttpServer::new(|| {
            App::new().route(
                "/",
                web::get().to(|| async { HttpResponse::Ok().body("ok") }),
            )
        })
        .workers(workers)
        .bind(("127.0.0.1", port))
        .expect("port free")
        .run()
        .await
        .expect("server runs")
    })
}

/// New-key orders on one pooled connection (as the server's: same settings, and on
/// SQLite the same background checkpoints) for `seconds`: the order and its finished
/// record in one transaction, exactly as the server runs them for a key it has not seen.
fn ceiling(url: &str, seconds: u64) {
    let mut config = Config::for_database(url);
    config.demo = true;
    idempotency_ready(&config);
    let target = Target::parse(url).expect("a database URL");
    let events = Box::new(idempay::metrics::Metrics::new().pool_events());
    let pool = db::build_pool(
        target,
        1,
        Duration::from_secs(5),
        Duration::from_secs(5),
        events,
    );
    let body = serde_json::json!({"amount": 1999, "currency": "EUR", "metadata": {"cart": "c_1"}});
    let new = NewOrder::from_json(&body).expect("valid");
    let ttl = config.key_ttl("create_order");
    let run = uuid::Uuid::new_v4().simple().to_string();
    let (started, mut n) = (Instant::now(), 0u64);
    while started.elapsed() < Duration::from_secs(seconds) {
        n += 1;
        let request = RequestIdentity {
            merchant_id: "mer_demo".into(),
            key: format!("ceiling-{run}-{n}"),
            method: "POST".into(),
            path: "/orders".into(),
            fingerprint: "f".repeat(64),
            raw_digest: [0; 32],
            prefer_wait: None,
        };
        let created =
            pool.with_connection(|conn| idempay::orders::create_fresh(conn, &request, &new, ttl));
        created.expect("order").expect("a new key");
    }
    println!("{:.0}", n as f64 / started.elapsed().as_secs_f64());
    drop(pool);
    settle_wal(url);
}

/// Migrates the database and creates the demo merchant.
fn idempotency_ready(config: &Config) {
    idempay::startup::build_state(config.clone()).expect("database prepared");
}

fn orders(url: &str, n: u64) {
    let series = if is_postgres(url) {
        format!(
            "SELECT 'ord_' || lpad(to_hex(i), 32, '0') AS id, i FROM generate_series(1, {n}) AS i"
        )
    } else {
        format!("WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < {n}) SELECT printf('ord_%032x', i) AS id, i FROM s")
    };
    let sql = format!(
        "INSERT INTO orders (id, merchant_id, amount, currency, status, amount_paid, amount_refunded, metadata, created_at, updated_at) \
         SELECT id, 'mer_demo', 1999, 'EUR', 'awaiting_payment', 0, 0, '{{}}', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP FROM ({series}) AS g"
    );
    connect(url).batch_execute(&sql).expect("orders inserted");
    settle_wal(url);
}

fn fill(url: &str, n: u64) {
    let series = if is_postgres(url) {
        format!("SELECT i FROM generate_series(1, {n}) AS i")
    } else {
        format!("WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < {n}) SELECT i FROM s")
    };
    let sql = format!(
        "INSERT INTO idempotency_records (id, merchant_id, idempotency_key, method, path, fingerprint, status, \
         recovery_point, lock_token, locked_until, attempts, response_status, response_body, response_content_type, \
         created_at, updated_at, expires_at) \
         SELECT 'ikey_fill_' || i, 'mer_demo', 'fill-' || i, 'POST', '/orders', 'f', 'succeeded', 'started', 't', \
         CURRENT_TIMESTAMP, 1, 201, {body}, 'application/json', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP, \
         {expiry} FROM ({series}) AS g",
        body = if is_postgres(url) { "'\\x7b7d'::bytea" } else { "X'7b7d'" },
        expiry = if is_postgres(url) { "CURRENT_TIMESTAMP + interval '1 day'" } else { "datetime('now', '+1 day')" },
    );
    connect(url).batch_execute(&sql).expect("records inserted");
    settle_wal(url);
}

/// Expires every filled record, then times one reaper pass deleting them.
fn purge(url: &str) {
    let past = if is_postgres(url) {
        "CURRENT_TIMESTAMP - interval '1 day'"
    } else {
        "datetime('now', '-1 day')"
    };
    connect(url)
        .batch_execute(&format!(
            "UPDATE idempotency_records SET expires_at = {past} WHERE id LIKE 'ikey_fill_%'"
        ))
        .expect("records expired");
    let mut config = Config::for_database(url);
    config.reaper_interval_secs = 0;
    let state = idempay::startup::build_state(config).expect("state");
    let started = Instant::now();
    let report = actix_web::rt::System::new().block_on(idempay::reaper::reap_once(&state));
    let secs = started.elapsed().as_secs_f64();
    println!("{} {:.0}", report.purged, report.purged as f64 / secs);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).map(String::as_str).unwrap_or_default();
    let number = |i: usize| arg(i).parse::<u64>().expect("a number");
    match arg(0) {
        "trivial" => trivial(number(1) as u16, number(2) as usize),
        "ceiling" => ceiling(arg(1), number(2)),
        "orders" => orders(arg(1), number(2)),
        "fill" => fill(arg(1), number(2)),
        "purge" => purge(arg(1)),
        other => panic!("unknown command `{other}`; see the module docs"),
    }
}
