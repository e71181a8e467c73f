//! The clients: logical operations (create an order, pay it, refund part of it), each
//! with one idempotency key, sent to the instances in turn and retried with the same
//! key until a final answer. Every answer is classified as it arrives; anything a
//! correct server never says (a 500, a non-problem error, a reused-key 409 for a key
//! never reused, a hang past the request timeout) is a violation.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

/// What a logical operation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Order,
    Pay,
    Refund,
}

/// One logical operation: one key, one body, retried until final.
#[derive(Debug, Clone)]
pub struct Op {
    pub kind: Kind,
    pub key: String,
    pub path: String,
    pub body: String,
}

/// A final answer: a success or a decline, and whether it was a replay.
#[derive(Debug, Clone)]
pub struct Final {
    pub status: u16,
    pub body: Value,
    pub replayed: bool,
}

/// Counts of every answer seen, by class, and the violations.
#[derive(Debug, Default)]
pub struct Tally {
    pub executed: AtomicU64,
    pub replayed: AtomicU64,
    pub declined: AtomicU64,
    pub conflict: AtomicU64,
    pub unavailable: AtomicU64,
    pub transport: AtomicU64,
    pub violations: Mutex<Vec<String>>,
}

impl Tally {
    pub fn violate(&self, what: String) {
        self.violations.lock().expect("tally lock").push(what);
    }

    pub fn total(&self) -> u64 {
        [
            &self.executed,
            &self.replayed,
            &self.declined,
            &self.conflict,
            &self.unavailable,
            &self.transport,
        ]
        .iter()
        .map(|c| c.load(Ordering::Relaxed))
        .sum()
    }
}

/// Sends operations to a fleet's addresses and classifies the answers.
pub struct Clients {
    pub bases: Vec<String>,
    pub tally: Tally,
    /// Whether a refused or cut connection is expected (instances are being killed).
    pub transport_errors_expected: bool,
    next: AtomicUsize,
    agent: ureq::Agent,
}

/// A correct server answers within its request timeout; a little slack for the network
/// and the checkout before the handler.
const HANG: Duration = Duration::from_secs(super::fleet::REQUEST_TIMEOUT_SECS + 2);

impl Clients {
    pub fn new(bases: Vec<String>, transport_errors_expected: bool) -> Self {
        let agent = ureq::AgentBuilder::new().timeout(HANG).build();
        Self {
            bases,
            tally: Tally::default(),
            transport_errors_expected,
            next: AtomicUsize::new(0),
            agent,
        }
    }

    /// Sends `op` once to the next instance; `Some` for a final answer.
    pub fn send(&self, op: &Op) -> Option<Final> {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.bases.len();
        let started = Instant::now();
        let result = self
            .agent
            .post(&format!("{}{}", self.bases[i], op.path))
            .set("Authorization", "Bearer sk_test_demo")
            .set("Content-Type", "application/json")
            .set("Idempotency-Key", &op.key)
            .send_string(&op.body);
        let response = match result {
            Ok(r) | Err(ureq::Error::Status(_, r)) => r,
            Err(e) => {
                self.tally.transport.fetch_add(1, Ordering::Relaxed);
                if started.elapsed() >= HANG {
                    self.tally
                        .violate(format!("{} {}: no answer within {HANG:?}", op.path, op.key));
                } else if !self.transport_errors_expected {
                    self.tally.violate(format!("{} {}: {e}", op.path, op.key));
                }
                return None;
            }
        };
        self.classify(op, response)
    }

    fn classify(&self, op: &Op, response: ureq::Response) -> Option<Final> {
        let status = response.status();
        let replayed = response.header("Idempotent-Replayed") == Some("true");
        let problem = response.content_type() == "application/problem+json";
        let body: Value = response.into_json().unwrap_or(Value::Null);
        let code = body["code"].as_str().unwrap_or_default().to_owned();
        let t = &self.tally;
        let counter = match (status, code.as_str()) {
            (200 | 201, _) if replayed => &t.replayed,
            (200 | 201, _) => &t.executed,
            (402, _) if op.kind == Kind::Pay && problem => &t.declined,
            (409, "idempotency_key_in_use" | "payment_in_progress") if problem => {
                t.conflict.fetch_add(1, Ordering::Relaxed);
                return None;
            }
            (503, _) if problem => {
                t.unavailable.fetch_add(1, Ordering::Relaxed);
                return None;
            }
            _ => {
                t.violate(format!(
                    "{} {}: unexpected {status} {body}",
                    op.path, op.key
                ));
                return None;
            }
        };
        counter.fetch_add(1, Ordering::Relaxed);
        Some(Final {
            status,
            body,
            replayed,
        })
    }

    /// Retries `op` until a final answer, or until `stop` is set (then `None`).
    pub fn drive(&self, op: &Op, stop: &AtomicBool) -> Option<Final> {
        let mut pause = Duration::from_millis(50);
        while !stop.load(Ordering::Relaxed) {
            if let Some(answer) = self.send(op) {
                return Some(answer);
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(800));
        }
        None
    }

    /// Retries `op` until a final answer or `deadline`; a key that never gets one is a
    /// violation.
    pub fn settle(&self, op: &Op, deadline: Duration) -> Option<Final> {
        let stop = AtomicBool::new(false);
        let started = Instant::now();
        std::thread::scope(|s| {
            s.spawn(|| {
                while started.elapsed() < deadline && !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(50));
                }
                stop.store(true, Ordering::Relaxed);
            });
            let answer = self.drive(op, &stop);
            stop.store(true, Ordering::Relaxed);
            if answer.is_none() {
                self.tally.violate(format!(
                    "{} {}: no final answer in {deadline:?}",
                    op.path, op.key
                ));
            }
            answer
        })
    }
}
