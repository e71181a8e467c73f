//! The idempotency engine: the protocol of DESIGN §2 in one place, reused by every POST.
//!
//! `execute` looks the key up, then replays, refuses (409 reused / in use), claims, or
//! takes over; it runs the claimed work detached from the HTTP connection, and settles a
//! failed execution by its error class alone.

use std::future::Future;

use actix_web::HttpResponse;
use chrono::TimeDelta;
use tracing::Instrument;

use super::finish::{finish, release_lease, release_retryable};
use super::record::{Lease, RequestIdentity, StoredResponse};
use super::replay_cache::Cached;
pub use super::respond::{problem_response, respond, EXPIRES_HEADER, REPLAYED_HEADER};
use super::waiters::decide_waiting;
use crate::db::{self, DbConnection, DbPool};
use crate::error::{ApiError, ErrorClass};
use crate::metrics::{Metrics, Outcome};
use crate::state::AppState;

/// Runs a keyed request under the protocol. `work` executes with the lease and must
/// finish the record itself (in the transaction that makes its response true) and
/// return that response; an `Err` is settled here by its class: permanent → stored and
/// replayed, retryable/rejected → released for retry, unknown → lease ended at once so a
/// retry resumes from the recovery point. `ttl`: how long a finished record is kept.
pub async fn execute<F, Fut>(
    state: &AppState,
    request: RequestIdentity,
    ttl: TimeDelta,
    work: F,
) -> Result<HttpResponse, ApiError>
where
    F: FnOnce(Lease) -> Fut + Send + 'static,
    Fut: Future<Output = Result<StoredResponse, ApiError>> + 'static,
{
    let started = std::time::Instant::now();
    if let Some(cached) = replay_from_cache(state, &request) {
        return cached;
    }
    // Held by the detached execution: a drain waits for it. Refused (nothing claimed
    // yet, so nothing to undo) once the drain has started.
    let guard = state.drain.enter().ok_or(ApiError::ShuttingDown)?;
    let lease = match decide_waiting(state, &request, started).await? {
        Ok(lease) => lease,
        Err(answer) => return Ok(answer),
    };
    let (pool, metrics) = (state.pool.clone(), state.metrics.clone());
    let (faults, replays) = (state.config.faults.clone(), state.replays.clone());
    let waiters = state.waiters.clone();
    // Detached: a client that hangs up drops this handler, never the execution.
    let (request_id, span) = (
        crate::telemetry::current_request_id(),
        tracing::Span::current(),
    );
    let execution = actix_web::rt::spawn(crate::telemetry::scoped(
        request_id,
        async move {
            let _guard = guard;
            faults.pause_at("claimed", lease.attempts).await;
            let outcome = match work(lease.clone()).await {
                Ok(stored) => Ok(stored),
                // A permanent failure is answered in its stored form, as its replays are.
                Err(error) => {
                    let zero = TimeDelta::zero();
                    match settle(&pool, &metrics, lease, &error, ttl, zero).await {
                        Some(stored) => Ok(stored),
                        None => Err(error),
                    }
                }
            };
            if let Ok(stored) = &outcome {
                // The record finished with this response: replays may use it.
                replays.put(&request, stored, ttl.to_std().unwrap_or_default());
            }
            waiters.finished(&request.merchant_id, &request.key);
            outcome
        }
        .instrument(span),
    ));
    // The handler answers within the request timeout (below the lease), counted from
    // its start; the execution goes on regardless, and a retry meanwhile gets 409 in
    // use, then the replay.
    let timeout = state
        .config
        .request_timeout()
        .saturating_sub(started.elapsed());
    let stored = tokio::time::timeout(timeout, execution)
        .await
        .map_err(|_| ApiError::StillProcessing)?
        .map_err(|e| ApiError::Database(format!("execution task failed: {e}")))??;
    Ok(respond(stored, false))
}

/// Runs a keyed request whose whole effect is one database transaction (creating an
/// order). A cached replay answers at once. Otherwise `fresh` runs in one blocking
/// task: for a key seen for the first time it commits the effect together with its
/// finished record (the record's unique index is the claim) and returns the response;
/// for a key that has a record it writes nothing and returns `None`, and the request
/// goes through [`execute`] with `work`, as every other keyed request.
pub async fn execute_atomic<F, W, Fut>(
    state: &AppState,
    request: RequestIdentity,
    ttl: TimeDelta,
    fresh: F,
    work: W,
) -> Result<HttpResponse, ApiError>
where
    F: FnOnce(&mut DbConnection, &RequestIdentity) -> Result<Option<StoredResponse>, ApiError>
        + Send
        + 'static,
    W: FnOnce(Lease) -> Fut + Send + 'static,
    Fut: Future<Output = Result<StoredResponse, ApiError>> + 'static,
{
    if let Some(cached) = replay_from_cache(state, &request) {
        return cached;
    }
    let identity = request.clone();
    let created = db::run(&state.pool, move |conn| fresh(conn, &identity)).await?;
    let Some(stored) = created else {
        return execute(state, request, ttl, work).await;
    };
    state.metrics.outcome(Outcome::Executed);
    state
        .replays
        .put(&request, &stored, ttl.to_std().unwrap_or_default());
    Ok(respond(stored, false))
}

/// The answer for `request` from the replay cache, if it has one: a replay, or 409
/// `idempotency_key_reused` for another request under a finished key.
pub fn replay_from_cache(
    state: &AppState,
    request: &RequestIdentity,
) -> Option<Result<HttpResponse, ApiError>> {
    let answer = match state.replays.get(request)? {
        Cached::Replay(stored) => Ok(respond(stored, true)),
        Cached::Reused => Err(ApiError::KeyReused),
    };
    match &answer {
        Ok(_) => state.metrics.outcome(Outcome::Replayed),
        Err(error) => count_refusal(&state.metrics, error),
    }
    Some(answer)
}

/// Counts a keyed request the engine refused (409 reused or in use).
pub(super) fn count_refusal(metrics: &Metrics, error: &ApiError) {
    match error {
        ApiError::KeyReused => metrics.outcome(Outcome::ReusedConflict),
        ApiError::KeyInUse { .. } => metrics.outcome(Outcome::InUse),
        _ => {}
    }
}

/// Records a failed execution's outcome by its class (returning the stored response of a
/// permanent failure, to answer with): permanent → stored for replay;
/// retryable (or rejected after the claim) → `failed_retryable`; unknown → stays
/// `processing`, its lease ending `unknown_delay` from now. A failure here (the database
/// is down) leaves the record `processing` until its lease ends, which is safe. A lost
/// lease writes nothing (the record is someone else's) and is counted.
pub async fn settle(
    pool: &DbPool,
    metrics: &Metrics,
    lease: Lease,
    error: &ApiError,
    ttl: TimeDelta,
    unknown_delay: TimeDelta,
) -> Option<StoredResponse> {
    if let ApiError::LeaseLost = error {
        metrics.leases_lost.inc();
        return None;
    }
    let class = error.class();
    let mut response = problem_response(error);
    let result = db::run(pool, move |conn| match class {
        ErrorClass::Permanent => {
            finish(conn, &lease, &mut response, None, ttl).map(|()| Some(response))
        }
        ErrorClass::Retryable | ErrorClass::Rejected => {
            release_retryable(conn, &lease, ttl).map(|()| None)
        }
        ErrorClass::Unknown => release_lease(conn, &lease, unknown_delay).map(|()| None),
    })
    .await;
    result.unwrap_or_else(|e| {
        tracing::warn!(error = %e, "could not settle a failed execution; its lease will lapse");
        None
    })
}
