//! The order operations run by the handlers: creating and cancelling an order, each in
//! ONE transaction with the idempotency record's completion (DESIGN §3), so a crash
//! before the commit leaves no effect and a retry executes afresh.

use actix_web::http::StatusCode;
use chrono::TimeDelta;

use crate::db::orders::{self as rows, OrderRow};
use crate::db::{self, DbConnection};
use crate::domain::ids;
use crate::domain::order::{status, NewOrder, Order};
use crate::domain::payment::status::PROCESSING;
use crate::error::ApiError;
use crate::idempotency::finish::finish;
use crate::idempotency::record;
use crate::idempotency::{Lease, RequestIdentity, StoredResponse};

/// The lease a keyed request executes under, and how long its record is kept.
pub type Keyed<'a> = Option<(&'a Lease, TimeDelta)>;

/// A JSON response for replay storage: `status`, the serialised `body`, and `Location`.
pub fn json_response<T: serde::Serialize>(
    status: StatusCode,
    body: &T,
    location: Option<String>,
) -> StoredResponse {
    StoredResponse {
        status: status.as_u16(),
        body: serde_json::to_vec(body)
            .expect("API views serialise: they hold only strings, numbers and maps"),
        content_type: "application/json".to_owned(),
        location,
        expires_at: None,
    }
}

/// Creates an order for a key seen for the first time → 201 with `Location`: the order
/// and its idempotency record, already finished with that response, commit in ONE
/// transaction. The record's unique index on (merchant, key) is the claim: nothing of
/// the execution is visible before it is complete, so no lease is needed, and a
/// concurrent duplicate waits on the index, then sees the finished record. `None` when
/// the key has a record already: nothing was written, and the engine decides as usual.
pub fn create_fresh(
    conn: &mut DbConnection,
    request: &RequestIdentity,
    new: &NewOrder,
    ttl: TimeDelta,
) -> Result<Option<StoredResponse>, ApiError> {
    let created = db::write_transaction(conn, |conn| {
        let id = ids::new_id(ids::ORDER);
        let now = rows::insert_now(conn, &id, &request.merchant_id, new)?;
        let view = OrderRow::new(id.clone(), &request.merchant_id, new, now).view();
        let mut response = json_response(StatusCode::CREATED, &view, Some(format!("/orders/{id}")));
        match record::insert_finished(conn, request, &mut response, &id, now, ttl)? {
            true => Ok(response),
            false => Err(Fresh::KeyTaken),
        }
    });
    match created {
        Ok(response) => Ok(Some(response)),
        Err(Fresh::KeyTaken) => Ok(None),
        Err(Fresh::Failed(e)) => Err(e),
    }
}

/// Why [`create_fresh`] rolled back.
enum Fresh {
    /// The key has a record already.
    KeyTaken,
    Failed(ApiError),
}

impl From<diesel::result::Error> for Fresh {
    fn from(e: diesel::result::Error) -> Self {
        Self::Failed(e.into())
    }
}

/// Creates an order under a lease (a key taken over, or expired and claimed again)
/// → 201 with `Location: /orders/{id}`.
pub fn create(
    conn: &mut DbConnection,
    merchant_id: &str,
    new: &NewOrder,
    (lease, ttl): (&Lease, TimeDelta),
) -> Result<StoredResponse, ApiError> {
    db::write_transaction(conn, |conn| {
        let now = db::now(conn)?;
        let row = OrderRow::new(ids::new_id(ids::ORDER), merchant_id, new, now);
        rows::insert(conn, &row)?;
        let id = row.id.clone();
        let mut response = json_response(
            StatusCode::CREATED,
            &row.view(),
            Some(format!("/orders/{id}")),
        );
        finish(conn, lease, &mut response, Some(&id), ttl)?;
        Ok(response)
    })
}

/// Cancels an order awaiting payment → 200 with the order; cancelling a cancelled order
/// returns it unchanged. Errors: 404 unknown order, 409 `order_not_cancellable`, 409
/// `payment_in_progress` (retryable) while a payment of the order is processing.
pub fn cancel(
    conn: &mut DbConnection,
    merchant_id: &str,
    id: &str,
    keyed: Keyed,
) -> Result<StoredResponse, ApiError> {
    db::write_transaction(conn, |conn| {
        // Lock first: a payment's phase 1 takes the same lock, so the two serialise.
        rows::lock(conn, merchant_id, id)?;
        let order = find(conn, merchant_id, id)?;
        order.check_cancellable()?;
        if crate::db::payments::live_for_order(conn, id)?.is_some_and(|p| p.status == PROCESSING) {
            return Err(ApiError::PaymentInProgress);
        }
        let now = db::now(conn)?;
        rows::transition(conn, id, status::AWAITING_PAYMENT, status::CANCELLED, now)?;
        let mut response = json_response(StatusCode::OK, &find(conn, merchant_id, id)?, None);
        if let Some((lease, ttl)) = keyed {
            finish(conn, lease, &mut response, Some(id), ttl)?;
        }
        Ok(response)
    })
}

/// The merchant's order `id`; 404 `resource_not_found` if it has none by that id.
pub fn find(conn: &mut DbConnection, merchant_id: &str, id: &str) -> Result<Order, ApiError> {
    let not_found = || ApiError::NotFound {
        resource: "order",
        id: id.to_owned(),
    };
    if !ids::is_well_formed(ids::ORDER, id) {
        return Err(not_found());
    }
    rows::find(conn, merchant_id, id)?
        .map(OrderRow::view)
        .ok_or_else(not_found)
}
