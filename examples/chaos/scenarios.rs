//! The four scenarios of the chaos suite. Each starts real instances, puts them under
//! load while something goes wrong, retries every key to its final answer, and audits.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::{Duration, Instant};

use crate::cluster::Cluster;
use crate::fleet::{Instance, REAPER_INTERVAL_SECS};
use crate::load::{Clients, Kind};
use crate::workload::{self, Journal};
use crate::{audit, Outcome};

const SHOPS: usize = 6;

fn bases(fleet: &[Instance]) -> Vec<String> {
    fleet.iter().map(Instance::base).collect()
}

fn fleet(url: &str, name: &str, n: usize) -> Vec<Instance> {
    (0..n)
        .map(|i| Instance::start(url, &format!("{name}-{i}")))
        .collect()
}

/// Ends a scenario: every key retried to its final answer, then the audit.
fn finish(
    name: &str,
    started: Instant,
    url: &str,
    fleet: &[Instance],
    clients: Clients,
    journal: &Journal,
    mut notes: Vec<String>,
) -> Outcome {
    journal.settle(&clients);
    let mut failures = audit::audit(url, journal);
    failures.extend(clients.tally.violations.lock().expect("tally").drain(..));
    failures.extend(fleet.iter().flat_map(Instance::panics));
    notes.insert(
        0,
        format!("{} keys", journal.0.lock().expect("journal").len()),
    );
    Outcome::new(name, started, &clients.tally, notes, failures)
}

/// Samples, until `stop`, how many `processing` records are past their lease by more
/// than one reaper interval (with jitter and a pass's own time); keeps the largest.
fn watch_overdue(url: &str, stop: &AtomicBool, worst: &AtomicI64) {
    let slack = chrono::TimeDelta::milliseconds((REAPER_INTERVAL_SECS * 1200 + 1000) as i64);
    while !stop.load(Ordering::Relaxed) {
        worst.fetch_max(audit::overdue(url, slack), Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// 50 keys × 20 simultaneous duplicates across 3 instances on one PostgreSQL: first
/// creating orders, then paying them.
pub fn storm(pg: &Cluster) -> Outcome {
    let started = Instant::now();
    let url = pg.create_database("chaos_storm");
    let fleet = fleet(&url, "storm", 3);
    let clients = Clients::new(bases(&fleet), false);
    let journal = Journal::default();
    let orders: Vec<_> = (0..50)
        .map(|k| workload::order(format!("storm-order-{k}"), 1500))
        .collect();
    let mut executed = workload::storm(&clients, &journal, &orders, 20);
    journal.settle(&clients);
    let ids: Vec<String> = journal
        .0
        .lock()
        .expect("journal")
        .iter()
        .filter(|(op, _)| op.kind == Kind::Order)
        .filter_map(|(_, a)| a.as_ref()?.body["id"].as_str().map(str::to_owned))
        .collect();
    let pays: Vec<_> = ids
        .iter()
        .enumerate()
        .map(|(k, id)| workload::payment(format!("storm-pay-{k}"), id, "pm_card_visa"))
        .collect();
    executed.extend(workload::storm(&clients, &journal, &pays, 20));
    let twice = executed.iter().filter(|&&n| n > 1).count();
    if twice > 0 {
        clients
            .tally
            .violate(format!("{twice} keys answered as executed more than once"));
    }
    let notes = vec!["3 instances, 50 keys × 20 copies, orders then payments".into()];
    finish("storm", started, &url, &fleet, clients, &journal, notes)
}

/// PostgreSQL stopped for 5 s under mixed load across 2 instances, then started.
pub fn outage(pg: &Cluster) -> Outcome {
    let started = Instant::now();
    let url = pg.create_database("chaos_outage");
    let fleet = fleet(&url, "outage", 2);
    let clients = Clients::new(bases(&fleet), false);
    let (journal, stop) = (Journal::default(), AtomicBool::new(false));
    let mut notes = vec!["2 instances; PostgreSQL stopped (fast) for 5 s".to_owned()];
    std::thread::scope(|s| {
        for worker in 0..SHOPS {
            let (clients, journal, stop) = (&clients, &journal, &stop);
            s.spawn(move || workload::shop(clients, journal, stop, worker));
        }
        std::thread::sleep(Duration::from_secs(4));
        pg.stop("fast");
        std::thread::sleep(Duration::from_secs(5));
        pg.start_again();
        let back = Instant::now();
        let probe = ureq::AgentBuilder::new()
            .timeout(Duration::from_secs(5))
            .build();
        for instance in &fleet {
            let ready = |()| {
                probe
                    .get(&format!("{}/readyz", instance.base()))
                    .call()
                    .is_ok()
            };
            while !ready(()) && back.elapsed() < Duration::from_secs(30) {
                std::thread::sleep(Duration::from_millis(50));
            }
            let took = back.elapsed();
            notes.push(format!(
                "{} ready {} ms after the database",
                instance.base(),
                took.as_millis()
            ));
            if took > Duration::from_secs(5) {
                clients
                    .tally
                    .violate(format!("{} took {took:?} to recover", instance.base()));
            }
        }
        std::thread::sleep(Duration::from_secs(4));
        stop.store(true, Ordering::Relaxed);
    });
    finish("outage", started, &url, &fleet, clients, &journal, notes)
}

/// Kills the fleet's instances in turn with SIGKILL under load, `rounds` times 3 s
/// apart, starting each again at once; returns the most records ever seen overdue.
fn kill_under_load(
    url: &str,
    fleet: &mut [Instance],
    clients: &Clients,
    journal: &Journal,
    rounds: usize,
) -> i64 {
    let (stop, watch_done, worst) = (
        AtomicBool::new(false),
        AtomicBool::new(false),
        AtomicI64::new(0),
    );
    std::thread::scope(|s| {
        s.spawn(|| watch_overdue(url, &watch_done, &worst));
        for worker in 0..SHOPS {
            let (stop, journal) = (&stop, journal);
            s.spawn(move || workload::shop(clients, journal, stop, worker));
        }
        for round in 0..rounds {
            std::thread::sleep(Duration::from_secs(3));
            let victim = &mut fleet[round % fleet.len()];
            victim.kill();
            std::thread::sleep(Duration::from_millis(300));
            victim.restart();
        }
        std::thread::sleep(Duration::from_secs(3));
        stop.store(true, Ordering::Relaxed);
        watch_done.store(true, Ordering::Relaxed);
    });
    worst.load(Ordering::Relaxed)
}

/// One of 3 instances SIGKILLed every 3 s under payment load; the others' reapers (and
/// the clients' retries) resolve its records.
pub fn sigkill(pg: &Cluster) -> Outcome {
    let started = Instant::now();
    let url = pg.create_database("chaos_sigkill");
    let mut fleet = fleet(&url, "sigkill", 3);
    let clients = Clients::new(bases(&fleet), true);
    let journal = Journal::default();
    let worst = kill_under_load(&url, &mut fleet, &clients, &journal, 6);
    if worst > 0 {
        clients.tally.violate(format!(
            "{worst} records stayed processing past lease + interval"
        ));
    }
    let notes = vec!["3 instances on PostgreSQL, 6 SIGKILLs 3 s apart".into()];
    finish("sigkill", started, &url, &fleet, clients, &journal, notes)
}

/// SQLite: the one instance SIGKILLed every 3 s under load, restarted on the same file.
pub fn sqlite() -> Outcome {
    let started = Instant::now();
    let path = std::env::temp_dir().join(format!("idempay-chaos-{}.db", std::process::id()));
    let url = format!("sqlite://{}", path.display());
    let mut fleet = fleet(&url, "sqlite", 1);
    let clients = Clients::new(bases(&fleet), true);
    let journal = Journal::default();
    let worst = kill_under_load(&url, &mut fleet, &clients, &journal, 4);
    if worst > 0 {
        clients.tally.violate(format!(
            "{worst} records stayed processing past lease + interval"
        ));
    }
    let notes = vec!["1 instance on SQLite, 4 SIGKILLs 3 s apart".into()];
    let outcome = finish("sqlite", started, &url, &fleet, clients, &journal, notes);
    drop(fleet);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    outcome
}
