//! The workloads: a mixed stream of orders, payments and refunds (each worker chains
//! them as a shop would), and a storm of simultaneous duplicates. Every logical
//! operation goes into a journal with its final answer, for the audit.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::Duration;

use crate::load::{Clients, Final, Kind, Op};

/// Every logical operation sent, with its final answer (`None` until it has one).
#[derive(Default)]
pub struct Journal(pub Mutex<Vec<(Op, Option<Final>)>>);

impl Journal {
    fn push(&self, op: &Op, answer: &Option<Final>) {
        let entry = (op.clone(), answer.clone());
        self.0.lock().expect("journal lock").push(entry);
    }

    /// Retries every operation without a final answer until it has one, in parallel.
    pub fn settle(&self, clients: &Clients) {
        let mut entries = self.0.lock().expect("journal lock");
        let mut open: Vec<&mut (Op, Option<Final>)> =
            entries.iter_mut().filter(|(_, a)| a.is_none()).collect();
        let per_thread = open.len().div_ceil(8).max(1);
        std::thread::scope(|s| {
            for chunk in open.chunks_mut(per_thread) {
                s.spawn(|| {
                    for entry in chunk.iter_mut() {
                        entry.1 = clients.settle(&entry.0, Duration::from_secs(60));
                    }
                });
            }
        });
    }
}

/// Payment methods of the mixed load: every one reaches a final answer on retry.
const CARDS: [&str; 6] = [
    "pm_card_visa",
    "pm_card_visa",
    "pm_card_flaky",
    "pm_card_timeout",
    "pm_card_declined",
    "pm_card_slow",
];

pub fn order(key: String, amount: i64) -> Op {
    Op {
        kind: Kind::Order,
        key,
        path: "/orders".into(),
        body: format!(r#"{{"amount":{amount},"currency":"EUR"}}"#),
    }
}

pub fn payment(key: String, order_id: &str, card: &str) -> Op {
    Op {
        kind: Kind::Pay,
        key,
        path: "/payments".into(),
        body: format!(r#"{{"order_id":"{order_id}","payment_method":"{card}"}}"#),
    }
}

fn refund(key: String, payment_id: &str, amount: i64) -> Op {
    Op {
        kind: Kind::Refund,
        key,
        path: format!("/payments/{payment_id}/refunds"),
        body: format!(r#"{{"amount":{amount}}}"#),
    }
}

/// One shop: orders, each paid with the next card, every other paid one partly
/// refunded, until `stop`. An operation cut short by `stop` is journaled without an
/// answer and its chain ends there.
pub fn shop(clients: &Clients, journal: &Journal, stop: &AtomicBool, worker: usize) {
    let run = uuid::Uuid::new_v4().simple().to_string();
    for n in 0usize.. {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let tag = format!("{}-w{worker}-{n}", &run[..8]);
        let amount = 1000 + (n as i64 % 7) * 250;
        let mut op = order(format!("{tag}-order"), amount);
        let mut answer = clients.drive(&op, stop);
        journal.push(&op, &answer);
        let Some(Final {
            status: 201, body, ..
        }) = answer
        else {
            continue;
        };
        let card = CARDS[(n + worker) % CARDS.len()];
        op = payment(
            format!("{tag}-pay"),
            body["id"].as_str().unwrap_or_default(),
            card,
        );
        answer = clients.drive(&op, stop);
        journal.push(&op, &answer);
        let Some(Final {
            status: 201, body, ..
        }) = answer
        else {
            continue;
        };
        if n % 2 == 0 {
            let id = body["id"].as_str().unwrap_or_default();
            op = refund(format!("{tag}-refund"), id, amount / 3);
            answer = clients.drive(&op, stop);
            journal.push(&op, &answer);
        }
    }
}

/// Sends each of `ops` `duplicates` times at the same instant (a batch of keys at a
/// time, all copies released by one barrier), journals each key's final answer, and
/// returns how many copies of each key executed (answered without being a replay).
pub fn storm(clients: &Clients, journal: &Journal, ops: &[Op], duplicates: usize) -> Vec<usize> {
    let mut executed = Vec::with_capacity(ops.len());
    for batch in ops.chunks(5) {
        let barrier = Barrier::new(batch.len() * duplicates);
        let answers: Vec<Vec<Option<Final>>> = std::thread::scope(|s| {
            let handles: Vec<_> = batch
                .iter()
                .map(|op| {
                    let copies: Vec<_> = (0..duplicates)
                        .map(|_| {
                            s.spawn(|| {
                                barrier.wait();
                                clients.send(op)
                            })
                        })
                        .collect();
                    copies
                })
                .collect();
            handles
                .into_iter()
                .map(|copies| {
                    copies
                        .into_iter()
                        .map(|h| h.join().expect("sender"))
                        .collect()
                })
                .collect()
        });
        for (op, copies) in batch.iter().zip(answers) {
            executed.push(copies.iter().flatten().filter(|a| !a.replayed).count());
            journal.push(op, &copies.into_iter().flatten().next());
        }
    }
    executed
}
