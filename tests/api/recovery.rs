//! What the reaper promises, one pass at a time (each test runs the passes itself):
//! a recovery that keeps failing backs off and is flagged, never failed silently; an
//! expired parked payment whose processor moved money after all is completed and
//! flagged; a parked refund nobody retries is abandoned and gives its amount back; and
//! a pass works in batches of `--reaper-batch-size`.

use chrono::{NaiveDateTime, TimeDelta};
use diesel::prelude::*;
use idempay::db::schema::idempotency_records as records;

use crate::helpers::{eventually, spawn_app_with, Backend, TestApp};

/// The payment record's attempts, and how far its lease reaches past its last write.
fn lease_of(app: &TestApp, key: &str) -> (i32, TimeDelta) {
    let (attempts, until, at): (i32, NaiveDateTime, NaiveDateTime) = records::table
        .filter(records::idempotency_key.eq(key))
        .select((
            records::attempts,
            records::locked_until,
            records::updated_at,
        ))
        .first(&mut app.db())
        .expect("record readable");
    (attempts, until - at)
}

/// Lets every `processing` record's lease lapse now (time travel for back-offs).
fn lapse_leases(app: &TestApp) {
    diesel::sql_query(
        "UPDATE idempotency_records SET locked_until = updated_at WHERE status = 'processing'",
    )
    .execute(&mut app.db())
    .expect("leases lapsed");
}

fn a_recovery_that_keeps_failing_backs_off_and_is_flagged(backend: Backend) {
    // Every charge of the slow card outlasts the processor timeout: the outcome stays
    // unknown at every attempt, the client's and the reaper's alike.
    let app = spawn_app_with(backend, |c| {
        c.lease_secs = 2;
        c.processor_timeout_ms = 50;
        c.slow_processor_ms = 1000;
    });
    let order = app.order(800);
    assert_eq!(
        app.pay("stuck", &order, "pm_card_slow").code(),
        "processor_timeout"
    );
    for attempts in 2..=5 {
        lapse_leases(&app);
        let report = app.reap();
        assert_eq!((report.recovered, report.errors), (0, 1), "{report:?}");
        // Backed off: lease × 2^attempts.
        assert_eq!(
            lease_of(&app, "stuck"),
            (attempts, TimeDelta::seconds(2 << attempts))
        );
        let flagged = app.metric("idempay_reaper_flagged_total");
        assert_eq!(
            flagged,
            u64::from(attempts >= 5),
            "flagged after 5 attempts"
        );
        assert_eq!(app.reap().errors, 0, "a backed-off record waits");
    }
    // Never failed silently: the payment and its record are still open.
    let listed = app.get(&format!("/payments?order_id={order}")).json();
    assert_eq!(listed["data"][0]["status"], "processing");
    assert_eq!(app.records_in("processing"), 1);
    // The back-off is capped at 10 minutes.
    diesel::sql_query("UPDATE idempotency_records SET attempts = 40 WHERE status = 'processing'")
        .execute(&mut app.db())
        .expect("attempts set");
    lapse_leases(&app);
    app.reap();
    assert_eq!(lease_of(&app, "stuck"), (41, TimeDelta::minutes(10)));
    // Once the processor answers in time, the next pass completes it.
    let app = app.restart(|c| c.slow_processor_ms = 0);
    lapse_leases(&app);
    assert_eq!(app.reap().recovered, 1);
    assert!(app.pay("stuck", &order, "pm_card_slow").replayed());
    assert_eq!(app.settled("charge"), 1);
}

fn an_expired_parked_payment_that_moved_money_is_completed_and_flagged(backend: Backend) {
    let app = spawn_app_with(backend, |c| {
        c.key_ttl_override = vec![("create_payment".into(), 1)]
    });
    let order = app.order(600);
    assert_eq!(
        app.pay("late", &order, "pm_card_flaky").code(),
        "processor_unavailable"
    );
    // A processor without a fencing deadline let a late call through after the park:
    // its ledger now holds a charge for the parked payment.
    diesel::sql_query("UPDATE simulator_operations SET status = 'succeeded' WHERE kind = 'charge'")
        .execute(&mut app.db())
        .expect("ledger changed");
    eventually(std::time::Duration::from_secs(20), || {
        app.reap();
        (app.records_in("failed_retryable") == 0).then_some(())
    });
    assert_eq!(
        app.metric("idempay_reaper_flagged_total"),
        1,
        "an operator is told"
    );
    let paid = app.get(&format!("/payments?order_id={order}")).json();
    assert_eq!(
        paid["data"][0]["status"], "succeeded",
        "completed, never abandoned"
    );
    assert_eq!(
        app.get(&format!("/orders/{order}")).json()["amount_paid"],
        600
    );
    assert_eq!(app.settled("charge"), 1);
}

fn an_abandoned_parked_refund_gives_its_amount_back(backend: Backend) {
    let app = spawn_app_with(backend, |c| {
        c.key_ttl_override = vec![("create_refund".into(), 1)]
    });
    let order = app.order(1000);
    assert_eq!(app.pay("pay", &order, "pm_card_flaky").status, 503);
    let paid = app.pay("pay", &order, "pm_card_flaky");
    let payment = paid.json()["id"].as_str().unwrap().to_owned();
    let path = format!("/payments/{payment}/refunds");
    let parked = app.post(&path, Some("gave-up"), r#"{"amount":700}"#);
    assert_eq!(parked.code(), "processor_unavailable");
    eventually(std::time::Duration::from_secs(20), || {
        app.reap();
        (app.records_in("failed_retryable") == 0).then_some(())
    });
    let reserved =
        "SELECT COUNT(*) AS n FROM payments WHERE amount_reserved <> 0 OR amount_refunded <> 0";
    assert_eq!(app.count(reserved), 0, "nothing reserved, nothing refunded");
    assert_eq!(
        app.count("SELECT COUNT(*) AS n FROM refunds WHERE status = 'failed'"),
        1
    );
    assert_eq!(app.settled("refund"), 0);
    assert_eq!(app.metric("idempay_reaper_flagged_total"), 0);
    // The whole amount is refundable again (the flaky card refunds on its second call).
    let whole = |key| app.post(&path, Some(key), r#"{"amount":1000}"#);
    assert_eq!(whole("all").code(), "processor_unavailable");
    assert_eq!(whole("all").status, 201);
}

fn a_pass_works_in_batches(backend: Backend) {
    let app = spawn_app_with(backend, |c| c.faults.crash_after_processor_call = true);
    // Three payments cut between the charge and phase 3, left at `payment_created`.
    let orders: Vec<String> = (0..3).map(|_| app.order(100)).collect();
    for (i, order) in orders.iter().enumerate() {
        assert_eq!(
            app.pay(&format!("cut-{i}"), order, "pm_card_visa").status,
            503
        );
    }
    let app = app.restart(|c| {
        c.reaper_batch_size = 2;
        c.key_ttl_override = vec![("create_order".into(), 1)];
    });
    lapse_leases(&app);
    assert_eq!(
        app.reap().recovered,
        2,
        "at most a batch of stuck records per pass"
    );
    assert_eq!(app.records_in("processing"), 1);
    assert_eq!(app.reap().recovered, 1);
    assert_eq!(app.settled("charge"), 3);
    // Five order keys expire together; one pass deletes them all, two at a time.
    for i in 0..5 {
        app.create_order(&format!("short-{i}"), r#"{"amount":5,"currency":"EUR"}"#);
    }
    let last: Option<NaiveDateTime> = records::table
        .select(diesel::dsl::max(records::expires_at))
        .filter(records::idempotency_key.like("short-%"))
        .first(&mut app.db())
        .expect("expiry readable");
    while chrono::Utc::now().naive_utc() <= last.expect("finished records expire") {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(app.reap().purged, 5);
    assert_eq!(
        app.record_count(),
        6,
        "the 3 cut orders' and 3 payments' records stay"
    );
}

fn a_record_cut_before_phase_1_is_released_for_a_retry(backend: Backend) {
    let pause = crate::pause::Pause::at("started").first_attempt();
    let app = spawn_app_with(backend, |c| {
        c.lease_secs = 2;
        c.slow_processor_ms = 0;
        pause.configure(c);
    });
    let order = app.order(100);
    std::thread::scope(|s| {
        let cut = s.spawn(|| app.pay("cut", &order, "pm_card_visa"));
        pause.wait_paused(); // its lease will lapse: as if its process had died
        lapse_leases(&app);
        let report = app.reap();
        assert_eq!(
            (report.released, report.recovered, report.errors),
            (1, 0, 0)
        );
        assert_eq!(app.metric("idempay_reaper_released_total"), 1);
        assert_eq!(cut.join().unwrap().code(), "still_processing");
    });
    assert_eq!(
        app.records_in("failed_retryable"),
        1,
        "nothing happened: retry freely"
    );
    let paid = crate::helpers::until_answered(|| app.pay("cut", &order, "pm_card_visa"));
    assert_eq!(paid.status, 201, "{}", paid.text());
    assert_eq!(app.settled("charge"), 1);
}

crate::on_both_backends!(
    a_record_cut_before_phase_1_is_released_for_a_retry,
    a_recovery_that_keeps_failing_backs_off_and_is_flagged,
    an_expired_parked_payment_that_moved_money_is_completed_and_flagged,
    an_abandoned_parked_refund_gives_its_amount_back,
    a_pass_works_in_batches,
);
