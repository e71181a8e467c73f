//! Every wait has a bound a client can see: a body shorter than its `Content-Length`
//! (408), a lock held by someone else (503 after the statement timeout, and the retry
//! succeeds once it is gone), a processor slower than the processor timeout (503
//! `processor_timeout`, nothing charged, and the retry resumes).

use diesel::connection::SimpleConnection;

use crate::helpers::{spawn_app_with, Backend};
use crate::raw::{self, Connection};

const ORDER: &str = r#"{"amount":900,"currency":"EUR"}"#;

fn short_body_gets_408_and_frees_the_connection(backend: Backend) {
    let app = spawn_app_with(backend, |c| c.body_timeout_ms = 300);
    for (declared, sent) in [(100, r#"{"amount""#), (ORDER.len() + 1, ORDER), (5, "")] {
        let mut conn = Connection::open(&app.base);
        let reply = conn.send(&raw::post_order("short", sent, declared));
        assert_eq!(reply.status, 408, "{}", reply.body);
        assert!(
            reply.body.contains(r#""code":"request_timeout""#),
            "{}",
            reply.body
        );
        assert!(conn.is_closed(), "the server closed the connection");
    }
    assert_eq!(app.record_count(), 0, "nothing stored");
    let whole = app.post("/orders", Some("short"), ORDER);
    assert_eq!(whole.status, 201, "{}", whole.text());
}

/// Holds a lock that order creation needs, on a connection of the test's own.
fn lock_order_writes(backend: Backend, conn: &mut idempay::db::DbConnection) {
    let sql = match backend {
        Backend::Sqlite => "BEGIN IMMEDIATE",
        Backend::Postgres => "BEGIN; LOCK TABLE orders IN EXCLUSIVE MODE",
    };
    conn.batch_execute(sql).expect("lock taken");
}

fn a_held_lock_is_a_503_and_the_retry_succeeds(backend: Backend) {
    let app = spawn_app_with(backend, |c| c.database.statement_timeout_ms = 300);
    let mut locker = app.db();
    lock_order_writes(backend, &mut locker);
    for _ in 0..2 {
        let blocked = app.post("/orders", Some("locked"), ORDER);
        assert_eq!(blocked.status, 503, "{}", blocked.text());
        assert_eq!(blocked.code(), "database_unavailable");
        assert!(blocked.header("retry-after").is_some());
    }
    assert_eq!(app.get("/orders").status, 200, "reads go on meanwhile");
    locker.batch_execute("COMMIT").expect("lock released");
    let retry = app.post("/orders", Some("locked"), ORDER);
    assert_eq!(retry.status, 201, "{}", retry.text());
    assert_eq!(app.order_count(), 1);
}

fn a_slow_processor_is_an_unknown_outcome_then_resumed(backend: Backend) {
    let app = spawn_app_with(backend, |c| {
        c.processor_timeout_ms = 200;
        c.slow_processor_ms = 1500;
    });
    let order = app.order(700);
    for _ in 0..2 {
        let slow = app.pay("slow-key", &order, "pm_card_slow");
        assert_eq!(slow.status, 503, "{}", slow.text());
        assert_eq!(slow.code(), "processor_timeout");
        assert_eq!(
            app.settled("charge"),
            0,
            "the call was cut off before it charged"
        );
    }
    let app = app.restart(|c| c.slow_processor_ms = 100);
    let paid = app.pay("slow-key", &order, "pm_card_slow");
    assert_eq!(paid.status, 201, "{}", paid.text());
    assert_eq!(app.settled("charge"), 1);
    let payments = app.get(&format!("/payments?order_id={order}")).json();
    assert_eq!(payments["data"].as_array().unwrap().len(), 1, "one payment");
}

crate::on_both_backends!(
    short_body_gets_408_and_frees_the_connection,
    a_held_lock_is_a_503_and_the_retry_succeeds,
    a_slow_processor_is_an_unknown_outcome_then_resumed,
);
