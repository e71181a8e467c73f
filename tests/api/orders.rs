//! Orders through HTTP: the created representation, reads, newest-first pages, cancel.

use crate::helpers::{spawn_app, Backend};

fn created_order_has_the_documented_shape(backend: Backend) {
    let app = spawn_app(backend);
    let body = r#"{"amount":1999,"currency":"EUR","description":"Caf\u00e9 cr\u00e8me","metadata":{"table":"7"}}"#;
    let reply = app.post("/orders", Some("shape"), body);
    assert_eq!(reply.status, 201, "{}", reply.text());
    let order = reply.json();
    let id = order["id"].as_str().unwrap();
    assert!(id.starts_with("ord_") && id.len() == 36, "{id}");
    assert_eq!(order["object"], "order");
    assert_eq!(order["amount"], 1999);
    assert_eq!(order["currency"], "EUR");
    assert_eq!(order["status"], "awaiting_payment");
    assert_eq!(order["amount_paid"], 0);
    assert_eq!(order["description"], "Café crème");
    assert_eq!(order["metadata"]["table"], "7");
    let created = order["created_at"].as_str().unwrap();
    assert!(chrono::DateTime::parse_from_rfc3339(created).is_ok() && created.ends_with('Z'));
    let fetched = app.get(&format!("/orders/{id}"));
    assert_eq!(fetched.status, 200);
    assert_eq!(fetched.json(), order);
}

fn unknown_and_malformed_ids_are_404(backend: Backend) {
    let app = spawn_app(backend);
    for id in ["ord_0000000000000000000000000000beef", "nope", "ORD_1"] {
        let reply = app.get(&format!("/orders/{id}"));
        assert_eq!(reply.status, 404, "{id}");
        assert_eq!(reply.code(), "resource_not_found");
    }
}

fn list_pages_newest_first(backend: Backend) {
    let app = spawn_app(backend);
    let ids: Vec<String> = (0..5)
        .map(|i| {
            app.create_order(
                &format!("k{i}"),
                &format!(r#"{{"amount":{},"currency":"EUR"}}"#, i + 1),
            )["id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    let page = app.get("/orders?limit=2").json();
    assert_eq!(page["object"], "list");
    assert_eq!(page["has_more"], true);
    let first: Vec<_> = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(first, vec![ids[4].clone(), ids[3].clone()]);
    let rest = app
        .get(&format!("/orders?limit=10&starting_after={}", ids[3]))
        .json();
    let rest: Vec<_> = rest["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(rest, vec![ids[2].clone(), ids[1].clone(), ids[0].clone()]);
    let last = app
        .get(&format!("/orders?starting_after={}", ids[1]))
        .json();
    assert_eq!(last["has_more"], false);
    assert_eq!(last["data"].as_array().unwrap().len(), 1);
    // A well-formed id that is not an order is just a bound.
    let bound = app.get("/orders?starting_after=ord_00000000000000000000000000000000");
    assert_eq!(bound.json()["data"].as_array().unwrap().len(), 0);
    for bad in [
        "limit=0",
        "limit=101",
        "limit=ten",
        "starting_after=42",
        "color=red",
    ] {
        let reply = app.get(&format!("/orders?{bad}"));
        assert_eq!(reply.status, 400, "{bad}");
        assert_eq!(reply.code(), "invalid_query");
    }
}

fn lists_are_scoped_to_the_merchant(backend: Backend) {
    let app = spawn_app(backend);
    app.create_order("mine", r#"{"amount":5,"currency":"EUR"}"#);
    let other = app.create_merchant("Other");
    let theirs = app.get_as(&other, "/orders").json();
    assert_eq!(theirs["data"].as_array().unwrap().len(), 0);
}

fn cancel_moves_an_order_to_cancelled_once(backend: Backend) {
    let app = spawn_app(backend);
    let order = app.create_order("to-cancel", r#"{"amount":5,"currency":"EUR"}"#);
    let path = format!("/orders/{}/cancel", order["id"].as_str().unwrap());
    let cancelled = app.post(&path, None, "");
    assert_eq!(cancelled.status, 200, "{}", cancelled.text());
    assert_eq!(cancelled.json()["status"], "cancelled");
    let again = app.post(&path, None, "");
    assert_eq!(
        again.status, 200,
        "repeating a successful cancel returns the order"
    );
    assert_eq!(again.json()["updated_at"], cancelled.json()["updated_at"]);
    let fetched = app
        .get(&format!("/orders/{}", order["id"].as_str().unwrap()))
        .json();
    assert_eq!(fetched["status"], "cancelled");
    let with_field = app.post(&path, None, r#"{"reason":"x"}"#);
    assert_eq!(with_field.status, 422);
}

crate::on_both_backends!(
    created_order_has_the_documented_shape,
    unknown_and_malformed_ids_are_404,
    list_pages_newest_first,
    lists_are_scoped_to_the_merchant,
    cancel_moves_an_order_to_cancelled_once,
);
