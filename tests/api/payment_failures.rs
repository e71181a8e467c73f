//! Payments when the processor is down, flaky, loses its answer, or the process dies
//! between the charge and phase 3: retryable failures leave no effect, unknown outcomes
//! are resumed, and money moves once.

use crate::helpers::{spawn_app, Backend};

fn processor_down_is_retryable_and_charges_nothing(backend: Backend) {
    let app = spawn_app(backend);
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
    let app = spawn_app(backend);
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
    let app = spawn_app(backend);
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
    let app = spawn_app(backend);
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
    let app = spawn_app_with_crash(backend);
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

fn spawn_app_with_crash(backend: Backend) -> crate::helpers::TestApp {
    crate::helpers::spawn_app_with(backend, |c| c.faults.crash_after_processor_call = true)
}

crate::on_both_backends!(
    processor_down_is_retryable_and_charges_nothing,
    parked_payment_does_not_block_cancel,
    flaky_processor_succeeds_on_retry_with_the_same_payment,
    lost_answer_is_resumed_with_one_charge,
    crash_between_charge_and_settlement_is_resumed,
);
