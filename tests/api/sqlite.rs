//! SQLite under load: writers queue in process instead of meeting SQLite's busy
//! timeout, and the WAL is checkpointed in the background and stays bounded.

use crate::helpers::{spawn_app_with, Backend, TestApp};

const ORDER: &str = r#"{"amount":1200,"currency":"EUR"}"#;

/// `clients` threads each creating `per_client` orders under new keys; their statuses.
fn create_orders(app: &TestApp, clients: usize, per_client: usize) -> Vec<u16> {
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..clients)
            .map(|t| {
                s.spawn(move || {
                    (0..per_client)
                        .map(|i| {
                            app.post("/orders", Some(&format!("w{t}-{i}")), ORDER)
                                .status
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    })
}

#[test]
fn sqlite_writers_queue_instead_of_timing_out() {
    // A 10 ms busy timeout: 24 clients writing at once would meet it in SQLite's busy
    // handler; queued in process, as for a pooled connection, every one is served.
    let app = spawn_app_with(Backend::Sqlite, |c| {
        c.database.statement_timeout_ms = 10;
        c.workers = 2;
    });
    let statuses: Vec<u16> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..24)
            .map(|t| {
                let app = &app;
                s.spawn(move || {
                    (0..10)
                        .map(|i| {
                            app.post("/orders", Some(&format!("w{t}-{i}")), ORDER)
                                .status
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    assert!(statuses.iter().all(|&s| s == 201), "{statuses:?}");
    assert_eq!(app.count("SELECT COUNT(*) AS n FROM orders"), 240);
}

#[test]
fn the_wal_is_checkpointed_in_the_background_and_stays_bounded() {
    // Each order writes about 30 KB of WAL frames: 1,200 orders would leave a WAL of
    // 35 MB if nothing checkpointed it (connections never checkpoint on commit).
    let app = spawn_app_with(Backend::Sqlite, |_| {});
    assert!(create_orders(&app, 8, 150).iter().all(|&s| s == 201));
    let path = app.database_url.trim_start_matches("sqlite://").to_owned() + "-wal";
    let wal = std::fs::metadata(&path).map_or(0, |m| m.len());
    assert!(wal < 16 << 20, "the WAL holds {wal} bytes");
    assert_eq!(app.count("SELECT COUNT(*) AS n FROM orders"), 1200);
}
