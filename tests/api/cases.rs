//! The black-box cases of shared/cases/idempotency-cases.md that apply to orders:
//! C01–C05, C07, C09, C10.

use crate::helpers::{spawn_app, Backend};

const ORDER: &str = r#"{"amount":100,"currency":"EUR"}"#;

fn c01_key_order_does_not_matter(backend: Backend) {
    let app = spawn_app(backend);
    let first = app.post("/orders", Some("K1"), ORDER);
    assert_eq!(first.status, 201);
    let again = app.post(
        "/orders",
        Some("K1"),
        "{ \"currency\" : \"EUR\",\n \"amount\" : 100 }",
    );
    assert_eq!((again.status, again.replayed()), (201, true));
    assert_eq!(again.body, first.body);
    assert_eq!(app.order_count(), 1);
}

fn c02_nested_key_order_does_not_matter(backend: Backend) {
    let app = spawn_app(backend);
    let body = r#"{"amount":250,"currency":"USD","description":"two books","metadata":{"cart":"c_9","customer":"cus_1","channel":"web"}}"#;
    let first = app.post("/orders", Some("K2"), body);
    assert_eq!(first.status, 201, "{}", first.text());
    let reordered = r#"{"metadata":{"channel":"web","customer":"cus_1","cart":"c_9"},"description":"two books","currency":"USD","amount":250}"#;
    let again = app.post("/orders", Some("K2"), reordered);
    assert!(again.replayed());
    assert_eq!(again.body, first.body);
    assert_eq!(app.order_count(), 1);
}

fn c03_number_spelling_is_one_value(backend: Backend) {
    let app = spawn_app(backend);
    let first = app.post("/orders", Some("K3n"), ORDER);
    assert_eq!(first.status, 201);
    for spelling in ["100.0", "1e2", "1.00e2", "100.000"] {
        let body = format!(r#"{{"amount":{spelling},"currency":"EUR"}}"#);
        let again = app.post("/orders", Some("K3n"), &body);
        assert_eq!(
            (again.status, again.replayed()),
            (201, true),
            "{spelling}: {}",
            again.text()
        );
        assert_eq!(again.body, first.body);
    }
    // The same spellings on a fresh key create an order for the integer 100.
    let fresh = app.post("/orders", Some("K3m"), r#"{"amount":1e2,"currency":"EUR"}"#);
    assert_eq!(fresh.json()["amount"], 100);
    assert_eq!(app.order_count(), 2);
}

fn c04_changed_body_is_caught(backend: Backend) {
    let app = spawn_app(backend);
    let first = app.post("/orders", Some("K3"), ORDER);
    let id = first.json()["id"].as_str().unwrap().to_owned();
    let changed = app.post("/orders", Some("K3"), r#"{"amount":999,"currency":"EUR"}"#);
    assert_eq!(changed.status, 409);
    assert_eq!(changed.code(), "idempotency_key_reused");
    assert!(
        !changed.text().contains(&id),
        "a reused-key error names no order"
    );
    let again = app.post("/orders", Some("K3"), ORDER);
    assert!(again.replayed());
    assert_eq!(again.body, first.body);
    assert_eq!(app.order_count(), 1);
}

fn c05_keyless_and_malformed_keys(backend: Backend) {
    let app = spawn_app(backend);
    for _ in 0..2 {
        let keyless = app.post("/orders", None, ORDER);
        assert_eq!(keyless.status, 400);
        assert_eq!(keyless.code(), "idempotency_key_required");
    }
    for bad in ["", "\"\"", &"k".repeat(256), "has space", "\"unterminated"] {
        let reply = app.post("/orders", Some(bad), ORDER);
        assert_eq!(reply.status, 400, "key {bad:?}");
        assert_eq!(reply.code(), "invalid_idempotency_key");
    }
    let twice = format!(
        "POST /orders HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nIdempotency-Key: a\r\nIdempotency-Key: a\r\n\
         Content-Length: {}\r\n\r\n{ORDER}",
        app.api_key,
        ORDER.len()
    );
    assert_eq!(app.raw_status(&twice), 400);
    assert_eq!(app.order_count(), 0);
    // 255 characters is the longest key, and "K" is the same key as K.
    let longest = "k".repeat(255);
    assert_eq!(app.post("/orders", Some(&longest), ORDER).status, 201);
    let quoted = app.post("/orders", Some(&format!("\"{longest}\"")), ORDER);
    assert!(quoted.replayed());
    assert_eq!(app.order_count(), 1);
}

fn c07_concurrent_storm_creates_one_order(backend: Backend) {
    let app = spawn_app(backend);
    let barrier = std::sync::Barrier::new(20);
    let replies: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..20)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    app.post("/orders", Some("storm"), ORDER)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let fresh = replies
        .iter()
        .filter(|r| r.status == 201 && !r.replayed())
        .count();
    assert_eq!(fresh, 1, "exactly one execution");
    for reply in &replies {
        let ok = (reply.status == 201 && reply.header("location").is_some())
            || (reply.status == 409 && reply.code() == "idempotency_key_in_use");
        assert!(ok, "unexpected {}: {}", reply.status, reply.text());
    }
    assert_eq!(app.order_count(), 1);
}

fn c09_replay_is_faithful(backend: Backend) {
    let app = spawn_app(backend);
    let first = app.post("/orders", Some("K13"), ORDER);
    assert_eq!(first.status, 201);
    assert!(!first.replayed());
    let id = first.json()["id"].as_str().unwrap().to_owned();
    assert_eq!(
        first.header("location"),
        Some(format!("/orders/{id}").as_str())
    );
    let again = app.post("/orders", Some("K13"), ORDER);
    assert_eq!(again.status, 201, "a replay keeps the original status");
    assert!(again.replayed());
    assert_eq!(again.header("location"), first.header("location"));
    assert_eq!(again.header("content-type"), Some("application/json"));
    assert_eq!(again.body, first.body, "byte-identical body");
    assert!(again.header("set-cookie").is_none());
}

fn c10_keys_are_scoped_to_the_merchant(backend: Backend) {
    let app = spawn_app(backend);
    let other = app.create_merchant("Other merchant");
    let a = app.post("/orders", Some("K16"), ORDER);
    let a_id = a.json()["id"].as_str().unwrap().to_owned();
    let b = app.post_as(&other, "/orders", Some("K16"), ORDER);
    assert_eq!(
        (b.status, b.replayed()),
        (201, false),
        "B gets its own order"
    );
    assert_ne!(b.json()["id"], a.json()["id"]);
    assert!(!b.text().contains(&a_id));
    let a_again = app.post("/orders", Some("K16"), ORDER);
    assert!(a_again.replayed());
    assert_eq!(a_again.body, a.body);
    let peek = app.get_as(&other, &format!("/orders/{a_id}"));
    assert_eq!(peek.status, 404);
    assert_eq!(app.order_count(), 1);
}

crate::on_both_backends!(
    c01_key_order_does_not_matter,
    c02_nested_key_order_does_not_matter,
    c03_number_spelling_is_one_value,
    c04_changed_body_is_caught,
    c05_keyless_and_malformed_keys,
    c07_concurrent_storm_creates_one_order,
    c09_replay_is_faithful,
    c10_keys_are_scoped_to_the_merchant,
);
