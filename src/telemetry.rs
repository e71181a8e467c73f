//! Logs and request ids: tracing to standard error, one span per request carrying its
//! `X-Request-Id` (taken from the client when well-formed, else a new UUID).

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::middleware::Next;
use tracing::Instrument;

/// The request-id header, echoed on every response.
pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Keeps the log writer's thread running; dropping it flushes what is queued.
pub struct LogGuard {
    _writer: Option<tracing_appender::non_blocking::WorkerGuard>,
}

/// Installs the tracing subscriber; `RUST_LOG` filters (default `info`). Lines go to
/// standard error through a background thread (`tracing-appender`), so a request never
/// waits on the write; none is dropped (a full queue makes the logger wait instead).
/// Keep the returned guard alive until exit.
pub fn init() -> LogGuard {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .lossy(false)
        .finish(std::io::stderr());
    let installed = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
    LogGuard {
        _writer: installed.is_ok().then_some(guard),
    }
}

fn request_id(req: &ServiceRequest) -> String {
    req.headers()
        .get(&REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| {
            !v.is_empty() && v.len() <= 200 && v.bytes().all(|b| (0x21..=0x7e).contains(&b))
        })
        .map_or_else(|| uuid::Uuid::new_v4().to_string(), str::to_owned)
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
    let span = tracing::info_span!("request", id = %id, method = %req.method(), path = %req.path());
    let started = std::time::Instant::now();
    let mut res = next.call(req).instrument(span.clone()).await?;
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
