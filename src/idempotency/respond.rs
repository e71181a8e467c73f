//! What a keyed request is answered with: a stored response (first answer or replay,
//! with `Idempotent-Replayed` and `Idempotency-Key-Expires`), and the stored form of a
//! problem.

use actix_web::http::{header, StatusCode};
use actix_web::HttpResponse;

use super::record::StoredResponse;
use crate::error::{ApiError, PROBLEM_JSON};

/// The response header that marks a replay.
pub const REPLAYED_HEADER: &str = "Idempotent-Replayed";

/// The stored form of an error response: its status and RFC 9457 problem body.
pub fn problem_response(error: &ApiError) -> StoredResponse {
    StoredResponse {
        status: actix_web::ResponseError::status_code(error).as_u16(),
        body: error.problem_body(),
        content_type: PROBLEM_JSON.to_owned(),
        location: None,
        expires_at: None,
    }
}

/// The response header that tells when a finished key stops replaying (an HTTP date).
pub const EXPIRES_HEADER: &str = "Idempotency-Key-Expires";

/// Builds the HTTP response for a stored response; a replay carries
/// `Idempotent-Replayed: true` and is otherwise byte-identical. A finished record's
/// response (first answer and replays alike) carries `Idempotency-Key-Expires`: the
/// moment the key stops replaying, as an HTTP date (RFC 9110 §5.6.7).
pub fn respond(stored: StoredResponse, replayed: bool) -> HttpResponse {
    let status = StatusCode::from_u16(stored.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = HttpResponse::build(status);
    response.insert_header((header::CONTENT_TYPE, stored.content_type));
    if let Some(location) = stored.location {
        response.insert_header((header::LOCATION, location));
    }
    if let Some(expires) = stored.expires_at {
        // Rounded up to the whole second: the key must not still replay after the date.
        let whole = expires.and_utc().timestamp()
            + i64::from(expires.and_utc().timestamp_subsec_nanos() > 0);
        let at = chrono::DateTime::from_timestamp(whole, 0).unwrap_or(expires.and_utc());
        let date = at.format("%a, %d %b %Y %H:%M:%S GMT");
        response.insert_header((EXPIRES_HEADER, date.to_string()));
    }
    if replayed {
        response.insert_header((REPLAYED_HEADER, "true"));
    }
    response.body(stored.body)
}
