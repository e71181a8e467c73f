//! Payments through HTTP: every outcome of DESIGN §2 for `POST /payments`, on both
//! backends, driven by the simulator's test payment methods.

use crate::helpers::{spawn_app, Backend};

fn successful_payment_pays_the_order_and_replays(backend: Backend) {
    let Some(app) = spawn_app(backend) else {
        return;
    };
    let order = app.order(1999);
    let paid = app.pay("pay-1", &order, "pm_card_visa");
    assert_eq!(paid.status, 201, "{}", paid.text());
    let payment = paid.json();
    let id = payment["id"].as_str().unwrap();
    assert!(id.starts_with("pay_"));
    assert_eq!(
        paid.header("location"),
        Some(format!("/payments/{id}").as_str())
    );
    assert_eq!(
        (payment["status"].as_str(), payment["amount"].as_i64()),
        (Some("succeeded"), Some(1999))
    );
    assert_eq!(payment["currency"], "EUR");
    let again = app.pay("pay-1", &order, "pm_card_visa");
    assert_eq!((again.status, again.replayed()), (201, true));
    assert_eq!(again.body, paid.body);
    let order_now = app.get(&format!("/orders/{order}")).json();
    assert_eq!(
        (
            order_now["status"].as_str(),
            order_now["amount_paid"].as_i64()
        ),
        (Some("paid"), Some(1999))
    );
    assert_eq!(
        app.get(&format!("/payments/{id}")).json()["status"],
        "succeeded"
    );
    assert_eq!(app.settled("charge"), 1);
}

fn declines_are_stored_and_the_failed_payment_is_listed(backend: Backend) {
    let Some(app) = spawn_app(backend) else {
        return;
    };
    for (method, code) in [
        ("pm_card_declined", "card_declined"),
        ("pm_card_insufficient_funds", "insufficient_funds"),
    ] {
        let order = app.order(500);
        let declined = app.pay(method, &order, method);
        assert_eq!(declined.status, 402, "{}", declined.text());
        assert_eq!(declined.code(), code);
        let payment_id = declined.json()["payment_id"].as_str().unwrap().to_owned();
        let again = app.pay(method, &order, method);
        assert_eq!((again.status, again.replayed()), (402, true));
        assert_eq!(again.body, declined.body);
        let listed = app.get(&format!("/payments?order_id={order}")).json();
        let payments = listed["data"].as_array().unwrap();
        assert_eq!(payments.len(), 1);
        assert_eq!(payments[0]["id"], payment_id.as_str());
        assert_eq!(
            (
                payments[0]["status"].as_str(),
                payments[0]["failure_code"].as_str()
            ),
            (Some("failed"), Some(code))
        );
        // The order can still be paid with another card and another key.
        assert_eq!(
            app.pay(&format!("{method}-visa"), &order, "pm_card_visa")
                .status,
            201
        );
    }
    assert_eq!(app.settled("charge"), 2);
}

fn missing_or_unpayable_orders_are_permanent(backend: Backend) {
    let Some(app) = spawn_app(backend) else {
        return;
    };
    let missing = app.pay(
        "p-missing",
        "ord_0000000000000000000000000000beef",
        "pm_card_visa",
    );
    assert_eq!(
        (missing.status, missing.code().as_str()),
        (404, "resource_not_found")
    );
    assert!(app
        .pay(
            "p-missing",
            "ord_0000000000000000000000000000beef",
            "pm_card_visa"
        )
        .replayed());
    let order = app.order(300);
    assert_eq!(app.pay("first", &order, "pm_card_visa").status, 201);
    // Defence in depth: a new key cannot pay a paid order.
    let second = app.pay("second", &order, "pm_card_visa");
    assert_eq!(
        (second.status, second.code().as_str()),
        (409, "order_not_payable")
    );
    let replay = app.pay("second", &order, "pm_card_visa");
    assert_eq!((replay.status, replay.replayed()), (409, true));
    let cancelled = app.order(300);
    assert_eq!(
        app.post(&format!("/orders/{cancelled}/cancel"), None, "")
            .status,
        200
    );
    let on_cancelled = app.pay("third", &cancelled, "pm_card_visa");
    assert_eq!(on_cancelled.code(), "order_not_payable");
    // A paid order cannot be cancelled.
    let cancel_paid = app.post(&format!("/orders/{order}/cancel"), None, "");
    assert_eq!(
        (cancel_paid.status, cancel_paid.code().as_str()),
        (409, "order_not_cancellable")
    );
    assert_eq!(app.settled("charge"), 1);
}

fn amount_and_currency_must_match_the_order(backend: Backend) {
    let Some(app) = spawn_app(backend) else {
        return;
    };
    let order = app.order(1000);
    let body = format!(r#"{{"order_id":"{order}","payment_method":"pm_card_visa","amount":999}}"#);
    let wrong = app.post("/payments", Some("mismatch"), &body);
    assert_eq!(
        (wrong.status, wrong.code().as_str()),
        (422, "payment_mismatch")
    );
    assert_eq!(wrong.json()["param"], "amount");
    let body =
        format!(r#"{{"order_id":"{order}","payment_method":"pm_card_visa","currency":"USD"}}"#);
    assert_eq!(
        app.post("/payments", Some("mismatch-cur"), &body).code(),
        "payment_mismatch"
    );
    let body = format!(
        r#"{{"order_id":"{order}","payment_method":"pm_card_visa","amount":1000,"currency":"EUR"}}"#
    );
    assert_eq!(app.post("/payments", Some("exact"), &body).status, 201);
}

fn invalid_payment_requests_are_rejected_and_store_nothing(backend: Backend) {
    let Some(app) = spawn_app(backend) else {
        return;
    };
    let order = app.order(1000);
    for (body, param) in [
        (
            format!(r#"{{"order_id":"{order}","payment_method":"pm_card_amex"}}"#),
            "payment_method",
        ),
        (format!(r#"{{"order_id":"{order}"}}"#), "payment_method"),
        (
            r#"{"order_id":"42","payment_method":"pm_card_visa"}"#.to_owned(),
            "order_id",
        ),
        (
            format!(r#"{{"order_id":"{order}","payment_method":"pm_card_visa","amount":0}}"#),
            "amount",
        ),
        (
            format!(r#"{{"order_id":"{order}","payment_method":"pm_card_visa","tip":1}}"#),
            "tip",
        ),
        (
            format!(r#"{{"order_id":"{order}","payment_method":"pm_card_visa","currency":"eur"}}"#),
            "currency",
        ),
    ] {
        let reply = app.post("/payments", Some("k"), &body);
        assert_eq!(reply.status, 422, "{body}: {}", reply.text());
        assert_eq!(reply.json()["param"], param);
    }
    assert_eq!(
        app.pay("k", &order, "pm_card_visa").status,
        201,
        "the key was never stored"
    );
}

fn processor_down_is_retryable_and_charges_nothing(backend: Backend) {
    let Some(app) = spawn_app(backend) else {
        return;
    };
    let order = app.order(800);
    for _ in 0..2 {
        let down = app.pay("down", &order, "pm_card_processor_down");
        assert_eq!(
            (down.status, down.code().as_str()),
            (503, "processor_unavailable")
        );
        assert_eq!(down.header("retry-after"), Some("1"));
        assert!(
            !down.replayed(),
            "a retryable failure executes again, it is not replayed"
        );
    }
    assert_eq!(app.settled("charge"), 0);
    // Retryable means no effect: the payment is parked, blocking neither the order...
    let listed = app.get(&format!("/payments?order_id={order}")).json();
    assert_eq!(
        listed["data"].as_array().unwrap().len(),
        1,
        "the retry reused its payment"
    );
    assert_eq!(listed["data"][0]["status"], "failed");
    assert_eq!(listed["data"][0]["failure_code"], "processor_unavailable");
    let other = app.pay("other", &order, "pm_card_visa");
    assert_eq!(other.status, 201, "{}", other.text());
    // ...nor a later retry of the parked key, which now finds the order paid.
    let late = app.pay("down", &order, "pm_card_processor_down");
    assert_eq!(
        (late.status, late.code().as_str()),
        (409, "order_not_payable")
    );
    assert!(app.pay("down", &order, "pm_card_processor_down").replayed());
    assert_eq!(app.settled("charge"), 1);
}

fn parked_payment_does_not_block_cancel(backend: Backend) {
    let Some(app) = spawn_app(backend) else {
        return;
    };
    let order = app.order(800);
    assert_eq!(
        app.pay("down", &order, "pm_card_processor_down").status,
        503
    );
    let cancelled = app.post(&format!("/orders/{order}/cancel"), None, "");
    assert_eq!(cancelled.status, 200, "{}", cancelled.text());
    let late = app.pay("down", &order, "pm_card_processor_down");
    assert_eq!(
        (late.status, late.code().as_str()),
        (409, "order_not_payable")
    );
}

fn flaky_processor_succeeds_on_retry_with_the_same_payment(backend: Backend) {
    let Some(app) = spawn_app(backend) else {
        return;
    };
    let order = app.order(800);
    let first = app.pay("flaky", &order, "pm_card_flaky");
    assert_eq!(
        (first.status, first.code().as_str()),
        (503, "processor_unavailable")
    );
    let retry = app.pay("flaky", &order, "pm_card_flaky");
    assert_eq!(
        (retry.status, retry.replayed()),
        (201, false),
        "{}",
        retry.text()
    );
    let payments = app.get(&format!("/payments?order_id={order}")).json();
    assert_eq!(
        payments["data"].as_array().unwrap().len(),
        1,
        "the retry reused the payment"
    );
    assert_eq!(payments["data"][0]["id"], retry.json()["id"]);
    assert!(app.pay("flaky", &order, "pm_card_flaky").replayed());
    assert_eq!(app.settled("charge"), 1);
}

fn lost_answer_is_resumed_with_one_charge(backend: Backend) {
    let Some(app) = spawn_app(backend) else {
        return;
    };
    let order = app.order(4200);
    let lost = app.pay("timeout", &order, "pm_card_timeout");
    assert_eq!(
        (lost.status, lost.code().as_str()),
        (503, "processor_timeout")
    );
    assert_eq!(lost.header("retry-after"), Some("1"));
    assert_eq!(
        app.settled("charge"),
        1,
        "the charge was made; only the answer was lost"
    );
    let resumed = app.pay("timeout", &order, "pm_card_timeout");
    assert_eq!(
        (resumed.status, resumed.replayed()),
        (201, false),
        "{}",
        resumed.text()
    );
    assert_eq!(resumed.json()["status"], "succeeded");
    assert_eq!(
        app.get(&format!("/payments?order_id={order}")).json()["data"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        app.get(&format!("/orders/{order}")).json()["status"],
        "paid"
    );
    assert_eq!(app.settled("charge"), 1);
}

fn crash_between_charge_and_settlement_is_resumed(backend: Backend) {
    // The process "dies" after the processor charged and before phase 3; a new process on
    // the same database resumes from `payment_created` with the same processor key.
    let Some(app) = spawn_app_with_crash(backend) else {
        return;
    };
    let order = app.order(1234);
    let cut = app.pay("crash", &order, "pm_card_visa");
    assert_eq!(cut.status, 503, "{}", cut.text());
    let pending = app.get(&format!("/payments?order_id={order}")).json();
    assert_eq!(pending["data"][0]["status"], "processing");
    let app = app.restart(|_| {});
    let resumed = app.pay("crash", &order, "pm_card_visa");
    assert_eq!(resumed.status, 201, "{}", resumed.text());
    assert_eq!(
        resumed.json()["id"],
        pending["data"][0]["id"],
        "same payment"
    );
    assert_eq!(app.settled("charge"), 1, "exactly one charge");
    assert_eq!(
        app.get(&format!("/orders/{order}")).json()["amount_paid"],
        1234
    );
}

fn spawn_app_with_crash(backend: Backend) -> Option<crate::helpers::TestApp> {
    crate::helpers::spawn_app_with(backend, |c| c.faults.crash_after_processor_call = true)
}

crate::on_both_backends!(
    successful_payment_pays_the_order_and_replays,
    declines_are_stored_and_the_failed_payment_is_listed,
    missing_or_unpayable_orders_are_permanent,
    amount_and_currency_must_match_the_order,
    invalid_payment_requests_are_rejected_and_store_nothing,
    processor_down_is_retryable_and_charges_nothing,
    parked_payment_does_not_block_cancel,
    flaky_processor_succeeds_on_retry_with_the_same_payment,
    lost_answer_is_resumed_with_one_charge,
    crash_between_charge_and_settlement_is_resumed,
);
