//! API keys as an operator manages them (the real binary's `merchants` and `api-keys`
//! commands) and as a client meets them: several keys per merchant, each shown once and
//! stored hashed, revocation that every instance honours within 5 s, and the demo key
//! accepted only while `--demo` runs, never on the network unless asked.

use std::time::Duration;

use crate::helpers::{spawn_app_on, spawn_app_with, Backend};
use crate::process::{idempay, serve};

/// The last line of a command's output: a new key.
fn last_line(out: &str) -> String {
    out.lines().last().unwrap_or_default().trim().to_owned()
}

fn keys_are_created_listed_rotated_and_revoked(backend: Backend) {
    let app = spawn_app_with(backend, |_| {});
    let db = ["--database-url", app.database_url.as_str()];
    let (ok, out, err) = idempay(&[&["merchants", "create", "--name", "Shop"][..], &db].concat());
    assert!(ok, "{err}");
    let live = last_line(&out);
    assert!(
        live.starts_with("sk_live_") && live.len() == 8 + 64,
        "{live}"
    );
    let merchant = out
        .split_whitespace()
        .find(|w| w.starts_with("mer_"))
        .unwrap()
        .to_owned();
    let (ok, out, _) = idempay(
        &[
            &["api-keys", "create", "--merchant", &merchant, "--test"][..],
            &db,
        ]
        .concat(),
    );
    assert!(ok);
    let test = last_line(&out);
    assert!(test.starts_with("sk_test_"), "{test}");
    let test_id = out
        .split_whitespace()
        .find(|w| w.starts_with("key_"))
        .unwrap()
        .to_owned();

    // Both keys work, for the same merchant: rotation.
    let order = app.post_as(
        &live,
        "/orders",
        Some("k1"),
        r#"{"amount":5,"currency":"EUR"}"#,
    );
    assert_eq!(order.status, 201);
    let seen = app.get_as(&test, "/orders").json();
    assert_eq!(seen["data"][0]["id"], order.json()["id"]);

    // Listed by id and first characters, never in full; stored only hashed.
    let (_, list, _) = idempay(&[&["api-keys", "list", "--merchant", &merchant][..], &db].concat());
    assert_eq!(list.lines().count(), 2, "{list}");
    assert!(!list.contains(&live) && !list.contains(&test), "{list}");
    let stored = format!(
        "SELECT COUNT(*) AS n FROM api_keys WHERE key_hash = '{}'",
        idempay::auth::hash_api_key(&test)
    );
    assert_eq!(app.count(&stored), 1);
    assert_eq!(
        app.count(&format!(
            "SELECT COUNT(*) AS n FROM api_keys WHERE key_hash = '{test}'"
        )),
        0
    );
    let (_, merchants, _) = idempay(&[&["merchants", "list"][..], &db].concat());
    assert!(
        merchants.contains(&merchant) && merchants.contains("2 active key(s)"),
        "{merchants}"
    );

    // Revoked on the command line: this instance (which cached the key) and a second
    // one refuse it within 5 s; the other key goes on working.
    let second = spawn_app_on(app.database_url.clone(), |_| {});
    assert_eq!(
        second.get_as(&test, "/orders").status,
        200,
        "cached on the second too"
    );
    let (ok, out, _) = idempay(&[&["api-keys", "revoke", &test_id][..], &db].concat());
    assert!(ok && out.contains("revoked"), "{out}");
    std::thread::sleep(idempay::auth::CACHE_TTL + Duration::from_millis(500));
    for instance in [&app, &second] {
        assert_eq!(instance.get_as(&test, "/orders").code(), "unauthenticated");
        assert_eq!(instance.get_as(&live, "/orders").status, 200);
    }
    let (ok, _, err) = idempay(&[&["api-keys", "revoke", &test_id][..], &db].concat());
    assert!(!ok && err.contains("no active key"), "{err}");
}

fn the_demo_key_lives_only_while_demo_runs(backend: Backend) {
    let app = spawn_app_with(backend, |_| {}); // --demo (the test servers' default)
    assert_eq!(app.get("/orders").status, 200);
    let plain = spawn_app_on(app.database_url.clone(), |c| c.demo = false);
    assert_eq!(
        plain.get("/orders").code(),
        "unauthenticated",
        "sk_test_demo off --demo"
    );
    assert_eq!(
        app.get("/orders").status,
        200,
        "still on the --demo instance"
    );
}

fn demo_stays_off_the_network_unless_asked(backend: Backend) {
    let db = crate::pg::TestDb::create(backend);
    let (ok, _, err) = idempay(&[
        "serve",
        "--demo",
        "--bind",
        "0.0.0.0:0",
        "--database-url",
        &db.url,
    ]);
    assert!(!ok && err.contains("--allow-demo-on-network"), "{err}");
    let server = serve(&db.url, &["--bind", "0.0.0.0:0", "--allow-demo-on-network"]);
    assert!(
        server.client.base.starts_with("http://0.0.0.0:"),
        "the address bound: {}",
        server.client.base
    );
}

crate::on_both_backends!(
    keys_are_created_listed_rotated_and_revoked,
    the_demo_key_lives_only_while_demo_runs,
    demo_stays_off_the_network_unless_asked,
);
