//! The real `idempay` binary as a child process: started on port 0, read from its
//! standard output, and killed with SIGKILL (`Child::kill`) for crash tests.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use crate::helpers::Client;

/// A running `idempay serve` process.
pub struct Server {
    child: Child,
    lines: Receiver<String>,
    /// Where its standard error (the log, at `info`) goes.
    log: std::path::PathBuf,
    pub client: Client,
}

/// Starts `idempay serve --demo` on `database_url`, on a free port of 127.0.0.1, with a
/// 2 s lease, a 500 ms slow card and no background reaper unless `extra` sets them, and `extra` arguments; waits until
/// it listens. The caller's `IDEMPAY_*` and `DATABASE_URL` variables are not passed on.
pub fn serve(database_url: &str, extra: &[&str]) -> Server {
    let mut args: Vec<&str> = vec!["serve", "--demo", "--database-url", database_url];
    for (flag, default) in [
        ("--bind", "127.0.0.1:0"),
        ("--lease-secs", "2"),
        ("--slow-processor-ms", "500"),
        ("--reaper-interval-secs", "0"),
    ] {
        if !extra.contains(&flag) {
            args.extend([flag, default]);
        }
    }
    args.extend(extra);
    let mut command = Command::new(env!("CARGO_BIN_EXE_idempay"));
    isolate(&mut command);
    let log = std::env::temp_dir().join(format!("idempay-log-{}", uuid::Uuid::new_v4().simple()));
    let mut child = command
        .args(args)
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).expect("log file"))
        .spawn()
        .expect("the idempay binary starts");
    let stdout = child.stdout.take().expect("stdout is piped");
    let (tx, lines) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut server = Server {
        child,
        lines,
        log,
        client: Client::new(String::new(), database_url),
    };
    let line = server.wait_for("idempay listening on ");
    server.client.base = line.trim_start_matches("idempay listening on ").to_owned();
    server
}

/// Removes the caller's settings from a child's environment: only what the test passes
/// configures the server.
fn isolate(command: &mut Command) {
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if name.starts_with("IDEMPAY_") || name == "DATABASE_URL" {
            command.env_remove(name.as_ref());
        }
    }
}

impl Server {
    /// Waits (up to 60 s) for a line of standard output starting with `prefix`.
    pub fn wait_for(&mut self, prefix: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.starts_with(prefix) => return line,
                Ok(_) => {}
                Err(e) => panic!("no line `{prefix}…` from idempay: {e}"),
            }
        }
    }

    /// What the process logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGTERM: the process drains, then exits.
    pub fn terminate(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "SIGTERM delivered");
    }

    /// Waits (up to 60 s) for the process to exit by itself; returns its status.
    pub fn wait_exit(&mut self) -> std::process::ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self.child.try_wait().expect("child status readable") {
                return status;
            }
            assert!(Instant::now() < deadline, "idempay did not exit");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGKILL: the process dies at once, mid-request, with nothing cleaned up.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.log);
    }
}

/// Runs `idempay reap --once` on `database_url` with a 2 s lease; returns its summary line.
pub fn reap_once(database_url: &str) -> String {
    let mut command = Command::new(env!("CARGO_BIN_EXE_idempay"));
    isolate(&mut command);
    let out = command
        .args([
            "reap",
            "--once",
            "--database-url",
            database_url,
            "--lease-secs",
            "2",
            "--slow-processor-ms",
            "500",
        ])
        .env("RUST_LOG", "warn")
        .output()
        .expect("idempay reap runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "reap --once failed: {stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout.lines().last().unwrap_or_default().to_owned()
}

/// Runs `idempay ARGS…` to completion (the caller's `IDEMPAY_*` variables removed);
/// returns whether it succeeded and its standard output and error.
pub fn idempay(args: &[&str]) -> (bool, String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_idempay"));
    isolate(&mut command);
    let out = command
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .expect("idempay runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
