//! The instances under test: real `idempay serve` processes on fixed ports (so a killed
//! one comes back at the same address), started, SIGKILLed and restarted at will.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The settings every chaos instance runs with: short leases and timeouts, so that a
/// scenario sees many recoveries in a few seconds.
pub const LEASE_SECS: u64 = 6;
pub const REAPER_INTERVAL_SECS: u64 = 1;
pub const REQUEST_TIMEOUT_SECS: u64 = 4;

/// One `idempay serve` process.
pub struct Instance {
    child: Option<Child>,
    port: u16,
    database_url: String,
    log: PathBuf,
}

fn binary() -> PathBuf {
    if let Some(bin) = std::env::var_os("IDEMPAY_BIN") {
        return bin.into();
    }
    // target/<profile>/examples/chaos → target/<profile>/idempay
    let exe = std::env::current_exe().expect("own path");
    exe.parent()
        .and_then(|examples| examples.parent())
        .map(|profile| profile.join("idempay"))
        .expect("the idempay binary beside the examples")
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("bound").port()
}

impl Instance {
    /// Starts an instance on a free port against `database_url`.
    pub fn start(database_url: &str, name: &str) -> Self {
        let log =
            std::env::temp_dir().join(format!("idempay-chaos-{}-{name}.log", std::process::id()));
        let mut instance = Self {
            child: None,
            port: free_port(),
            database_url: database_url.to_owned(),
            log,
        };
        instance.restart();
        instance
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Starts the process again on the same port and database (after [`Self::kill`]).
    pub fn restart(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("log file");
        let bind = format!("127.0.0.1:{}", self.port);
        let (lease, interval, timeout) = (
            LEASE_SECS.to_string(),
            REAPER_INTERVAL_SECS.to_string(),
            REQUEST_TIMEOUT_SECS.to_string(),
        );
        #[rustfmt::skip]
        let args = [
            "serve", "--demo", "--bind", &bind, "--database-url", &self.database_url,
            "--lease-secs", &lease, "--reaper-interval-secs", &interval,
            "--request-timeout-secs", &timeout, "--pool-timeout-ms", "1000",
            "--statement-timeout-ms", "1000", "--processor-latency-ms", "5",
            "--slow-processor-ms", "300",
        ];
        let mut child = Command::new(binary())
            .args(args)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("idempay starts");
        let stdout = child.stdout.take().expect("stdout piped");
        let mut lines = BufReader::new(stdout).lines();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match lines.next() {
                Some(Ok(line)) if line.starts_with("idempay listening on") => break,
                Some(_) if Instant::now() < deadline => {}
                _ => panic!(
                    "instance on {bind} did not start; see {}",
                    self.log.display()
                ),
            }
        }
        // Keep draining standard output so the process never blocks on it.
        std::thread::spawn(move || lines.for_each(drop));
        self.child = Some(child);
    }

    /// SIGKILL: dies at once, mid-request, nothing cleaned up.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Lines of this instance's log that say it panicked.
    pub fn panics(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("panicked"))
            .map(str::to_owned)
            .collect()
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        self.kill();
        if self.panics().is_empty() {
            let _ = std::fs::remove_file(&self.log);
        }
    }
}
