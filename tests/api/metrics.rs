//! `GET /metrics`: every metric the README documents is there, and moves when the event
//! it counts happens (requests by route template, latency, idempotency outcomes,
//! processor calls, the pool, the replay cache, the reaper, lost leases).

use crate::helpers::{eventually, spawn_app_with, Backend, TestApp};
use crate::pause::Pause;

const ORDER: &str = r#"{"amount":1000,"currency":"EUR"}"#;

fn outcome(app: &TestApp, name: &str) -> u64 {
    app.metric(&format!(
        "idempay_idempotency_outcomes_total{{outcome=\"{name}\"}}"
    ))
}

fn every_metric_is_exposed_and_moves(backend: Backend) {
    let pause = Pause::at("claimed");
    let app = spawn_app_with(backend, |c| {
        c.key_ttl_override = vec![("create_order".into(), 3)];
        c.processor_timeout_ms = 300;
        pause.configure(c);
    });
    // A new key, its replay, and another body under it.
    assert_eq!(app.post("/orders", Some("m1"), ORDER).status, 201);
    assert!(app.post("/orders", Some("m1"), ORDER).replayed());
    assert_eq!(
        app.post("/orders", Some("m1"), r#"{"amount":1,"currency":"EUR"}"#)
            .status,
        409
    );
    assert_eq!(outcome(&app, "executed"), 1);
    assert_eq!(outcome(&app, "replayed"), 1);
    assert_eq!(outcome(&app, "reused_conflict"), 1);
    let created = r#"idempay_http_requests_total{method="POST",route="/orders",status="201"}"#;
    assert_eq!(app.metric(created), 2);
    let timed = r#"idempay_http_request_duration_seconds_count{method="POST",route="/orders"}"#;
    assert_eq!(app.metric(timed), 3);
    assert!(app.metric("idempay_replay_cache_entries") >= 1);
    assert!(app.metric("idempay_db_pool_connections") >= 1);
    assert!(app.metric("idempay_db_pool_checkout_wait_seconds_count") >= 1);
    let text = app.request("GET", "/metrics", &[], "").text();
    for name in [
        "idempay_http_requests_total",
        "idempay_http_request_duration_seconds",
        "idempay_idempotency_outcomes_total",
        "idempay_processor_calls_total",
        "idempay_db_pool_connections",
        "idempay_db_pool_idle_connections",
        "idempay_db_pool_checkout_wait_seconds",
        "idempay_db_pool_checkout_timeouts_total",
        "idempay_db_connections_discarded",
        "idempay_replay_cache_entries",
        "idempay_replay_cache_bytes",
        "idempay_reaper_passes_total",
        "idempay_reaper_recovered_total",
        "idempay_reaper_flagged_total",
        "idempay_leases_lost_total",
        "idempay_rate_limited_total",
    ] {
        assert!(
            text.contains(&format!("# TYPE {name} ")),
            "{name} missing:\n{text}"
        );
    }

    // A keyed cancel held after its claim: a duplicate is told the key is in use.
    let order = app.order(700);
    let path = format!("/orders/{order}/cancel");
    std::thread::scope(|s| {
        let first = s.spawn(|| app.post(&path, Some("held"), ""));
        pause.wait_paused();
        assert_eq!(app.post(&path, Some("held"), "").status, 409);
        pause.release();
        assert_eq!(first.join().unwrap().status, 200);
    });
    assert_eq!(outcome(&app, "in_use"), 1);

    // A slow card outlasts the processor timeout; the retry takes over and resumes.
    let unpaid = app.order(500);
    assert_eq!(
        app.pay("slow", &unpaid, "pm_card_slow").code(),
        "processor_timeout"
    );
    let timeouts = r#"idempay_processor_calls_total{method="charge",outcome="timeout"}"#;
    assert_eq!(app.metric(timeouts), 1);
    assert_eq!(
        app.pay("slow", &unpaid, "pm_card_slow").code(),
        "processor_timeout"
    );
    assert_eq!(outcome(&app, "taken_over"), 1);
    assert_eq!(outcome(&app, "resumed"), 1);

    // An expired key is claimed anew.
    let expired = eventually(std::time::Duration::from_secs(20), || {
        let reply = app.post("/orders", Some("m1"), ORDER);
        (!reply.replayed()).then_some(reply)
    });
    assert_eq!(expired.status, 201);
    assert_eq!(outcome(&app, "expired_reclaimed"), 1);
    app.reap();
    assert_eq!(app.metric("idempay_reaper_passes_total"), 1);
}

crate::on_both_backends!(every_metric_is_exposed_and_moves);
