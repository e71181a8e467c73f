//! Stale executions: an execution whose lease was taken over must not write, and a late
//! processor call it still makes must never lose or double money. Found by attacking the
//! server (a double charge, an over-refund, a captured payment stored as failed); each
//! test makes the first attempt call the processor late, after a retry took over.

use std::time::Duration;

use crate::helpers::{eventually, spawn_app_with, Backend, TestApp};

/// A server whose first attempts stall 3 s before the processor call, with a 1 s lease.
fn stalling_app(backend: Backend, reaper: bool) -> Option<TestApp> {
    spawn_app_with(backend, |c| {
        c.lease_secs = 1;
        c.slow_processor_ms = 0;
        if reaper {
            // Keys expire soon, so the reaper closes the parked payment.
            c.reaper_interval_secs = 1;
            c.key_ttl_override = vec![("create_payment".into(), 2)];
        }
        c.faults.stall_before_processor_call = Some(Duration::from_secs(3));
    })
}

/// Sends `post` once (the stalling first attempt, which times out), then retries it until
/// a retry takes over and answers; waits for the stale attempt to be fenced off.
fn stale_then_retry(
    app: &TestApp,
    post: impl Fn() -> crate::helpers::Reply + Sync,
) -> crate::helpers::Reply {
    let first = post();
    assert_eq!(first.code(), "still_processing", "{}", first.text());
    let retry = eventually(Duration::from_secs(20), || {
        let reply = post();
        (reply.status != 409).then_some(reply)
    });
    eventually(Duration::from_secs(20), || {
        (app.metric("idempay_leases_lost_total") >= 1).then_some(())
    });
    retry
}

fn stale_charge_after_a_park_is_completed_by_the_retry(backend: Backend) {
    let Some(app) = stalling_app(backend, false) else {
        return;
    };
    let order = app.order(1000);
    // The retry's call is the flaky card's first (unavailable → parked). The stale call
    // comes after the stale execution's lease ended: the processor refuses it, unrecorded,
    // and the stale execution writes nothing.
    let retry = stale_then_retry(&app, || app.pay("k", &order, "pm_card_flaky"));
    assert_eq!(retry.code(), "processor_unavailable");
    let listed = app.get(&format!("/payments?order_id={order}")).json();
    assert_eq!(
        listed["data"][0]["status"], "failed",
        "parked by the lease holder only"
    );
    assert_eq!(
        app.get(&format!("/orders/{order}")).json()["status"],
        "awaiting_payment"
    );
    // The client's next retry reopens it; the processor answers with the charge it made.
    let done = app.pay("k", &order, "pm_card_flaky");
    assert_eq!(done.status, 201, "{}", done.text());
    assert_eq!(done.json()["status"], "succeeded");
    assert_eq!(
        app.get(&format!("/orders/{order}")).json()["status"],
        "paid"
    );
    assert_eq!(app.settled("charge"), 1, "one charge");
}

fn stale_call_cannot_charge_an_abandoned_payment(backend: Backend) {
    let Some(app) = stalling_app(backend, true) else {
        return;
    };
    let order = app.order(1000);
    let retry = stale_then_retry(&app, || app.pay("k", &order, "pm_card_flaky"));
    if retry.status == 201 {
        // The reaper took over first and the retry reopened the payment: paid once.
        assert_eq!(app.settled("charge"), 1);
        return;
    }
    assert_eq!(retry.code(), "processor_unavailable");
    // The client gives up. The late call was refused, so when the key expires the ledger
    // shows no charge and the reaper abandons the parked payment.
    eventually(Duration::from_secs(30), || {
        (app.record_count() == 1).then_some(())
    });
    let listed = app.get(&format!("/payments?order_id={order}")).json();
    assert_eq!(listed["data"][0]["status"], "failed");
    assert_eq!(app.settled("charge"), 0, "no money moved");
    // The order is payable: a new key pays it once (its first attempt stalls too).
    let paid = eventually(Duration::from_secs(20), || {
        let reply = app.pay("new", &order, "pm_card_visa");
        (reply.status == 201).then_some(reply)
    });
    assert_eq!(paid.json()["status"], "succeeded");
    assert_eq!(app.settled("charge"), 1);
}

fn stale_refund_never_releases_another_reservation(backend: Backend) {
    let Some(app) = stalling_app(backend, false) else {
        return;
    };
    let order = app.order(1000);
    // The payment's own first attempt stalls too; its retries get the final answer.
    let paid = eventually(Duration::from_secs(20), || {
        let reply = app.pay("p", &order, "pm_card_visa");
        (reply.status == 201).then_some(reply)
    });
    let payment = paid.json()["id"].as_str().unwrap().to_owned();
    let path = format!("/payments/{payment}/refunds");
    let retry = stale_then_retry(&app, || app.post(&path, Some("r"), r#"{"amount":600}"#));
    assert_eq!(retry.status, 201, "{}", retry.text());
    // Another refund may take the rest, and no more.
    eventually(Duration::from_secs(20), || {
        (app.post(&path, Some("rest"), r#"{"amount":400}"#).status == 201).then_some(())
    });
    let over = app.post(&path, Some("over"), r#"{"amount":1}"#);
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
