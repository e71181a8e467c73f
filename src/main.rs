//! The `idempay` command: `serve`, `reap`, `migrate`, `merchants …`, `api-keys …`.

use std::process::ExitCode;

use clap::Parser;
use idempay::config::{Cli, Command};
use idempay::startup::Application;
use idempay::{admin, db, merchants, telemetry};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let _logs = telemetry::init(cli.log_format);
    let result = match cli.command {
        Command::Serve(config) => serve(config),
        Command::Reap { once, config } => reap(once, config),
        Command::Migrate(database) => connect(&database).and_then(|mut conn| {
            db::run_migrations(&mut conn)?;
            println!("migrations applied to {}", database.database_url);
            Ok(())
        }),
        Command::Merchants(command) => admin::merchants(command).map(print_lines),
        Command::ApiKeys(command) => admin::api_keys(command).map(print_lines),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("idempay: {message}");
            ExitCode::FAILURE
        }
    }
}

fn print_lines(lines: Vec<String>) {
    for line in lines {
        println!("{line}");
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
        let base = format!("http://{}", app.addr());
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
