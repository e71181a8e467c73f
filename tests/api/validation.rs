//! Every validation limit of `POST /orders`, at and just past its boundary: 422
//! `validation_failed` naming the member, 400 for JSON that could be read two ways.

use crate::helpers::{spawn_app, Backend};

fn metadata(pairs: usize, key_len: usize, value_len: usize) -> String {
    let members: Vec<String> = (0..pairs)
        .map(|i| {
            format!(
                r#""{}{i:02}":"{}""#,
                "k".repeat(key_len - 2),
                "v".repeat(value_len)
            )
        })
        .collect();
    format!(
        r#"{{"amount":1,"currency":"EUR","metadata":{{{}}}}}"#,
        members.join(",")
    )
}

fn order_limits_are_enforced(backend: Backend) {
    let app = spawn_app(backend);
    let accepted = [
        r#"{"amount":1,"currency":"EUR"}"#.to_owned(),
        r#"{"amount":1000000000000,"currency":"JPY"}"#.to_owned(),
        r#"{"amount":5,"currency":"EUR","description":null,"metadata":null}"#.to_owned(),
        format!(
            r#"{{"amount":1,"currency":"EUR","description":"{}"}}"#,
            "é".repeat(1000)
        ),
        metadata(50, 40, 500),
    ];
    for (i, body) in accepted.iter().enumerate() {
        let reply = app.post("/orders", Some(&format!("ok-{i}")), body);
        assert_eq!(reply.status, 201, "body {i}: {}", reply.text());
    }
    let rejected = [
        (r#"{"amount":0,"currency":"EUR"}"#.to_owned(), "amount"),
        (r#"{"amount":-1,"currency":"EUR"}"#.to_owned(), "amount"),
        (
            r#"{"amount":1000000000001,"currency":"EUR"}"#.to_owned(),
            "amount",
        ),
        (r#"{"amount":100.5,"currency":"EUR"}"#.to_owned(), "amount"),
        (r#"{"amount":"100","currency":"EUR"}"#.to_owned(), "amount"),
        (r#"{"currency":"EUR"}"#.to_owned(), "amount"),
        (r#"{"amount":1}"#.to_owned(), "currency"),
        (r#"{"amount":1,"currency":"eur"}"#.to_owned(), "currency"),
        (r#"{"amount":1,"currency":"XYZ"}"#.to_owned(), "currency"),
        (r#"{"amount":1,"currency":"EURO"}"#.to_owned(), "currency"),
        (r#"{"amount":1,"currency":7}"#.to_owned(), "currency"),
        (
            format!(
                r#"{{"amount":1,"currency":"EUR","description":"{}"}}"#,
                "é".repeat(1001)
            ),
            "description",
        ),
        (
            r#"{"amount":1,"currency":"EUR","metadata":[]}"#.to_owned(),
            "metadata",
        ),
        (metadata(51, 40, 1), "metadata"),
        (metadata(1, 41, 1), "metadata[long-key]"),
        (metadata(1, 40, 501), "metadata[40-key]"),
        (
            r#"{"amount":1,"currency":"EUR","metadata":{"n":1}}"#.to_owned(),
            "metadata[n]",
        ),
        (
            r#"{"amount":1,"currency":"EUR","metadata":{"":"x"}}"#.to_owned(),
            "metadata[]",
        ),
        (
            r#"{"amount":1,"currency":"EUR","colour":"red"}"#.to_owned(),
            "colour",
        ),
        (r#"[{"amount":1,"currency":"EUR"}]"#.to_owned(), "body"),
        // Found by a new user: PostgreSQL text cannot hold NUL (it was a retryable 503).
        (
            r#"{"amount":1,"currency":"EUR","description":"a\u0000b"}"#.to_owned(),
            "description",
        ),
    ];
    for (i, (body, param)) in rejected.iter().enumerate() {
        let reply = app.post("/orders", Some(&format!("bad-{i}")), body);
        assert_eq!(reply.status, 422, "body {i}: {}", reply.text());
        assert_eq!(reply.code(), "validation_failed");
        let expected = match *param {
            "metadata[long-key]" => format!("metadata[{}00]", "k".repeat(39)),
            "metadata[40-key]" => format!("metadata[{}00]", "k".repeat(38)),
            other => other.to_owned(),
        };
        assert_eq!(reply.json()["param"], expected.as_str(), "body {i}");
    }
    assert_eq!(app.order_count(), accepted.len());
}

fn ambiguous_and_malformed_json_is_400(backend: Backend) {
    let app = spawn_app(backend);
    for (body, code) in [
        (
            r#"{"amount":1,"amount":2,"currency":"EUR"}"#,
            "ambiguous_json",
        ),
        (
            r#"{"amount":1,"currency":"EUR","metadata":{"a":"1","a":"2"}}"#,
            "ambiguous_json",
        ),
        (
            r#"{"amount":9007199254740993,"currency":"EUR"}"#,
            "ambiguous_json",
        ),
        (r#"{"amount":1e400,"currency":"EUR"}"#, "invalid_json"),
        (r#"{"amount":1,"currency":"EUR""#, "invalid_json"),
        ("", "invalid_json"),
        ("\u{feff}{}", "invalid_json"),
    ] {
        let reply = app.post("/orders", Some("k"), body);
        assert_eq!(reply.status, 400, "{body}: {}", reply.text());
        assert_eq!(reply.code(), code, "{body}");
    }
    let not_utf8 = app.request(
        "POST",
        "/orders",
        &[
            ("Authorization", "Bearer sk_test_demo"),
            ("Idempotency-Key", "k"),
            ("Content-Type", "application/json"),
        ],
        "{\"amount\":1,\"currency\":\"EUR\",\"description\":\"\\ud800\"}",
    );
    assert!(
        not_utf8.status == 400 || not_utf8.status == 422,
        "lone surrogate: {}",
        not_utf8.status
    );
    assert_eq!(app.order_count(), 0);
}

fn amounts_must_be_integer_literals_on_every_endpoint(backend: Backend) {
    // Found by users: literals a double rounds to an integer were taken as that integer
    // (an order of 1 for 0.99999999999999999, a refund of 2000 for 1999.9999999999999).
    let app = spawn_app(backend);
    let order = app.order(5000);
    let paid = app.pay("pay", &order, "pm_card_visa");
    let refunds = format!("/payments/{}/refunds", paid.json()["id"].as_str().unwrap());
    let inexact = [
        "0.99999999999999999",
        "999999999999.99999",
        "1999.9999999999999",
        "1.5",
        "15e-1",
    ];
    for literal in inexact {
        let bodies = [
            (
                "/orders",
                format!(r#"{{"amount":{literal},"currency":"EUR"}}"#),
            ),
            (
                "/payments",
                format!(
                    r#"{{"order_id":"{order}","amount":{literal},"payment_method":"pm_card_visa"}}"#
                ),
            ),
            (refunds.as_str(), format!(r#"{{"amount":{literal}}}"#)),
        ];
        for (path, body) in bodies {
            let reply = app.post(path, Some(&format!("bad-{literal}")), &body);
            assert_eq!(
                (reply.status, reply.code().as_str()),
                (422, "validation_failed"),
                "{path} {literal}"
            );
            assert_eq!(reply.json()["param"], "amount", "{path} {literal}");
        }
    }
    assert_eq!(
        app.record_count(),
        2,
        "nothing stored: only the order and its payment"
    );
    // Exact integers in any spelling are the same integer (and the same request).
    let first = app.post(
        "/orders",
        Some("spelled"),
        r#"{"amount":1999,"currency":"EUR"}"#,
    );
    for spelling in ["1999.0", "1.999e3", "19990e-1"] {
        let again = app.post(
            "/orders",
            Some("spelled"),
            &format!(r#"{{"amount":{spelling},"currency":"EUR"}}"#),
        );
        assert!(again.replayed(), "{spelling}: {}", again.text());
        assert_eq!(again.body, first.body);
    }
    let refund = app.post(&refunds, Some("r"), r#"{"amount":2.0e3}"#);
    assert_eq!(refund.json()["amount"], 2000);
}

crate::on_both_backends!(
    amounts_must_be_integer_literals_on_every_endpoint,
    order_limits_are_enforced,
    ambiguous_and_malformed_json_is_400
);
