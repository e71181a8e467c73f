//! Fault injection, for tests only: every setting is off by default, and the command-line
//! form is hidden from `--help`. Crash tests pause an execution at a recovery point, then
//! SIGKILL the process; in-process tests stall an attempt or lose phase 3.

use std::time::Duration;

use clap::Args;

use crate::error::ApiError;

/// Where an execution may be paused: before phase 1, at a recovery point, or between the
/// processor call and phase 3.
pub const PAUSE_POINTS: [&str; 4] = [
    "started",
    "payment_created",
    "refund_created",
    "after_processor_call",
];

/// Test-only faults. Never set them in production.
#[derive(Debug, Clone, Default, Args)]
pub struct Faults {
    /// TEST ONLY: pause every payment/refund execution forever at this point and print
    /// `FAULT: paused at POINT` on standard output, so a test can SIGKILL the process.
    #[arg(long = "test-fault-pause-at", env = "IDEMPAY_TEST_FAULT_PAUSE_AT", hide = true, value_parser = PAUSE_POINTS)]
    pub pause_at: Option<String>,
    /// TEST ONLY: a paused execution resumes once this file exists (without it, a pause
    /// lasts forever), so a test decides exactly when the execution goes on.
    #[arg(
        long = "test-fault-release-file",
        env = "IDEMPAY_TEST_FAULT_RELEASE_FILE",
        hide = true
    )]
    pub release_file: Option<std::path::PathBuf>,
    /// Sleep this long inside the first attempt of every execution, after the claim and
    /// before its writes: lets a test take the lease over from a live owner.
    #[arg(skip)]
    pub stall_first_attempt: Option<Duration>,
    /// Sleep this long between renewing the lease and calling the processor, in the
    /// first attempt of an execution only: makes that execution call the processor late,
    /// after its lease was taken over (a stale call).
    #[arg(skip)]
    pub stall_before_processor_call: Option<Duration>,
    /// Fail every payment and refund right after the processor call and before phase 3,
    /// as if the process died there: the record stays `processing` at its recovery point.
    #[arg(skip)]
    pub crash_after_processor_call: bool,
}

impl Faults {
    /// Pauses at `point` if the test asked to: until the release file exists, or
    /// forever without one (the test kills the process).
    pub async fn pause_at(&self, point: &str) {
        if self.pause_at.as_deref() != Some(point) {
            return;
        }
        println!("FAULT: paused at {point}");
        tracing::error!(point, "test fault: execution paused");
        let Some(release) = &self.release_file else {
            return std::future::pending::<()>().await;
        };
        while !release.exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        println!("FAULT: released at {point}");
    }

    /// The fault right before the processor call (`attempts`: executions so far).
    pub async fn before_processor_call(&self, attempts: i32) {
        if let Some(stall) = self.stall_before_processor_call.filter(|_| attempts == 1) {
            tokio::time::sleep(stall).await;
        }
    }

    /// The faults between the processor call and phase 3.
    pub async fn after_processor_call(&self) -> Result<(), ApiError> {
        self.pause_at("after_processor_call").await;
        if self.crash_after_processor_call {
            return Err(ApiError::Database(
                "injected fault: lost between phase 2 and phase 3".into(),
            ));
        }
        Ok(())
    }
}
