//! Crash recovery with the real binary: a payment is cut by SIGKILL at each recovery
//! point; after a restart the reaper resolves every record within lease + interval, the
//! client's retry gets the final result, and the simulator holds exactly one charge.

use std::time::Duration;

use crate::helpers::{eventually, Backend};
use crate::pg::TestDb;
use crate::process::{reap_once, serve};

/// Kills a server paused at `point` in a payment of a fresh order; returns the order id
/// and the database (the server is gone).
fn cut_payment_at(db: &TestDb, point: &str) -> String {
    let mut first = serve(
        &db.url,
        &[
            "--test-fault-pause-at",
            point,
            "--reaper-interval-secs",
            "0",
        ],
    );
    let order = first.client.order(1000);
    let client = first.client.clone();
    let body = format!(r#"{{"order_id":"{order}","payment_method":"pm_card_visa"}}"#);
    let request = std::thread::spawn(move || client.try_post("/payments", "crash-key", &body));
    first.wait_for(&format!("FAULT: paused at {point}"));
    first.kill();
    assert!(
        request.join().unwrap().is_none(),
        "the client saw the connection die"
    );
    order
}

fn check_resolved(client: &crate::helpers::Client, order: &str) {
    let body = format!(r#"{{"order_id":"{order}","payment_method":"pm_card_visa"}}"#);
    let retry = client.post("/payments", Some("crash-key"), &body);
    assert_eq!(retry.status, 201, "{}", retry.text());
    assert_eq!(retry.json()["status"], "succeeded");
    assert_eq!(
        client.get(&format!("/orders/{order}")).json()["status"],
        "paid"
    );
    assert_eq!(client.settled("charge"), 1, "exactly one charge");
    assert_eq!(client.records_in("processing"), 0);
    let payments = client.get(&format!("/payments?order_id={order}")).json();
    assert_eq!(payments["data"].as_array().unwrap().len(), 1);
}

fn crash_at(backend: Backend, point: &str) {
    let db = TestDb::create(backend);
    let order = cut_payment_at(&db, point);
    let second = serve(&db.url, &["--reaper-interval-secs", "1"]);
    let client = &second.client;
    let counter = if point == "started" {
        "idempay_reaper_released_total"
    } else {
        "idempay_reaper_recovered_total"
    };
    // The reaper counts a resolution once it has committed it.
    eventually(Duration::from_secs(30), || {
        (client.metric(counter) >= 1).then_some(())
    });
    assert_eq!(client.records_in("processing"), 0);
    assert_eq!(client.metric(counter), 1);
    check_resolved(client, &order);
    // A record the reaper completed is replayed; one it released executed afresh.
    let body = format!(r#"{{"order_id":"{order}","payment_method":"pm_card_visa"}}"#);
    assert!(client
        .post("/payments", Some("crash-key"), &body)
        .replayed());
}

fn sigkill_before_phase_1(backend: Backend) {
    crash_at(backend, "started");
}

fn sigkill_at_payment_created(backend: Backend) {
    crash_at(backend, "payment_created");
}

fn sigkill_between_charge_and_phase_3(backend: Backend) {
    crash_at(backend, "after_processor_call");
}

fn reap_once_command_recovers_a_cut_payment(backend: Backend) {
    let db = TestDb::create(backend);
    let order = cut_payment_at(&db, "after_processor_call");
    let summary = eventually(Duration::from_secs(30), || {
        let line = reap_once(&db.url);
        line.contains("recovered 1").then_some(line)
    });
    assert!(summary.contains("errors 0"), "{summary}");
    let server = serve(&db.url, &["--reaper-interval-secs", "0"]);
    check_resolved(&server.client, &order);
}

fn sigkill_at_refund_created(backend: Backend) {
    let db = TestDb::create(backend);
    let mut first = serve(
        &db.url,
        &[
            "--test-fault-pause-at",
            "refund_created",
            "--reaper-interval-secs",
            "0",
        ],
    );
    let order = first.client.order(1000);
    let paid = first.client.pay("pay", &order, "pm_card_visa");
    let payment = paid.json()["id"].as_str().unwrap().to_owned();
    let (client, path) = (first.client.clone(), format!("/payments/{payment}/refunds"));
    let request =
        std::thread::spawn(move || client.try_post(&path, "crash-refund", r#"{"amount":400}"#));
    first.wait_for("FAULT: paused at refund_created");
    first.kill();
    assert!(request.join().unwrap().is_none());
    let second = serve(&db.url, &["--reaper-interval-secs", "1"]);
    let client = &second.client;
    eventually(Duration::from_secs(30), || {
        (client.metric("idempay_reaper_recovered_total") >= 1).then_some(())
    });
    assert_eq!(client.records_in("processing"), 0);
    assert_eq!(client.metric("idempay_reaper_recovered_total"), 1);
    let retry = client.post(
        &format!("/payments/{payment}/refunds"),
        Some("crash-refund"),
        r#"{"amount":400}"#,
    );
    assert_eq!(
        (retry.status, retry.replayed()),
        (201, true),
        "{}",
        retry.text()
    );
    assert_eq!(retry.json()["status"], "succeeded");
    assert_eq!(
        client.get(&format!("/payments/{payment}")).json()["amount_refunded"],
        400
    );
    assert_eq!(
        client.get(&format!("/orders/{order}")).json()["status"],
        "partially_refunded"
    );
    assert_eq!(client.settled("refund"), 1, "exactly one refund");
}

crate::on_both_backends!(
    sigkill_at_refund_created,
    sigkill_before_phase_1,
    sigkill_at_payment_created,
    sigkill_between_charge_and_phase_3,
    reap_once_command_recovers_a_cut_payment,
);
