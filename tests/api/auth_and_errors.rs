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

crate::on_both_backends!(
    malformed_path_ids_never_reach_the_database,
    optional_bodies_empty_and_empty_object_are_one_request,
    api_routes_need_a_valid_key,
    health_readiness_and_spec_need_no_key,
    framework_errors_are_problem_json,
);
