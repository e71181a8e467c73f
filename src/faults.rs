//! Fault injection, for tests only: every setting is off by default, and the command-line
//! form is hidden from `--help`.
//!
//! A test pauses executions at a named point, optionally only in one attempt (the first
//! one, say, so that a retry can take the lease over while the first is frozen). A paused
//! execution creates `<release file>.paused`, so the test knows it got there, and goes on
//! once the release file exists; without a release file it waits forever (the test kills
//! the process). Tests decide the order of events; nothing waits on a sleep.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;

use crate::error::ApiError;

/// Where an execution may be paused: right after the claim (`claimed`, every keyed
/// request), before a payment's or refund's phase 1 (`started`), at a recovery point,
/// right before the processor call (`before_charge`, `before_refund`, after the lease
/// was renewed), or between the processor call and phase 3.
pub const PAUSE_POINTS: [&str; 7] = [
    "claimed",
    "started",
    "payment_created",
    "refund_created",
    "before_charge",
    "before_refund",
    "after_processor_call",
];

/// Test-only faults. Never set them in production.
#[derive(Debug, Clone, Default, Args)]
pub struct Faults {
    /// TEST ONLY: pause executions at this point and print `FAULT: paused at POINT` on
    /// standard output.
    #[arg(long = "test-fault-pause-at", env = "IDEMPAY_TEST_FAULT_PAUSE_AT", hide = true, value_parser = PAUSE_POINTS)]
    pub pause_at: Option<String>,
    /// TEST ONLY: pause only the execution whose attempt number is this (1: the first).
    #[arg(
        long = "test-fault-pause-attempt",
        env = "IDEMPAY_TEST_FAULT_PAUSE_ATTEMPT",
        hide = true
    )]
    pub pause_attempt: Option<i32>,
    /// TEST ONLY: a paused execution resumes once this file exists (without it, a pause
    /// lasts forever).
    #[arg(
        long = "test-fault-release-file",
        env = "IDEMPAY_TEST_FAULT_RELEASE_FILE",
        hide = true
    )]
    pub release_file: Option<PathBuf>,
    /// Fail every payment and refund right after the processor call and before phase 3,
    /// as if the process died there: the record stays `processing` at its recovery point.
    #[arg(skip)]
    pub crash_after_processor_call: bool,
}

/// The file a paused execution creates next to `release`.
pub fn paused_marker(release: &Path) -> PathBuf {
    let mut name = release.as_os_str().to_owned();
    name.push(".paused");
    name.into()
}

impl Faults {
    /// Pauses at `point` in attempt `attempt` if the test asked to, until the release
    /// file exists (or forever, without one).
    pub async fn pause_at(&self, point: &str, attempt: i32) {
        if self.pause_at.as_deref() != Some(point)
            || self.pause_attempt.is_some_and(|only| only != attempt)
        {
            return;
        }
        println!("FAULT: paused at {point}");
        tracing::error!(point, attempt, "test fault: execution paused");
        let Some(release) = &self.release_file else {
            return std::future::pending::<()>().await;
        };
        let _ = std::fs::write(paused_marker(release), point);
        while !release.exists() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        println!("FAULT: released at {point}");
    }

    /// The faults between the processor call and phase 3.
    pub async fn after_processor_call(&self, attempt: i32) -> Result<(), ApiError> {
        self.pause_at("after_processor_call", attempt).await;
        if self.crash_after_processor_call {
            return Err(ApiError::Database(
                "injected fault: lost between phase 2 and phase 3".into(),
            ));
        }
        Ok(())
    }
}
