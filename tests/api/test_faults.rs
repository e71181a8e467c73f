//! `Idempay-Test-Fault` on every keyed endpoint: each fault, then a retry with the same
//! key, gives exactly one effect (one order, one charge, one refund, one cancellation);
//! live keys and malformed values are refused with 400 and nothing happens.

use std::time::Duration;

use crate::client::{Client, Reply};
use crate::helpers::{spawn_app, Backend};

const PATIENT: Duration = Duration::from_secs(60);
/// Shorter than the `delay=` sent: the client gives up, as a real one would.
const IMPATIENT: Duration = Duration::from_millis(300);

/// One keyed endpoint: where to POST, what, and how to count its effect.
struct Endpoint {
    path: String,
    body: String,
    effects: fn(&Client) -> i64,
}

fn endpoints(app: &Client) -> Vec<Endpoint> {
    let paid = app.pay(
        &uuid::Uuid::new_v4().to_string(),
        &app.order(5000),
        "pm_card_visa",
    );
    let payment = paid.json()["id"].as_str().unwrap().to_owned();
    vec![
        Endpoint {
            path: "/orders".into(),
            body: r#"{"amount":250,"currency":"EUR"}"#.into(),
            effects: |c| c.count("SELECT COUNT(*) AS n FROM orders"),
        },
        Endpoint {
            path: format!("/orders/{}/cancel", app.order(5)),
            body: String::new(),
            effects: |c| c.count("SELECT COUNT(*) AS n FROM orders WHERE status = 'cancelled'"),
        },
        Endpoint {
            path: "/payments".into(),
            body: format!(
                r#"{{"order_id":"{}","payment_method":"pm_card_visa"}}"#,
                app.order(70)
            ),
            effects: |c| c.settled("charge"),
        },
        Endpoint {
            path: format!("/payments/{payment}/refunds"),
            body: r#"{"amount":10}"#.into(),
            effects: |c| c.settled("refund"),
        },
    ]
}

/// Sends `fault` to `endpoint` under a fresh key, checks what the client saw with
/// `first`, then retries without the fault: one effect in all, the retry a success.
fn fault_then_retry(
    app: &Client,
    fault: &str,
    timeout: Duration,
    first: fn(&Result<Reply, String>) -> bool,
) {
    for endpoint in endpoints(app) {
        let key = uuid::Uuid::new_v4().to_string();
        let before = (endpoint.effects)(app);
        let faulted = app.send(
            &endpoint.path,
            &key,
            &endpoint.body,
            &[("Idempay-Test-Fault", fault)],
            timeout,
        );
        assert!(first(&faulted), "{fault} on {}: {faulted:?}", endpoint.path);
        let retry = app
            .send(&endpoint.path, &key, &endpoint.body, &[], PATIENT)
            .unwrap();
        assert!(
            retry.status < 300,
            "{fault} on {}: {}",
            endpoint.path,
            retry.text()
        );
        assert_eq!(
            (endpoint.effects)(app),
            before + 1,
            "{fault} on {}",
            endpoint.path
        );
        // Whether the retry was a replay tells whether the fault executed.
        assert_eq!(
            retry.replayed(),
            fault != "fail-before",
            "{fault} on {}",
            endpoint.path
        );
    }
}

fn is_test_fault_503(reply: &Result<Reply, String>) -> bool {
    matches!(reply, Ok(r) if r.status == 503 && r.code() == "test_fault" && r.header("retry-after").is_some())
}

fn fail_before_executes_nothing(backend: Backend) {
    fault_then_retry(
        &spawn_app(backend),
        "fail-before",
        PATIENT,
        is_test_fault_503,
    );
}

fn fail_after_executes_and_hides_the_answer(backend: Backend) {
    fault_then_retry(
        &spawn_app(backend),
        "fail-after",
        PATIENT,
        is_test_fault_503,
    );
}

fn drop_response_executes_and_closes_the_connection(backend: Backend) {
    fault_then_retry(&spawn_app(backend), "drop-response", PATIENT, |reply| {
        reply.is_err()
    });
}

fn delay_executes_and_answers_late(backend: Backend) {
    let app = spawn_app(backend);
    // The client that gives up first retries into the replay.
    fault_then_retry(&app, "delay=3000", IMPATIENT, |reply| reply.is_err());
    // The client that waits gets the first answer itself.
    let late = app.send(
        "/orders",
        "late",
        r#"{"amount":1,"currency":"EUR"}"#,
        &[("Idempay-Test-Fault", "delay=200")],
        PATIENT,
    );
    let late = late.unwrap();
    assert_eq!(late.status, 201);
    assert!(!late.replayed());
}

fn faults_are_refused_for_live_keys_and_malformed_values(backend: Backend) {
    let app = spawn_app(backend);
    let live = app.create_merchant("Live shop");
    let orders = |c: &Client| c.count("SELECT COUNT(*) AS n FROM orders");
    let before = orders(&app);
    for fault in [
        "fail-before",
        "fail-after",
        "drop-response",
        "delay=10",
        "bogus",
        "",
    ] {
        let auth = format!("Bearer {live}");
        let headers = [
            ("Authorization", auth.as_str()),
            ("Content-Type", "application/json"),
            ("Idempotency-Key", "live-1"),
            ("Idempay-Test-Fault", fault),
        ];
        let reply = app.request(
            "POST",
            "/orders",
            &headers,
            r#"{"amount":5,"currency":"EUR"}"#,
        );
        assert_eq!(reply.status, 400, "{fault}");
        assert_eq!(reply.code(), "test_fault_not_allowed");
    }
    for fault in [
        "explode",
        "delay=abc",
        "delay=60001",
        "delay=-1",
        "delay=+10",
        "delay=000000000010",
        "delay=",
        "DROP-RESPONSE",
        "",
        "fail-before,fail-after",
    ] {
        let reply = app
            .send(
                "/orders",
                "bad-1",
                r#"{"amount":5,"currency":"EUR"}"#,
                &[("Idempay-Test-Fault", fault)],
                PATIENT,
            )
            .unwrap();
        assert_eq!(reply.status, 400, "{fault:?}");
        assert_eq!(reply.code(), "invalid_test_fault", "{fault:?}");
    }
    assert_eq!(orders(&app), before, "a refused fault executes nothing");
    // Without a key at all, authentication answers first.
    let anonymous = app.request(
        "POST",
        "/orders",
        &[("Idempay-Test-Fault", "fail-after")],
        "{}",
    );
    assert_eq!(anonymous.status, 401);
}

/// A request the API refuses before executing it gets its refusal, whatever fault it
/// asked for: the fault never turns a 4xx into "executed".
fn refusals_are_answered_without_the_fault(backend: Backend) {
    let app = spawn_app(backend);
    let orders = |c: &Client| c.count("SELECT COUNT(*) AS n FROM orders");
    let auth = format!("Bearer {}", app.api_key);
    for fault in ["fail-after", "drop-response", "delay=3000"] {
        let header = [("Idempay-Test-Fault", fault)];
        let invalid = app.send(
            "/orders",
            "v-1",
            r#"{"amount":-1,"currency":"EUR"}"#,
            &header,
            PATIENT,
        );
        let invalid = invalid.unwrap_or_else(|e| panic!("{fault}: {e}"));
        assert_eq!(
            (invalid.status, invalid.code()),
            (422, "validation_failed".into()),
            "{fault}"
        );
        let bad_key = app.send(
            "/orders",
            "a b",
            r#"{"amount":1,"currency":"EUR"}"#,
            &header,
            PATIENT,
        );
        assert_eq!(
            bad_key.unwrap().code(),
            "invalid_idempotency_key",
            "{fault}"
        );
        let json = ("Content-Type", "application/json");
        let no_key = app.request(
            "POST",
            "/orders",
            &[("Authorization", auth.as_str()), json, header[0]],
            r#"{"amount":1,"currency":"EUR"}"#,
        );
        assert_eq!(no_key.code(), "idempotency_key_required", "{fault}");
        let text = ("Content-Type", "text/plain");
        let text = app.request(
            "POST",
            "/orders",
            &[
                ("Authorization", auth.as_str()),
                text,
                ("Idempotency-Key", "t-1"),
                header[0],
            ],
            "x",
        );
        assert_eq!(text.status, 415, "{fault}");
    }
    // A cancel (whose key is optional) with a fault and no key is served without it:
    // there is no key to retry with.
    let order = app.order(5);
    let cancel = app.request(
        "POST",
        &format!("/orders/{order}/cancel"),
        &[
            ("Authorization", auth.as_str()),
            ("Idempay-Test-Fault", "drop-response"),
        ],
        "",
    );
    assert_eq!(cancel.status, 200, "{}", cancel.text());
    assert_eq!(cancel.json()["status"], "cancelled");
    // Sent twice, even with one valid value: refused.
    let body = r#"{"amount":1,"currency":"EUR"}"#;
    let twice = format!(
        "POST /orders HTTP/1.1\r\nHost: x\r\nAuthorization: {auth}\r\nContent-Type: application/json\r\nIdempotency-Key: tw-1\r\nIdempay-Test-Fault: fail-before\r\nIdempay-Test-Fault: drop-response\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    assert_eq!(app.raw_status(&twice), 400);
    assert_eq!(orders(&app), 1, "only the order made to cancel");
}

crate::on_both_backends!(
    refusals_are_answered_without_the_fault,
    fail_before_executes_nothing,
    fail_after_executes_and_hides_the_answer,
    drop_response_executes_and_closes_the_connection,
    delay_executes_and_answers_late,
    faults_are_refused_for_live_keys_and_malformed_values,
);
