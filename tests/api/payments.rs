//! Payments through HTTP: every outcome of DESIGN §2 for `POST /payments`, on both
//! backends, driven by the simulator's test payment methods.

use crate::helpers::{spawn_app, Backend};

fn successful_payment_pays_the_order_and_replays(backend: Backend) {
    let app = spawn_app(backend);
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
    let app = spawn_app(backend);
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
    let app = spawn_app(backend);
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
    let app = spawn_app(backend);
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
    let app = spawn_app(backend);
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

fn payment_list_filters_are_validated(backend: Backend) {
    // Found by schemathesis: a malformed order_id filter was an empty 200.
    let app = spawn_app(backend);
    let reply = app.get("/payments?order_id=%C3%AE%C3%B1b");
    assert_eq!(
        (reply.status, reply.code().as_str()),
        (400, "invalid_query")
    );
    assert_eq!(reply.json()["param"], "order_id");
    let fine = app.get("/payments?order_id=ord_00000000000000000000000000000000");
    assert_eq!(fine.json()["data"].as_array().unwrap().len(), 0);
}

crate::on_both_backends!(
    payment_list_filters_are_validated,
    successful_payment_pays_the_order_and_replays,
    declines_are_stored_and_the_failed_payment_is_listed,
    missing_or_unpayable_orders_are_permanent,
    amount_and_currency_must_match_the_order,
    invalid_payment_requests_are_rejected_and_store_nothing,
);
