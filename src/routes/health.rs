//! Liveness, readiness, metrics and the OpenAPI document: no API key needed.

use actix_web::{web, HttpResponse};
use std::time::Duration;

use serde_json::json;

use crate::db;
use crate::error::ApiError;
use crate::metrics::Sizes;
use crate::state::AppState;

/// The spec, compiled in from the top-level `openapi.yaml`.
pub const OPENAPI_YAML: &str = include_str!("../../openapi.yaml");

/// `GET /healthz`: 200 while the process serves requests.
pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(json!({"status": "ok"}))
}

/// The longest `GET /readyz` waits for a database connection.
const READINESS_CHECKOUT: Duration = Duration::from_secs(1);

/// `GET /readyz`: 200 when the database answers a round trip now (on a connection
/// proved alive), 503 `database_unavailable` otherwise (within about a second), and
/// 503 `shutting_down` once a drain has started (see the drain middleware).
pub async fn readyz(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let wait = READINESS_CHECKOUT.min(state.config.database.pool_timeout());
    db::ping(&state.pool, wait).await?;
    Ok(HttpResponse::Ok().json(json!({"status": "ready"})))
}

/// The same spec in OpenAPI 3.0, derived from `openapi.yaml` by
/// `scripts/clients/openapi-3.0.sh` (CI checks that it is current), for generators that
/// read only 3.0.
pub const OPENAPI_3_0_YAML: &str = include_str!("../../spec/openapi-3.0.yaml");

/// `GET /openapi-3.0.yaml`: the OpenAPI 3.0 rendition of [`OPENAPI_YAML`].
pub async fn openapi_3_0() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/yaml")
        .body(OPENAPI_3_0_YAML)
}

/// `GET /openapi.yaml`: the OpenAPI 3.1 description of this API.
pub async fn openapi() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/yaml")
        .body(OPENAPI_YAML)
}

/// `GET /metrics`: this instance's counters in the Prometheus text format.
pub async fn metrics(state: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4")
        .body(state.metrics.render(Sizes {
            pool_connections: state.pool.size().0,
            pool_idle: state.pool.size().1,
            pool_discarded: state.pool.discarded(),
            replay_cache: state.replays.size(),
        }))
}
