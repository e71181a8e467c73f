//! Refunds through HTTP: amounts, order status, every outcome, and their replays.

use crate::helpers::{spawn_app, Backend, TestApp};
use crate::pause::Pause;

fn paid_order(app: &TestApp, amount: i64, method: &str) -> (String, String) {
    let order = app.order(amount);
    let mut paid = app.pay(&format!("pay-{order}"), &order, method);
    if paid.status == 503 {
        paid = app.pay(&format!("pay-{order}"), &order, method); // flaky/timeout: one retry
    }
    assert_eq!(paid.status, 201, "{}", paid.text());
    (order, paid.json()["id"].as_str().unwrap().to_owned())
}

fn partial_then_full_refund(backend: Backend) {
    let app = spawn_app(backend);
    let (order, payment) = paid_order(&app, 1000, "pm_card_visa");
    let path = format!("/payments/{payment}/refunds");
    let partial = app.post(
        &path,
        Some("r1"),
        r#"{"amount":300,"reason":"requested_by_customer"}"#,
    );
    assert_eq!(partial.status, 201, "{}", partial.text());
    let refund = partial.json();
    let id = refund["id"].as_str().unwrap();
    assert!(id.starts_with("re_"));
    assert_eq!(
        partial.header("location"),
        Some(format!("/refunds/{id}").as_str())
    );
    assert_eq!(
        (refund["amount"].as_i64(), refund["status"].as_str()),
        (Some(300), Some("succeeded"))
    );
    assert_eq!(refund["reason"], "requested_by_customer");
    assert_eq!(app.get(&format!("/refunds/{id}")).json(), refund);
    assert_eq!(
        app.get(&format!("/orders/{order}")).json()["status"],
        "partially_refunded"
    );
    assert!(app
        .post(
            &path,
            Some("r1"),
            r#"{"reason":"requested_by_customer","amount":300}"#
        )
        .replayed());
    // No amount: the rest.
    let rest = app.post(&path, Some("r2"), "");
    assert_eq!(
        (rest.status, rest.json()["amount"].as_i64()),
        (201, Some(700)),
        "{}",
        rest.text()
    );
    let order_now = app.get(&format!("/orders/{order}")).json();
    assert_eq!(
        (
            order_now["status"].as_str(),
            order_now["amount_refunded"].as_i64()
        ),
        (Some("refunded"), Some(1000))
    );
    assert_eq!(
        app.get(&format!("/payments/{payment}")).json()["amount_refunded"],
        1000
    );
    let nothing_left = app.post(&path, Some("r3"), r#"{"amount":1}"#);
    assert_eq!(
        (nothing_left.status, nothing_left.code().as_str()),
        (409, "refund_exceeds_payment")
    );
    assert!(
        app.post(&path, Some("r3"), r#"{"amount":1}"#).replayed(),
        "a permanent failure is stored"
    );
    assert_eq!(app.settled("refund"), 2);
}

fn refund_errors(backend: Backend) {
    let app = spawn_app(backend);
    let missing = app.post(
        "/payments/pay_0000000000000000000000000000beef/refunds",
        Some("x"),
        "{}",
    );
    assert_eq!(
        (missing.status, missing.code().as_str()),
        (404, "resource_not_found")
    );
    let order = app.order(100);
    let declined = app.pay("d", &order, "pm_card_declined").json()["payment_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let not_refundable = app.post(&format!("/payments/{declined}/refunds"), Some("y"), "{}");
    assert_eq!(
        (not_refundable.status, not_refundable.code().as_str()),
        (409, "payment_not_refundable")
    );
    let (_, payment) = paid_order(&app, 100, "pm_card_visa");
    let path = format!("/payments/{payment}/refunds");
    let too_much = app.post(&path, Some("z"), r#"{"amount":101}"#);
    assert_eq!(too_much.code(), "refund_exceeds_payment");
    for (body, param) in [
        (r#"{"reason":"bored"}"#, "reason"),
        (r#"{"amount":-1}"#, "amount"),
        (r#"{"amount":1.5}"#, "amount"),
        (r#"{"fee":1}"#, "fee"),
    ] {
        let reply = app.post(&path, Some("v"), body);
        assert_eq!(
            (reply.status, reply.json()["param"].as_str()),
            (422, Some(param)),
            "{body}"
        );
    }
    assert_eq!(
        app.post(&path, None, "{}").code(),
        "idempotency_key_required"
    );
    assert_eq!(
        app.get("/refunds/re_0000000000000000000000000000beef")
            .status,
        404
    );
    assert_eq!(app.settled("refund"), 0);
}

fn flaky_and_lost_refunds_complete_on_retry(backend: Backend) {
    let app = spawn_app(backend);
    // A lost answer (unknown outcome) keeps its reservation until it is resolved.
    let (order, payment) = paid_order(&app, 600, "pm_card_timeout");
    let path = format!("/payments/{payment}/refunds");
    let lost = app.post(&path, Some("lost"), r#"{"amount":600}"#);
    assert_eq!(
        (lost.status, lost.code().as_str()),
        (503, "processor_timeout")
    );
    assert_eq!(
        app.post(&path, Some("extra"), r#"{"amount":1}"#).code(),
        "refund_in_progress",
        "it fits if the refund in flight fails: not a final no"
    );
    let retry = app.post(&path, Some("lost"), r#"{"amount":600}"#);
    assert_eq!(retry.status, 201, "{}", retry.text());
    assert_eq!(
        app.get(&format!("/orders/{order}")).json()["status"],
        "refunded"
    );
    // A refund the processor did not attempt holds nothing; its retry succeeds.
    let (order, payment) = paid_order(&app, 600, "pm_card_flaky");
    let path = format!("/payments/{payment}/refunds");
    let unavailable = app.post(&path, Some("flaky"), r#"{"amount":600}"#);
    assert_eq!(
        (unavailable.status, unavailable.code().as_str()),
        (503, "processor_unavailable")
    );
    assert_eq!(
        app.get(&format!("/payments/{payment}")).json()["amount_refunded"],
        0
    );
    let retry = app.post(&path, Some("flaky"), r#"{"amount":600}"#);
    assert_eq!(retry.status, 201, "{}", retry.text());
    assert_eq!(retry.json()["failure_code"], serde_json::Value::Null);
    assert_eq!(
        app.get(&format!("/orders/{order}")).json()["status"],
        "refunded"
    );
    assert_eq!(app.settled("refund"), 2, "one refund each, never two");
}

fn parked_refund_gives_way_to_others(backend: Backend) {
    let app = spawn_app(backend);
    let (_, payment) = paid_order(&app, 500, "pm_card_flaky");
    let path = format!("/payments/{payment}/refunds");
    assert_eq!(
        app.post(&path, Some("parked"), r#"{"amount":500}"#).status,
        503
    );
    // The parked refund released its reservation, so another refund may take it all...
    let other = app.post(&path, Some("other"), r#"{"amount":500}"#);
    assert_eq!(other.status, 503, "flaky again on its first call");
    assert_eq!(
        app.post(&path, Some("other"), r#"{"amount":500}"#).status,
        201
    );
    // ...and the parked one, retried, no longer fits: never more than the payment.
    let late = app.post(&path, Some("parked"), r#"{"amount":500}"#);
    assert_eq!(
        (late.status, late.code().as_str()),
        (409, "refund_exceeds_payment")
    );
    assert_eq!(
        app.get(&format!("/payments/{payment}")).json()["amount_refunded"],
        500
    );
    assert_eq!(app.settled("refund"), 1);
}

fn refund_in_flight_gets_409_in_use(backend: Backend) {
    let pause = Pause::at("before_refund");
    let app = crate::helpers::spawn_app_with(backend, |c| pause.configure(c));
    let (_, payment) = paid_order(&app, 900, "pm_card_visa");
    let path = format!("/payments/{payment}/refunds");
    let done = std::thread::scope(|s| {
        let a = s.spawn(|| app.post(&path, Some("slow-refund"), "{}"));
        pause.wait_paused();
        let waiting = app.post(&path, Some("slow-refund"), "{}");
        assert_eq!(waiting.code(), "idempotency_key_in_use");
        pause.release();
        a.join().unwrap()
    });
    assert_eq!(
        (done.status, done.replayed()),
        (201, false),
        "{}",
        done.text()
    );
    let replay = app.post(&path, Some("slow-refund"), "{}");
    assert_eq!(replay.body, done.body);
    assert_eq!(app.settled("refund"), 1);
}

fn a_refund_that_fits_only_if_one_in_flight_fails_is_retryable(backend: Backend) {
    // Found by users: it was a stored, permanent 409 refund_exceeds_payment, so a
    // client told "never" could not refund even after the refund in flight failed.
    let app = spawn_app(backend);
    let (_, payment) = paid_order(&app, 1000, "pm_card_timeout");
    let path = format!("/payments/{payment}/refunds");
    let lost = app.post(&path, Some("a"), r#"{"amount":600}"#);
    assert_eq!(
        lost.code(),
        "processor_timeout",
        "refund a is in flight, outcome unknown"
    );
    let wait = app.post(&path, Some("b"), r#"{"amount":500}"#);
    assert_eq!(
        (wait.status, wait.code().as_str()),
        (409, "refund_in_progress")
    );
    assert_eq!(wait.header("retry-after"), Some("1"));
    assert!(wait.json()["retryable"].as_bool().unwrap());
    let not_stored = "SELECT COUNT(*) AS n FROM idempotency_records WHERE idempotency_key = 'b' AND status = 'failed_retryable'";
    assert_eq!(app.count(not_stored), 1, "released for a retry, not stored");
    let never = app.post(&path, Some("c"), r#"{"amount":1001}"#);
    assert_eq!(
        never.code(),
        "refund_exceeds_payment",
        "more than the payment: never"
    );
    // Refund a settles (it succeeded); now b is too much, for good.
    assert_eq!(app.post(&path, Some("a"), r#"{"amount":600}"#).status, 201);
    let refused = app.post(&path, Some("b"), r#"{"amount":500}"#);
    assert_eq!(refused.code(), "refund_exceeds_payment");
    assert!(
        app.post(&path, Some("b"), r#"{"amount":500}"#).replayed(),
        "stored now"
    );
    assert_eq!(app.settled("refund"), 1);
}

crate::on_both_backends!(
    a_refund_that_fits_only_if_one_in_flight_fails_is_retryable,
    refund_in_flight_gets_409_in_use,
    partial_then_full_refund,
    refund_errors,
    flaky_and_lost_refunds_complete_on_retry,
    parked_refund_gives_way_to_others,
);
