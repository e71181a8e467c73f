//! Key inspection as a client developer uses it: `GET /idempotency_keys/{key}` through
//! each state of a record (processing, failed_retryable, succeeded, failed, expired →
//! 404), scoped to its merchant and never showing a stored body or a lock token; the
//! list, newest first, by status and page; and `Idempotency-Key-Expires` on first
//! answers and replays alike.

use std::thread;

use crate::helpers::{spawn_app, spawn_app_with, Backend};
use crate::pause::Pause;

/// The keys this module sends: one per state, one that needs percent-encoding.
const ENCODED: (&str, &str) = ("pay-1/a?b#c%", "pay-1%2Fa%3Fb%23c%25");

fn a_key_shows_each_state_of_its_record(backend: Backend) {
    let pause = Pause::at("before_charge");
    let app = spawn_app_with(backend, |c| pause.configure(c));
    let order = app.order(1500);
    let client = app.clone();
    let body = format!(r#"{{"order_id":"{order}","payment_method":"pm_card_visa"}}"#);
    let first = thread::spawn(move || client.post("/payments", Some(ENCODED.0), &body));
    pause.wait_paused();

    let path = format!("/idempotency_keys/{}", ENCODED.1);
    let processing = app.get(&path);
    assert_eq!(processing.status, 200, "{}", processing.text());
    let view = processing.json();
    assert_eq!(view["object"], "idempotency_key");
    assert_eq!(view["key"], ENCODED.0);
    assert_eq!(view["status"], "processing");
    assert_eq!(view["recovery_point"], "payment_created");
    assert_eq!(
        (view["method"].as_str(), view["path"].as_str()),
        (Some("POST"), Some("/payments"))
    );
    assert!(
        view["locked_until"].is_string() && view["response"].is_null(),
        "{view}"
    );
    assert!(view["expires_at"].is_null(), "{view}");
    let fingerprint = view["fingerprint"].as_str().unwrap();
    assert!(fingerprint.len() == 64 && fingerprint.bytes().all(|b| b.is_ascii_hexdigit()));
    pause.release();
    let paid = first.join().unwrap();
    assert_eq!(paid.status, 201, "{}", paid.text());

    let succeeded = app.get(&path).json();
    assert_eq!(succeeded["status"], "succeeded");
    assert_eq!(succeeded["attempts"], 1);
    assert!(succeeded["locked_until"].is_null(), "{succeeded}");
    assert_eq!(succeeded["response"]["status"], 201);
    let payment = paid.json()["id"].as_str().unwrap().to_owned();
    assert_eq!(succeeded["response"]["resource_id"], payment.as_str());
    assert_eq!(succeeded["response"]["url"], format!("/payments/{payment}"));
    // Never the stored body, never the lease's token.
    let text = app.get(&path).text();
    assert!(
        !text.contains("pm_card_visa") && !text.contains("lock_token"),
        "{text}"
    );

    // Expired (the reaper not yet run): 404 at once.
    let changed = app.execute_sql(
        "UPDATE idempotency_records SET expires_at = created_at WHERE idempotency_key = 'pay-1/a?b#c%'",
    );
    assert_eq!(changed, 1);
    let expired = app.get(&path);
    assert_eq!(expired.status, 404);
    assert_eq!(expired.code(), "resource_not_found");
}

fn failures_show_as_failed_or_retryable(backend: Backend) {
    let app = spawn_app(backend);
    let declined = app.pay("declined", &app.order(100), "pm_card_declined");
    assert_eq!(declined.status, 402);
    let view = app.get("/idempotency_keys/declined").json();
    assert_eq!(view["status"], "failed");
    assert_eq!(view["response"]["status"], 402);

    let down = app.pay("down", &app.order(100), "pm_card_processor_down");
    assert_eq!(down.status, 503);
    let view = app.get("/idempotency_keys/down").json();
    assert_eq!(view["status"], "failed_retryable", "{view}");
    assert!(view["response"].is_null(), "{view}");

    for unknown in ["never-sent", "%20", "x%00y"] {
        let reply = app.get(&format!("/idempotency_keys/{unknown}"));
        assert_eq!(reply.status, 404, "{unknown}: {}", reply.text());
        assert_eq!(reply.code(), "resource_not_found");
    }
}

fn a_merchant_sees_only_its_own_keys(backend: Backend) {
    let app = spawn_app(backend);
    app.order(100);
    let mine = app.get("/idempotency_keys").json();
    assert_eq!(mine["data"].as_array().unwrap().len(), 1);
    let shared = mine["data"][0]["key"].as_str().unwrap().to_owned();

    let other = app.create_merchant("Other");
    let theirs = app.get_as(&other, &format!("/idempotency_keys/{shared}"));
    assert_eq!(theirs.status, 404);
    let listed = app.get_as(&other, "/idempotency_keys").json();
    assert_eq!(listed["data"].as_array().unwrap().len(), 0, "{listed}");
    // The same key under the other merchant is its own record.
    let body = r#"{"amount":7,"currency":"EUR"}"#;
    assert_eq!(
        app.post_as(&other, "/orders", Some(&shared), body).status,
        201
    );
    let view = app
        .get_as(&other, &format!("/idempotency_keys/{shared}"))
        .json();
    assert_ne!(view["id"], mine["data"][0]["id"]);
}

fn the_list_is_newest_first_by_status_and_page(backend: Backend) {
    let app = spawn_app(backend);
    for key in ["k1", "k2", "k3"] {
        app.create_order(key, r#"{"amount":5,"currency":"EUR"}"#);
    }
    app.pay("k4", &app.order(5), "pm_card_declined");
    let all = app.get("/idempotency_keys?limit=10").json();
    let keys: Vec<_> = all["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["key"].clone())
        .collect();
    assert_eq!(keys[0], "k4");
    assert_eq!(&keys[keys.len() - 3..], ["k3", "k2", "k1"]);

    let failed = app.get("/idempotency_keys?status=failed").json();
    assert_eq!(failed["data"].as_array().unwrap().len(), 1);
    assert_eq!(failed["data"][0]["key"], "k4");

    let first = app.get("/idempotency_keys?limit=1&status=succeeded").json();
    assert_eq!(first["has_more"], true);
    let after = first["data"][0]["id"].as_str().unwrap();
    let next = app.get(&format!(
        "/idempotency_keys?limit=1&status=succeeded&starting_after={after}"
    ));
    assert_ne!(next.json()["data"][0]["id"], first["data"][0]["id"]);

    for bad in [
        "status=stuck",
        "status=",
        "limit=0",
        "starting_after=ord_1",
        "colour=red",
    ] {
        let reply = app.get(&format!("/idempotency_keys?{bad}"));
        assert_eq!(reply.status, 400, "{bad}: {}", reply.text());
        assert_eq!(reply.code(), "invalid_query", "{bad}");
    }
}

fn finished_keys_tell_when_they_expire(backend: Backend) {
    let app = spawn_app(backend);
    let body = r#"{"amount":5,"currency":"EUR"}"#;
    let order = app.post("/orders", Some("exp"), body);
    let replay = app.post("/orders", Some("exp"), body);
    // A replay with another spelling of the same body goes through the engine, not the
    // byte-for-byte shortcut.
    let respelled = app.post("/orders", Some("exp"), r#"{"currency":"EUR","amount":5}"#);
    let declined = app.pay("dec", &app.order(5), "pm_card_declined");
    let declined_again = app.pay("dec", &app.order(5), "pm_card_declined");
    assert_eq!(
        declined_again.status, 409,
        "a different order: another request"
    );
    let dec_view = app.get("/idempotency_keys/dec").json();

    let expires = order
        .header("idempotency-key-expires")
        .expect("on the first answer");
    for reply in [&replay, &respelled] {
        assert!(reply.replayed());
        assert_eq!(reply.header("idempotency-key-expires"), Some(expires));
        assert_eq!(reply.body, order.body, "replays stay byte-identical");
    }
    let at = chrono::DateTime::parse_from_rfc2822(&expires.replace("GMT", "+0000")).unwrap();
    let view = app.get("/idempotency_keys/exp").json();
    let stored =
        chrono::DateTime::parse_from_rfc3339(view["expires_at"].as_str().unwrap()).unwrap();
    assert!((stored - at).num_seconds().abs() <= 1, "{stored} vs {at}");
    // A stored failure tells it too.
    assert!(declined.header("idempotency-key-expires").is_some());
    assert_eq!(dec_view["status"], "failed");
    // A refusal that stores nothing does not.
    assert!(declined_again.header("idempotency-key-expires").is_none());
}

crate::on_both_backends!(
    a_key_shows_each_state_of_its_record,
    failures_show_as_failed_or_retryable,
    a_merchant_sees_only_its_own_keys,
    the_list_is_newest_first_by_status_and_page,
    finished_keys_tell_when_they_expire,
);
