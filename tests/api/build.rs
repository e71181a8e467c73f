//! The package's build script (named in Cargo.toml), for the test suite only: decides at
//! build time whether the PostgreSQL variants of the HTTP tests can run. With
//! `TEST_DATABASE_URL` set they are ordinary tests; without it they are compiled
//! `#[ignore]`d, so `cargo test` reports them as ignored (skipped), never as passed
//! having run nothing. Cargo rebuilds when the variable changes.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(idempay_postgres_tests)");
    println!("cargo::rerun-if-env-changed=TEST_DATABASE_URL");
    println!("cargo::rerun-if-changed=tests/api/build.rs");
    if std::env::var("TEST_DATABASE_URL").is_ok_and(|url| !url.is_empty()) {
        println!("cargo::rustc-cfg=idempay_postgres_tests");
    }
}
