//! Graceful drain: what idempay does between SIGTERM (or SIGINT) and exit.
//!
//! Every request the API serves, and every execution it detaches, holds a [`Guard`].
//! When the drain starts, no new guard is handed out: new requests (readiness included)
//! are answered `503 shutting_down` with `Retry-After`, so a load balancer stops sending
//! and clients retry elsewhere with the same key. The drain then waits, up to the
//! shutdown grace, until every guard is gone: executions already running finish and
//! commit. Whatever is still running when the grace ends is cut off where it stands,
//! at its recovery point, and the next reaper (of any instance) resolves it.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header;
use actix_web::middleware::Next;
use actix_web::{web, ResponseError};
use tokio::sync::Notify;

use crate::error::ApiError;
use crate::state::AppState;

/// The drain state of one instance, shared by every worker.
#[derive(Debug, Default)]
pub struct Drain {
    draining: AtomicBool,
    active: AtomicUsize,
    idle: Notify,
}

/// Proof that a request or an execution is running; the drain waits for it.
#[derive(Debug)]
pub struct Guard(Arc<Drain>);

impl Drain {
    /// A guard for new work, or `None` once the drain has started.
    pub fn enter(self: &Arc<Self>) -> Option<Guard> {
        // Count first, then check: with the drain's store-then-load below (both
        // sequentially consistent), either this sees `draining` or the drain sees us.
        self.active.fetch_add(1, Ordering::SeqCst);
        let guard = Guard(self.clone());
        (!self.draining.load(Ordering::SeqCst)).then_some(guard)
    }

    /// Whether the drain has started.
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    /// How many requests and executions are running.
    pub fn active(&self) -> usize {
        self.active.load(Ordering::SeqCst)
    }

    /// Starts the drain and waits up to `grace` for every guard to be dropped. Returns
    /// how many were still running when it stopped waiting (0: all finished).
    pub async fn drain(&self, grace: Duration) -> usize {
        self.draining.store(true, Ordering::SeqCst);
        let wait = async {
            loop {
                let idle = self.idle.notified();
                if self.active() == 0 {
                    return;
                }
                idle.await;
            }
        };
        let _ = tokio::time::timeout(grace, wait).await;
        self.active()
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if self.0.active.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

/// Routes that keep answering during a drain: liveness and metrics (the process is
/// alive and observable until it exits). Readiness is refused, as every API route.
const ALWAYS_SERVED: [&str; 2] = ["/healthz", "/metrics"];

/// Middleware: holds a [`Guard`] for each request, or answers `503 shutting_down` with
/// `Retry-After` and `Connection: close` once the drain has started.
pub async fn guard_requests(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    if ALWAYS_SERVED.contains(&req.path()) {
        return Ok(next.call(req).await?.map_into_boxed_body());
    }
    let guard = req
        .app_data::<web::Data<AppState>>()
        .and_then(|state| state.drain.enter());
    let Some(_guard) = guard else {
        let mut response = ApiError::ShuttingDown.error_response();
        response.headers_mut().insert(
            header::CONNECTION,
            header::HeaderValue::from_static("close"),
        );
        return Ok(req.into_response(response));
    };
    Ok(next.call(req).await?.map_into_boxed_body())
}
