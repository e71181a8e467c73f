//! API keys: a merchant holds several (so keys can be rotated), each `live`
//! (`sk_live_…`) or `test` (`sk_test_…`). A key is shown once, when it is created, and
//! stored only as its SHA-256 hash; it is revoked by its id (`key_…`). The demo
//! merchant's key is marked `demo`: only an instance running `--demo` accepts it.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use crate::auth::hash_api_key;
use crate::db::schema::{api_keys, merchants};
use crate::db::{self, DbConnection};
use crate::domain::ids;

/// Whether a key moves real money (`live`) or is for testing (`test`). Test-only
/// features (fault injection) accept test keys only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Live,
    Test,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Live => "live",
            Self::Test => "test",
        }
    }

    fn parse(stored: &str) -> Self {
        match stored {
            "test" => Self::Test,
            _ => Self::Live,
        }
    }
}

/// An API key as listed: never the key itself, only its first characters.
#[derive(Debug, Clone, Queryable)]
pub struct KeyInfo {
    pub id: String,
    pub merchant_id: String,
    pub mode: String,
    pub prefix: String,
    pub created_at: NaiveDateTime,
    pub revoked_at: Option<NaiveDateTime>,
}

/// What a valid, unrevoked key authenticates.
#[derive(Debug, Clone)]
pub struct Authenticated {
    pub merchant_id: String,
    pub merchant_name: String,
    pub mode: Mode,
    /// The demo merchant's key: accepted only while `--demo` runs.
    pub demo: bool,
}

/// A new random key of `mode`: `sk_<mode>_` and 64 hex digits (244 random bits).
fn new_key(mode: Mode) -> String {
    let random = || uuid::Uuid::new_v4().simple().to_string();
    format!("sk_{}_{}{}", mode.as_str(), random(), random())
}

/// Stores `key` (its hash) for `merchant_id`; returns the key's id.
pub fn insert(
    conn: &mut DbConnection,
    merchant_id: &str,
    key: &str,
    mode: Mode,
    demo: bool,
) -> QueryResult<String> {
    let id = ids::new_id(ids::API_KEY);
    let prefix: String = key.chars().take(12).collect();
    diesel::insert_into(api_keys::table)
        .values((
            api_keys::id.eq(&id),
            api_keys::merchant_id.eq(merchant_id),
            api_keys::key_hash.eq(hash_api_key(key)),
            api_keys::mode.eq(mode.as_str()),
            api_keys::demo.eq(demo),
            api_keys::prefix.eq(prefix),
            api_keys::created_at.eq(db::now(conn)?),
        ))
        .execute(conn)?;
    Ok(id)
}

/// Creates a key of `mode` for `merchant_id`; returns `(key id, key)`. The key is not
/// stored: show it once. `None` when there is no such merchant.
pub fn create(
    conn: &mut DbConnection,
    merchant_id: &str,
    mode: Mode,
) -> QueryResult<Option<(String, String)>> {
    let exists = merchants::table
        .find(merchant_id)
        .count()
        .get_result::<i64>(conn)?
        > 0;
    if !exists {
        return Ok(None);
    }
    let key = new_key(mode);
    let id = insert(conn, merchant_id, &key, mode, false)?;
    Ok(Some((id, key)))
}

/// The merchant's keys, oldest first, revoked ones included.
pub fn list(conn: &mut DbConnection, merchant_id: &str) -> QueryResult<Vec<KeyInfo>> {
    api_keys::table
        .filter(api_keys::merchant_id.eq(merchant_id))
        .order(api_keys::id.asc())
        .select((
            api_keys::id,
            api_keys::merchant_id,
            api_keys::mode,
            api_keys::prefix,
            api_keys::created_at,
            api_keys::revoked_at,
        ))
        .load(conn)
}

/// Revokes the key `key_id`; `false` when there is no such key or it was revoked
/// already. Every instance refuses it within its key cache's lifetime (4 s).
pub fn revoke(conn: &mut DbConnection, key_id: &str) -> QueryResult<bool> {
    let now = db::now(conn)?;
    let revoked = diesel::update(api_keys::table)
        .filter(api_keys::id.eq(key_id))
        .filter(api_keys::revoked_at.is_null())
        .set(api_keys::revoked_at.eq(now))
        .execute(conn)?;
    Ok(revoked == 1)
}

/// What the key whose hash is `key_hash` authenticates, unless it is unknown or revoked.
pub fn authenticate(conn: &mut DbConnection, key_hash: &str) -> QueryResult<Option<Authenticated>> {
    let found: Option<(String, String, String, bool)> = api_keys::table
        .inner_join(merchants::table)
        .filter(api_keys::key_hash.eq(key_hash))
        .filter(api_keys::revoked_at.is_null())
        .select((
            merchants::id,
            merchants::name,
            api_keys::mode,
            api_keys::demo,
        ))
        .first(conn)
        .optional()?;
    Ok(
        found.map(|(merchant_id, merchant_name, mode, demo)| Authenticated {
            merchant_id,
            merchant_name,
            mode: Mode::parse(&mode),
            demo,
        }),
    )
}

/// A new key for a new merchant (see `merchants::create`).
pub(crate) fn first_key(mode: Mode) -> String {
    new_key(mode)
}
