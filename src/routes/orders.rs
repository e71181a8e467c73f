//! Order handlers: `POST /orders`, `GET /orders/{id}`, `GET /orders`,
//! `POST /orders/{id}/cancel`. Thin: parse, validate, hand over to the engine.

use actix_web::{web, HttpRequest, HttpResponse};

use super::keyed::{identity, json_body, optional_json_body, replay_unchanged, required_key};
use super::page::{NoQuery, Page, Query};
use super::{path_id, Body};
use crate::auth::Merchant;
use crate::db::{self, orders::OrderRow};
use crate::domain::{ids, order::NewOrder};
use crate::error::ApiError;
use crate::idempotency::{self, engine::respond, IdempotencyKey};
use crate::orders;
use crate::state::AppState;

/// `POST /orders` (Idempotency-Key required) → 201 order.
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
    let new = NewOrder::from_json(&json)?;
    let request = identity(&merchant, key, &req, Some(&json), &body);
    let (pool, ttl) = (state.pool.clone(), state.config.key_ttl("create_order"));
    let fresh_order = new.clone();
    idempotency::execute_atomic(
        &state,
        request,
        ttl,
        move |conn, request| orders::create_fresh(conn, request, &fresh_order, ttl),
        move |lease| async move {
            db::run(&pool, move |conn| {
                orders::create(conn, &merchant.id, &new, (&lease, ttl))
            })
            .await
        },
    )
    .await
}

/// `POST /orders/{id}/cancel` (Idempotency-Key optional; empty body or `{}`, one and the
/// same request) → 200 order.
pub async fn cancel(
    state: web::Data<AppState>,
    merchant: Merchant,
    _: NoQuery,
    req: HttpRequest,
    id: web::Path<String>,
    body: Body,
) -> Result<HttpResponse, ApiError> {
    let key = IdempotencyKey::from_headers(req.headers())?;
    let id = path_id(id, ids::ORDER, "order")?;
    let json = optional_json_body(&req, &body)?;
    crate::domain::fields::Fields::new(&json, &[])?;
    let pool = state.pool.clone();
    let Some(key) = key else {
        let stored = db::run(&pool, move |conn| {
            orders::cancel(conn, &merchant.id, &id, None)
        })
        .await?;
        return Ok(respond(stored, false));
    };
    if let Some(replay) = replay_unchanged(&state, &merchant, &key, &req, &body) {
        return Ok(replay);
    }
    let request = identity(&merchant, key, &req, Some(&json), &body);
    let ttl = state.config.key_ttl("cancel_order");
    idempotency::execute(&state, request, ttl, move |lease| async move {
        db::run(&pool, move |conn| {
            orders::cancel(conn, &merchant.id, &id, Some((&lease, ttl)))
        })
        .await
    })
    .await
}

/// `GET /orders/{id}` → 200 order, 404 when the merchant has no such order.
pub async fn get(
    state: web::Data<AppState>,
    merchant: Merchant,
    _: NoQuery,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = id.into_inner();
    let order = db::read(&state.pool, move |conn| {
        orders::find(conn, &merchant.id, &id)
    })
    .await?;
    Ok(HttpResponse::Ok().json(order))
}

/// `GET /orders?limit=&starting_after=` → `{object: "list", data, has_more}`, newest first.
pub async fn list(
    state: web::Data<AppState>,
    merchant: Merchant,
    query: Query,
) -> Result<HttpResponse, ApiError> {
    let page = Page::parse(&query, ids::ORDER, &[])?;
    let (cursor, limit) = (page.starting_after.clone(), page.limit + 1);
    let rows = db::read(&state.pool, move |conn| {
        Ok(db::orders::list(
            conn,
            &merchant.id,
            cursor.as_deref(),
            limit,
        )?)
    })
    .await?;
    Ok(page.respond(rows.into_iter().map(OrderRow::view).collect()))
}
