//! Authentication, health, the spec, and the HTTP layer's own failures as problem+json.

use crate::helpers::{spawn_app, Backend};

fn api_routes_need_a_valid_key(backend: Backend) {
    let app = spawn_app(backend);
    let none = app.request("GET", "/orders", &[], "");
    assert_eq!(none.status, 401);
    assert_eq!(none.code(), "unauthenticated");
    assert_eq!(none.header("www-authenticate"), Some("Bearer"));
    assert_eq!(app.get_as("sk_test_wrong", "/orders").status, 401);
    let basic = app.request(
        "GET",
        "/orders",
        &[("Authorization", "Basic c2tfdGVzdF9kZW1vOg==")],
        "",
    );
    assert_eq!(basic.status, 401);
    let post = app.request(
        "POST",
        "/orders",
        &[
            ("Idempotency-Key", "a"),
            ("Content-Type", "application/json"),
        ],
        "{}",
    );
    assert_eq!(post.status, 401);
    // A merchant created from the command line authenticates with its own key.
    let key = app.create_merchant("CLI merchant");
    assert_eq!(app.get_as(&key, "/orders").status, 200);
}

fn health_readiness_and_spec_need_no_key(backend: Backend) {
    let app = spawn_app(backend);
    assert_eq!(
        app.request("GET", "/healthz", &[], "").json()["status"],
        "ok"
    );
    assert_eq!(
        app.request("GET", "/readyz", &[], "").json()["status"],
        "ready"
    );
    let spec = app.request("GET", "/openapi.yaml", &[], "");
    assert_eq!(spec.status, 200);
    assert!(spec.text().contains("openapi: 3.1"));
    assert!(spec.header("x-request-id").is_some());
}

fn framework_errors_are_problem_json(backend: Backend) {
    let app = spawn_app(backend);
    let missing = app.get("/nowhere");
    assert_eq!(
        (missing.status, missing.code().as_str()),
        (404, "route_not_found")
    );
    let method = app.request(
        "DELETE",
        "/orders",
        &[("Authorization", "Bearer sk_test_demo")],
        "",
    );
    assert_eq!(
        (method.status, method.code().as_str()),
        (405, "method_not_allowed")
    );
    let auth = ("Authorization", "Bearer sk_test_demo");
    let text = app.request(
        "POST",
        "/orders",
        &[
            auth,
            ("Idempotency-Key", "t"),
            ("Content-Type", "text/plain"),
        ],
        "{}",
    );
    assert_eq!(
        (text.status, text.code().as_str()),
        (415, "unsupported_media_type")
    );
    let no_type = app.request("POST", "/orders", &[auth, ("Idempotency-Key", "t")], "{}");
    assert_eq!(no_type.status, 415);
    let huge = format!(
        r#"{{"amount":1,"currency":"EUR","description":"{}"}}"#,
        "x".repeat(70 * 1024)
    );
    let too_big = app.post("/orders", Some("big"), &huge);
    assert_eq!(
        (too_big.status, too_big.code().as_str()),
        (413, "payload_too_large")
    );
    let bad_query = app.get("/orders?limit=%ZZ");
    assert!(
        bad_query.status == 400 || bad_query.status == 200,
        "never a 500"
    );
    assert_eq!(app.order_count(), 0);
}

fn malformed_path_ids_never_reach_the_database(backend: Backend) {
    // Found by attacking the server: a NUL in a path id was a retryable 503 on PostgreSQL.
    let app = spawn_app(backend);
    for path in [
        "/orders/%00/cancel",
        "/payments/%00/refunds",
        "/orders/a%00b",
    ] {
        let reply = app.post(path, Some("nul"), "{}");
        let reply = if path.ends_with('b') {
            app.get(path)
        } else {
            reply
        };
        assert_eq!(
            (reply.status, reply.code().as_str()),
            (404, "resource_not_found"),
            "{path}"
        );
    }
    assert_eq!(app.record_count(), 0, "nothing stored");
}

fn optional_bodies_empty_and_empty_object_are_one_request(backend: Backend) {
    let app = spawn_app(backend);
    let order = app.order(100);
    let path = format!("/orders/{order}/cancel");
    let first = app.post(&path, Some("c"), "");
    assert!(app.post(&path, Some("c"), "{}").replayed());
    assert_eq!(app.post(&path, Some("c"), "{}").body, first.body);
}

fn one_rule_for_query_parameters_and_head_on_every_get(backend: Backend) {
    let app = spawn_app(backend);
    let order = app.order(100);
    let body = r#"{"amount":5,"currency":"EUR"}"#;
    // A parameter the route does not define is refused, on a POST as on a GET...
    for (method, path) in [
        ("POST", "/orders?force=1".to_owned()),
        ("POST", format!("/orders/{order}/cancel?x=1")),
        ("GET", format!("/orders/{order}?expand=payments")),
        ("GET", "/orders?sort=asc".to_owned()),
    ] {
        let headers = [
            ("Authorization", "Bearer sk_test_demo"),
            ("Idempotency-Key", "q"),
            ("Content-Type", "application/json"),
        ];
        let reply = app.request(
            method,
            &path,
            &headers,
            if method == "POST" { body } else { "" },
        );
        assert_eq!(
            (reply.status, reply.code().as_str()),
            (400, "invalid_query"),
            "{method} {path}"
        );
    }
    // ...and so is a parameter given twice: neither the first nor the last wins.
    for path in ["/orders?limit=1&limit=2", "/payments?order_id=a&order_id=b"] {
        let reply = app.get(path);
        assert_eq!(
            (reply.status, reply.code().as_str()),
            (400, "invalid_query"),
            "{path}"
        );
    }
    assert_eq!(
        app.record_count(),
        1,
        "nothing stored for the refused POSTs"
    );
    // HEAD answers every GET route with its status and headers, and no body.
    for path in [
        "/healthz",
        "/readyz",
        "/metrics",
        "/openapi.yaml",
        "/orders",
        &format!("/orders/{order}"),
        "/payments",
    ] {
        let head = app.request(
            "HEAD",
            path,
            &[("Authorization", "Bearer sk_test_demo")],
            "",
        );
        let get = app.request("GET", path, &[("Authorization", "Bearer sk_test_demo")], "");
        assert_eq!(head.status, get.status, "{path}");
        assert_eq!(
            head.header("content-type"),
            get.header("content-type"),
            "{path}"
        );
        assert!(head.body.is_empty(), "{path}");
    }
    let missing = app.request(
        "HEAD",
        "/refunds/re_0000000000000000000000000000beef",
        &[("Authorization", "Bearer sk_test_demo")],
        "",
    );
    assert_eq!(missing.status, 404);
}

fn malformed_http_is_refused_before_the_app(backend: Backend) {
    // actix's parser refuses these before any handler runs: an empty 4xx and the
    // connection closed (so no problem document, no request id: see the README).
    let app = spawn_app(backend);
    for (request, status) in [
        ("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Bad: a\u{1}b\r\n\r\n".to_owned(), 400),
        ("POST /orders HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".to_owned(), 400),
        (format!("GET /healthz HTTP/1.1\r\nHost: x\r\n{}\r\n", "X-H: v\r\n".repeat(200)), 431),
        ("NONSENSE\r\n\r\n".to_owned(), 400),
    ] {
        assert_eq!(app.raw_status(&request), status, "{request:.60}");
    }
    assert_eq!(
        app.request("GET", "/healthz", &[], "").status,
        200,
        "the server is fine"
    );
}

crate::on_both_backends!(
    one_rule_for_query_parameters_and_head_on_every_get,
    malformed_http_is_refused_before_the_app,
    malformed_path_ids_never_reach_the_database,
    optional_bodies_empty_and_empty_object_are_one_request,
    api_routes_need_a_valid_key,
    health_readiness_and_spec_need_no_key,
    framework_errors_are_problem_json,
);
