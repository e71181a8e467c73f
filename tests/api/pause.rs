//! Pausing an execution at a named point until the test releases it (see
//! `idempay::faults`): the test decides the order of events instead of sleeping and
//! hoping, in process and for the real binary alike.

use std::path::PathBuf;
use std::time::Duration;

use idempay::config::Config;

use crate::helpers::eventually;

/// One pause: where, in which attempt, and the file that releases it.
pub struct Pause {
    point: &'static str,
    attempt: Option<i32>,
    release: PathBuf,
}

impl Pause {
    /// Pauses every execution reaching `point`.
    pub fn at(point: &'static str) -> Self {
        let release =
            std::env::temp_dir().join(format!("idempay-release-{}", uuid::Uuid::new_v4().simple()));
        Self {
            point,
            attempt: None,
            release,
        }
    }

    /// Pauses only the first attempt of each execution (a retry that took it over goes
    /// straight through).
    pub fn first_attempt(mut self) -> Self {
        self.attempt = Some(1);
        self
    }

    /// Sets the pause on an in-process server's configuration.
    pub fn configure(&self, config: &mut Config) {
        config.faults.pause_at = Some(self.point.to_owned());
        config.faults.pause_attempt = self.attempt;
        config.faults.release_file = Some(self.release.clone());
    }

    /// The same as command-line arguments of `idempay serve`.
    pub fn args(&self) -> Vec<String> {
        let mut args = vec![
            "--test-fault-pause-at".to_owned(),
            self.point.to_owned(),
            "--test-fault-release-file".to_owned(),
            self.release.display().to_string(),
        ];
        if let Some(attempt) = self.attempt {
            args.extend(["--test-fault-pause-attempt".to_owned(), attempt.to_string()]);
        }
        args
    }

    /// Waits until an execution is paused at the point.
    pub fn wait_paused(&self) {
        let marker = idempay::faults::paused_marker(&self.release);
        eventually(Duration::from_secs(30), || marker.exists().then_some(()));
    }

    /// Lets every paused execution go on (and later ones pass straight through).
    pub fn release(&self) {
        std::fs::write(&self.release, b"go").expect("release file written");
    }
}

impl Drop for Pause {
    fn drop(&mut self) {
        self.release(); // never leave an execution waiting forever
        let _ = std::fs::remove_file(&self.release);
        let _ = std::fs::remove_file(idempay::faults::paused_marker(&self.release));
    }
}
