//! Counters for `GET /metrics`, in the Prometheus text exposition format.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

/// Process-wide counters. Each instance counts its own work; sum across instances.
#[derive(Debug, Default)]
pub struct Metrics {
    /// Reaper passes run.
    pub reaper_passes: AtomicU64,
    /// Stuck records at `started` released as `failed_retryable`.
    pub reaper_released: AtomicU64,
    /// Stuck records resumed from a recovery point and completed.
    pub reaper_recovered: AtomicU64,
    /// Expired records deleted.
    pub reaper_purged: AtomicU64,
    /// Recoveries that failed again (backed off).
    pub reaper_errors: AtomicU64,
    /// Recoveries that keep failing: an operator should look.
    pub reaper_flagged: AtomicU64,
    /// Executions that found their lease taken over and stopped without committing.
    pub leases_lost: AtomicU64,
}

impl Metrics {
    /// Adds `n` to `counter`.
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// The counters as Prometheus text.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (name, help, counter) in [
            (
                "idempay_reaper_passes_total",
                "Reaper passes run.",
                &self.reaper_passes,
            ),
            (
                "idempay_reaper_released_total",
                "Stuck records at `started` released for retry.",
                &self.reaper_released,
            ),
            (
                "idempay_reaper_recovered_total",
                "Stuck records resumed from a recovery point.",
                &self.reaper_recovered,
            ),
            (
                "idempay_reaper_purged_total",
                "Expired idempotency records deleted.",
                &self.reaper_purged,
            ),
            (
                "idempay_reaper_errors_total",
                "Recoveries that failed and were backed off.",
                &self.reaper_errors,
            ),
            (
                "idempay_reaper_flagged_total",
                "Recoveries failing repeatedly; operator attention needed.",
                &self.reaper_flagged,
            ),
            (
                "idempay_leases_lost_total",
                "Executions fenced off: their lease was taken over.",
                &self.leases_lost,
            ),
        ] {
            let value = counter.load(Ordering::Relaxed);
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}"
            );
        }
        out
    }
}
