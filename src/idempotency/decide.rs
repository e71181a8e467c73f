//! Deciding a keyed request from its record (DESIGN §2, steps 2–4): replay, refuse
//! (409 reused / in use), claim a new record, or take over one whose owner died or
//! that failed retryably.

use std::time::Duration;

use chrono::TimeDelta;

use super::record::{self, status, Lease, RequestIdentity, StoredResponse};
use crate::db::DbConnection;
use crate::error::ApiError;
use crate::metrics::Outcome;

/// What to do with a request, decided from its record.
#[derive(Debug)]
pub enum Decision {
    /// The key finished earlier with this response; its record expires `remaining`
    /// from now.
    Replay(StoredResponse, Duration),
    /// We hold the lease, got as `how`: execute (from `lease.recovery_point`).
    Execute(Lease, Outcome),
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
                let how = match expired {
                    Some(_) => Outcome::ExpiredReclaimed,
                    None => Outcome::Executed,
                };
                return Ok(Decision::Execute(lease, how));
            }
            continue;
        };
        if r.fingerprint != request.fingerprint {
            return Err(ApiError::KeyReused);
        }
        match r.status.as_str() {
            status::SUCCEEDED | status::FAILED => {
                let remaining = r.expires_at.map_or(TimeDelta::zero(), |at| at - now);
                let remaining = remaining.to_std().unwrap_or_default();
                return Ok(Decision::Replay(stored_response(r)?, remaining));
            }
            status::PROCESSING if r.locked_until > now => {
                let left = (r.locked_until - now).num_milliseconds().max(0) as u64;
                let retry_after_secs = left.div_ceil(1000).clamp(1, 2);
                return Err(ApiError::KeyInUse { retry_after_secs });
            }
            _ => {
                if let Some(lease) = record::take_over(conn, &r, lease)? {
                    return Ok(Decision::Execute(lease, Outcome::TakenOver));
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
            expires_at: r.expires_at,
        }),
        _ => Err(ApiError::Database(format!(
            "finished record {} has no stored response",
            r.id
        ))),
    }
}
