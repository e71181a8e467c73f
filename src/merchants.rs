//! Merchants and their API keys: creating a merchant (the key is shown once and stored
//! only as its SHA-256 hash) and the demo merchant of `serve --demo`.

use diesel::prelude::*;

use crate::auth::hash_api_key;
use crate::db::{self, schema::merchants, DbConnection};
use crate::domain::ids;

/// The demo merchant's API key, created by `idempay serve --demo`.
pub const DEMO_API_KEY: &str = "sk_test_demo";
const DEMO_MERCHANT_ID: &str = "mer_demo";

/// Creates a merchant named `name`; returns `(merchant id, API key)`. The key is random
/// (two UUIDv4s, 244 random bits) and never stored in clear.
pub fn create(conn: &mut DbConnection, name: &str) -> QueryResult<(String, String)> {
    let id = ids::new_id(ids::MERCHANT);
    let key = format!(
        "sk_live_{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    );
    insert(conn, &id, name, &key)?;
    Ok((id, key))
}

/// Creates the demo merchant (key [`DEMO_API_KEY`]) unless it exists.
pub fn ensure_demo(conn: &mut DbConnection) -> QueryResult<()> {
    db::write_transaction(conn, |conn| {
        let exists = merchants::table
            .filter(merchants::id.eq(DEMO_MERCHANT_ID))
            .count()
            .get_result::<i64>(conn)?
            > 0;
        if exists {
            return Ok(());
        }
        insert(conn, DEMO_MERCHANT_ID, "Demo merchant", DEMO_API_KEY)
    })
}

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
