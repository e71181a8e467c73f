//! The administration commands of `idempay merchants …` and `idempay api-keys …`: each
//! migrates the database first and returns the lines to print (a new key is the last
//! line, shown once).

use diesel::QueryResult;

use crate::api_keys::{self, Mode};
use crate::config::{ApiKeysCommand, DatabaseArgs, MerchantsCommand};
use crate::db::{self, DbConnection};
use crate::merchants;

fn mode(test: bool) -> Mode {
    if test {
        Mode::Test
    } else {
        Mode::Live
    }
}

fn connected(
    database: &DatabaseArgs,
    f: impl FnOnce(&mut DbConnection) -> QueryResult<Result<Vec<String>, String>>,
) -> Result<Vec<String>, String> {
    let target = database.target()?;
    let mut conn =
        db::establish(&target).map_err(|e| format!("cannot connect to the database: {e}"))?;
    db::run_migrations(&mut conn)?;
    f(&mut conn).map_err(|e| e.to_string())?
}

/// Runs a `merchants` command.
pub fn merchants(command: MerchantsCommand) -> Result<Vec<String>, String> {
    match command {
        MerchantsCommand::Create {
            name,
            test,
            database,
        } => connected(&database, |conn| {
            let (id, key) = merchants::create(conn, &name, mode(test))?;
            Ok(Ok(vec![
                format!("created merchant {id} ({name}); its API key (shown once):"),
                key,
            ]))
        }),
        MerchantsCommand::List { database } => connected(&database, |conn| {
            let lines = merchants::list(conn)?.into_iter().map(|m| {
                format!(
                    "{}  {}  created {}  {} active key(s)",
                    m.id, m.name, m.created_at, m.active_keys
                )
            });
            Ok(Ok(lines.collect()))
        }),
    }
}

/// Runs an `api-keys` command.
pub fn api_keys(command: ApiKeysCommand) -> Result<Vec<String>, String> {
    match command {
        ApiKeysCommand::Create {
            merchant,
            test,
            database,
        } => connected(&database, |conn| {
            Ok(match api_keys::create(conn, &merchant, mode(test))? {
                Some((id, key)) => Ok(vec![
                    format!("created key {id} for {merchant} (shown once):"),
                    key,
                ]),
                None => Err(format!("no merchant {merchant}")),
            })
        }),
        ApiKeysCommand::List { merchant, database } => connected(&database, |conn| {
            let lines = api_keys::list(conn, &merchant)?.into_iter().map(|k| {
                let state = k
                    .revoked_at
                    .map_or("active".to_owned(), |at| format!("revoked {at}"));
                format!(
                    "{}  {}…  {}  created {}  {state}",
                    k.id, k.prefix, k.mode, k.created_at
                )
            });
            Ok(Ok(lines.collect()))
        }),
        ApiKeysCommand::Revoke { key_id, database } => connected(&database, |conn| {
            Ok(match api_keys::revoke(conn, &key_id)? {
                true => Ok(vec![format!(
                    "revoked {key_id}; every instance refuses it within 4 s"
                )]),
                false => Err(format!("no active key {key_id}")),
            })
        }),
    }
}
