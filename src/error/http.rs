//! The HTTP face of [`ApiError`]: status codes, titles, the RFC 9457 problem document
//! and `Retry-After`, and the codes of errors raised by actix itself.

use actix_web::http::{header, StatusCode};
use actix_web::{HttpResponse, ResponseError};
use serde_json::json;

use super::ApiError;

impl ApiError {
    fn title(&self) -> &'static str {
        match self {
            Self::KeyReused => "Idempotency-Key reused with a different request",
            Self::KeyInUse { .. } | Self::LeaseLost => "Idempotency-Key in use",
            Self::Declined { .. } => "Payment declined",
            Self::PaymentMismatch { .. } => "Payment does not match the order",
            Self::Validation { .. } => "Request failed validation",
            _ => self.status_code().canonical_reason().unwrap_or("Error"),
        }
    }

    /// The RFC 9457 problem document as bytes: `type`, `title`, `status`, `detail`,
    /// `code`, `retryable`, `param` for validation errors, and `request_id`: the
    /// `X-Request-Id` of the request being served (a stored problem keeps its first
    /// request's id, so its replays stay byte-identical).
    pub fn problem_body(&self) -> Vec<u8> {
        let mut problem = json!({
            "type": format!("https://idempay.dev/problems/{}", self.code()),
            "title": self.title(),
            "status": self.status_code().as_u16(),
            "detail": self.to_string(),
            "code": self.code(),
            "retryable": self.retryable(),
        });
        if let Self::Validation { param, .. } | Self::InvalidQuery { param, .. } = self {
            problem["param"] = json!(param);
        }
        if let Self::PaymentMismatch { param, .. } = self {
            problem["param"] = json!(param);
        }
        if let Self::Declined { payment_id, .. } = self {
            problem["payment_id"] = json!(payment_id);
        }
        if let Some(id) = crate::telemetry::current_request_id() {
            problem["request_id"] = json!(*id);
        }
        serde_json::to_vec(&problem).expect("a serde_json::Value always serialises")
    }
}

/// The `code` for a status raised by the HTTP layer itself (actix's own failures).
pub(super) fn http_code(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 => "bad_request",
        404 => "route_not_found",
        405 => "method_not_allowed",
        413 => "payload_too_large",
        415 => "unsupported_media_type",
        _ if status.is_server_error() => "internal_error",
        _ => "http_error",
    }
}

/// The media type of every error body (RFC 9457 §3).
pub const PROBLEM_JSON: &str = "application/problem+json";

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        match self {
            Self::InvalidIdempotencyKey(_)
            | Self::DuplicateHeader(_)
            | Self::InvalidTestFault(_)
            | Self::TestFaultNotAllowed
            | Self::MissingIdempotencyKey
            | Self::InvalidJson(_)
            | Self::AmbiguousJson(_)
            | Self::InvalidQuery { .. } => StatusCode::BAD_REQUEST,
            Self::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::Validation { .. } | Self::PaymentMismatch { .. } => {
                StatusCode::UNPROCESSABLE_ENTITY
            }
            Self::Declined { .. } => StatusCode::PAYMENT_REQUIRED,
            Self::OrderNotPayable { .. }
            | Self::PaymentInProgress
            | Self::PaymentNotRefundable { .. }
            | Self::RefundExceedsPayment { .. }
            | Self::RefundInProgress => StatusCode::CONFLICT,
            Self::ProcessorUnavailable | Self::ProcessorTimeout | Self::StillProcessing => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            Self::Unauthenticated => StatusCode::UNAUTHORIZED,
            Self::NotFound { .. } => StatusCode::NOT_FOUND,
            Self::OrderNotCancellable { .. }
            | Self::KeyReused
            | Self::KeyInUse { .. }
            | Self::LeaseLost => StatusCode::CONFLICT,
            Self::Database(_) | Self::ShuttingDown | Self::TestFault(_) => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            Self::BodyTimeout(_) => StatusCode::REQUEST_TIMEOUT,
            Self::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::Http { status, .. } => *status,
        }
    }

    fn error_response(&self) -> HttpResponse {
        let mut response = HttpResponse::build(self.status_code());
        response.insert_header((header::CONTENT_TYPE, PROBLEM_JSON));
        if let Some(secs) = self.retry_after_secs() {
            response.insert_header((header::RETRY_AFTER, secs.to_string()));
        }
        if matches!(self, Self::Unauthenticated) {
            response.insert_header((header::WWW_AUTHENTICATE, "Bearer"));
        }
        response.body(self.problem_body())
    }
}
