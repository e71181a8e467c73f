//! The one error type of idempay and its RFC 9457 `application/problem+json` form.
//!
//! Every variant states, in one place, its HTTP status, its stable `code`, its error
//! class ([`ErrorClass`]) and its `Retry-After`. The idempotency engine decides what to
//! store for a failed execution from the class alone (DESIGN §4).

use actix_web::http::StatusCode;

mod http;
pub use http::PROBLEM_JSON;

/// How an error affects an idempotency record (DESIGN §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// The request was refused before execution; nothing is stored.
    Rejected,
    /// The request executed and failed for good; the response is stored and replayed.
    Permanent,
    /// Nothing happened; the record is released so a retry executes again.
    Retryable,
    /// The outcome is not known; the record stays `processing` at its recovery point.
    Unknown,
}

/// Every failure a request can meet. Display gives the problem's `detail`.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    InvalidIdempotencyKey(String),
    #[error("this endpoint requires an Idempotency-Key header")]
    MissingIdempotencyKey,
    #[error("request body is not valid JSON: {0}")]
    InvalidJson(String),
    #[error("{0}")]
    AmbiguousJson(String),
    #[error("Content-Type must be application/json")]
    UnsupportedMediaType,
    #[error("invalid `{param}`: {message}")]
    Validation { param: String, message: String },
    #[error("invalid query parameter `{param}`: {message}")]
    InvalidQuery { param: String, message: String },
    #[error("missing or unknown API key; send `Authorization: Bearer <api key>`")]
    Unauthenticated,
    #[error("no {resource} with id `{id}`")]
    NotFound { resource: &'static str, id: String },
    #[error("order is `{status}`; only an order awaiting payment can be cancelled")]
    OrderNotCancellable { status: String },
    #[error("{message}")]
    Declined {
        code: String,
        message: String,
        payment_id: String,
    },
    #[error("order is `{status}`; only an order awaiting payment can be paid")]
    OrderNotPayable { status: String },
    #[error("invalid `{param}`: {message}")]
    PaymentMismatch {
        param: &'static str,
        message: String,
    },
    #[error("a payment involved is still processing; retry when it has settled")]
    PaymentInProgress,
    #[error("the payment processor is unavailable and did not attempt the operation; retry with the same Idempotency-Key")]
    ProcessorUnavailable,
    #[error("the payment processor did not answer; retry with the same Idempotency-Key to learn the outcome")]
    ProcessorTimeout,
    #[error("another execution took this request over; retry with the same Idempotency-Key for its result")]
    LeaseLost,
    #[error(
        "the request is still being processed; retry with the same Idempotency-Key for its result"
    )]
    StillProcessing,
    #[error("payment is `{status}`; only a succeeded payment can be refunded")]
    PaymentNotRefundable { status: String },
    #[error("the refund exceeds what is left to refund on this payment ({available} minor units)")]
    RefundExceedsPayment { available: i64 },
    #[error("the refund fits only if a refund of this payment still in flight fails; retry when it has settled")]
    RefundInProgress,
    #[error(
        "this Idempotency-Key was already used with a different request (method, path or body)"
    )]
    KeyReused,
    #[error("a request with this Idempotency-Key is still being processed; retry later")]
    KeyInUse { retry_after_secs: u64 },
    #[error("too many requests; retry after the Retry-After seconds")]
    RateLimited { retry_after_secs: u64 },
    #[error("the `{0}` header must be sent once")]
    DuplicateHeader(&'static str),
    #[error(
        "this instance is shutting down; retry the same request (another instance will answer)"
    )]
    ShuttingDown,
    #[error("invalid `Idempay-Test-Fault`: {0}")]
    InvalidTestFault(String),
    #[error(
        "`Idempay-Test-Fault` is accepted with a test API key only (sk_test_…, or the demo key)"
    )]
    TestFaultNotAllowed,
    #[error("{0}")]
    TestFault(&'static str),
    #[error("the request body did not arrive within {0} ms")]
    BodyTimeout(u64),
    #[error("the database is unavailable: {0}")]
    Database(String),
    #[error("{detail}")]
    Http { status: StatusCode, detail: String },
}

impl ApiError {
    /// The stable, snake_case `code` clients switch on.
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidIdempotencyKey(_) => "invalid_idempotency_key",
            Self::MissingIdempotencyKey => "idempotency_key_required",
            Self::InvalidJson(_) => "invalid_json",
            Self::AmbiguousJson(_) => "ambiguous_json",
            Self::UnsupportedMediaType => "unsupported_media_type",
            Self::Validation { .. } => "validation_failed",
            Self::InvalidQuery { .. } => "invalid_query",
            Self::Unauthenticated => "unauthenticated",
            Self::NotFound { .. } => "resource_not_found",
            Self::OrderNotCancellable { .. } => "order_not_cancellable",
            Self::Declined { code, .. } if code == "insufficient_funds" => "insufficient_funds",
            Self::Declined { .. } => "card_declined",
            Self::OrderNotPayable { .. } => "order_not_payable",
            Self::PaymentMismatch { .. } => "payment_mismatch",
            Self::PaymentInProgress => "payment_in_progress",
            Self::ProcessorUnavailable => "processor_unavailable",
            Self::ProcessorTimeout => "processor_timeout",
            Self::StillProcessing => "still_processing",
            Self::PaymentNotRefundable { .. } => "payment_not_refundable",
            Self::RefundExceedsPayment { .. } => "refund_exceeds_payment",
            Self::RefundInProgress => "refund_in_progress",
            Self::KeyReused => "idempotency_key_reused",
            Self::KeyInUse { .. } | Self::LeaseLost => "idempotency_key_in_use",
            Self::Database(_) => "database_unavailable",
            Self::ShuttingDown => "shutting_down",
            Self::RateLimited { .. } => "rate_limited",
            Self::DuplicateHeader(_) => "duplicate_header",
            Self::BodyTimeout(_) => "request_timeout",
            Self::InvalidTestFault(_) => "invalid_test_fault",
            Self::TestFaultNotAllowed => "test_fault_not_allowed",
            Self::TestFault(_) => "test_fault",
            Self::Http { status, .. } => http::http_code(*status),
        }
    }

    /// The error class that decides what the idempotency engine stores.
    pub fn class(&self) -> ErrorClass {
        match self {
            Self::NotFound { .. }
            | Self::OrderNotCancellable { .. }
            | Self::Declined { .. }
            | Self::OrderNotPayable { .. }
            | Self::PaymentMismatch { .. }
            | Self::PaymentNotRefundable { .. }
            | Self::RefundExceedsPayment { .. } => ErrorClass::Permanent,
            Self::PaymentInProgress | Self::RefundInProgress | Self::ProcessorUnavailable => {
                ErrorClass::Retryable
            }
            Self::ProcessorTimeout | Self::Database(_) => ErrorClass::Unknown,
            _ => ErrorClass::Rejected,
        }
    }

    /// Whole seconds for `Retry-After`, where the client should come back.
    pub fn retry_after_secs(&self) -> Option<u64> {
        match self {
            Self::KeyInUse { retry_after_secs } | Self::RateLimited { retry_after_secs } => {
                Some(*retry_after_secs)
            }
            Self::PaymentInProgress
            | Self::RefundInProgress
            | Self::ProcessorUnavailable
            | Self::ProcessorTimeout
            | Self::StillProcessing
            | Self::ShuttingDown
            | Self::TestFault(_)
            | Self::LeaseLost => Some(1),
            Self::Database(_) => Some(5),
            _ => None,
        }
    }

    /// Whether retrying the same request can succeed (the problem's `retryable`).
    pub fn retryable(&self) -> bool {
        self.retry_after_secs().is_some()
    }
}

impl From<diesel::result::Error> for ApiError {
    fn from(e: diesel::result::Error) -> Self {
        tracing::error!(error = %e, "database error");
        Self::Database(
            "a database operation failed; the request may be retried with the same key".into(),
        )
    }
}

impl From<diesel::r2d2::PoolError> for ApiError {
    fn from(e: diesel::r2d2::PoolError) -> Self {
        tracing::warn!(error = %e, "no database connection available");
        Self::Database("no database connection was available in time".into())
    }
}

impl ApiError {
    /// A validation failure (422) on one request member.
    pub fn invalid(param: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Validation {
            param: param.into(),
            message: message.into(),
        }
    }
}
