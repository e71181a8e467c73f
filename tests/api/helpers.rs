//! The test harness: a real idempay server on port 0 against a fresh SQLite file or a
//! fresh PostgreSQL database (created from a migrated template), spoken to over HTTP.

use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use idempay::config::Config;
use idempay::startup::Application;

pub use crate::client::{Client, Reply};
pub use crate::pg::Backend;

/// A running in-process server; it derefs to its [`Client`].
pub struct TestApp {
    client: Client,
    state: idempay::state::AppState,
    handle: actix_web::dev::ServerHandle,
    thread: Option<JoinHandle<()>>,
    db: Option<crate::pg::TestDb>,
}

/// Starts a server with default settings.
pub fn spawn_app(backend: Backend) -> TestApp {
    spawn_app_with(backend, |_| {})
}

/// Starts a server after `configure` adjusts the settings.
pub fn spawn_app_with(backend: Backend, configure: impl FnOnce(&mut Config)) -> TestApp {
    start(crate::pg::TestDb::create(backend), configure)
}

/// Starts a server on a database the caller made (a throwaway cluster's).
pub fn spawn_app_on(url: String, configure: impl FnOnce(&mut Config)) -> TestApp {
    start(crate::pg::TestDb::external(url), configure)
}

fn start(db: crate::pg::TestDb, configure: impl FnOnce(&mut Config)) -> TestApp {
    if std::env::var_os("RUST_LOG").is_some() {
        // Server logs, for debugging a test; the writer lives as long as the process.
        std::mem::forget(idempay::telemetry::init(Default::default()));
    }
    let mut config = Config::for_database(&db.url);
    config.workers = 1;
    config.demo = true;
    config.slow_processor_ms = 1500;
    // No background reaper: a test that needs a pass runs one with `TestApp::reap`, or
    // turns the reaper on explicitly when the background task is what it tests.
    config.reaper_interval_secs = 0;
    configure(&mut config);
    let (tx, rx) = mpsc::channel();
    let thread = std::thread::spawn(move || {
        actix_web::rt::System::new().block_on(async move {
            match Application::build(config) {
                Ok(app) => {
                    tx.send(Ok((app.port(), app.handle(), app.state().clone())))
                        .expect("the test waits for the port");
                    app.run().await.expect("server runs");
                }
                Err(e) => tx.send(Err(e)).expect("the test waits for the error"),
            }
        })
    });
    let (port, handle, state) = rx
        .recv()
        .expect("server thread reports")
        .expect("server starts");
    TestApp {
        client: Client::new(format!("http://127.0.0.1:{port}"), &db.url),
        state,
        handle,
        thread: Some(thread),
        db: Some(db),
    }
}

impl TestApp {
    /// Stops this server and starts a new one on the same database (as after a crash
    /// and a deploy), with `configure` applied to fresh default settings.
    pub fn restart(mut self, configure: impl FnOnce(&mut Config)) -> TestApp {
        self.stop();
        let db = self.db.take().expect("a running app owns its database");
        start(db, configure)
    }

    /// Runs one reaper pass now, against this server's state, and returns its report.
    pub fn reap(&self) -> idempay::reaper::Report {
        let state = self.state.clone();
        actix_web::rt::System::new()
            .block_on(async move { idempay::reaper::reap_once(&state).await })
    }

    fn stop(&mut self) {
        actix_web::rt::System::new().block_on(self.handle.stop(false));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl std::ops::Deref for TestApp {
    type Target = Client;
    fn deref(&self) -> &Client {
        &self.client
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Polls `attempt` until it returns `Some`, or panics after `deadline`.
pub fn eventually<T>(deadline: Duration, mut attempt: impl FnMut() -> Option<T>) -> T {
    let start = std::time::Instant::now();
    loop {
        if let Some(value) = attempt() {
            return value;
        }
        assert!(
            start.elapsed() < deadline,
            "condition not met within {deadline:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Retries `post` as a client would until it gets an answer other than "wait" (409 in
/// use, 503 still processing: a short lease leaves the handler well under a second).
pub fn until_answered(post: impl Fn() -> Reply) -> Reply {
    eventually(Duration::from_secs(20), || {
        let reply = post();
        let wait = matches!(reply.status, 409 | 503)
            && matches!(
                reply.code().as_str(),
                "idempotency_key_in_use" | "still_processing"
            );
        (!wait).then_some(reply)
    })
}

/// Declares each listed test twice: on SQLite, and on PostgreSQL (see [`postgres_only`]).
#[macro_export]
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $( #[test] fn $name() { super::$name($crate::helpers::Backend::Sqlite) } )*
        }
        $crate::postgres_only!($($name),*);
    };
}

/// Declares each listed test on PostgreSQL, in a module `postgres`. Without
/// `TEST_DATABASE_URL` at build time they are compiled `#[ignore]`d (see
/// `tests/api/build.rs`): `cargo test` then reports them as ignored, never as passed.
#[macro_export]
macro_rules! postgres_only {
    ($($name:ident),* $(,)?) => {
        mod postgres {
            $(
                #[test]
                #[cfg_attr(not(idempay_postgres_tests), ignore = "PostgreSQL: set TEST_DATABASE_URL to run")]
                fn $name() { super::$name($crate::helpers::Backend::Postgres) }
            )*
        }
    };
}
