//! Limits at the gate: a key over its request rate gets `429 rate_limited` with
//! `Retry-After` and stores nothing; an address that failed authentication too often is
//! refused before its credentials are looked at, right key or wrong; two
//! `Authorization` headers are a 400, never first- or last-wins.

use crate::helpers::{spawn_app_with, Backend};
use crate::raw::Connection;

const ORDER: &str = r#"{"amount":250,"currency":"EUR"}"#;

fn a_key_over_its_rate_is_refused_and_nothing_is_stored(backend: Backend) {
    let app = spawn_app_with(backend, |c| c.rate_limit_per_key = Some(2)); // bursts of 4
    let replies: Vec<_> = (0..12)
        .map(|i| app.post("/orders", Some(&format!("r{i}")), ORDER))
        .collect();
    let refused: Vec<_> = replies.iter().filter(|r| r.status == 429).collect();
    assert!(
        !refused.is_empty(),
        "12 requests at once exceed 2/s with bursts of 4"
    );
    for reply in &refused {
        assert_eq!(reply.code(), "rate_limited");
        let wait: u64 = reply.header("retry-after").unwrap().parse().unwrap();
        assert!(wait >= 1);
        assert!(reply.json()["retryable"].as_bool().unwrap());
    }
    let created = replies.iter().filter(|r| r.status == 201).count();
    assert_eq!(created + refused.len(), 12);
    assert_eq!(
        app.record_count(),
        created as i64,
        "a refused request stores nothing"
    );
    assert!(app.metric(r#"idempay_rate_limited_total{reason="api_key"}"#) >= 1);
}

fn failed_authentication_is_throttled_per_address(backend: Backend) {
    let app = spawn_app_with(backend, |c| c.auth_failures_per_minute = 3);
    for _ in 0..3 {
        assert_eq!(app.get_as("sk_guess", "/orders").code(), "unauthenticated");
    }
    let throttled = app.get_as("sk_guess", "/orders");
    assert_eq!(throttled.code(), "rate_limited");
    assert!(throttled.header("retry-after").is_some());
    // Refused before the credentials are looked at: a right key learns nothing either.
    assert_eq!(app.get("/orders").code(), "rate_limited");
    assert!(app.metric(r#"idempay_rate_limited_total{reason="failed_auth"}"#) >= 2);
    assert_eq!(
        app.request("GET", "/healthz", &[], "").status,
        200,
        "health needs no key"
    );
}

fn two_authorization_headers_are_refused(backend: Backend) {
    let app = spawn_app_with(backend, |_| {});
    for second in ["Bearer sk_test_demo", "Bearer sk_other"] {
        let mut conn = Connection::open(&app.base);
        let reply = conn.send(&format!(
            "GET /orders HTTP/1.1\r\nHost: idempay\r\nAuthorization: Bearer sk_test_demo\r\n\
             Authorization: {second}\r\n\r\n"
        ));
        assert_eq!(reply.status, 400, "{}", reply.body);
        assert!(
            reply.body.contains(r#""code":"duplicate_header""#),
            "{}",
            reply.body
        );
    }
}

crate::on_both_backends!(
    a_key_over_its_rate_is_refused_and_nothing_is_stored,
    failed_authentication_is_throttled_per_address,
    two_authorization_headers_are_refused,
);
