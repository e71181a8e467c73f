//! Test databases: a fresh SQLite file, or a fresh PostgreSQL database created from a
//! template that was migrated once per test run. PostgreSQL tests run when
//! `TEST_DATABASE_URL` names a server (an admin URL, e.g.
//! `postgres://postgres@127.0.0.1:5432/postgres`); without it they are ignored.

use std::sync::OnceLock;

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel::sql_types::BigInt;

/// Which store a test runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// A database that exists for one test and is removed after it.
pub struct TestDb {
    pub url: String,
    cleanup: Cleanup,
}

enum Cleanup {
    /// Owned by someone else (a throwaway cluster removes itself).
    Nothing,
    File(std::path::PathBuf),
    Database {
        admin: String,
        name: String,
    },
}

fn admin_url() -> String {
    match std::env::var("TEST_DATABASE_URL") {
        Ok(url) if !url.is_empty() => url,
        // The PostgreSQL tests are compiled in only when the variable was set at build
        // time (tests/api/build.rs); cargo rebuilds when it changes.
        _ => panic!("TEST_DATABASE_URL is not set, but the PostgreSQL tests were built to run"),
    }
}

/// `admin` with its database name replaced by `name`.
fn with_database(admin: &str, name: &str) -> String {
    let (base, query) = admin
        .split_once('?')
        .map_or((admin, None), |(b, q)| (b, Some(q)));
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let root = match base[scheme_end..].find('/') {
        Some(slash) => &base[..scheme_end + slash],
        None => base,
    };
    match query {
        Some(q) => format!("{root}/{name}?{q}"),
        None => format!("{root}/{name}"),
    }
}

fn admin_connection(admin: &str) -> PgConnection {
    PgConnection::establish(admin).unwrap_or_else(|e| panic!("TEST_DATABASE_URL {admin}: {e}"))
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// The migrated template's name, creating it once per test run. The name carries a hash
/// of the migrations, so a changed migration gets a new template.
fn template(admin: &str) -> &'static str {
    static TEMPLATE: OnceLock<String> = OnceLock::new();
    TEMPLATE.get_or_init(|| {
        let mut digest = 0u64;
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/migrations/postgres");
        let mut files: Vec<_> = walk(std::path::Path::new(dir));
        files.sort();
        for file in files {
            for byte in std::fs::read(&file).expect("migration readable") {
                digest = digest
                    .wrapping_mul(1_099_511_628_211)
                    .wrapping_add(u64::from(byte));
            }
        }
        let name = format!("idempay_tmpl_{digest:016x}");
        let mut conn = admin_connection(admin);
        let exists = diesel::sql_query(format!(
            "SELECT count(*) AS n FROM pg_database WHERE datname = '{name}'"
        ))
        .get_result::<Count>(&mut conn)
        .expect("pg_database readable")
        .n > 0;
        if !exists {
            let building = format!("idempay_build_{}", uuid::Uuid::new_v4().simple());
            conn.batch_execute(&format!("CREATE DATABASE {building}"))
                .expect("can create databases");
            let target =
                idempay::db::Target::parse(&with_database(admin, &building)).expect("URL parses");
            let mut db = idempay::db::establish(&target).expect("new database connects");
            idempay::db::run_migrations(&mut db).expect("migrations apply");
            drop(db);
            if conn
                .batch_execute(&format!("ALTER DATABASE {building} RENAME TO {name}"))
                .is_err()
            {
                // Another test run built it first.
                let _ = conn.batch_execute(&format!("DROP DATABASE {building}"));
            }
        }
        name
    })
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("migrations folder") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

impl TestDb {
    /// A database that someone else made and will remove.
    pub fn external(url: String) -> Self {
        Self {
            url,
            cleanup: Cleanup::Nothing,
        }
    }

    /// A fresh, migrated database.
    pub fn create(backend: Backend) -> Self {
        let id = uuid::Uuid::new_v4().simple().to_string();
        match backend {
            Backend::Sqlite => {
                let path = std::env::temp_dir().join(format!("idempay-test-{id}.db"));
                Self {
                    url: format!("sqlite://{}", path.display()),
                    cleanup: Cleanup::File(path),
                }
            }
            Backend::Postgres => {
                let admin = admin_url();
                let template = template(&admin);
                let name = format!("idempay_test_{id}");
                admin_connection(&admin)
                    .batch_execute(&format!("CREATE DATABASE {name} TEMPLATE {template}"))
                    .expect("test database is created from the template");
                Self {
                    url: with_database(&admin, &name),
                    cleanup: Cleanup::Database { admin, name },
                }
            }
        }
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        match &self.cleanup {
            Cleanup::Nothing => {}
            Cleanup::File(path) => {
                for suffix in ["", "-wal", "-shm"] {
                    let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
                }
            }
            Cleanup::Database { admin, name } => {
                if let Ok(mut conn) = PgConnection::establish(admin) {
                    let _ =
                        conn.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
                }
            }
        }
    }
}
