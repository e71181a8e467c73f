//! The idempotency engine: the protocol of DESIGN §2 in one place, reused by every POST.
//!
//! `execute` looks the key up, then replays, refuses (409 reused / in use), claims, or
//! takes over; it runs the claimed work detached from the HTTP connection, and settles a
//! failed execution by its error class alone.

use std::future::Future;

use actix_web::http::{header, StatusCode};
use actix_web::HttpResponse;
use chrono::TimeDelta;

use super::finish::{finish, release_lease, release_retryable};
use super::record::{self, status, Lease, RequestIdentity, StoredResponse};
use crate::db::{self, DbConnection, DbPool};
use crate::error::{ApiError, ErrorClass, PROBLEM_JSON};
use crate::metrics::Metrics;
use crate::state::AppState;

/// The response header that marks a replay.
pub const REPLAYED_HEADER: &str = "Idempotent-Replayed";

/// What to do with a request, decided from its record.
#[derive(Debug)]
pub enum Decision {
    /// The key finished earlier with this response.
    Replay(StoredResponse),
    /// We hold the lease: execute (from `lease.recovery_point`).
    Execute(Lease),
}

/// Decides a keyed request from its record: one indexed read when the key is known,
/// a claim (write) only on a miss. Errors: 409 `idempotency_key_reused` when the
/// fingerprint differs, 409 `idempotency_key_in_use` while another lease is valid.
pub fn decide(
    conn: &mut DbConnection,
    request: &RequestIdentity,
    lease: TimeDelta,
) -> Result<Decision, ApiError> {
    // A claim or takeover loses only to a concurrent request; the next read sees it.
    for _ in 0..3 {
        let (live, expired) = match record::lookup(conn, &request.merchant_id, &request.key)? {
            Some((r, now)) if r.is_expired(now) => (None, Some(r.id)),
            other => (other, None),
        };
        let Some((r, now)) = live else {
            if let Some(lease) = record::claim(conn, request, expired.as_deref(), lease)? {
                return Ok(Decision::Execute(lease));
            }
            continue;
        };
        if r.fingerprint != request.fingerprint {
            return Err(ApiError::KeyReused);
        }
        match r.status.as_str() {
            status::SUCCEEDED | status::FAILED => return Ok(Decision::Replay(stored_response(r)?)),
            status::PROCESSING if r.locked_until > now => {
                let left = (r.locked_until - now).num_milliseconds().max(0) as u64;
                let retry_after_secs = left.div_ceil(1000).clamp(1, 2);
                return Err(ApiError::KeyInUse { retry_after_secs });
            }
            _ => {
                if let Some(lease) = record::take_over(conn, &r, lease)? {
                    return Ok(Decision::Execute(lease));
                }
            }
        }
    }
    Err(ApiError::KeyInUse {
        retry_after_secs: 1,
    })
}

fn stored_response(r: record::Record) -> Result<StoredResponse, ApiError> {
    match (r.response_status, r.response_body, r.response_content_type) {
        (Some(status), Some(body), Some(content_type)) => Ok(StoredResponse {
            status: u16::try_from(status).unwrap_or(500),
            body,
            content_type,
            location: r.response_location,
        }),
        _ => Err(ApiError::Database(format!(
            "finished record {} has no stored response",
            r.id
        ))),
    }
}

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
    let lease_len = state.config.lease();
    // Held by the detached execution: a drain waits for it. Refused (nothing claimed
    // yet, so nothing to undo) once the drain has started.
    let guard = state.drain.enter().ok_or(ApiError::ShuttingDown)?;
    let decision = db::run(&state.pool, move |conn| decide(conn, &request, lease_len)).await?;
    let lease = match decision {
        Decision::Replay(stored) => return Ok(respond(stored, true)),
        Decision::Execute(lease) => lease,
    };
    let (pool, metrics) = (state.pool.clone(), state.metrics.clone());
    let faults = state.config.faults.clone();
    // Detached: a client that hangs up drops this handler, never the execution.
    let execution = actix_web::rt::spawn(async move {
        let _guard = guard;
        faults.pause_at("claimed", lease.attempts).await;
        let outcome = work(lease.clone()).await;
        if let Err(error) = &outcome {
            settle(&pool, &metrics, lease, error, ttl, TimeDelta::zero()).await;
        }
        outcome
    });
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

/// Records a failed execution's outcome by its class: permanent → stored for replay;
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
) {
    if let ApiError::LeaseLost = error {
        return Metrics::add(&metrics.leases_lost, 1);
    }
    let class = error.class();
    let response = problem_response(error);
    let result = db::run(pool, move |conn| match class {
        ErrorClass::Permanent => finish(conn, &lease, &response, None, ttl),
        ErrorClass::Retryable | ErrorClass::Rejected => release_retryable(conn, &lease, ttl),
        ErrorClass::Unknown => release_lease(conn, &lease, unknown_delay),
    })
    .await;
    if let Err(e) = result {
        tracing::warn!(error = %e, "could not settle a failed execution; its lease will lapse");
    }
}

/// The stored form of an error response: its status and RFC 9457 problem body.
pub fn problem_response(error: &ApiError) -> StoredResponse {
    StoredResponse {
        status: actix_web::ResponseError::status_code(error).as_u16(),
        body: error.problem_body(),
        content_type: PROBLEM_JSON.to_owned(),
        location: None,
    }
}

/// Builds the HTTP response for a stored response; a replay carries
/// `Idempotent-Replayed: true` and is otherwise byte-identical.
pub fn respond(stored: StoredResponse, replayed: bool) -> HttpResponse {
    let status = StatusCode::from_u16(stored.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = HttpResponse::build(status);
    response.insert_header((header::CONTENT_TYPE, stored.content_type));
    if let Some(location) = stored.location {
        response.insert_header((header::LOCATION, location));
    }
    if replayed {
        response.insert_header((REPLAYED_HEADER, "true"));
    }
    response.body(stored.body)
}
