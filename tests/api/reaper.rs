//! The reaper in process: expired records are purged, and payments abandoned by their
//! client are failed so the order can be paid again.

use std::time::Duration;

use crate::helpers::{eventually, spawn_app_with, Backend};

fn expired_records_are_purged(backend: Backend) {
    let Some(app) = spawn_app_with(backend, |c| {
        c.key_ttl_secs = 1;
        c.reaper_interval_secs = 1;
    }) else {
        return;
    };
    app.create_order("purge-me", r#"{"amount":1,"currency":"EUR"}"#);
    assert_eq!(app.record_count(), 1);
    eventually(Duration::from_secs(20), || {
        (app.record_count() == 0).then_some(())
    });
    assert!(app.metric("idempay_reaper_purged_total") >= 1);
    assert_eq!(app.order_count(), 1, "purging keys never touches orders");
}

fn abandoned_payment_is_failed_and_the_order_payable_again(backend: Backend) {
    let Some(app) = spawn_app_with(backend, |c| {
        c.key_ttl_override = vec![("create_payment".into(), 1)];
        c.reaper_interval_secs = 1;
    }) else {
        return;
    };
    let order = app.order(100);
    assert_eq!(
        app.pay("gave-up", &order, "pm_card_processor_down").status,
        503
    );
    assert_eq!(
        app.pay("new-key", &order, "pm_card_visa").code(),
        "payment_in_progress"
    );
    let failed = eventually(Duration::from_secs(20), || {
        let list = app.get(&format!("/payments?order_id={order}")).json();
        (list["data"][0]["status"] == "failed").then_some(list)
    });
    assert_eq!(failed["data"][0]["failure_code"], "processor_unavailable");
    let paid = app.pay("new-key", &order, "pm_card_visa");
    assert_eq!(paid.status, 201, "{}", paid.text());
    assert_eq!(app.settled("charge"), 1);
}

crate::on_both_backends!(
    expired_records_are_purged,
    abandoned_payment_is_failed_and_the_order_payable_again,
);
