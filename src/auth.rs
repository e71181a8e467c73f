//! Merchant authentication: `Authorization: Bearer <api key>`, keys stored as SHA-256
//! hashes (see `api_keys`), a short-lived in-memory cache so most requests do not hit
//! the database, and the rate limits that come with a key (see `limits`).
//!
//! Errors: 401 `unauthenticated` for a missing, malformed, unknown or revoked key (and
//! for the demo key on an instance not running `--demo`), logged with the client's
//! address; 400 `duplicate_header` for two `Authorization` headers; 429 `rate_limited`
//! over a key's request rate, or for an address that failed authentication too often.

use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr};
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_web::dev::Payload;
use actix_web::http::header;
use actix_web::{web, FromRequest, HttpMessage, HttpRequest};
use parking_lot::Mutex;
use sha2::{Digest, Sha256};

use crate::api_keys::{self, Mode};
use crate::db;
use crate::error::ApiError;
use crate::state::AppState;

/// How long a verified key is trusted without asking the database again: a revoked key
/// stops working on every instance within this.
pub const CACHE_TTL: Duration = Duration::from_secs(4);

/// The authenticated merchant of a request; every query is scoped to its `id`.
#[derive(Debug, Clone)]
pub struct Merchant {
    pub id: String,
    pub name: String,
    /// The mode of the key the request came with (test features need a test key).
    pub mode: Mode,
}

/// Verified API-key hashes → merchant, each entry trusted for [`CACHE_TTL`].
#[derive(Clone, Default)]
pub struct MerchantCache(Arc<Mutex<HashMap<String, (Merchant, Instant)>>>);

impl MerchantCache {
    fn get(&self, hash: &str) -> Option<Merchant> {
        let cache = self.0.lock();
        let (merchant, at) = cache.get(hash)?;
        (at.elapsed() < CACHE_TTL).then(|| merchant.clone())
    }

    fn put(&self, hash: String, merchant: Merchant) {
        let mut cache = self.0.lock();
        cache.retain(|_, (_, at)| at.elapsed() < CACHE_TTL);
        cache.insert(hash, (merchant, Instant::now()));
    }
}

/// Lowercase hex SHA-256 of an API key: the only form in which keys are stored.
pub fn hash_api_key(key: &str) -> String {
    format!("{:x}", Sha256::digest(key.as_bytes()))
}

/// The bearer token, if exactly one `Authorization` header carries one.
fn bearer_token(req: &HttpRequest) -> Result<Option<String>, ApiError> {
    let mut values = req.headers().get_all(header::AUTHORIZATION);
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(ApiError::DuplicateHeader("Authorization"));
    }
    let token = value.to_str().ok().and_then(|v| {
        let (scheme, token) = v.split_once(' ')?;
        let token = token.trim();
        (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then(|| token.to_owned())
    });
    Ok(token)
}

/// The merchant `token` authenticates (cached), or `None`.
async fn verify(state: &AppState, hash: &str) -> Result<Option<Merchant>, ApiError> {
    if let Some(merchant) = state.merchants.get(hash) {
        return Ok(Some(merchant));
    }
    let lookup = hash.to_owned();
    let found = db::read(&state.pool, move |conn| {
        Ok(api_keys::authenticate(conn, &lookup)?)
    })
    .await?;
    // The demo key is accepted only by an instance running --demo.
    let Some(key) = found.filter(|key| !key.demo || state.config.demo) else {
        return Ok(None);
    };
    let merchant = Merchant {
        id: key.merchant_id,
        name: key.merchant_name,
        mode: key.mode,
    };
    state.merchants.put(hash.to_owned(), merchant.clone());
    Ok(Some(merchant))
}

async fn authenticate(
    state: &AppState,
    token: Option<String>,
    client: IpAddr,
) -> Result<Merchant, ApiError> {
    state
        .limits
        .admit(client)
        .inspect_err(|_| rate_limited(state, "failed_auth"))?;
    let merchant = match &token {
        Some(token) => {
            let hash = hash_api_key(token);
            verify(state, &hash).await?.map(|merchant| (merchant, hash))
        }
        None => None,
    };
    let Some((merchant, hash)) = merchant else {
        tracing::warn!(client = %client, "authentication failed");
        state
            .limits
            .failed(client)
            .inspect_err(|_| rate_limited(state, "failed_auth"))?;
        return Err(ApiError::Unauthenticated);
    };
    state
        .limits
        .request(&hash)
        .inspect_err(|_| rate_limited(state, "api_key"))?;
    Ok(merchant)
}

fn rate_limited(state: &AppState, reason: &str) {
    state
        .metrics
        .rate_limited
        .with_label_values(&[reason])
        .inc();
}

impl FromRequest for Merchant {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    /// Authenticates once per request: a middleware that needed the merchant first (test
    /// faults) leaves it in the request's extensions, and no second rate-limit token is
    /// taken.
    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        if let Some(merchant) = req.extensions().get::<Merchant>().cloned() {
            return Box::pin(async move { Ok(merchant) });
        }
        let request = req.clone();
        let state = req.app_data::<web::Data<AppState>>().cloned();
        let token = bearer_token(req);
        // The socket's peer: a forwarded-for header is the client's to forge.
        let client = req
            .peer_addr()
            .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |a| a.ip());
        Box::pin(async move {
            let state =
                state.ok_or_else(|| ApiError::Database("application state missing".into()))?;
            let merchant = authenticate(&state, token?, client).await?;
            request.extensions_mut().insert(merchant.clone());
            Ok(merchant)
        })
    }
}
