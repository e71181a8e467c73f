//! The replay cache's edges, through HTTP: a cached key still refuses another body, a
//! cached entry never outlives its record, keys stay scoped to their merchant, and a
//! second instance on the same database answers exactly as the first. And SQLite's
//! in-process writer queue: concurrent writers never meet SQLite's busy timeout.

use std::time::Duration;

use crate::helpers::{eventually, spawn_app_on, spawn_app_with, Backend};

const ORDER: &str = r#"{"amount":1200,"currency":"EUR"}"#;

fn cached_key_refuses_another_body_and_replays_byte_for_byte(backend: Backend) {
    let app = crate::helpers::spawn_app(backend);
    let first = app.post("/orders", Some("cached"), ORDER);
    assert_eq!(first.status, 201);
    for _ in 0..3 {
        let replay = app.post(
            "/orders",
            Some("cached"),
            r#"{ "currency": "EUR", "amount": 1200 }"#,
        );
        assert_eq!((replay.status, replay.replayed()), (201, true));
        assert_eq!(replay.body, first.body);
        assert_eq!(replay.header("location"), first.header("location"));
        let other = app.post(
            "/orders",
            Some("cached"),
            r#"{"amount":1201,"currency":"EUR"}"#,
        );
        assert_eq!(other.code(), "idempotency_key_reused");
        let other_path = app.post(
            &format!("{}/cancel", first.header("location").unwrap()),
            Some("cached"),
            "",
        );
        assert_eq!(
            other_path.code(),
            "idempotency_key_reused",
            "same key, another endpoint"
        );
    }
    assert_eq!(app.order_count(), 1);
}

fn a_cached_replay_never_outlives_its_record(backend: Backend) {
    // Kept 3 s: the cache may answer for at most 2 of them (its safety margin is 1 s).
    let app = spawn_app_with(backend, |c| c.key_ttl_secs = 3);
    let first = app.post("/orders", Some("ttl"), ORDER);
    assert!(app.post("/orders", Some("ttl"), ORDER).replayed());
    let fresh = eventually(Duration::from_secs(20), || {
        let reply = app.post("/orders", Some("ttl"), ORDER);
        (!reply.replayed()).then_some(reply)
    });
    assert_eq!(fresh.status, 201);
    assert_ne!(
        fresh.json()["id"],
        first.json()["id"],
        "a new order: the old key expired"
    );
    assert_eq!(app.order_count(), 2);
}

fn cached_keys_stay_with_their_merchant(backend: Backend) {
    let app = crate::helpers::spawn_app(backend);
    let other = app.create_merchant("Other shop");
    let mine = app.post("/orders", Some("shared-key"), ORDER);
    assert!(
        app.post("/orders", Some("shared-key"), ORDER).replayed(),
        "cached"
    );
    let theirs = app.post_as(&other, "/orders", Some("shared-key"), ORDER);
    assert_eq!(
        (theirs.status, theirs.replayed()),
        (201, false),
        "their own order"
    );
    assert_ne!(theirs.json()["id"], mine.json()["id"]);
    let theirs_other_body = app.post_as(
        &other,
        "/orders",
        Some("shared-key"),
        r#"{"amount":5,"currency":"EUR"}"#,
    );
    assert_eq!(
        theirs_other_body.code(),
        "idempotency_key_reused",
        "against their own record"
    );
    assert_eq!(
        app.post("/orders", Some("shared-key"), ORDER).body,
        mine.body
    );
}

fn a_second_instance_answers_as_the_first(backend: Backend) {
    let first = crate::helpers::spawn_app(backend);
    let second = spawn_app_on(first.database_url.clone(), |_| {});
    let created = first.post("/orders", Some("two"), ORDER);
    assert!(
        first.post("/orders", Some("two"), ORDER).replayed(),
        "cached on the first"
    );
    for _ in 0..2 {
        let replay = second.post("/orders", Some("two"), ORDER);
        assert_eq!((replay.status, replay.replayed()), (201, true));
        assert_eq!(replay.body, created.body);
        let other = second.post("/orders", Some("two"), r#"{"amount":9,"currency":"EUR"}"#);
        assert_eq!(other.code(), "idempotency_key_reused");
    }
    assert_eq!(first.order_count(), 1);
}

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

crate::on_both_backends!(
    cached_key_refuses_another_body_and_replays_byte_for_byte,
    a_cached_replay_never_outlives_its_record,
    cached_keys_stay_with_their_merchant,
    a_second_instance_answers_as_the_first,
);

mod sqlite_only {
    #[test]
    fn sqlite_writers_queue_instead_of_timing_out() {
        super::sqlite_writers_queue_instead_of_timing_out()
    }
}
