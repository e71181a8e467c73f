//! Order handlers: `POST /orders`, `GET /orders/{id}`, `GET /orders`,
//! `POST /orders/{id}/cancel`. Thin: parse, validate, hand over to the engine.

use std::collections::HashMap;

use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::json;

use super::{identity, json_body, required_key};
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
    req: HttpRequest,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let key = required_key(&req)?;
    let json = json_body(&req, &body)?;
    let new = NewOrder::from_json(&json)?;
    let request = identity(&merchant, key, &req, Some(&json));
    let (pool, ttl) = (state.pool.clone(), state.config.key_ttl("create_order"));
    idempotency::execute(&state, request, ttl, move |lease| async move {
        db::run(&pool, move |conn| {
            orders::create(conn, &merchant.id, &new, (&lease, ttl))
        })
        .await
    })
    .await
}

/// `POST /orders/{id}/cancel` (Idempotency-Key optional; empty body or `{}`) → 200 order.
pub async fn cancel(
    state: web::Data<AppState>,
    merchant: Merchant,
    req: HttpRequest,
    id: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let key = IdempotencyKey::from_headers(req.headers())?;
    let json = if body.is_empty() {
        None
    } else {
        Some(json_body(&req, &body)?)
    };
    if let Some(json) = &json {
        crate::domain::fields::Fields::new(json, &[])?;
    }
    let (pool, id) = (state.pool.clone(), id.into_inner());
    let Some(key) = key else {
        let stored = db::run(&pool, move |conn| {
            orders::cancel(conn, &merchant.id, &id, None)
        })
        .await?;
        return Ok(respond(stored, false));
    };
    let request = identity(&merchant, key, &req, json.as_ref());
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
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = id.into_inner();
    let order = db::run(&state.pool, move |conn| {
        orders::find(conn, &merchant.id, &id)
    })
    .await?;
    Ok(HttpResponse::Ok().json(order))
}

/// `GET /orders?limit=&starting_after=` → `{object: "list", data, has_more}`, newest first.
pub async fn list(
    state: web::Data<AppState>,
    merchant: Merchant,
    query: web::Query<HashMap<String, String>>,
) -> Result<HttpResponse, ApiError> {
    let page = Page::parse(&query, ids::ORDER)?;
    let rows = db::run(&state.pool, move |conn| {
        Ok(db::orders::list(
            conn,
            &merchant.id,
            page.starting_after.as_deref(),
            page.limit + 1,
        )?)
    })
    .await?;
    let has_more = rows.len() as i64 > page.limit;
    let data: Vec<_> = rows
        .into_iter()
        .take(page.limit as usize)
        .map(OrderRow::view)
        .collect();
    Ok(HttpResponse::Ok().json(json!({"object": "list", "data": data, "has_more": has_more})))
}

/// A list page: `limit` 1–100 (default 10) and an optional `starting_after` id.
pub struct Page {
    pub limit: i64,
    pub starting_after: Option<String>,
}

impl Page {
    /// Parses the query; 400 `invalid_query` for an unknown parameter, a bad limit, or a
    /// malformed cursor (a well-formed unknown id is just a bound).
    pub fn parse(query: &HashMap<String, String>, prefix: &str) -> Result<Self, ApiError> {
        let invalid = |param: &str, message: &str| ApiError::InvalidQuery {
            param: param.into(),
            message: message.into(),
        };
        if let Some(unknown) = query
            .keys()
            .find(|k| !matches!(k.as_str(), "limit" | "starting_after"))
        {
            return Err(invalid(unknown, "unknown parameter"));
        }
        let limit = match query.get("limit") {
            None => 10,
            Some(raw) => raw
                .parse::<i64>()
                .ok()
                .filter(|n| (1..=100).contains(n))
                .ok_or_else(|| invalid("limit", "must be an integer from 1 to 100"))?,
        };
        let starting_after = query.get("starting_after").cloned();
        if starting_after
            .as_deref()
            .is_some_and(|id| !ids::is_well_formed(prefix, id))
        {
            return Err(invalid(
                "starting_after",
                "must be an id returned by this API",
            ));
        }
        Ok(Self {
            limit,
            starting_after,
        })
    }
}
