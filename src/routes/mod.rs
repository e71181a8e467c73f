//! The route table and what every handler shares: reading the idempotency key, the JSON
//! body, and turning the HTTP layer's own failures into problem+json.

mod health;
mod keyed;
mod keys;
mod orders;
mod page;
mod payments;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use actix_web::dev::{Payload, ServiceResponse};
use actix_web::http::header;
use actix_web::middleware::ErrorHandlerResponse;
use actix_web::{web, FromRequest, HttpRequest, ResponseError};

use crate::error::{ApiError, PROBLEM_JSON};
use crate::state::AppState;

/// Every route: `(method, path)` as registered, for the spec drift test. Every GET route
/// answers HEAD too (the same status and headers, no body).
pub const ROUTES: &[(&str, &str)] = &[
    ("GET", "/healthz"),
    ("HEAD", "/healthz"),
    ("GET", "/readyz"),
    ("HEAD", "/readyz"),
    ("GET", "/metrics"),
    ("HEAD", "/metrics"),
    ("GET", "/openapi.yaml"),
    ("HEAD", "/openapi.yaml"),
    ("GET", "/openapi-3.0.yaml"),
    ("HEAD", "/openapi-3.0.yaml"),
    ("POST", "/orders"),
    ("GET", "/orders"),
    ("HEAD", "/orders"),
    ("GET", "/orders/{id}"),
    ("HEAD", "/orders/{id}"),
    ("POST", "/orders/{id}/cancel"),
    ("POST", "/payments"),
    ("GET", "/payments"),
    ("HEAD", "/payments"),
    ("GET", "/payments/{id}"),
    ("HEAD", "/payments/{id}"),
    ("POST", "/payments/{id}/refunds"),
    ("GET", "/refunds/{id}"),
    ("HEAD", "/refunds/{id}"),
    ("GET", "/idempotency_keys"),
    ("HEAD", "/idempotency_keys"),
    ("GET", "/idempotency_keys/{key}"),
    ("HEAD", "/idempotency_keys/{key}"),
];

/// A resource whose GET handler answers HEAD as well.
macro_rules! readable {
    ($path:expr, $handler:expr) => {
        web::resource($path)
            .route(web::get().to($handler))
            .route(web::head().to($handler))
    };
}

/// Registers the routes of [`ROUTES`].
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(readable!("/healthz", health::healthz))
        .service(readable!("/readyz", health::readyz))
        .service(readable!("/metrics", health::metrics))
        .service(readable!("/openapi.yaml", health::openapi))
        .service(readable!("/openapi-3.0.yaml", health::openapi_3_0))
        .service(readable!("/orders", orders::list).route(web::post().to(orders::create)))
        .service(readable!("/orders/{id}", orders::get))
        .service(web::resource("/orders/{id}/cancel").route(web::post().to(orders::cancel)))
        .service(readable!("/payments", payments::list).route(web::post().to(payments::create)))
        .service(readable!("/payments/{id}", payments::get))
        .service(web::resource("/payments/{id}/refunds").route(web::post().to(payments::refund)))
        .service(readable!("/refunds/{id}", payments::get_refund))
        .service(readable!("/idempotency_keys", keys::list))
        .service(readable!("/idempotency_keys/{key}", keys::get));
}

/// The response for a path no route matches: 404 problem+json.
pub async fn no_route(req: HttpRequest) -> Result<actix_web::HttpResponse, ApiError> {
    Err(ApiError::Http {
        status: actix_web::http::StatusCode::NOT_FOUND,
        detail: format!("no route for {} {}", req.method(), req.path()),
    })
}

/// Rewrites an error response that is not yet problem+json (actix's own 400, 405, 413,
/// 415, …) into one, keeping its status and using the error's message as `detail`.
pub fn problem_for_framework_errors<B>(
    res: ServiceResponse<B>,
) -> actix_web::Result<ErrorHandlerResponse<B>> {
    let is_problem = res
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(PROBLEM_JSON.as_bytes()));
    if is_problem {
        return Ok(ErrorHandlerResponse::Response(res.map_into_left_body()));
    }
    let status = res.status();
    let detail = match res.response().error() {
        Some(e) => e.to_string(),
        None => status.canonical_reason().unwrap_or("error").to_owned(),
    };
    let allow = res.headers().get(header::ALLOW).cloned();
    let (req, _) = res.into_parts();
    let mut response = ApiError::Http { status, detail }.error_response();
    if let Some(allow) = allow {
        response.headers_mut().insert(header::ALLOW, allow);
    }
    let res = ServiceResponse::new(req, response).map_into_right_body();
    Ok(ErrorHandlerResponse::Response(res))
}

/// A request body received in full within `--body-timeout-ms` and the body limit
/// (413 beyond it). A client that sends less than its `Content-Length` gets
/// `408 request_timeout` instead of holding a connection and a worker forever.
pub struct Body(web::Bytes);

impl FromRequest for Body {
    type Error = actix_web::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self, actix_web::Error>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let timeout = req
            .app_data::<web::Data<AppState>>()
            .map_or(Duration::from_secs(5), |state| state.config.body_timeout());
        let bytes = web::Bytes::from_request(req, payload);
        Box::pin(async move {
            match tokio::time::timeout(timeout, bytes).await {
                Ok(bytes) => bytes.map(Body),
                Err(_) => Err(ApiError::BodyTimeout(timeout.as_millis() as u64).into()),
            }
        })
    }
}

impl std::ops::Deref for Body {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

/// A resource id from the path: 404 `resource_not_found` unless well-formed for `prefix`,
/// so a malformed id never reaches the database.
fn path_id(
    id: web::Path<String>,
    prefix: &str,
    resource: &'static str,
) -> Result<String, ApiError> {
    let id = id.into_inner();
    match crate::domain::ids::is_well_formed(prefix, &id) {
        true => Ok(id),
        false => Err(ApiError::NotFound { resource, id }),
    }
}
