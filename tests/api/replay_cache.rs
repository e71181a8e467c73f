//! The replay cache's edges, through HTTP: a cached key still refuses another body, a
//! cached entry never outlives its record, keys stay scoped to their merchant, and a
//! second instance on the same database answers exactly as the first.

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

crate::on_both_backends!(
    cached_key_refuses_another_body_and_replays_byte_for_byte,
    a_cached_replay_never_outlives_its_record,
    cached_keys_stay_with_their_merchant,
    a_second_instance_answers_as_the_first,
);
