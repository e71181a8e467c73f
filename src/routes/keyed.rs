//! What every keyed POST shares before the engine: its idempotency key, its JSON body,
//! its identity (merchant, key, method, path, fingerprint), and the shortcut for a retry
//! that repeats its request byte for byte.

use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::auth::Merchant;
use crate::error::ApiError;
use crate::idempotency::engine::respond;
use crate::idempotency::fingerprint::{fingerprint, parse_strict};
use crate::idempotency::{IdempotencyKey, RequestIdentity};
use crate::metrics::Outcome;
use crate::state::AppState;

/// The request's idempotency key, required: 400 when absent or invalid.
pub(super) fn required_key(req: &HttpRequest) -> Result<IdempotencyKey, ApiError> {
    IdempotencyKey::from_headers(req.headers())?.ok_or(ApiError::MissingIdempotencyKey)
}

/// The request body as strictly parsed JSON: 415 unless `Content-Type` is
/// `application/json`; 400 when malformed or ambiguous; 422 for a number literal that is
/// not exactly an integer (every number in this API is one).
pub(super) fn json_body(req: &HttpRequest, body: &[u8]) -> Result<Value, ApiError> {
    if !is_json(req) {
        return Err(ApiError::UnsupportedMediaType);
    }
    let value = parse_strict(body)?;
    crate::domain::literals::require_integer_literals(body)?;
    Ok(value)
}

/// The body of an endpoint whose body is optional: an empty body is `{}` (the same
/// request, with the same fingerprint); anything else as [`json_body`].
pub(super) fn optional_json_body(req: &HttpRequest, body: &[u8]) -> Result<Value, ApiError> {
    match body.is_empty() {
        true => Ok(Value::Object(Default::default())),
        false => json_body(req, body),
    }
}

fn is_json(req: &HttpRequest) -> bool {
    req.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v: &HeaderValue| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
}

/// The `wait=N` preference of the request's `Prefer` headers (see
/// [`crate::idempotency::waiters::preferred_wait`]).
fn prefer_wait(req: &HttpRequest) -> Option<std::time::Duration> {
    let values = req
        .headers()
        .get_all("prefer")
        .filter_map(|v| v.to_str().ok());
    crate::idempotency::waiters::preferred_wait(values)
}

/// SHA-256 of the request exactly as sent: method, path and body bytes. One digest means
/// one fingerprint (the converse does not hold: member order and spelling may differ).
fn raw_digest(req: &HttpRequest, body: &[u8]) -> [u8; 32] {
    let mut hash = Sha256::new();
    hash.update(req.method().as_str());
    hash.update(b"\n");
    hash.update(req.path());
    hash.update(b"\n");
    hash.update(body);
    hash.finalize().into()
}

/// The replay for a keyed request whose exact bytes (method, path, body) already
/// finished under its key, from the replay cache, before the body is parsed: parsing,
/// validating and fingerprinting the same bytes again would find the same request.
/// `None` for anything else (the request then goes the usual way). A body the API
/// would refuse for its media type is never answered here.
pub(super) fn replay_unchanged(
    state: &AppState,
    merchant: &Merchant,
    key: &IdempotencyKey,
    req: &HttpRequest,
    body: &[u8],
) -> Option<HttpResponse> {
    if !body.is_empty() && !is_json(req) {
        return None;
    }
    let digest = raw_digest(req, body);
    let stored = state
        .replays
        .get_unchanged(&merchant.id, key.as_str(), &digest)?;
    state.metrics.outcome(Outcome::Replayed);
    Some(respond(stored, true))
}

/// What identifies a keyed request: merchant, key, method, path, fingerprint, and the
/// digest of its exact bytes.
pub(super) fn identity(
    merchant: &Merchant,
    key: IdempotencyKey,
    req: &HttpRequest,
    json: Option<&Value>,
    body: &[u8],
) -> RequestIdentity {
    let method = req.method().as_str();
    RequestIdentity {
        merchant_id: merchant.id.clone(),
        key: key.as_str().to_owned(),
        method: method.to_owned(),
        path: req.path().to_owned(),
        fingerprint: fingerprint(method, req.path(), json),
        raw_digest: raw_digest(req, body),
        prefer_wait: prefer_wait(req),
    }
}
