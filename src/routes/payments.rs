//! Payment and refund handlers: `POST /payments`, `GET /payments/{id}`,
//! `GET /payments`, `POST /payments/{id}/refunds`, `GET /refunds/{id}`.

use actix_web::{web, HttpRequest, HttpResponse};

use super::keyed::{identity, json_body, optional_json_body, replay_unchanged, required_key};
use super::page::{NoQuery, Page, Query};
use super::{path_id, Body};
use crate::auth::Merchant;
use crate::db::{self, payments::PaymentRow, DbConnection};
use crate::domain::ids;
use crate::domain::payment::{NewPayment, NewRefund};
use crate::error::ApiError;
use crate::state::AppState;
use crate::{idempotency, payments, refunds};

/// `POST /payments` (Idempotency-Key required) → 201 payment, or a stored 402 decline.
pub async fn create(
    state: web::Data<AppState>,
    merchant: Merchant,
    _: NoQuery,
    req: HttpRequest,
    body: Body,
) -> Result<HttpResponse, ApiError> {
    let key = required_key(&req)?;
    if let Some(replay) = replay_unchanged(&state, &merchant, &key, &req, &body) {
        return Ok(replay);
    }
    let json = json_body(&req, &body)?;
    let new = NewPayment::from_json(&json)?;
    let request = identity(&merchant, key, &req, Some(&json), &body);
    let ttl = state.config.key_ttl("create_payment");
    let app = state.get_ref().clone();
    idempotency::execute(&state, request, ttl, move |lease| {
        payments::pay(app, merchant.id, new, lease, ttl)
    })
    .await
}

/// `POST /payments/{id}/refunds` (Idempotency-Key required; body `{amount?, reason?}`,
/// may be empty) → 201 refund.
pub async fn refund(
    state: web::Data<AppState>,
    merchant: Merchant,
    _: NoQuery,
    req: HttpRequest,
    id: web::Path<String>,
    body: Body,
) -> Result<HttpResponse, ApiError> {
    let key = required_key(&req)?;
    let payment_id = path_id(id, ids::PAYMENT, "payment")?;
    if let Some(replay) = replay_unchanged(&state, &merchant, &key, &req, &body) {
        return Ok(replay);
    }
    let json = optional_json_body(&req, &body)?;
    let new = NewRefund::from_json(&json)?;
    let request = identity(&merchant, key, &req, Some(&json), &body);
    let ttl = state.config.key_ttl("create_refund");
    let app = state.get_ref().clone();
    idempotency::execute(&state, request, ttl, move |lease| {
        refunds::refund(app, merchant.id, payment_id, new, lease, ttl)
    })
    .await
}

/// `GET /payments/{id}` → 200 payment, 404 when the merchant has none by that id.
pub async fn get(
    state: web::Data<AppState>,
    merchant: Merchant,
    _: NoQuery,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let row = fetch(
        &state,
        merchant,
        id.into_inner(),
        ids::PAYMENT,
        "payment",
        db::payments::find,
    )
    .await?;
    Ok(HttpResponse::Ok().json(row.view()))
}

/// `GET /payments?order_id=&limit=&starting_after=` → a page of payments, newest first.
pub async fn list(
    state: web::Data<AppState>,
    merchant: Merchant,
    query: Query,
) -> Result<HttpResponse, ApiError> {
    let page = Page::parse(&query, ids::PAYMENT, &["order_id"])?;
    let order_id = query.get("order_id").cloned();
    if order_id
        .as_deref()
        .is_some_and(|id| !ids::is_well_formed(ids::ORDER, id))
    {
        let (param, message) = ("order_id".into(), "must be an order id (ord_…)".into());
        return Err(ApiError::InvalidQuery { param, message });
    }
    let limit = page.limit + 1;
    let cursor = page.starting_after.clone();
    let rows = db::read(&state.pool, move |conn| {
        Ok(db::payments::list(
            conn,
            &merchant.id,
            order_id.as_deref(),
            cursor.as_deref(),
            limit,
        )?)
    })
    .await?;
    Ok(page.respond(rows.into_iter().map(PaymentRow::view).collect()))
}

/// `GET /refunds/{id}` → 200 refund, 404 when the merchant has none by that id.
pub async fn get_refund(
    state: web::Data<AppState>,
    merchant: Merchant,
    _: NoQuery,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let row = fetch(
        &state,
        merchant,
        id.into_inner(),
        ids::REFUND,
        "refund",
        db::refunds::find,
    )
    .await?;
    Ok(HttpResponse::Ok().json(row.view()))
}

/// Reads the merchant's `resource` by `id` with `find`: 404 `resource_not_found` when
/// the id is malformed for `prefix` or unknown to this merchant.
async fn fetch<T: Send + 'static>(
    state: &AppState,
    merchant: Merchant,
    id: String,
    prefix: &'static str,
    resource: &'static str,
    find: fn(&mut DbConnection, &str, &str) -> diesel::QueryResult<Option<T>>,
) -> Result<T, ApiError> {
    db::read(&state.pool, move |conn| {
        let found = match ids::is_well_formed(prefix, &id) {
            true => find(conn, &merchant.id, &id)?,
            false => None,
        };
        found.ok_or(ApiError::NotFound { resource, id })
    })
    .await
}
