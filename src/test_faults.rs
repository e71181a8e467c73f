//! Faults a client developer asks for, one request at a time: the `Idempay-Test-Fault`
//! header on a keyed POST, accepted with a test API key only. Each fault reproduces
//! something the network or a proxy does to a real client, so a retry loop can be
//! proved against it:
//!
//! | value          | what the server does                          | a correct client  |
//! |----------------|-----------------------------------------------|-------------------|
//! | `fail-before`  | 503 `test_fault` unread; nothing is executed  | retries, same key |
//! | `fail-after`   | executes and commits, then answers 503        | retries, same key: the replay |
//! | `delay=MS`     | executes and commits, answers MS ms late      | times out, retries, same key |
//! | `drop-response`| executes and commits, closes the connection   | retries, same key: the replay |
//!
//! Nothing of the fault is stored: a retry without the header (or with another fault)
//! is answered from the record the first request left, as any retry is. With
//! `fail-after`, `delay` and `drop-response`, a request the API refuses before executing
//! it (a bad body or media type, a key in use or reused) gets its refusal, not the fault;
//! `fail-before` answers before the request is read, as a proxy that cannot reach the
//! server does (only authentication and the key's syntax come first).

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{Extensions, ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::middleware::Next;
use actix_web::ResponseError;

use crate::api_keys::Mode;
use crate::auth::Merchant;
use crate::error::ApiError;
use crate::idempotency::engine::EXPIRES_HEADER;
use crate::idempotency::IdempotencyKey;

/// The request header that asks for a fault.
pub const HEADER: &str = "idempay-test-fault";

/// The longest `delay=MS` accepted: one minute, in milliseconds.
pub const MAX_DELAY_MS: u64 = 60_000;

/// One fault, parsed from the header's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestFault {
    FailBefore,
    FailAfter,
    Delay(Duration),
    DropResponse,
}

impl TestFault {
    /// Parses a header value; 400 `invalid_test_fault` for anything else.
    pub fn parse(value: &str) -> Result<Self, ApiError> {
        let invalid = |why: &str| ApiError::InvalidTestFault(format!("`{value}`: {why}"));
        match value.trim() {
            "fail-before" => Ok(Self::FailBefore),
            "fail-after" => Ok(Self::FailAfter),
            "drop-response" => Ok(Self::DropResponse),
            other => {
                let ms = other.strip_prefix("delay=").ok_or_else(|| {
                    invalid("expected fail-before, fail-after, drop-response or delay=MS")
                })?;
                let digits =
                    !ms.is_empty() && ms.len() <= 5 && ms.bytes().all(|b| b.is_ascii_digit());
                match ms.parse::<u64>() {
                    Ok(ms) if digits && ms <= MAX_DELAY_MS => {
                        Ok(Self::Delay(Duration::from_millis(ms)))
                    }
                    _ => Err(invalid("MS must be 1 to 5 digits, at most 60000")),
                }
            }
        }
    }
}

/// The connection a request arrived on, kept so `drop-response` can close it: a
/// duplicate of the socket's descriptor (shutting it down ends the connection itself).
#[derive(Clone)]
pub struct ConnectionSocket(Arc<std::net::TcpStream>);

/// `HttpServer::on_connect` hook: remembers each TCP connection's socket.
pub fn remember_socket(connection: &dyn Any, data: &mut Extensions) {
    use std::os::fd::AsFd;
    let Some(stream) = connection.downcast_ref::<actix_web::rt::net::TcpStream>() else {
        return;
    };
    // Without the duplicate (out of descriptors) the fault is refused, nothing else.
    if let Ok(fd) = stream.as_fd().try_clone_to_owned() {
        data.insert(ConnectionSocket(Arc::new(std::net::TcpStream::from(fd))));
    }
}

/// The fault the request asks for, if it may have it, checked in this order: 401/429 as
/// authentication answers; 400 `test_fault_not_allowed` for a live key (whatever the
/// value); 400 `invalid_test_fault` for a header sent twice or a value that is not a
/// fault; an invalid key answers as it always does (400 `invalid_idempotency_key`).
/// `None` for a request without an `Idempotency-Key`: it is served without the fault.
async fn allowed_fault(req: &ServiceRequest) -> Result<Option<TestFault>, ApiError> {
    let (http, payload) = (req.request(), &mut actix_web::dev::Payload::None);
    let merchant = <Merchant as actix_web::FromRequest>::from_request(http, payload).await?;
    if merchant.mode != Mode::Test {
        return Err(ApiError::TestFaultNotAllowed);
    }
    let mut values = req.headers().get_all(HEADER);
    let value = values.next().map(|v| v.to_str());
    if values.next().is_some() {
        return Err(ApiError::InvalidTestFault(
            "the header must be sent once".into(),
        ));
    }
    let Some(Ok(value)) = value else {
        return Err(ApiError::InvalidTestFault("not visible ASCII".into()));
    };
    let fault = TestFault::parse(value)?;
    // Without a key there is no safe retry to prove: the fault is not applied.
    Ok(IdempotencyKey::from_headers(req.headers())?.and(Some(fault)))
}

/// Whether a response shows that the request reached execution, so a fault after it
/// applies: anything but a refusal (a 4xx that stored nothing). A stored failure carries
/// `Idempotency-Key-Expires`; a refusal (400, 401, 409 in use or reused, 415, 422
/// validation, 429) does not, and is answered as it is, without the fault.
fn executed<B>(response: &ServiceResponse<B>) -> bool {
    let status = response.status();
    !status.is_client_error() || response.headers().contains_key(EXPIRES_HEADER)
}

/// Middleware: applies the `Idempay-Test-Fault` of a POST, if any. Requests without the
/// header pass through untouched (one header lookup); so do other methods.
pub async fn inject(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    if req.method() != Method::POST || !req.headers().contains_key(HEADER) {
        return Ok(next.call(req).await?.map_into_boxed_body());
    }
    let fault = match allowed_fault(&req).await {
        Ok(Some(fault)) => fault,
        Ok(None) => return Ok(next.call(req).await?.map_into_boxed_body()),
        Err(refusal) => return Ok(req.into_response(refusal.error_response())),
    };
    let socket = req.conn_data::<ConnectionSocket>().cloned();
    tracing::info!(?fault, "test fault requested");
    if fault == TestFault::FailBefore {
        let answer = ApiError::TestFault(
            "test fault fail-before: nothing was executed; retry with the same Idempotency-Key",
        );
        return Ok(req.into_response(answer.error_response()));
    }
    if fault == TestFault::DropResponse && socket.is_none() {
        let answer = ApiError::TestFault(
            "test fault drop-response needs a TCP connection; nothing was executed",
        );
        return Ok(req.into_response(answer.error_response()));
    }
    let response = next.call(req).await?;
    if !executed(&response) {
        return Ok(response.map_into_boxed_body());
    }
    match fault {
        TestFault::FailAfter => {
            let answer = ApiError::TestFault(
                "test fault fail-after: the request was executed but its answer replaced; retry with the same Idempotency-Key",
            );
            Ok(response.into_response(answer.error_response()))
        }
        TestFault::Delay(delay) => {
            actix_web::rt::time::sleep(delay).await;
            Ok(response.map_into_boxed_body())
        }
        // (fail-before was answered above, before execution)
        TestFault::DropResponse | TestFault::FailBefore => {
            // Both directions: the client reads end of stream, no byte of an answer.
            if let Some(socket) = socket {
                let _ = socket.0.shutdown(std::net::Shutdown::Both);
            }
            Ok(response.map_into_boxed_body())
        }
    }
}
