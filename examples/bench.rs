//! Throughput benchmark: replays and new-key orders through HTTP, against the
//! database's own ceiling for the same statements (the same store functions called
//! directly, without HTTP or the engine around them). Prints rates and their ratio.
//!
//!   cargo run --release --example bench                      # SQLite
//!   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/idempay_bench \
//!     cargo run --release --example bench                    # PostgreSQL (database recreated)
//!
//! Settings: BENCH_CLIENTS (default 16), BENCH_REQUESTS (default 4000).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use diesel::connection::SimpleConnection;
use idempay::config::Config;
use idempay::db::{self, Target};
use idempay::domain::order::NewOrder;
use idempay::idempotency::record::{self, RequestIdentity};
use idempay::startup::{build_state, Application};

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Runs `work(i)` for i in 0..n on `clients` threads; returns operations per second.
fn rate(clients: usize, n: usize, work: impl Fn(usize) + Sync) -> f64 {
    let next = AtomicUsize::new(0);
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..clients {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                work(i);
            });
        }
    });
    n as f64 / start.elapsed().as_secs_f64()
}

fn database_url() -> (String, Option<std::path::PathBuf>) {
    match std::env::var("BENCH_DATABASE_URL") {
        Ok(url) => {
            let (admin, name) = url.rsplit_once('/').expect("URL names a database");
            let mut conn = db::establish(&Target::parse(&format!("{admin}/postgres")).unwrap())
                .expect("admin connects");
            conn.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                .unwrap();
            conn.batch_execute(&format!("CREATE DATABASE {name}"))
                .unwrap();
            (url, None)
        }
        Err(_) => {
            let path =
                std::env::temp_dir().join(format!("idempay-bench-{}.db", std::process::id()));
            (format!("sqlite://{}", path.display()), Some(path))
        }
    }
}

fn main() {
    let (clients, n) = (env_or("BENCH_CLIENTS", 16), env_or("BENCH_REQUESTS", 4000));
    let (url, file) = database_url();
    let mut config = Config::for_database(&url);
    config.demo = true;
    config.reaper_interval_secs = 0;
    config.database.pool_size = clients as u32;
    let state = build_state(config.clone()).expect("database prepared");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        actix_web::rt::System::new().block_on(async move {
            let app = Application::build(config).expect("server starts");
            tx.send(app.port()).unwrap();
            app.run().await.unwrap();
        })
    });
    let base = format!("http://127.0.0.1:{}", rx.recv().unwrap());
    let agent = ureq::AgentBuilder::new()
        .max_idle_connections_per_host(clients)
        .build();
    let post = |key: &str, body: &str| {
        let r = agent
            .post(&format!("{base}/orders"))
            .set("Authorization", "Bearer sk_test_demo")
            .set("Content-Type", "application/json")
            .set("Idempotency-Key", key)
            .send_string(body);
        assert!(matches!(r, Ok(ref r) if r.status() == 201), "{r:?}");
    };
    let body = r#"{"amount":1999,"currency":"EUR","metadata":{"cart":"c_1"}}"#;
    let backend = if file.is_some() { "sqlite" } else { "postgres" };
    println!("idempay bench: {backend}, {clients} clients, {n} operations per workload");

    post("replayed-key", body);
    let http_replay = rate(clients, n, |_| post("replayed-key", body));
    let merchant = "mer_demo".to_owned();
    let identity = |key: String| RequestIdentity {
        merchant_id: merchant.clone(),
        key,
        method: "POST".into(),
        path: "/orders".into(),
        fingerprint: "f".repeat(64),
    };
    let db_replay = rate(clients, n, |_| {
        state
            .pool
            .with_connection(|conn| Ok(record::find(conn, &merchant, "replayed-key")?))
            .unwrap()
            .expect("record exists");
    });
    println!(
        "replay     http {http_replay:8.0}/s   database ceiling {db_replay:8.0}/s   ratio {:.2}",
        http_replay / db_replay
    );

    let http_new = rate(clients, n, |i| post(&format!("new-{i}"), body));
    let new = NewOrder::from_json(&serde_json::from_str(body).unwrap()).unwrap();
    let ttl = chrono::TimeDelta::hours(24);
    let db_new = rate(clients, n, |i| {
        state
            .pool
            .with_connection(|conn| {
                let identity = identity(format!("direct-{i}"));
                let lease = record::claim(conn, &identity, None, chrono::TimeDelta::seconds(30))?
                    .expect("a new key is claimed");
                idempay::orders::create(conn, &merchant, &new, (&lease, ttl))
            })
            .unwrap();
    });
    println!(
        "new key    http {http_new:8.0}/s   database ceiling {db_new:8.0}/s   ratio {:.2}",
        http_new / db_new
    );
    if let Some(path) = file {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }
}
