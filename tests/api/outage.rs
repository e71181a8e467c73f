//! The database restarting or going away under a running server, with a real PostgreSQL
//! cluster the test owns (made with `initdb`, stopped and started by the test): dead
//! pooled connections are discarded instead of being handed out forever, readiness
//! tells the truth while the database is down, and the server recovers on its own.

use crate::cluster::Cluster;
use crate::helpers::{spawn_app_on, TestApp};

const ORDER: &str = r#"{"amount":1200,"currency":"EUR"}"#;

fn app_on(cluster: &Cluster) -> TestApp {
    let url = cluster.create_database("outage");
    spawn_app_on(url, |c| {
        c.reaper_interval_secs = 0;
        c.database.pool_size = 4;
    })
}

/// Fills the pool: four orders at once need four connections.
fn fill_pool(app: &TestApp) {
    std::thread::scope(|s| {
        for i in 0..4 {
            s.spawn(move || {
                let reply = app.post("/orders", Some(&format!("before-{i}")), ORDER);
                assert_eq!(reply.status, 201, "{}", reply.text());
            });
        }
    });
}

/// A 503 a client may see while the database is unreachable.
fn assert_database_unavailable(reply: &crate::helpers::Reply) {
    assert_eq!(reply.status, 503, "{}", reply.text());
    assert_eq!(reply.code(), "database_unavailable");
    assert_eq!(reply.header("retry-after"), Some("5"));
}

fn recovers_from_a_postgres_restart_without_being_restarted(_: crate::helpers::Backend) {
    let cluster = Cluster::start();
    let app = app_on(&cluster);
    fill_pool(&app);
    cluster.restart(); // every pooled connection is dead now
    let mut failed = Vec::new();
    for i in 0..12 {
        let key = format!("after-{i}");
        let reply = app.post("/orders", Some(&key), ORDER);
        if reply.status == 201 {
            continue;
        }
        assert_database_unavailable(&reply);
        failed.push(key);
    }
    // The first dead connection found marks every older one suspect: they are tested
    // before use, so at most the request that found it fails.
    assert!(
        failed.len() <= 1,
        "requests failed after the restart: {failed:?}"
    );
    assert_eq!(app.get("/readyz").status, 200);
    for key in &failed {
        let retry = app.post("/orders", Some(key), ORDER);
        assert_eq!(retry.status, 201, "{}", retry.text());
    }
    assert_eq!(app.order_count(), 4 + 12, "one order per key");
}

fn answers_503_while_postgres_is_down_and_recovers_when_it_returns(_: crate::helpers::Backend) {
    let cluster = Cluster::start();
    let app = app_on(&cluster);
    fill_pool(&app);
    cluster.stop("fast");
    let down = app.post("/orders", Some("during-outage"), ORDER);
    assert_database_unavailable(&down);
    for _ in 0..3 {
        assert_database_unavailable(&app.get("/readyz"));
        assert_database_unavailable(&app.post("/orders", Some("during-outage"), ORDER));
    }
    assert_eq!(
        app.get("/healthz").status,
        200,
        "the process itself is alive"
    );
    cluster.start_again();
    // Connections from before the outage are tested before use: nothing fails now.
    assert_eq!(app.get("/readyz").status, 200);
    let retry = app.post("/orders", Some("during-outage"), ORDER);
    assert_eq!(retry.status, 201, "{}", retry.text());
    for i in 0..8 {
        let reply = app.post("/orders", Some(&format!("after-{i}")), ORDER);
        assert_eq!(reply.status, 201, "{}", reply.text());
    }
    assert_eq!(app.order_count(), 4 + 1 + 8, "one order per key");
}

crate::postgres_only!(
    recovers_from_a_postgres_restart_without_being_restarted,
    answers_503_while_postgres_is_down_and_recovers_when_it_returns,
);
