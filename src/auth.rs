//! Merchant authentication: `Authorization: Bearer <api key>`, keys stored as SHA-256
//! hashes, and a short-lived in-memory cache so most requests do not hit the database.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::dev::Payload;
use actix_web::http::header;
use actix_web::{web, FromRequest, HttpRequest};
use diesel::prelude::*;
use sha2::{Digest, Sha256};

use crate::db::{self, schema::merchants};
use crate::error::ApiError;
use crate::state::AppState;

/// How long a verified API key is trusted without asking the database again.
const CACHE_TTL: Duration = Duration::from_secs(60);

/// The authenticated merchant of a request; every query is scoped to its `id`.
#[derive(Debug, Clone)]
pub struct Merchant {
    pub id: String,
    pub name: String,
}

/// Verified API-key hashes → merchant, each entry trusted for [`CACHE_TTL`].
#[derive(Clone, Default)]
pub struct MerchantCache(Arc<Mutex<HashMap<String, (Merchant, Instant)>>>);

impl MerchantCache {
    fn get(&self, hash: &str) -> Option<Merchant> {
        let cache = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        cache
            .get(hash)
            .filter(|(_, at)| at.elapsed() < CACHE_TTL)
            .map(|(m, _)| m.clone())
    }

    fn put(&self, hash: String, merchant: Merchant) {
        let mut cache = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        cache.retain(|_, (_, at)| at.elapsed() < CACHE_TTL);
        cache.insert(hash, (merchant, Instant::now()));
    }
}

/// Lowercase hex SHA-256 of an API key: the only form in which keys are stored.
pub fn hash_api_key(key: &str) -> String {
    format!("{:x}", Sha256::digest(key.as_bytes()))
}

fn bearer_token(req: &HttpRequest) -> Option<String> {
    let value = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then(|| token.to_owned())
}

async fn authenticate(
    state: web::Data<AppState>,
    token: Option<String>,
) -> Result<Merchant, ApiError> {
    let hash = hash_api_key(&token.ok_or(ApiError::Unauthenticated)?);
    if let Some(merchant) = state.merchants.get(&hash) {
        return Ok(merchant);
    }
    let lookup = hash.clone();
    let found = db::read(&state.pool, move |conn| {
        Ok(merchants::table
            .filter(merchants::api_key_hash.eq(lookup))
            .select((merchants::id, merchants::name))
            .first::<(String, String)>(conn)
            .optional()?)
    })
    .await?;
    let (id, name) = found.ok_or(ApiError::Unauthenticated)?;
    let merchant = Merchant { id, name };
    state.merchants.put(hash, merchant.clone());
    Ok(merchant)
}

impl FromRequest for Merchant {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    /// 401 `unauthenticated` for a missing, malformed or unknown key.
    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let state = req.app_data::<web::Data<AppState>>().cloned();
        let token = bearer_token(req);
        Box::pin(async move {
            let state =
                state.ok_or_else(|| ApiError::Database("application state missing".into()))?;
            authenticate(state, token).await
        })
    }
}
