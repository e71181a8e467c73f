//! Merchants: creating one with its first API key (shown once, stored only as its
//! SHA-256 hash), listing them, and the demo merchant of `serve --demo`.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use crate::api_keys::{self, Mode};
use crate::auth::hash_api_key;
use crate::db::schema::{api_keys as keys, merchants};
use crate::db::{self, DbConnection};
use crate::domain::ids;

/// The demo merchant's API key, a test key accepted only while `serve --demo` runs.
pub const DEMO_API_KEY: &str = "sk_test_demo";
const DEMO_MERCHANT_ID: &str = "mer_demo";

/// A merchant as listed.
#[derive(Debug, Clone)]
pub struct MerchantInfo {
    pub id: String,
    pub name: String,
    pub created_at: NaiveDateTime,
    /// Keys not revoked.
    pub active_keys: i64,
}

/// Creates a merchant named `name` with a first key of `mode`; returns `(merchant id,
/// API key)`. The key is random (244 bits) and never stored in clear.
pub fn create(conn: &mut DbConnection, name: &str, mode: Mode) -> QueryResult<(String, String)> {
    let id = ids::new_id(ids::MERCHANT);
    let key = api_keys::first_key(mode);
    db::write_transaction(conn, |conn| {
        insert(conn, &id, name, &key)?;
        api_keys::insert(conn, &id, &key, mode, false)
    })?;
    Ok((id, key))
}

/// Every merchant, oldest first, with its number of active keys.
pub fn list(conn: &mut DbConnection) -> QueryResult<Vec<MerchantInfo>> {
    let rows: Vec<(String, String, NaiveDateTime)> = merchants::table
        .order(merchants::id.asc())
        .select((merchants::id, merchants::name, merchants::created_at))
        .load(conn)?;
    rows.into_iter()
        .map(|(id, name, created_at)| {
            let active_keys = keys::table
                .filter(keys::merchant_id.eq(&id))
                .filter(keys::revoked_at.is_null())
                .count()
                .get_result(conn)?;
            Ok(MerchantInfo {
                id,
                name,
                created_at,
                active_keys,
            })
        })
        .collect()
}

/// Creates the demo merchant and its demo key ([`DEMO_API_KEY`]) unless they exist.
pub fn ensure_demo(conn: &mut DbConnection) -> QueryResult<()> {
    db::write_transaction(conn, |conn| {
        let exists = merchants::table
            .find(DEMO_MERCHANT_ID)
            .count()
            .get_result::<i64>(conn)?
            > 0;
        if !exists {
            insert(conn, DEMO_MERCHANT_ID, "Demo merchant", DEMO_API_KEY)?;
        }
        let key_exists = keys::table
            .filter(keys::key_hash.eq(hash_api_key(DEMO_API_KEY)))
            .count()
            .get_result::<i64>(conn)?
            > 0;
        if !key_exists {
            api_keys::insert(conn, DEMO_MERCHANT_ID, DEMO_API_KEY, Mode::Test, true)?;
        }
        Ok(())
    })
}

/// Inserts the merchant row; `api_key_hash` keeps the hash of the key it was created
/// with (authentication reads `api_keys`).
fn insert(conn: &mut DbConnection, id: &str, name: &str, key: &str) -> QueryResult<()> {
    let now = db::now(conn)?;
    diesel::insert_into(merchants::table)
        .values((
            merchants::id.eq(id),
            merchants::name.eq(name),
            merchants::api_key_hash.eq(hash_api_key(key)),
            merchants::created_at.eq(now),
        ))
        .execute(conn)
        .map(drop)
}
