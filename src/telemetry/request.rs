//! The request middleware: the request's id (the client's `X-Request-Id` when
//! well-formed, else a new UUID), its span, its metrics and its access line.

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::middleware::Next;
use std::sync::Arc;

use tracing::Instrument;

/// The request-id header, echoed on every response.
pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

fn request_id(req: &ServiceRequest) -> String {
    req.headers()
        .get(&REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| {
            !v.is_empty() && v.len() <= 200 && v.bytes().all(|b| (0x21..=0x7e).contains(&b))
        })
        .map_or_else(|| uuid::Uuid::new_v4().to_string(), str::to_owned)
}

/// The longest client-chosen text a log line carries (a 65 KB path is cut to this).
const MAX_LOGGED: usize = 200;

/// `text`, cut to [`MAX_LOGGED`] bytes at a character boundary, marked when cut.
fn bounded(text: &str) -> std::borrow::Cow<'_, str> {
    if text.len() <= MAX_LOGGED {
        return text.into();
    }
    let mut end = MAX_LOGGED;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &text[..end], text.len()).into()
}

/// Middleware: runs the request in a span with its id, logs its outcome, and sets
/// `X-Request-Id` on the response.
pub async fn request_span(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let id = request_id(&req);
    let method = req.method().clone();
    let metrics = req
        .app_data::<actix_web::web::Data<crate::state::AppState>>()
        .map(|state| state.metrics.clone());
    let path = bounded(req.path());
    let span = tracing::info_span!("request", id = %id, method = %req.method(), path = %path);
    let started = std::time::Instant::now();
    let scope: Arc<str> = Arc::from(id.as_str());
    let mut res = super::scoped(Some(scope), next.call(req))
        .instrument(span.clone())
        .await?;
    if let Some(metrics) = metrics {
        let route = res.request().match_pattern();
        let route = route.as_deref().unwrap_or("unmatched");
        let status = res.status();
        metrics
            .http_requests
            .with_label_values(&[route, method.as_str(), status.as_str()])
            .inc();
        metrics
            .http_duration
            .with_label_values(&[route, method.as_str()])
            .observe(started.elapsed().as_secs_f64());
    }
    span.in_scope(|| {
        tracing::info!(
            status = res.status().as_u16(),
            ms = started.elapsed().as_millis() as u64,
            "handled"
        )
    });
    if let Ok(value) = HeaderValue::from_str(&id) {
        res.headers_mut().insert(REQUEST_ID, value);
    }
    Ok(res)
}
