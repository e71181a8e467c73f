//! The `idempay` command: `serve`, `reap`, `migrate`, `merchants create`.

use std::process::ExitCode;

use clap::Parser;
use idempay::config::{Cli, Command, MerchantsCommand};
use idempay::startup::Application;
use idempay::{db, merchants, telemetry};

fn main() -> ExitCode {
    let _logs = telemetry::init();
    let result = match Cli::parse().command {
        Command::Serve(config) => serve(config),
        Command::Reap { once, config } => reap(once, config),
        Command::Migrate(database) => connect(&database).and_then(|mut conn| {
            db::run_migrations(&mut conn)?;
            println!("migrations applied to {}", database.database_url);
            Ok(())
        }),
        Command::Merchants(MerchantsCommand::Create { name, database }) => connect(&database)
            .and_then(|mut conn| {
                db::run_migrations(&mut conn)?;
                let (id, key) = merchants::create(&mut conn, &name).map_err(|e| e.to_string())?;
                println!("created merchant {id} ({name}); its API key (shown once):");
                println!("{key}");
                Ok(())
            }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("idempay: {message}");
            ExitCode::FAILURE
        }
    }
}

fn connect(database: &idempay::config::DatabaseArgs) -> Result<db::DbConnection, String> {
    let target = database.target()?;
    db::establish(&target).map_err(|e| format!("cannot connect to the database: {e}"))
}

fn serve(config: idempay::config::Config) -> Result<(), String> {
    let demo = config.demo;
    actix_web::rt::System::new().block_on(async move {
        let app = Application::build(config)?;
        app.drain_on_signals()
            .map_err(|e| format!("cannot listen for signals: {e}"))?;
        let base = format!("http://127.0.0.1:{}", app.port());
        println!("idempay listening on {base}");
        if demo {
            println!("demo merchant ready; try:\n  curl -s {base}/orders -H 'Authorization: Bearer {}' \\\n    -H 'Idempotency-Key: order-1' -H 'Content-Type: application/json' \\\n    -d '{{\"amount\": 1999, \"currency\": \"EUR\"}}'", merchants::DEMO_API_KEY);
        }
        app.run().await.map_err(|e| e.to_string())
    })
}

fn reap(once: bool, config: idempay::config::Config) -> Result<(), String> {
    actix_web::rt::System::new().block_on(async move {
        let interval = std::time::Duration::from_secs(config.reaper_interval_secs.max(1));
        let state = idempay::startup::build_state(config)?;
        loop {
            let report = idempay::reaper::reap_once(&state).await;
            println!(
                "reaper pass: released {} recovered {} purged {} abandoned {} errors {}",
                report.released, report.recovered, report.purged, report.abandoned, report.errors
            );
            if once {
                return if report.errors == 0 {
                    Ok(())
                } else {
                    Err(format!("{} errors", report.errors))
                };
            }
            tokio::time::sleep(interval).await;
        }
    })
}
