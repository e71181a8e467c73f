//! Faults a client developer asks for, one request at a time: the `Idempay-Test-Fault`
//! header on a keyed POST, accepted with a test API key only. Each fault reproduces
//! something the network or a proxy does to a real client, so a retry loop can be
//! proved against it:
//!
//! | value          | what the server does                          | a correct client  |
//! |----------------|-----------------------------------------------|-------------------|
//! | `fail-before`  | 503 `test_fault`; nothing is executed         | retries, same key |
//! | `fail-after`   | executes and commits, then answers 503        | retries, same key: the replay |
//! | `delay=MS`     | executes and commits, answers MS ms late      | times out, retries, same key |
//! | `drop-response`| executes and commits, closes the connection   | retries, same key: the replay |
//!
//! Nothing of the fault is stored: a retry without the header (or with another fault)
//! is answered from the record the first request left, as any retry is.

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
                match ms.parse::<u64>() {
                    Ok(ms) if ms <= MAX_DELAY_MS => Ok(Self::Delay(Duration::from_millis(ms))),
                    _ => Err(invalid("MS must be whole milliseconds, at most 60000")),
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

/// The fault `value` asks for, if the request may have it: 401/429 as authentication
/// answers, then 400 `invalid_test_fault` for a value that is not a fault, 400
/// `test_fault_not_allowed` for a live key.
async fn allowed_fault(
    req: &ServiceRequest,
    value: &actix_web::http::header::HeaderValue,
) -> Result<TestFault, ApiError> {
    // Authenticated first, as every request is (the handler reuses the result): the
    // fault needs a test key.
    let (http, payload) = (req.request(), &mut actix_web::dev::Payload::None);
    let merchant = <Merchant as actix_web::FromRequest>::from_request(http, payload).await?;
    let fault = value
        .to_str()
        .map_err(|_| ApiError::InvalidTestFault("not visible ASCII".into()))
        .and_then(TestFault::parse)?;
    match merchant.mode {
        Mode::Test => Ok(fault),
        Mode::Live => Err(ApiError::TestFaultNotAllowed),
    }
}

/// Middleware: applies the `Idempay-Test-Fault` of a POST, if any. Requests without the
/// header pass through untouched (one header lookup).
pub async fn inject(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let Some(value) = req.headers().get(HEADER) else {
        return Ok(next.call(req).await?.map_into_boxed_body());
    };
    if req.method() != Method::POST {
        return Ok(next.call(req).await?.map_into_boxed_body());
    }
    let fault = match allowed_fault(&req, value).await {
        Ok(fault) => fault,
        Err(refusal) => return Ok(req.into_response(refusal.error_response())),
    };
    let socket = req.conn_data::<ConnectionSocket>().cloned();
    tracing::info!(?fault, "test fault requested");
    match fault {
        TestFault::FailBefore => {
            let answer = ApiError::TestFault(
                "test fault fail-before: nothing was executed; retry with the same Idempotency-Key",
            );
            Ok(req.into_response(answer.error_response()))
        }
        TestFault::FailAfter => {
            let executed = next.call(req).await?;
            let answer = ApiError::TestFault(
                "test fault fail-after: the request was executed but its answer replaced; retry with the same Idempotency-Key",
            );
            Ok(executed.into_response(answer.error_response()))
        }
        TestFault::Delay(delay) => {
            let executed = next.call(req).await?;
            actix_web::rt::time::sleep(delay).await;
            Ok(executed.map_into_boxed_body())
        }
        TestFault::DropResponse => {
            let Some(socket) = socket else {
                let answer = ApiError::TestFault(
                    "test fault drop-response needs a TCP connection; nothing was executed",
                );
                return Ok(req.into_response(answer.error_response()));
            };
            let executed = next.call(req).await?;
            // Both directions: the client reads end of stream, no byte of an answer.
            let _ = socket.0.shutdown(std::net::Shutdown::Both);
            Ok(executed.map_into_boxed_body())
        }
    }
}
