//! A throwaway PostgreSQL cluster that a test owns: made with `initdb` in a temporary
//! folder, listening on a free port of 127.0.0.1, and stopped, started and restarted at
//! the test's will (the shared server of the other tests is never touched).
//!
//! The binaries come from `PG_BINDIR`, else the newest `/usr/lib/postgresql/*/bin`. As
//! root (CI), they run as the `postgres` user, since PostgreSQL refuses to run as root.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A running (or stopped) private PostgreSQL cluster, removed on drop.
pub struct Cluster {
    bindir: PathBuf,
    dir: PathBuf,
    port: u16,
}

fn bindir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("PG_BINDIR") {
        return Some(dir.into());
    }
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|bin| bin.join("initdb").exists())
        .collect();
    dirs.sort();
    dirs.pop()
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0")
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("bound").port()
}

impl Cluster {
    /// Makes and starts a cluster. Panics when PostgreSQL's binaries are missing.
    pub fn start() -> Self {
        let bindir = bindir().expect("PostgreSQL binaries (initdb): set PG_BINDIR");
        let dir =
            std::env::temp_dir().join(format!("idempay-pg-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).expect("cluster folder");
        let cluster = Self {
            bindir,
            dir,
            port: free_port(),
        };
        if is_root() {
            cluster.run(
                Command::new("chown")
                    .args(["-R", "postgres"])
                    .arg(&cluster.dir),
            );
        }
        let data = cluster.data();
        cluster.pg(
            "initdb",
            &[
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
                "-E",
                "UTF8",
                "-D",
                &data,
            ],
        );
        cluster.start_again();
        cluster
    }

    fn data(&self) -> String {
        self.dir.join("data").display().to_string()
    }

    /// An admin URL (database `postgres`).
    pub fn admin_url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Creates an empty database; returns its URL (idempay migrates it on start).
    pub fn create_database(&self, name: &str) -> String {
        use diesel::connection::SimpleConnection;
        use diesel::Connection;
        let mut admin = diesel::PgConnection::establish(&self.admin_url()).expect("admin connects");
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .expect("database created");
        format!("postgres://postgres@127.0.0.1:{}/{name}", self.port)
    }

    /// Starts the (stopped) cluster and waits until it accepts connections.
    pub fn start_again(&self) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port,
            self.dir.display()
        );
        let log = self.dir.join("log").display().to_string();
        self.pg(
            "pg_ctl",
            &[
                "-D",
                &self.data(),
                "-o",
                &options,
                "-l",
                &log,
                "-w",
                "start",
            ],
        );
    }

    /// Stops the cluster: `fast` (every session ended at once, as on a failover or a
    /// restart by an operator) or `immediate` (as a crash).
    pub fn stop(&self, mode: &str) {
        self.pg("pg_ctl", &["-D", &self.data(), "-m", mode, "-w", "stop"]);
    }

    /// `pg_ctl restart -m fast`: every connection is cut.
    pub fn restart(&self) {
        self.stop("fast");
        self.start_again();
    }

    fn pg(&self, program: &str, args: &[&str]) {
        let mut command = self.command(program, args);
        self.run(&mut command);
    }

    fn command(&self, program: &str, args: &[&str]) -> Command {
        let path = self.bindir.join(program);
        let mut command = if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(path);
            c
        } else {
            Command::new(path)
        };
        command.args(args).current_dir(&self.dir);
        command
    }

    fn run(&self, command: &mut Command) {
        let out = command
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("{command:?}: {e}"));
        assert!(
            out.status.success(),
            "{command:?} failed: {}{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
        );
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if Path::new(&self.data()).join("postmaster.pid").exists() {
            let data = self.data();
            let _ = self
                .command("pg_ctl", &["-D", &data, "-m", "immediate", "-w", "stop"])
                .output();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
