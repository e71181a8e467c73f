//! What an operator reads: JSON log lines (`--log-format json`), bounded whatever the
//! client sends, failed authentication logged with the client's address, and the
//! request id in every problem document (a stored one keeps its first request's id, so
//! its replays stay byte-identical).

use serde_json::Value;

use crate::helpers::{spawn_app, Backend};
use crate::pg::TestDb;
use crate::process::serve;

fn problems_name_their_request(backend: Backend) {
    let app = spawn_app(backend);
    let problems = [
        app.request(
            "GET",
            "/orders",
            &[("Authorization", "Bearer sk_wrong")],
            "",
        ),
        app.request("GET", "/nowhere", &[("X-Request-Id", "my-request-1")], ""),
        app.post("/orders", Some("bad"), r#"{"amount":-1,"currency":"EUR"}"#),
        app.post("/orders", None, r#"{"amount":1,"currency":"EUR"}"#),
    ];
    for reply in &problems {
        let id = reply
            .header("x-request-id")
            .expect("every response names its request");
        assert_eq!(reply.json()["request_id"], id, "{}", reply.text());
    }
    assert_eq!(problems[1].json()["request_id"], "my-request-1");

    let order = app.order(300);
    let declined = app.pay("declined", &order, "pm_card_declined");
    let replay = app.pay("declined", &order, "pm_card_declined");
    assert_eq!(declined.code(), "card_declined");
    assert_eq!(replay.body, declined.body, "a replay is byte-identical");
    assert_eq!(
        replay.json()["request_id"],
        declined.header("x-request-id").unwrap()
    );
    assert_ne!(
        replay.header("x-request-id"),
        declined.header("x-request-id")
    );
}

fn json_logs_are_bounded_and_name_failed_clients(backend: Backend) {
    let db = TestDb::create(backend);
    let server = serve(&db.url, &["--log-format", "json"]);
    let client = &server.client;
    let refused = client.request(
        "GET",
        "/orders",
        &[("Authorization", "Bearer sk_guess")],
        "",
    );
    assert_eq!(refused.status, 401);
    let long = format!("/{}", "a".repeat(65_000));
    assert_eq!(client.request("GET", &long, &[], "").status, 404);
    assert_eq!(client.order(100).len(), 36);
    let log = eventually_logged(&server, "handled", 3);
    for line in log.lines() {
        let parsed: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert!(
            parsed["timestamp"].is_string() && parsed["level"].is_string(),
            "{line}"
        );
        assert!(line.len() < 2_000, "a log line of {} bytes", line.len());
    }
    let failed = log
        .lines()
        .find(|l| l.contains("authentication failed"))
        .expect("logged");
    assert!(
        failed.contains(r#""client":"127.0.0.1""#),
        "the client's address: {failed}"
    );
    assert!(!failed.contains("sk_guess"), "never the key");
    assert!(
        log.contains("(65001 bytes)"),
        "the long path is cut and marked"
    );
}

/// The server's log once it holds `count` lines containing `needle`.
fn eventually_logged(server: &crate::process::Server, needle: &str, count: usize) -> String {
    crate::helpers::eventually(std::time::Duration::from_secs(10), || {
        let log = server.log();
        (log.matches(needle).count() >= count).then_some(log)
    })
}

crate::on_both_backends!(
    problems_name_their_request,
    json_logs_are_bounded_and_name_failed_clients,
);
