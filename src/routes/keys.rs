//! Key inspection handlers: `GET /idempotency_keys/{key}` (the key percent-encoded in
//! the path) and `GET /idempotency_keys?status=&limit=&starting_after=`. Thin: validate,
//! read, answer; merchant-scoped like everything else.

use actix_web::{web, HttpResponse};

use super::page::{NoQuery, Page, Query};
use crate::auth::Merchant;
use crate::db;
use crate::error::ApiError;
use crate::idempotency::inspect;
use crate::idempotency::record::status;
use crate::idempotency::IdempotencyKey;
use crate::state::AppState;

/// `GET /idempotency_keys/{key}` → the record, or 404 for a key with no live record (or
/// one that could not be a key).
pub async fn get(
    state: web::Data<AppState>,
    merchant: Merchant,
    _: NoQuery,
    key: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let raw = key.into_inner();
    let not_found = |id: String| ApiError::NotFound {
        resource: "idempotency key",
        id,
    };
    let Ok(key) = IdempotencyKey::parse(raw.as_bytes()) else {
        return Err(not_found(raw));
    };
    let key = key.as_str().to_owned();
    let lookup = key.clone();
    let found = db::read(&state.pool, move |conn| {
        Ok(inspect::find(conn, &merchant.id, &lookup)?)
    })
    .await?;
    found
        .map(|view| HttpResponse::Ok().json(view))
        .ok_or_else(|| not_found(key))
}

/// `GET /idempotency_keys` → the merchant's live records, newest first, optionally in one
/// `status`.
pub async fn list(
    state: web::Data<AppState>,
    merchant: Merchant,
    query: Query,
) -> Result<HttpResponse, ApiError> {
    let page = Page::parse(&query, "ikey_", &["status"])?;
    let only = query.get("status").cloned();
    let statuses = [
        status::PROCESSING,
        status::SUCCEEDED,
        status::FAILED,
        status::FAILED_RETRYABLE,
    ];
    if only.as_deref().is_some_and(|s| !statuses.contains(&s)) {
        return Err(ApiError::InvalidQuery {
            param: "status".into(),
            message: format!("must be one of {}", statuses.join(", ")),
        });
    }
    let (cursor, limit) = (page.starting_after.clone(), page.limit + 1);
    let rows = db::read(&state.pool, move |conn| {
        Ok(inspect::list(
            conn,
            &merchant.id,
            only.as_deref(),
            cursor.as_deref(),
            limit,
        )?)
    })
    .await?;
    Ok(page.respond(rows))
}
