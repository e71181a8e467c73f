//! `Prefer: wait=N` (RFC 7240) on a key in use: the waiter gets the first request's
//! answer as soon as it exists, or the usual 409 when the wait runs out; waiters hold
//! no database connection, so a crowd of them on one key leaves every other request
//! served.

use std::thread;
use std::time::Duration;

use crate::helpers::{eventually, spawn_app_with, Backend};
use crate::pause::Pause;

const WAIT: Duration = Duration::from_secs(60);

fn payment_body(order: &str) -> String {
    format!(r#"{{"order_id":"{order}","payment_method":"pm_card_visa"}}"#)
}

fn a_waiter_gets_the_answer_when_the_first_request_finishes(backend: Backend) {
    let pause = Pause::at("before_charge").first_attempt();
    let app = spawn_app_with(backend, |c| pause.configure(c));
    let body = payment_body(&app.order(900));
    let (client, first_body) = (app.clone(), body.clone());
    let first = thread::spawn(move || client.post("/payments", Some("w1"), &first_body));
    pause.wait_paused();

    let (client, wait_body) = (app.clone(), body.clone());
    let waiter = thread::spawn(move || {
        client.send(
            "/payments",
            "w1",
            &wait_body,
            &[("Prefer", "wait=15")],
            WAIT,
        )
    });
    eventually(Duration::from_secs(10), || {
        (app.metric("idempay_key_waiters") == 1).then_some(())
    });
    pause.release();

    let first = first.join().unwrap();
    let waited = waiter.join().unwrap().expect("an answer");
    assert_eq!(first.status, 201, "{}", first.text());
    assert_eq!(waited.status, 201, "{}", waited.text());
    assert!(waited.replayed());
    assert_eq!(waited.body, first.body);
    assert_eq!(waited.header("preference-applied"), Some("wait=15"));
    assert_eq!(app.settled("charge"), 1);
    assert_eq!(app.metric("idempay_key_waiters"), 0);
}

fn a_wait_that_runs_out_is_answered_409(backend: Backend) {
    let pause = Pause::at("before_charge").first_attempt();
    let app = spawn_app_with(backend, |c| pause.configure(c));
    let body = payment_body(&app.order(900));
    let (client, first_body) = (app.clone(), body.clone());
    let first = thread::spawn(move || client.post("/payments", Some("w2"), &first_body));
    pause.wait_paused();

    for prefer in ["wait=1", "respond-async, wait=1", "wait=0"] {
        let reply = app
            .send("/payments", "w2", &body, &[("Prefer", prefer)], WAIT)
            .unwrap();
        assert_eq!(reply.status, 409, "{prefer}: {}", reply.text());
        assert_eq!(reply.code(), "idempotency_key_in_use");
        assert!(reply.header("retry-after").is_some());
    }
    // Every spelling RFC 7240 allows is honoured.
    for prefer in ["WAIT = \"1\"; x=y", "Wait=1"] {
        let reply = app
            .send("/payments", "w2", &body, &[("Prefer", prefer)], WAIT)
            .unwrap();
        assert_eq!(reply.status, 409, "{prefer}");
        assert_eq!(
            reply.header("preference-applied"),
            Some("wait=1"),
            "{prefer}"
        );
    }
    // A preference the server does not understand is ignored (RFC 7240 §2).
    for prefer in ["wait=soon", "handling=lenient"] {
        let reply = app
            .send("/payments", "w2", &body, &[("Prefer", prefer)], WAIT)
            .unwrap();
        assert_eq!(reply.status, 409, "{prefer}");
        assert!(reply.header("preference-applied").is_none());
    }
    // Another body under the key is refused at once, whatever the wait.
    let other = payment_body(&app.order(901));
    let reused = app
        .send("/payments", "w2", &other, &[("Prefer", "wait=5")], WAIT)
        .unwrap();
    assert_eq!(reused.code(), "idempotency_key_reused");

    pause.release();
    assert_eq!(first.join().unwrap().status, 201);
    assert_eq!(app.settled("charge"), 1);
}

fn a_hundred_waiters_on_one_key_leave_other_requests_served(backend: Backend) {
    let pause = Pause::at("before_charge").first_attempt();
    let app = spawn_app_with(backend, |c| pause.configure(c));
    let body = payment_body(&app.order(900));
    let (client, first_body) = (app.clone(), body.clone());
    let first = thread::spawn(move || client.post("/payments", Some("crowd"), &first_body));
    pause.wait_paused();

    let waiters: Vec<_> = (0..100)
        .map(|_| {
            let (client, body) = (app.clone(), body.clone());
            thread::spawn(move || {
                client.send("/payments", "crowd", &body, &[("Prefer", "wait=15")], WAIT)
            })
        })
        .collect();
    eventually(Duration::from_secs(20), || {
        (app.metric("idempay_key_waiters") == 100).then_some(())
    });
    // While all hundred wait, other work goes on (orders and reads: a payment would stop
    // at the same pause point).
    for n in 0..20 {
        app.order(100 + n);
        let listed = app.get("/payments");
        assert_eq!(listed.status, 200, "{}", listed.text());
    }
    assert_eq!(app.metric("idempay_key_waiters"), 100, "still waiting");
    pause.release();

    let first = first.join().unwrap();
    assert_eq!(first.status, 201);
    for waiter in waiters {
        let reply = waiter.join().unwrap().expect("an answer");
        assert_eq!(reply.status, 201, "{}", reply.text());
        assert_eq!(reply.body, first.body);
    }
    assert_eq!(app.settled("charge"), 1);
}

crate::on_both_backends!(
    a_waiter_gets_the_answer_when_the_first_request_finishes,
    a_wait_that_runs_out_is_answered_409,
    a_hundred_waiters_on_one_key_leave_other_requests_served,
);
