//! Graceful drain with the real binary and a real SIGTERM: readiness turns 503, new
//! requests (on open connections too) get `503 shutting_down` with `Retry-After`, a
//! running payment finishes and commits, and the process exits by itself. With no
//! grace left, the cut-off payment stays at its recovery point and the next reaper
//! resolves it: one payment, one charge, either way.

use std::time::Duration;

use crate::helpers::{eventually, Backend, Client};
use crate::pause::Pause;
use crate::pg::TestDb;
use crate::process::{serve, Server};
use crate::raw::{self, Connection};

/// A server whose payments pause at `payment_created`, and a payment of a fresh order
/// running (paused) in the background under key `drain-key`.
fn paused_payment(
    db: &TestDb,
    pause: &Pause,
    extra: &[&str],
) -> (
    Server,
    std::thread::JoinHandle<Option<crate::helpers::Reply>>,
) {
    let mut args = pause.args();
    args.extend(extra.iter().map(|a| a.to_string()));
    let server = serve(
        &db.url,
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let order = server.client.order(1000);
    let client = server.client.clone();
    let body = format!(r#"{{"order_id":"{order}","payment_method":"pm_card_visa"}}"#);
    let payment = std::thread::spawn(move || client.try_post("/payments", "drain-key", &body));
    pause.wait_paused();
    (server, payment)
}

fn assert_shutting_down(status: u16, retry_after: Option<&str>, body: &str) {
    assert_eq!(status, 503, "{body}");
    assert!(body.contains(r#""code":"shutting_down""#), "{body}");
    assert_eq!(retry_after, Some("1"));
}

fn assert_one_payment(client: &Client) {
    assert_eq!(client.settled("charge"), 1, "exactly one charge");
    assert_eq!(client.records_in("processing"), 0);
    assert_eq!(
        client.records_in("succeeded"),
        2,
        "the order and the payment"
    );
}

fn drain_lets_a_running_payment_finish(backend: Backend) {
    let db = TestDb::create(backend);
    let pause = Pause::at("payment_created");
    let extra = ["--lease-secs", "30", "--shutdown-grace-secs", "20"];
    let (mut server, payment) = paused_payment(&db, &pause, &extra);
    let mut open = Connection::open(&server.client.base);
    assert_eq!(open.send(&raw::get("/healthz")).status, 200);

    server.terminate();
    let client = server.client.clone();
    let ready = eventually(Duration::from_secs(30), || {
        let reply = client.request("GET", "/readyz", &[], "");
        (reply.status != 200).then_some(reply)
    });
    assert_shutting_down(ready.status, ready.header("retry-after"), &ready.text());
    // A connection opened before the drain is answered, and told to close.
    let body = r#"{"amount":500,"currency":"EUR"}"#;
    let refused = open.send(&raw::post_order("late-key", body, body.len()));
    let retry_after = refused.headers.get("retry-after").map(String::as_str);
    assert_shutting_down(refused.status, retry_after, &refused.body);
    assert_eq!(
        refused.headers.get("connection").map(String::as_str),
        Some("close")
    );
    // A new connection gets no new work either.
    let late = client.post("/orders", Some("late-key"), body);
    assert_shutting_down(late.status, late.header("retry-after"), &late.text());

    pause.release();
    let paid = payment.join().unwrap().expect("the payment was answered");
    assert_eq!(paid.status, 201, "{}", paid.text());
    assert!(
        server.wait_exit().success(),
        "idempay exits 0 after a drain"
    );
    assert_one_payment(&client);
    assert_eq!(
        client.record_count(),
        2,
        "nothing stored for the refused requests"
    );
}

fn drain_leaves_what_it_cuts_off_to_the_reaper(backend: Backend) {
    let db = TestDb::create(backend);
    let pause = Pause::at("payment_created"); // never released while the server runs
    let (mut server, payment) = paused_payment(&db, &pause, &["--shutdown-grace-secs", "0"]);
    server.terminate();
    assert!(
        server.wait_exit().success(),
        "idempay exits 0 after a drain"
    );
    assert!(
        payment.join().unwrap().is_none(),
        "the cut-off request's connection was closed"
    );
    let client = Client::new(String::new(), &db.url);
    assert_eq!(
        client.records_in("processing"),
        1,
        "left at its recovery point"
    );

    let next = serve(&db.url, &["--reaper-interval-secs", "1"]);
    let client = &next.client;
    eventually(Duration::from_secs(30), || {
        (client.metric("idempay_reaper_recovered_total") >= 1).then_some(())
    });
    assert_eq!(client.records_in("processing"), 0);
    assert_eq!(client.metric("idempay_reaper_recovered_total"), 1);
    assert_one_payment(client);
}

crate::on_both_backends!(
    drain_lets_a_running_payment_finish,
    drain_leaves_what_it_cuts_off_to_the_reaper,
);
