//! The chaos suite: idempay under the faults of a bad day, each scenario ending with an
//! audit of the money. `scripts/chaos.sh` builds idempay and runs it; or
//! `cargo run --example chaos -- [storm] [outage] [sigkill] [sqlite]` (all by default).
//!
//! - storm: 50 keys × 20 simultaneous duplicates across 3 instances on one PostgreSQL;
//! - outage: PostgreSQL stopped for 5 s under mixed load across 2 instances;
//! - sigkill: one of 3 instances SIGKILLed every 3 s under payment load;
//! - sqlite: the one SQLite instance SIGKILLed every 3 s under load.
//!
//! PostgreSQL runs in a throwaway cluster made with `initdb` (so it can be stopped).
//! Every answer is classified as it arrives (a 500, a non-problem error or a hang past
//! the request timeout is a violation), every key is then retried to its final answer,
//! and the audit checks one effect per key, the money, the ledger, and that nothing is
//! left `processing`. Exit status 1 if anything failed.

mod audit;
#[allow(dead_code)] // shared with the test suite, which uses all of it
#[path = "../../tests/api/cluster.rs"]
mod cluster;
mod fleet;
mod load;
mod scenarios;
mod workload;

use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// What a scenario did and found.
pub struct Outcome {
    name: String,
    seconds: f64,
    answers: [u64; 7],
    notes: Vec<String>,
    failures: Vec<String>,
}

impl Outcome {
    pub fn new(
        name: &str,
        started: Instant,
        tally: &load::Tally,
        notes: Vec<String>,
        failures: Vec<String>,
    ) -> Self {
        let c = |counter: &std::sync::atomic::AtomicU64| counter.load(Ordering::Relaxed);
        Self {
            name: name.into(),
            seconds: started.elapsed().as_secs_f64(),
            answers: [
                tally.total(),
                c(&tally.executed),
                c(&tally.replayed),
                c(&tally.declined),
                c(&tally.conflict),
                c(&tally.unavailable),
                c(&tally.transport),
            ],
            notes,
            failures,
        }
    }
}

fn main() -> ExitCode {
    let chosen: Vec<String> = std::env::args().skip(1).collect();
    let wants = |name: &str| chosen.is_empty() || chosen.iter().any(|c| c == name);
    let mut outcomes = Vec::new();
    if ["storm", "outage", "sigkill"].iter().any(|n| wants(n)) {
        let pg = cluster::Cluster::start();
        type Scenario = fn(&cluster::Cluster) -> Outcome;
        let pg_scenarios: [(&str, Scenario); 3] = [
            ("storm", scenarios::storm),
            ("outage", scenarios::outage),
            ("sigkill", scenarios::sigkill),
        ];
        for (name, run) in pg_scenarios {
            if wants(name) {
                eprintln!("chaos: {name}…");
                outcomes.push(run(&pg));
            }
        }
    }
    if wants("sqlite") {
        eprintln!("chaos: sqlite…");
        outcomes.push(scenarios::sqlite());
    }
    println!("| scenario | time | requests | executed | replayed | declined | 409 | 503 | transport errors | result |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for o in &outcomes {
        let [total, executed, replayed, declined, conflict, unavailable, transport] = o.answers;
        let result = if o.failures.is_empty() {
            "pass"
        } else {
            "FAIL"
        };
        println!(
            "| {} | {:.0} s | {total} | {executed} | {replayed} | {declined} | {conflict} | {unavailable} | {transport} | {result} |",
            o.name, o.seconds
        );
    }
    for o in &outcomes {
        println!("\n{}: {}", o.name, o.notes.join("; "));
        for failure in &o.failures {
            println!("  FAILED: {failure}");
        }
    }
    match outcomes.iter().all(|o| o.failures.is_empty()) {
        true => ExitCode::SUCCESS,
        false => ExitCode::FAILURE,
    }
}
