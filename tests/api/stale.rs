//! Stale executions: an execution whose lease was taken over must not write, and a late
//! processor call it still makes must never lose or double money. Found by attacking the
//! server (a double charge, an over-refund, a captured payment stored as failed). Each
//! test freezes the first attempt right before its processor call, lets a retry take the
//! lease over and finish, then releases the first attempt: its call now lands after its
//! lease ended, and the processor must refuse it (the fencing deadline).

use std::time::Duration;

use crate::helpers::{eventually, spawn_app_with, until_answered, Backend, Reply, TestApp};
use crate::pause::Pause;

/// A server with a 2 s lease whose first attempts freeze at `point` until released.
fn stalling_app(backend: Backend, pause: &Pause, payment_ttl_secs: Option<u64>) -> TestApp {
    spawn_app_with(backend, |c| {
        c.lease_secs = 2;
        c.slow_processor_ms = 0;
        if let Some(secs) = payment_ttl_secs {
            c.key_ttl_override = vec![("create_payment".into(), secs)];
        }
        pause.configure(c);
    })
}

/// Sends `post` (the first attempt, which freezes and times out), retries it until a
/// retry takes over and answers, then releases the frozen attempt and waits until it
/// has been fenced off (one more lost lease than before).
fn stale_then_retry(app: &TestApp, pause: &Pause, post: impl Fn() -> Reply + Sync) -> Reply {
    let lost_before = app.metric("idempay_leases_lost_total");
    let retry = std::thread::scope(|s| {
        let first = s.spawn(&post);
        pause.wait_paused();
        let retry = until_answered(&post);
        let first = first.join().unwrap();
        assert_eq!(first.code(), "still_processing", "{}", first.text());
        retry
    });
    pause.release();
    eventually(Duration::from_secs(20), || {
        (app.metric("idempay_leases_lost_total") > lost_before).then_some(())
    });
    retry
}

fn stale_charge_after_a_park_is_completed_by_the_retry(backend: Backend) {
    let pause = Pause::at("before_charge").first_attempt();
    let app = stalling_app(backend, &pause, None);
    let order = app.order(1000);
    // The retry's call is the flaky card's first (unavailable → parked). The stale call
    // lands after the stale execution's lease ended: the processor refuses it,
    // unrecorded, and the stale execution writes nothing.
    let retry = stale_then_retry(&app, &pause, || app.pay("k", &order, "pm_card_flaky"));
    assert_eq!(retry.code(), "processor_unavailable");
    assert_eq!(
        app.settled("charge"),
        0,
        "the late call was refused: no money moved"
    );
    let listed = app.get(&format!("/payments?order_id={order}")).json();
    assert_eq!(
        listed["data"][0]["status"], "failed",
        "parked by the lease holder only"
    );
    assert_eq!(
        app.get(&format!("/orders/{order}")).json()["status"],
        "awaiting_payment"
    );
    // The client's next retry reopens it; the processor charges once.
    let done = until_answered(|| app.pay("k", &order, "pm_card_flaky"));
    assert_eq!(done.status, 201, "{}", done.text());
    assert_eq!(done.json()["status"], "succeeded");
    assert_eq!(
        app.get(&format!("/orders/{order}")).json()["status"],
        "paid"
    );
    assert_eq!(app.settled("charge"), 1, "one charge");
}

fn stale_call_cannot_charge_an_abandoned_payment(backend: Backend) {
    let pause = Pause::at("before_charge").first_attempt();
    let app = stalling_app(backend, &pause, Some(2));
    let order = app.order(1000);
    let retry = stale_then_retry(&app, &pause, || app.pay("k", &order, "pm_card_flaky"));
    assert_eq!(retry.code(), "processor_unavailable");
    assert_eq!(
        app.settled("charge"),
        0,
        "the late call was refused: no money moved"
    );
    // The client gives up. When the key expires, the ledger shows no charge and the
    // reaper abandons the parked payment (only the order's record is left).
    eventually(Duration::from_secs(30), || {
        app.reap();
        (app.record_count() == 1).then_some(())
    });
    let listed = app.get(&format!("/payments?order_id={order}")).json();
    assert_eq!(listed["data"][0]["status"], "failed");
    assert_eq!(app.settled("charge"), 0, "no money moved");
    // The order is payable: a new key pays it once.
    let paid = until_answered(|| app.pay("new", &order, "pm_card_visa"));
    assert_eq!(paid.status, 201, "{}", paid.text());
    assert_eq!(paid.json()["status"], "succeeded");
    assert_eq!(app.settled("charge"), 1);
}

fn stale_refund_never_releases_another_reservation(backend: Backend) {
    let pause = Pause::at("before_refund").first_attempt();
    let app = stalling_app(backend, &pause, None);
    let order = app.order(1000);
    let paid = until_answered(|| app.pay("p", &order, "pm_card_visa"));
    assert_eq!(paid.status, 201, "{}", paid.text());
    let payment = paid.json()["id"].as_str().unwrap().to_owned();
    let path = format!("/payments/{payment}/refunds");
    let retry = stale_then_retry(&app, &pause, || {
        app.post(&path, Some("r"), r#"{"amount":600}"#)
    });
    assert_eq!(retry.status, 201, "{}", retry.text());
    assert_eq!(app.settled("refund"), 1, "the late call moved nothing");
    // Another refund may take the rest, and no more.
    let rest = until_answered(|| app.post(&path, Some("rest"), r#"{"amount":400}"#));
    assert_eq!(rest.status, 201, "{}", rest.text());
    let over = until_answered(|| app.post(&path, Some("over"), r#"{"amount":1}"#));
    assert_eq!(over.code(), "refund_exceeds_payment");
    assert_eq!(
        app.get(&format!("/payments/{payment}")).json()["amount_refunded"],
        1000
    );
    assert_eq!(app.settled("refund"), 2);
}

crate::on_both_backends!(
    stale_charge_after_a_park_is_completed_by_the_retry,
    stale_call_cannot_charge_an_abandoned_payment,
    stale_refund_never_releases_another_reservation,
);
