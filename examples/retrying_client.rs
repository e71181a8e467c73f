//! A client that retries payments safely: the pattern idempay exists to teach.
//!
//! One logical operation (one payment of one order) gets one fresh `Idempotency-Key`,
//! chosen before the first attempt and sent on every retry. It retries, with the same
//! key, on what may succeed later: a timeout or connection error (the request may or may
//! not have executed: the key makes that question harmless), `503` (retryable or unknown
//! outcome), `409 idempotency_key_in_use` (the first attempt is still running) and `429`.
//! Between attempts it waits with exponential backoff and full jitter (a random pause in
//! `[0, min(cap, base · 2^attempt)]`), or `Retry-After` when the server gives one. It stops
//! at once on a final answer: a success, or a permanent error (`402` declined, `409
//! idempotency_key_reused`, `422`, …), which no retry can change.
//!
//! ```sh
//! cargo run --release -- serve --demo &          # the server, on 127.0.0.1:8080
//! cargo run --release --example retrying_client -- --fault drop-response
//! cargo run --release --example retrying_client -- --card pm_card_flaky
//! ```
//! Options: `--base URL` (default `http://127.0.0.1:8080`), `--api-key KEY` (default
//! the demo key), `--card PM` (default `pm_card_visa`), `--fault F` (an
//! `Idempay-Test-Fault` for the first attempt only), `--attempts N` (default 8).
//! Exits 0 when the payment succeeded, 1 otherwise.

use std::time::Duration;

use serde_json::{json, Value};

const BASE_DELAY: Duration = Duration::from_millis(100);
const MAX_DELAY: Duration = Duration::from_secs(5);

/// What one attempt ended with.
enum Attempt {
    /// A final answer: stop.
    Done(u16, Value),
    /// Try again with the same key, after the server's `Retry-After` if it sent one.
    Retry(String, Option<Duration>),
}

struct Options {
    base: String,
    api_key: String,
    card: String,
    fault: Option<String>,
    attempts: u32,
}

fn options() -> Options {
    let mut o = Options {
        base: "http://127.0.0.1:8080".into(),
        api_key: "sk_test_demo".into(),
        card: "pm_card_visa".into(),
        fault: None,
        attempts: 8,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    for pair in args.chunks(2) {
        let value = pair.get(1).cloned().unwrap_or_default();
        match pair[0].as_str() {
            "--base" => o.base = value,
            "--api-key" => o.api_key = value,
            "--card" => o.card = value,
            "--fault" => o.fault = Some(value),
            "--attempts" => o.attempts = value.parse().unwrap_or(8),
            other => {
                eprintln!("unknown option {other}");
                std::process::exit(2);
            }
        }
    }
    o
}

/// One POST under `key`; classifies the outcome as a client must.
fn attempt(
    agent: &ureq::Agent,
    o: &Options,
    path: &str,
    key: &str,
    body: &Value,
    fault: Option<&str>,
) -> Attempt {
    let mut request = agent
        .post(&format!("{}{path}", o.base))
        .set("Authorization", &format!("Bearer {}", o.api_key))
        .set("Idempotency-Key", key);
    if let Some(fault) = fault {
        request = request.set("Idempay-Test-Fault", fault);
    }
    let response = match request.send_json(body.clone()) {
        Ok(response) => response,
        Err(ureq::Error::Status(_, response)) => response,
        // No answer: the request may have executed or not. Same key, again.
        Err(ureq::Error::Transport(e)) => return Attempt::Retry(format!("no answer ({e})"), None),
    };
    let status = response.status();
    let replayed = response.header("Idempotent-Replayed") == Some("true");
    let retry_after = response
        .header("Retry-After")
        .and_then(|s| s.parse().ok())
        .map(Duration::from_secs);
    let body: Value = response.into_json().unwrap_or(Value::Null);
    let code = body["code"].as_str().unwrap_or_default().to_owned();
    match status {
        200..=299 => {
            println!(
                "    {status}{}",
                if replayed {
                    " (replayed: the first attempt's answer)"
                } else {
                    ""
                }
            );
            Attempt::Done(status, body)
        }
        409 if code == "idempotency_key_in_use" => {
            Attempt::Retry(format!("409 {code}"), retry_after)
        }
        429 | 503 => Attempt::Retry(format!("{status} {code}"), retry_after),
        _ => {
            println!("    {status} {code}: permanent, not retried");
            Attempt::Done(status, body)
        }
    }
}

/// Runs one logical operation to its final answer: one key, up to `o.attempts` tries.
fn run(
    agent: &ureq::Agent,
    o: &Options,
    what: &str,
    path: &str,
    body: Value,
    fault: Option<&str>,
) -> Option<(u16, Value)> {
    let key = uuid::Uuid::new_v4().to_string();
    println!("{what}: Idempotency-Key {key}");
    for n in 0..o.attempts {
        let fault = if n == 0 { fault } else { None };
        println!(
            "  attempt {}{}",
            n + 1,
            fault
                .map(|f| format!(" (Idempay-Test-Fault: {f})"))
                .unwrap_or_default()
        );
        match attempt(agent, o, path, &key, &body, fault) {
            Attempt::Done(status, body) => return Some((status, body)),
            Attempt::Retry(why, retry_after) => {
                let pause = retry_after.unwrap_or_else(|| full_jitter(n));
                println!(
                    "    {why}: retrying with the same key in {} ms",
                    pause.as_millis()
                );
                std::thread::sleep(pause);
            }
        }
    }
    println!(
        "  gave up after {} attempts (the key is kept: retry it later)",
        o.attempts
    );
    None
}

/// A random pause in `[0, min(MAX_DELAY, BASE_DELAY · 2^n)]` (AWS's "full jitter").
fn full_jitter(n: u32) -> Duration {
    let ceiling = BASE_DELAY.saturating_mul(1 << n.min(16)).min(MAX_DELAY);
    let random = uuid::Uuid::new_v4().as_u128() as u64;
    Duration::from_millis(random % (ceiling.as_millis() as u64 + 1))
}

fn main() {
    let o = options();
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(10))
        .build();
    let order = json!({"amount": 1999, "currency": "EUR", "description": "retrying client"});
    let Some((201, order)) = run(&agent, &o, "create order", "/orders", order, None) else {
        std::process::exit(1);
    };
    let order_id = order["id"].as_str().unwrap_or_default();
    let payment = json!({"order_id": order_id, "payment_method": o.card});
    let outcome = run(
        &agent,
        &o,
        "pay order",
        "/payments",
        payment,
        o.fault.as_deref(),
    );
    let Some((201, payment)) = outcome else {
        std::process::exit(1);
    };
    let url = format!("{}/payments?order_id={order_id}", o.base);
    let listed: Value = agent
        .get(&url)
        .set("Authorization", &format!("Bearer {}", o.api_key))
        .call()
        .ok()
        .and_then(|r| r.into_json().ok())
        .unwrap_or(Value::Null);
    let payments = listed["data"].as_array().map_or(0, Vec::len);
    println!(
        "payment {} {}; the order has {payments} payment(s)",
        payment["id"].as_str().unwrap_or_default(),
        payment["status"].as_str().unwrap_or_default()
    );
    std::process::exit(if payments == 1 { 0 } else { 1 });
}
