//! The reaper in process: expired records are purged, and payments abandoned by their
//! client are failed so the order can be paid again.

use std::time::Duration;

use crate::helpers::{eventually, spawn_app_with, Backend};

fn expired_records_are_purged(backend: Backend) {
    let app = spawn_app_with(backend, |c| {
        c.key_ttl_secs = 1;
        c.reaper_interval_secs = 1;
    });
    app.create_order("purge-me", r#"{"amount":1,"currency":"EUR"}"#);
    assert_eq!(app.record_count(), 1);
    eventually(Duration::from_secs(20), || {
        (app.record_count() == 0).then_some(())
    });
    assert!(app.metric("idempay_reaper_purged_total") >= 1);
    assert_eq!(app.order_count(), 1, "purging keys never touches orders");
}

fn expired_retryable_record_is_purged_and_the_key_runs_afresh(backend: Backend) {
    let app = spawn_app_with(backend, |c| {
        c.key_ttl_override = vec![("create_payment".into(), 1)];
        c.reaper_interval_secs = 1;
    });
    let order = app.order(100);
    assert_eq!(
        app.pay("gave-up", &order, "pm_card_processor_down").status,
        503
    );
    assert_eq!(app.records_in("failed_retryable"), 1);
    eventually(Duration::from_secs(20), || {
        (app.records_in("failed_retryable") == 0).then_some(())
    });
    let listed = app.get(&format!("/payments?order_id={order}")).json();
    assert_eq!(listed["data"][0]["failure_code"], "processor_unavailable");
    // The expired key is a new request: it creates a second payment attempt.
    let again = app.pay("gave-up", &order, "pm_card_visa");
    assert_eq!(again.status, 201, "{}", again.text());
    assert_eq!(
        app.get(&format!("/payments?order_id={order}")).json()["data"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(app.settled("charge"), 1);
}

crate::on_both_backends!(
    expired_records_are_purged,
    expired_retryable_record_is_purged_and_the_key_runs_afresh,
);
