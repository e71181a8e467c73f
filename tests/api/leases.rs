//! The rows of DESIGN §2's table: in flight (409 + Retry-After) and an expired lease
//! taken over with fencing (on a keyed cancel: an order itself commits in one
//! transaction with its record, and never holds a lease), TTL expiry, permanent
//! failures replayed, and rejected requests storing nothing.

use std::time::Duration;

use crate::helpers::{eventually, spawn_app, spawn_app_with, until_answered, Backend};
use crate::pause::Pause;

const ORDER: &str = r#"{"amount":700,"currency":"GBP"}"#;

fn in_flight_duplicate_gets_409_in_use(backend: Backend) {
    let pause = Pause::at("claimed");
    let app = spawn_app_with(backend, |c| pause.configure(c));
    let order = app.order(700);
    let path = format!("/orders/{order}/cancel");
    // A holds the key (paused right after its claim); B and C arrive while it is in
    // flight: both are told to wait, and only A executes.
    std::thread::scope(|s| {
        let a = s.spawn(|| app.post(&path, Some("slow"), ""));
        pause.wait_paused();
        for in_use in [0, 1].map(|_| app.post(&path, Some("slow"), "")) {
            assert_eq!(in_use.code(), "idempotency_key_in_use");
            let retry_after: u64 = in_use.header("retry-after").unwrap().parse().unwrap();
            assert!((1..=2).contains(&retry_after));
            assert!(in_use.json()["retryable"].as_bool().unwrap());
        }
        // Another request under the key is a reuse even while it is in flight.
        let other = app.post("/orders", Some("slow"), ORDER);
        assert_eq!(other.code(), "idempotency_key_reused");
        pause.release();
        let executed = a.join().unwrap();
        assert_eq!((executed.status, executed.replayed()), (200, false));
        assert_eq!(executed.json()["status"], "cancelled");
        let replay = app.post(&path, Some("slow"), "{}");
        assert!(replay.replayed());
        assert_eq!(replay.body, executed.body);
    });
    assert_eq!(app.order_count(), 1);
}

fn expired_lease_is_taken_over_and_the_old_owner_is_fenced(backend: Backend) {
    // The first attempt is frozen past its 2 s lease; a retry takes the record over and
    // completes; the frozen owner, released, finds its lock_token gone and commits nothing.
    let pause = Pause::at("claimed").first_attempt();
    let app = spawn_app_with(backend, |c| {
        c.lease_secs = 2;
        c.slow_processor_ms = 0;
        pause.configure(c);
    });
    let order = app.order(700);
    let path = format!("/orders/{order}/cancel");
    std::thread::scope(|s| {
        let owner = s.spawn(|| app.post(&path, Some("takeover"), ""));
        pause.wait_paused();
        let winner = until_answered(|| app.post(&path, Some("takeover"), ""));
        assert_eq!(
            (winner.status, winner.replayed()),
            (200, false),
            "{}",
            winner.text()
        );
        // The owner's handler stopped waiting at its request timeout (≤ the lease)...
        let owner = owner.join().unwrap();
        assert_eq!(
            (owner.status, owner.code().as_str()),
            (503, "still_processing"),
            "{}",
            owner.text()
        );
        assert_eq!(app.metric("idempay_leases_lost_total"), 0);
        // ...and its execution, released, finds its lock_token gone and stops.
        pause.release();
        eventually(Duration::from_secs(20), || {
            (app.metric("idempay_leases_lost_total") == 1).then_some(())
        });
        let replay = app.post(&path, Some("takeover"), "");
        assert!(replay.replayed());
        assert_eq!(replay.body, winner.body);
    });
    let record = "SELECT COUNT(*) AS n FROM idempotency_records WHERE idempotency_key = 'takeover' AND attempts = 2";
    assert_eq!(
        app.count(record),
        1,
        "one record, executed by its second attempt only"
    );
}

fn expired_record_is_replaced(backend: Backend) {
    let app = spawn_app_with(backend, |c| c.key_ttl_secs = 1);
    let first = app.post("/orders", Some("ttl"), ORDER);
    let fresh = eventually(Duration::from_secs(10), || {
        let reply = app.post("/orders", Some("ttl"), ORDER);
        (!reply.replayed()).then_some(reply)
    });
    assert_eq!(fresh.status, 201);
    assert_ne!(
        fresh.json()["id"],
        first.json()["id"],
        "an expired key executes afresh"
    );
    // The new record is live: the key now replays the second order.
    let replay = app.post("/orders", Some("ttl"), r#"{"currency":"GBP","amount":700}"#);
    assert!(replay.replayed());
    assert_eq!(replay.body, fresh.body);
    assert_eq!(app.order_count(), 2);
}

fn ttl_can_be_set_per_endpoint(backend: Backend) {
    let app = spawn_app_with(backend, |c| {
        c.key_ttl_override = vec![("cancel_order".into(), 1)]
    });
    let order = app.create_order("ttl-order", ORDER);
    let path = format!("/orders/{}/cancel", order["id"].as_str().unwrap());
    assert_eq!(app.post(&path, Some("ttl-cancel"), "").status, 200);
    let fresh = eventually(Duration::from_secs(10), || {
        let reply = app.post(&path, Some("ttl-cancel"), "");
        (!reply.replayed()).then_some(reply)
    });
    assert_eq!(
        fresh.status, 200,
        "cancelling a cancelled order again returns it"
    );
    // The order endpoint kept the default 24 h; the cancel endpoint has its own 1 s.
    assert_eq!(app.record_ttl("ttl-order"), chrono::TimeDelta::hours(24));
    assert_eq!(app.record_ttl("ttl-cancel"), chrono::TimeDelta::seconds(1));
    assert!(app.post("/orders", Some("ttl-order"), ORDER).replayed());
}

fn permanent_failure_is_stored_and_replayed(backend: Backend) {
    let app = spawn_app(backend);
    let path = "/orders/ord_0000000000000000000000000000dead/cancel";
    let first = app.post(path, Some("cancel-missing"), "");
    assert_eq!(first.status, 404);
    assert_eq!(first.code(), "resource_not_found");
    let again = app.post(path, Some("cancel-missing"), "");
    assert_eq!((again.status, again.replayed()), (404, true));
    assert_eq!(again.body, first.body);
    assert_eq!(
        again.header("content-type"),
        Some("application/problem+json")
    );
}

fn rejected_requests_store_nothing(backend: Backend) {
    let app = spawn_app(backend);
    let invalid = app.post(
        "/orders",
        Some("fix-me"),
        r#"{"amount":-5,"currency":"EUR"}"#,
    );
    assert_eq!(invalid.status, 422);
    let malformed = app.post("/orders", Some("fix-me"), r#"{"amount":"#);
    assert_eq!(malformed.status, 400);
    let unauthenticated = app.post_as("sk_wrong", "/orders", Some("fix-me"), ORDER);
    assert_eq!(unauthenticated.status, 401);
    let fixed = app.post("/orders", Some("fix-me"), ORDER);
    assert_eq!(
        (fixed.status, fixed.replayed()),
        (201, false),
        "the key was still free"
    );
}

fn cancel_with_a_key_replays_and_other_key_uses_conflict(backend: Backend) {
    let app = spawn_app(backend);
    let order = app.create_order("o", ORDER);
    let path = format!("/orders/{}/cancel", order["id"].as_str().unwrap());
    let cancelled = app.post(&path, Some("c1"), "{}");
    assert_eq!(cancelled.status, 200, "{}", cancelled.text());
    assert_eq!(cancelled.json()["status"], "cancelled");
    assert!(app.post(&path, Some("c1"), "{}").replayed());
    // The order key cannot be reused for another request.
    let reused = app.post(&path, Some("o"), "{}");
    assert_eq!(reused.code(), "idempotency_key_reused");
}

crate::on_both_backends!(
    in_flight_duplicate_gets_409_in_use,
    expired_lease_is_taken_over_and_the_old_owner_is_fenced,
    expired_record_is_replaced,
    ttl_can_be_set_per_endpoint,
    permanent_failure_is_stored_and_replayed,
    rejected_requests_store_nothing,
    cancel_with_a_key_replays_and_other_key_uses_conflict,
);
